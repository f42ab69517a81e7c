// `node bench/fetch-suffix-scaling.mjs`: how checkFetch under a `*.suffix`
// grant scales with the host length (SPEC §8: linear, no re-hashing of every
// suffix). Prints the median CPU time per check for a 4 KiB and a 64 KiB host and
// their ratio: ~16 is linear, ~256 would be quadratic. A figure, not a test.
//
// Two runs (shared 2-core machine, release build, Node 20, CPU time):
// 4 KiB 0.019 ms, 64 KiB 0.30-0.32 ms, ratio 15.6-17.0. Before the fix every
// proper suffix of the host was hashed: 64 KiB ~250 ms, ratio ~250.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { createChecker } = require('../index.js')

const checker = createChecker({ fetch: ['*.example.org', '*.cdn.example.net', '*.a.b.example.com', 'api.example.com'] }, { plugin: 'bench' })
const hostUrl = (bytes) => `http://${'a.'.repeat((bytes - 20) >> 1)}example.org/`

function medianMs(url, rounds = 31, batch = 20) {
  const times = []
  for (let r = 0; r < rounds; r++) {
    // CPU time of this process, not wall time: the machine is shared.
    const t0 = process.cpuUsage()
    for (let i = 0; i < batch; i++) {
      if (!checker.checkFetch(url).allowed) throw new Error(`denied: ${url.length} bytes`)
    }
    const t = process.cpuUsage(t0)
    times.push((t.user + t.system) / 1e3 / batch)
  }
  times.sort((a, b) => a - b)
  return times[times.length >> 1]
}

const small = hostUrl(4096)
const large = hostUrl(65500)
medianMs(small, 5)
medianMs(large, 5)
const a = medianMs(small)
const b = medianMs(large)
console.log(`checkFetch, *.suffix grant: 4 KiB host ${a.toFixed(4)} ms, 64 KiB host ${b.toFixed(4)} ms, ratio ${(b / a).toFixed(1)} (linear ~16, quadratic ~256)`)
