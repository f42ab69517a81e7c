// What the broker costs a Deno script: 10,000 checked reads (Deno.readTextFileSync,
// each one a permission check) under the broker, against the same script with
// --allow-read (no broker). Both run the real deno; the time is measured inside
// the script (performance.now around the loop), so Deno's startup is left out.
// Interleaved rounds, medians. Usage: node bench/deno-broker.mjs [--reads N] [--rounds N] [--json]
import { createRequire } from 'node:module'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const require = createRequire(import.meta.url)
const { PermissionPolicy } = require('../index.js')
const { runDeno, resolveDeno } = require('../lib/deno-broker.js')

const args = process.argv.slice(2)
const opt = (name, dflt) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : dflt)
const READS = opt('--reads', 10_000)
const ROUNDS = opt('--rounds', 5)
const JSON_OUT = args.includes('--json')

const deno = resolveDeno()
const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deno-bench-')))
fs.mkdirSync(path.join(root, 'data'))
for (let i = 0; i < 100; i++) fs.writeFileSync(path.join(root, 'data', `f${i}.txt`), `file ${i}\n`)
const script = path.join(root, 'reads.ts')
fs.writeFileSync(
  script,
  `const t0 = performance.now()
let n = 0
for (let i = 0; i < ${READS}; i++) n += Deno.readTextFileSync('${root}/data/f' + (i % 100) + '.txt').length
console.log(JSON.stringify({ ms: performance.now() - t0, n }))
`,
)
const env = { PATH: process.env.PATH, HOME: root, DENO_DIR: path.join(root, '.deno'), NO_COLOR: '1' }
const policy = PermissionPolicy.fromManifest({ fs: [`${root}/data/**`] }, { plugin: 'bench' })

function parse(out) {
  const line = out.trim().split('\n').at(-1)
  return JSON.parse(line)
}

async function withBroker() {
  const outFile = path.join(root, 'out.txt')
  const fd = fs.openSync(outFile, 'w')
  try {
    const r = await runDeno(policy, { deno, args: ['run', '--quiet', script], env, stdio: ['ignore', fd, 'inherit'] })
    if (r.exitCode !== 0 || r.stats.denied !== 0) throw new Error(`broker run failed: exit ${r.exitCode}, ${r.stats.denied} denied`)
    if (r.stats.requests < READS) throw new Error(`only ${r.stats.requests} checks reached the broker`)
  } finally {
    fs.closeSync(fd)
  }
  return parse(fs.readFileSync(outFile, 'utf8'))
}

function withFlag() {
  const r = spawnSync(deno, ['run', '--quiet', `--allow-read=${root}/data`, script], { encoding: 'utf8', env })
  if (r.status !== 0) throw new Error(`--allow-read run failed: ${r.stderr}`)
  return parse(r.stdout)
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

const broker = []
const flag = []
try {
  for (let i = 0; i < ROUNDS; i++) {
    flag.push(withFlag().ms)
    broker.push((await withBroker()).ms)
  }
} finally {
  fs.rmSync(root, { recursive: true, force: true })
}
const result = {
  reads: READS,
  rounds: ROUNDS,
  allowReadMs: median(flag),
  brokerMs: median(broker),
  ratio: median(broker) / median(flag),
  brokerUsPerCheck: (median(broker) * 1000) / READS,
}
if (JSON_OUT) console.log(JSON.stringify(result))
else {
  console.log(`deno ${READS} checked reads, median of ${ROUNDS} interleaved rounds`)
  console.log(`  --allow-read: ${result.allowReadMs.toFixed(1)} ms`)
  console.log(`  broker:       ${result.brokerMs.toFixed(1)} ms (${result.brokerUsPerCheck.toFixed(1)} us per read)`)
  console.log(`  ratio:        ${result.ratio.toFixed(2)}x`)
}
