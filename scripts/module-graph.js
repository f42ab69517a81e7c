#!/usr/bin/env node
'use strict'
// The Rust core's module graph: which `src/*.rs` module refers to which,
// read from `use crate::x`, `crate::x::` paths and names re-exported at the
// crate root (`crate::Name` counts as an edge to the module `lib.rs`
// re-exports it from). Comments, strings and `#[cfg(test)]` modules are
// skipped: a doc link is no dependency, and tests may reach anywhere.
// `src/binding/` (the Node-API layer, above the core) and `lib.rs` (the root
// that re-exports everything) are not nodes.
//
//   node scripts/module-graph.js     prints the modules in dependency order
//                                    (each after everything it uses), or the
//                                    cycle, and exits 1 on a cycle.

const fs = require('node:fs')
const path = require('node:path')

/** Rust source with comments, string and char literals blanked (lengths kept). */
function blank(src) {
  const c = Array.from(src)
  const out = c.slice()
  const fill = (a, b) => {
    for (let k = a; k < b; k++) if (out[k] !== '\n') out[k] = ' '
  }
  let i = 0
  while (i < c.length) {
    if (c[i] === '/' && c[i + 1] === '/') {
      let j = i
      while (j < c.length && c[j] !== '\n') j++
      fill(i, j)
      i = j
    } else if (c[i] === '/' && c[i + 1] === '*') {
      let depth = 1
      let j = i + 2
      while (j < c.length && depth > 0) {
        if (c[j] === '/' && c[j + 1] === '*') (depth++, (j += 2))
        else if (c[j] === '*' && c[j + 1] === '/') (depth--, (j += 2))
        else j++
      }
      fill(i, j)
      i = j
    } else if ((c[i] === 'r' || (c[i] === 'b' && c[i + 1] === 'r')) && !/[A-Za-z0-9_]/.test(c[i - 1] || '')) {
      // Raw strings: r"..", r#".."#, br"..".
      let j = c[i] === 'b' ? i + 2 : i + 1
      let hashes = 0
      while (c[j] === '#') (hashes++, j++)
      if (c[j] !== '"') {
        i++
        continue
      }
      const close = '"' + '#'.repeat(hashes)
      j++
      while (j < c.length && c.slice(j, j + close.length).join('') !== close) j++
      fill(i, j + close.length)
      i = j + close.length
    } else if (c[i] === '"') {
      let j = i + 1
      while (j < c.length && c[j] !== '"') j += c[j] === '\\' ? 2 : 1
      fill(i, j + 1)
      i = j + 1
    } else if (c[i] === "'") {
      // A char literal ('x', '\n', '\u{1F600}'), else a lifetime ('a).
      let j = -1
      if (c[i + 1] === '\\') {
        j = i + 2
        while (j < c.length && c[j] !== "'") j++
      } else if (c[i + 2] === "'") j = i + 2
      if (j < 0) {
        i++
        continue
      }
      fill(i, j + 1)
      i = j + 1
    } else i++
  }
  return out.join('')
}

/** The code with `#[cfg(test)] mod name { ... }` blocks removed (input already blanked). */
function withoutTestModules(code) {
  const re = /#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{/g
  let out = ''
  let last = 0
  let m
  while ((m = re.exec(code))) {
    let depth = 1
    let j = m.index + m[0].length
    while (j < code.length && depth > 0) {
      if (code[j] === '{') depth++
      else if (code[j] === '}') depth--
      j++
    }
    out += code.slice(last, m.index)
    last = j
    re.lastIndex = j
  }
  return out + code.slice(last)
}

/** Names `lib.rs` re-exports, mapped to the module they come from. */
function rootReExports(libCode) {
  const map = new Map()
  const re = /pub\s+use\s+(\w+)::(\{[^}]*\}|\w+)\s*;/g
  let m
  while ((m = re.exec(libCode))) {
    for (const name of m[2].replace(/[{}]/g, '').split(',')) {
      const n = name.trim().split(/\s+as\s+/).pop()
      if (n) map.set(n, m[1])
    }
  }
  return map
}

/** The modules `code` refers to, among `modules` (names re-exported at the root resolved through `reExports`). */
function references(code, modules, reExports) {
  const out = new Set()
  const add = (first) => {
    if (modules.has(first)) out.add(first)
    else if (reExports.has(first)) out.add(reExports.get(first))
  }
  // `use crate::{a::{X, Y}, b, C}`: the first path segment of each top-level item.
  for (const m of code.matchAll(/crate::\{([^;]*)\}\s*;/g)) {
    let depth = 0
    let item = ''
    for (const ch of m[1] + ',') {
      if (ch === '{') depth++
      else if (ch === '}') depth--
      if (ch === ',' && depth === 0) {
        const first = item.trim().split('::')[0].trim()
        if (first) add(first)
        item = ''
      } else if (depth === 0 && ch !== '}') item += ch
    }
  }
  for (const m of code.matchAll(/\bcrate::(\w+)/g)) add(m[1])
  return out
}

/** `{ nodes, edges: Map<module, Set<module>> }` of the core modules under `srcDir`. */
function moduleGraph(srcDir) {
  const files = fs.readdirSync(srcDir).filter((f) => f.endsWith('.rs') && f !== 'lib.rs')
  const modules = new Set(files.map((f) => f.slice(0, -3)))
  const reExports = rootReExports(blank(fs.readFileSync(path.join(srcDir, 'lib.rs'), 'utf8')))
  const edges = new Map()
  for (const f of files) {
    const name = f.slice(0, -3)
    const code = withoutTestModules(blank(fs.readFileSync(path.join(srcDir, f), 'utf8')))
    const refs = references(code, modules, reExports)
    refs.delete(name)
    edges.set(name, refs)
  }
  return { nodes: [...modules].sort(), edges }
}

/** `{ order }` (each module after those it uses) or `{ cycle: [a, b, ..., a] }`. */
function topoOrder({ nodes, edges }) {
  const state = new Map()
  const order = []
  const stack = []
  const visit = (n) => {
    if (state.get(n) === 'done') return null
    if (state.get(n) === 'open') return stack.slice(stack.indexOf(n)).concat(n)
    state.set(n, 'open')
    stack.push(n)
    for (const d of [...(edges.get(n) || [])].sort()) {
      const cycle = visit(d)
      if (cycle) return cycle
    }
    stack.pop()
    state.set(n, 'done')
    order.push(n)
    return null
  }
  for (const n of nodes) {
    const cycle = visit(n)
    if (cycle) return { cycle }
  }
  return { order }
}

module.exports = { blank, withoutTestModules, rootReExports, references, moduleGraph, topoOrder }

if (require.main === module) {
  const g = moduleGraph(path.join(__dirname, '..', 'src'))
  const r = topoOrder(g)
  if (r.cycle) {
    console.error(`module cycle: ${r.cycle.join(' -> ')}`)
    process.exit(1)
  }
  for (const n of r.order) console.log(`${n}${g.edges.get(n).size ? ` <- uses ${[...g.edges.get(n)].sort().join(', ')}` : ''}`)
}
