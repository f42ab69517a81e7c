'use strict'
// The process tier's wire protocol: newline-delimited JSON over one socket
// pair (the child's fd 3), not Node's IPC channel (whose JSON mode parses
// unbounded lines and throws a SyntaxError into the parent on a malformed
// one). The parent frames what the child sends with lib/ipc-frame.js and
// accepts only these messages, in this order:
//
//   {"locked":{"arch":"x86_64"|"aarch64","allowed":N,"landlock":ABI|null}}
//                                                              once, first
//   {"call":"<the bridge's JSON text>"}                         any number, after locked
//   {"done":true,"ok":true,"value":string|null}                once, last
//   {"done":true,"ok":false,"code":string|null,"message":string|null}
//                                                              once, last (also instead of locked)
//
// Anything else (a line over MAX_CHILD_LINE_BYTES, bytes that are not UTF-8
// JSON, JSON outside CHILD_MESSAGE_SHAPE, judged before it is parsed, another
// shape, a message out of order) is a violation: the parent kills the child
// and reports ERR_CHILD_PROTOCOL.

const { hasExactKeys } = require('../../lib/ipc-frame.js')

/** The descriptor the channel is on, in the child. */
const CHANNEL_FD = 3

/**
 * The largest line the child may send, and so the most JSON the parent
 * parses at once: 2 MiB and the envelope. A call is at most 2^20 UTF-16 code
 * units of JSON text (the bridge's limit); the child refuses a call whose
 * line would be longer (the plugin gets ERR_CALL_REFUSED: only a call near
 * the limit and full of quotes, backslashes or non-ASCII text) and replaces
 * a result too large with ERR_RESULT_TOO_LARGE.
 */
const MAX_CHILD_LINE_BYTES = 2 * (1 << 20) + 1024

/**
 * The shape of every message of the protocol, judged before a line is
 * parsed (JSON.parse of deeply nested text costs far more than its length):
 * an object, at most two levels deep (`locked` holds one object), at most
 * four members per level.
 */
const CHILD_MESSAGE_SHAPE = Object.freeze({ maxDepth: 2, maxMembers: 4, topLevel: 'object' })

/** Calls the parent works on at once; a child that sends more is not waiting for answers. */
const MAX_CALLS_IN_FLIGHT = 1024

/** Bytes of answers the parent holds for a child that does not read them. */
const MAX_UNREAD_REPLY_BYTES = 16 << 20

const nullableString = (v) => v === null || typeof v === 'string'

/**
 * A validator for JsonLineDecoder: `state()` says where the run is
 * (`'starting'` before `locked`, `'running'` after it, `'done'` after the
 * last message). Returns null for a message acceptable now, or why not.
 */
function childMessageValidator(state) {
  return (m) => {
    const now = state()
    if (hasExactKeys(m, ['locked'])) {
      if (now !== 'starting') return `locked while ${now}`
      const l = m.locked
      if (!hasExactKeys(l, ['arch', 'allowed', 'landlock']) || (l.arch !== 'x86_64' && l.arch !== 'aarch64') || !Number.isSafeInteger(l.allowed) || l.allowed < 0 || !(l.landlock === null || (Number.isSafeInteger(l.landlock) && l.landlock >= 0))) return 'a locked message of the wrong shape'
      return null
    }
    if (hasExactKeys(m, ['call'])) {
      if (now !== 'running') return `a call while ${now}`
      return typeof m.call === 'string' ? null : 'a call that is not a string'
    }
    if (m !== null && typeof m === 'object' && Object.hasOwn(m, 'done')) {
      if (now === 'done') return 'a second done'
      if (m.done !== true) return 'done is not true'
      if (m.ok === true) return hasExactKeys(m, ['done', 'ok', 'value']) && nullableString(m.value) ? null : 'a done message of the wrong shape'
      if (m.ok === false) return hasExactKeys(m, ['done', 'ok', 'code', 'message']) && nullableString(m.code) && nullableString(m.message) ? null : 'a done message of the wrong shape'
      return 'a done message of the wrong shape'
    }
    return 'not a message of the protocol'
  }
}

module.exports = { CHANNEL_FD, MAX_CHILD_LINE_BYTES, CHILD_MESSAGE_SHAPE, MAX_CALLS_IN_FLIGHT, MAX_UNREAD_REPLY_BYTES, childMessageValidator }
