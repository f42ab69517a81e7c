'use strict'
// Every error of a manifest, not only the first: the validator stops at the
// first INVALID_MANIFEST, so this removes what it names (the array element
// holding it, or the property) from a copy and validates again, until the
// copy is valid. Pointers are reported as in the manifest given (indices
// after a removed element are mapped back). An error at an ancestor of
// something removed may be a consequence of the removal (`{ path }` without
// its mode, `db` without its `database`), so it is not reported.

const { escapeToken } = require('./json-source.js')

const unescapeToken = (t) => t.replace(/~1/g, '/').replace(/~0/g, '~')

/**
 * `[{ pointer, expected, code, id }]`, empty when `manifest` is
 * valid; the first is the error `PermissionPolicy.fromManifest` throws.
 * At most `max` (default 100) errors.
 */
function manifestErrors(manifest, { plugin = 'manifest', platform, max = 100 } = {}) {
  const { PermissionPolicy, isInvalidManifest } = require('../index.js')
  const work = structuredClone(manifest)
  /** array (of `work`) -> the original index of each element. */
  const origin = new Map()
  const errors = []
  const removed = []
  for (let round = 0; errors.length < max && round < max * 4; round++) {
    try {
      PermissionPolicy.fromManifest(work, { plugin, platform })
      return errors
    } catch (e) {
      if (!isInvalidManifest(e)) throw e
      const tokens = e.details.pointer === '' ? [] : e.details.pointer.slice(1).split('/').map(unescapeToken)
      // Walk the copy: the original pointer, and where to cut.
      const original = []
      let node = work
      let cut = null
      for (const t of tokens) {
        if (Array.isArray(node) && /^(0|[1-9]\d*)$/.test(t) && Number(t) < node.length) {
          if (!origin.has(node)) origin.set(node, node.map((_, k) => k))
          original.push(String(origin.get(node)[Number(t)]))
          cut = { parent: node, key: Number(t), array: true, depth: original.length }
        } else {
          original.push(t)
          if (node !== null && typeof node === 'object' && Object.hasOwn(node, t) && !(cut && cut.array)) cut = { parent: node, key: t, array: false, depth: original.length }
        }
        node = node !== null && typeof node === 'object' && Object.hasOwn(node, t) ? node[t] : undefined
      }
      const pointer = original.map((t) => `/${escapeToken(t)}`).join('')
      if (!removed.some((r) => r === pointer || r.startsWith(`${pointer}/`))) errors.push({ pointer, expected: e.details.expected, code: e.code, id: e.id })
      if (cut === null) return errors // the root itself: nothing to take away
      removed.push(original.slice(0, cut.depth).map((t) => `/${escapeToken(t)}`).join(''))
      if (cut.array) {
        cut.parent.splice(cut.key, 1)
        origin.get(cut.parent).splice(cut.key, 1)
      } else delete cut.parent[cut.key]
    }
  }
  return errors
}

module.exports = { manifestErrors }
