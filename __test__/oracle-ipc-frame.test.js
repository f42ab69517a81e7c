'use strict'
// The process tier's IPC decoder oracle (__test__/oracles/ipc-frame.js) for
// FUZZ_SECONDS (default 3): random streams cut into random chunks against a
// naive whole-stream framing model; never throws, memory within the bound,
// every valid message delivered once and in order, the first violation the
// model's.
const test = require('node:test')
const assert = require('node:assert/strict')
const { run } = require('./oracles/ipc-frame.js')
const { LineDecoder, JsonLineDecoder, VIOLATIONS } = require('../lib/ipc-frame.js')

const seconds = Number(process.env.FUZZ_SECONDS || 3)
const seed = Number(process.env.FUZZ_SEED || Date.now() % 0x7fffffff)

test('the IPC decoder agrees with a naive framing model', async () => {
  const { cases, violations, wrongAllows, mismatches } = await run({ seconds, seed, log: console.log })
  console.log(`ipc-frame oracle seed ${seed}: ${cases} streams, ${violations} with a violation`)
  assert.ok(cases > 1000, `${cases} streams`)
  assert.ok(violations > cases / 10 && violations < cases * 0.9, `both outcomes occur (${violations} of ${cases})`)
  assert.deepEqual(wrongAllows.slice(0, 3), [], `${wrongAllows.length} wrong allows (seed ${seed})`)
  assert.deepEqual(mismatches.slice(0, 3), [], `${mismatches.length} mismatches (seed ${seed})`)
})

test('the decoder reports an oversized line before its newline arrives, and holds at most the bound', () => {
  const d = new LineDecoder({ maxLineBytes: 10 })
  assert.deepEqual(d.push(Buffer.from('0123456789')), { lines: [], violation: null })
  assert.equal(d.bufferedBytes, 10)
  const r = d.push(Buffer.from('a'))
  assert.equal(r.violation.kind, 'oversized')
  assert.equal(d.bufferedBytes, 0)
  assert.deepEqual(d.push(Buffer.from('\n{}\n')), { lines: [], violation: null }, 'closed after a violation')
  // Lines before an oversized one in the same chunk are judged and delivered, then the violation.
  const j = new JsonLineDecoder({ maxLineBytes: 8, validate: () => null })
  const got = []
  const v = j.push(Buffer.from('{"a":1}\n[2]\n{"long":"line"}\n'), (m) => got.push(m))
  assert.deepEqual(got, [{ a: 1 }, [2]])
  assert.equal(v.kind, 'oversized')
  assert.ok(VIOLATIONS.includes(v.kind))
  assert.equal(j.push(Buffer.from('{}\n'), () => assert.fail('delivered after a violation')), null)
})

test('the decoder never throws on input, and is strict about its own options', () => {
  const j = new JsonLineDecoder({ maxLineBytes: 64, validate: () => { throw new Error('validator bug') } })
  assert.equal(j.push(Buffer.from('{}\n'), () => {}).kind, 'unexpected')
  assert.equal(new JsonLineDecoder({ maxLineBytes: 64, validate: () => null }).push('not bytes', () => {}).kind, 'malformed')
  for (const bad of [0, -1, 1.5, NaN, '10', undefined, 2 ** 60]) assert.throws(() => new LineDecoder({ maxLineBytes: bad }), TypeError, String(bad))
  assert.throws(() => new JsonLineDecoder({ maxLineBytes: 8 }), TypeError)
})
