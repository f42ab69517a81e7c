'use strict'
// A checked open + read against the same read through fs.promises: open a
// 4 KB file, read it, close it, one at a time (each step a libuv thread
// pool round trip on both sides). The checked side also resolves the real
// path, opens beneath the grant's root with openat2 and verifies the
// descriptor (src/open.rs). Per-call medians, the two interleaved call by call.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { createChecker } = require('../index.js')
const { openChecked } = require('../fs.js')

const FILES = 64
const SIZE = 4096

async function runOpenReads(rounds, calls) {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'asp-open-')))
  const data = path.join(root, 'plugin', 'data')
  fs.mkdirSync(data, { recursive: true })
  const files = []
  for (let i = 0; i < FILES; i++) {
    files.push(path.join(data, `f-${i}.txt`))
    fs.writeFileSync(files[i], 'x'.repeat(SIZE))
  }
  const checker = createChecker({ fs: [`${root}/plugin/**`] }, { plugin: 'bench', platform: 'posix' })
  const buf = Buffer.alloc(SIZE)
  const tasks = {
    async plain(i) {
      const fh = await fs.promises.open(files[i % FILES], 'r')
      const { bytesRead } = await fh.read(buf, 0, SIZE, 0)
      await fh.close()
      return bytesRead
    },
    async checked(i) {
      const f = await openChecked(checker, files[i % FILES])
      const { bytesRead } = await f.read(buf, 0, SIZE, 0)
      await f.close()
      return bytesRead
    },
  }
  const samples = { plain: [], checked: [] }
  try {
    for (const name of ['plain', 'checked']) for (let i = 0; i < 200; i++) await tasks[name](i) // warm-up
    // Interleaved call by call (alternating which goes first), so a change in
    // the machine's load falls on both sides alike; medians per call.
    for (let i = 0; i < rounds * calls; i++) {
      for (const name of i % 2 ? ['checked', 'plain'] : ['plain', 'checked']) {
        const t0 = process.hrtime.bigint()
        if ((await tasks[name](i)) !== SIZE) throw new Error('short read')
        samples[name].push(Number(process.hrtime.bigint() - t0))
      }
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
  return { plain: Math.round(med(samples.plain)), checked: Math.round(med(samples.checked)) }
}

module.exports = { runOpenReads }

if (require.main === module) runOpenReads(Number(process.argv[2] || 7), Number(process.argv[3] || 2000)).then((r) => console.log(r, (r.checked / r.plain).toFixed(3)))
