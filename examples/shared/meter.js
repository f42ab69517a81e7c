'use strict'
// The demos' meter: a real OpenTelemetry SDK MeterProvider with an in-memory
// exporter, and the counter printout both demos end with. One copy, used by
// examples/vm-host/demo.js and examples/wasi-host/demo.js.
const { MeterProvider, InMemoryMetricExporter, PeriodicExportingMetricReader, AggregationTemporality } = require('@opentelemetry/sdk-metrics')

/** A meter named `name` on a fresh provider; `counts()` reads it, `shutdown()` ends it. */
function demoMeter(name) {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  // Exports only when flushed: the demo reads the counts once, at the end.
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 2 ** 30 })
  const provider = new MeterProvider({ readers: [reader] })
  return {
    meter: provider.getMeter(name),
    /** Every counter data point, `{ name, plugin, capability, reason, value }`, sorted by its labels. */
    async counts() {
      await reader.forceFlush()
      const rm = exporter.getMetrics().at(-1)
      const counts = []
      for (const sm of rm ? rm.scopeMetrics : []) {
        for (const m of sm.metrics) for (const dp of m.dataPoints) counts.push({ name: m.descriptor.name, ...dp.attributes, value: dp.value })
      }
      const key = (c) => `${c.name}${c.plugin}${c.capability}${c.reason}`
      return counts.sort((a, b) => key(a).localeCompare(key(b)))
    },
    shutdown: () => provider.shutdown(),
  }
}

/** Logs `title` and one Prometheus-style line per count. */
function logCounts(log, title, counts) {
  log(`\n== ${title} (OpenTelemetry MeterProvider, in-memory exporter)`)
  for (const c of counts) log(`${c.name}{plugin=${c.plugin}, capability=${c.capability}, reason=${c.reason}} ${c.value}`)
}

module.exports = { demoMeter, logCounts }
