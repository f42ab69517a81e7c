'use strict'
// Shared test helpers: a real OpenTelemetry SDK MeterProvider with an
// in-memory exporter, and the shipped JSON Schema for error details.
const Ajv = require('ajv')
const {
  MeterProvider,
  InMemoryMetricExporter,
  PeriodicExportingMetricReader,
  AggregationTemporality,
} = require('@opentelemetry/sdk-metrics')
const schema = require('../schema/error-details.schema.json')

function meterHarness() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 2 ** 30 })
  const provider = new MeterProvider({ readers: [reader] })
  return {
    provider,
    meter: provider.getMeter('test'),
    /** `[{ name, attributes, value }]` of every counter data point, cumulative. */
    async points() {
      await reader.forceFlush()
      const all = exporter.getMetrics()
      const last = all[all.length - 1]
      exporter.reset()
      const out = []
      for (const sm of last ? last.scopeMetrics : []) {
        for (const m of sm.metrics) {
          for (const dp of m.dataPoints) out.push({ name: m.descriptor.name, unit: m.descriptor.unit, description: m.descriptor.description, attributes: dp.attributes, value: dp.value })
        }
      }
      return out
    },
    /** `{ 'name|plugin|capability|reason': value }` of every counter data point, cumulative. */
    async counts() {
      const out = {}
      for (const p of await this.points()) out[`${p.name}|${p.attributes.plugin}|${p.attributes.capability}|${p.attributes.reason}`] = p.value
      return out
    },
    shutdown: () => provider.shutdown(),
  }
}

const ajv = new Ajv({ allErrors: true, strict: false })
const validate = ajv.compile(schema)

/** Validates an error (code, id, details) against the shipped schema; returns it. */
function assertSchema(e) {
  const ok = validate({ code: e.code, id: e.id, details: JSON.parse(JSON.stringify(e.details)) })
  if (!ok) throw new Error(`error details do not match the schema: ${JSON.stringify(validate.errors)} for ${JSON.stringify(e.details)}`)
  return e
}

/**
 * The fenced code blocks of a Markdown page: `{ doc, info, lang, body, code,
 * line }` (`body` the lines, `code` them joined, `line` the fence's, 1-based).
 * An unclosed fence fails the test.
 */
function fencedBlocks(text, doc) {
  const assert = require('node:assert/strict')
  const out = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(.*)$/.exec(lines[i])
    if (!open) continue
    const start = i
    const body = []
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i])
    assert.ok(i < lines.length, `unclosed block at ${doc}:${start + 1}`)
    const info = open[1].trim()
    out.push({ doc, info, lang: info.split(/\s+/)[0], body, code: body.join('\n'), line: start + 1 })
  }
  return out
}

module.exports = { meterHarness, assertSchema, fencedBlocks }
