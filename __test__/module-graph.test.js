'use strict'
// The Rust core's module graph has no cycle (issue 15): each concept's file
// depends on the files below it, never back. Read from the sources by
// scripts/module-graph.js; the order printed is a valid build order.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { blank, withoutTestModules, moduleGraph, topoOrder, references, rootReExports } = require('../scripts/module-graph.js')

const SRC = path.join(__dirname, '..', 'src')

test('the Rust core module graph is acyclic', () => {
  const g = moduleGraph(SRC)
  const r = topoOrder(g)
  assert.equal(r.cycle, undefined, `module cycle: ${(r.cycle || []).join(' -> ')}`)
  console.log(`topological order (${r.order.length} modules): ${r.order.join(' < ')}`)
  assert.deepEqual([...r.order].sort(), g.nodes)
  // Every edge points backwards in the order.
  const at = new Map(r.order.map((n, i) => [n, i]))
  for (const [from, tos] of g.edges) for (const to of tos) assert.ok(at.get(to) < at.get(from), `${from} -> ${to}`)
})

test('the edges the re-home is about', () => {
  const { edges } = moduleGraph(SRC)
  // Platform lives beside the path code: fs no longer reaches policy.
  assert.ok(edges.get('fs').has('platform'))
  assert.ok(!edges.get('fs').has('policy'))
  assert.ok(edges.get('policy').has('fs'))
  // The leaves depend on nothing in the crate.
  for (const leaf of ['error', 'platform', 'ntfs_upcase', 'bestfit_table', 'hfsplus_table']) assert.deepEqual([...edges.get(leaf)], [], leaf)
  // posix_fold reads only its generated data table (a leaf).
  assert.deepEqual([...edges.get('posix_fold')], ['hfsplus_table'])
})

test('the reader: comments, strings and test modules are no edges; root re-exports and use groups are', () => {
  const modules = new Set(['a', 'b', 'c', 'd', 'e', 'f'])
  const reExports = rootReExports('pub mod a;\npub use d::{Thing, Other as O};\npub use e::Single;')
  assert.deepEqual([...reExports], [['Thing', 'd'], ['O', 'd'], ['Single', 'e']])
  const src = [
    '//! see [`crate::b`]',
    'use crate::{a::X, Thing};',
    'use crate::{c::{Other, Single as S}};',
    'const S: &str = "crate::b::y";',
    "const C: char = '\"'; fn f<'a>(x: &'a str) -> &'a str { x }",
    'let r = r#"crate::b "quoted" "#;',
    '/* crate::b */ fn g() { crate::c::h() }',
    '#[cfg(test)]\nmod tests {\n    use crate::b::Z;\n    fn t() { let _ = "}"; }\n}',
    'fn after() -> crate::Single { todo!() }',
    'use crate::{f::{self}};',
  ].join('\n')
  const refs = references(withoutTestModules(blank(src)), modules, reExports)
  // Names nested in a group (`c::{Other, Single}`) are not root re-exports: only `c` and `f`.
  assert.deepEqual([...refs].sort(), ['a', 'c', 'd', 'e', 'f'])
})

test('a cycle is reported with its path', () => {
  const edges = new Map([
    ['x', new Set(['y'])],
    ['y', new Set(['z'])],
    ['z', new Set(['x'])],
    ['w', new Set()],
  ])
  assert.deepEqual(topoOrder({ nodes: ['w', 'x', 'y', 'z'], edges }).cycle, ['x', 'y', 'z', 'x'])
  edges.set('z', new Set(['w']))
  assert.deepEqual(topoOrder({ nodes: ['w', 'x', 'y', 'z'], edges }).order, ['w', 'z', 'y', 'x'])
})
