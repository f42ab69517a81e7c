'use strict'
const { setMaxListeners } = require('node:events')
// What one run's capability calls may hold, and their end. A run ends
// (result, budget breach, crash, protocol violation) while calls it started
// may still be waiting on a slow server or a large file; nothing of a run may
// outlive it. Every call a run performs is begun in its scope, gets the
// scope's AbortSignal (passed to every request, read and write), and counts
// the bytes it holds; the scope refuses a call past its bounds, and aborts
// every call still pending when the run ends.

/** Calls of one run performed at once; a call past it is refused at once, not queued. */
const MAX_PENDING_CALLS = 64

/** Bytes the pending calls of one run may hold together: request texts, response bodies, file contents. */
const MAX_RUN_BYTES = 32 << 20

function positiveInt(name, v) {
  if (!Number.isSafeInteger(v) || v < 1) throw new TypeError(`${name} must be a positive integer`)
  return v
}

/** The error a call gets when its run's bounds refuse it (the plugin sees its message). */
function boundError(message) {
  return Object.assign(new Error(message), { code: 'ERR_RUN_BOUND' })
}

class RunScope {
  #controller = new AbortController()
  #maxPending
  #maxBytes
  #pending = 0
  #bytes = 0
  #peakPending = 0
  #peakBytes = 0
  #refused = 0
  #drainWaiters = []

  /** `{ maxPendingCalls = MAX_PENDING_CALLS, maxRunBytes = MAX_RUN_BYTES }` */
  constructor({ maxPendingCalls = MAX_PENDING_CALLS, maxRunBytes = MAX_RUN_BYTES } = {}) {
    this.#maxPending = positiveInt('maxPendingCalls', maxPendingCalls)
    this.#maxBytes = positiveInt('maxRunBytes', maxRunBytes)
    // Each pending call listens on the signal (its request, its wait): bounded by maxPendingCalls, not a leak.
    setMaxListeners(0, this.#controller.signal)
  }

  /** Aborted when the run ends. */
  get signal() {
    return this.#controller.signal
  }

  /** `{ pending, bytes, peakPending, peakBytes, refused }`: calls and bytes held now, their peaks, calls refused by the bounds. */
  get stats() {
    return { pending: this.#pending, bytes: this.#bytes, peakPending: this.#peakPending, peakBytes: this.#peakBytes, refused: this.#refused }
  }

  /**
   * Begins a call holding `bytes` (its request) and returns its handle
   * `{ signal, reserve(n), end() }`, or throws ERR_RUN_BOUND (the run ended,
   * too many calls pending, or too many bytes held). `reserve(n)` adds bytes
   * the call now holds (a chunk read) and throws ERR_RUN_BOUND past the
   * run's bound; `end()` (idempotent) gives back everything the call held.
   */
  begin(bytes = 0) {
    if (this.#controller.signal.aborted) throw boundError('the run has ended')
    if (this.#pending >= this.#maxPending) {
      this.#refused++
      throw boundError(`more than ${this.#maxPending} calls in flight`)
    }
    const scope = this
    let held = 0
    let ended = false
    const call = {
      signal: this.#controller.signal,
      reserve(n) {
        if (ended) throw boundError('the call has ended')
        scope.#controller.signal.throwIfAborted()
        if (scope.#bytes + n > scope.#maxBytes) {
          scope.#refused++
          throw boundError(`the run's calls would hold more than ${scope.#maxBytes} bytes`)
        }
        held += n
        scope.#bytes += n
        if (scope.#bytes > scope.#peakBytes) scope.#peakBytes = scope.#bytes
      },
      end() {
        if (ended) return
        ended = true
        scope.#bytes -= held
        held = 0
        scope.#pending--
        if (scope.#pending === 0) scope.#wake()
      },
    }
    this.#pending++
    if (this.#pending > this.#peakPending) this.#peakPending = this.#pending
    try {
      call.reserve(bytes)
    } catch (e) {
      call.end()
      throw e
    }
    return call
  }

  /** Ends the run: every pending call is aborted, and no call begins after it. */
  abort() {
    if (!this.#controller.signal.aborted) this.#controller.abort(boundError('the run has ended'))
  }

  /** Resolves once no call is pending (at once when none is). */
  drained() {
    if (this.#pending === 0) return Promise.resolve()
    return new Promise((resolve) => this.#drainWaiters.push(resolve))
  }

  #wake() {
    const waiters = this.#drainWaiters
    this.#drainWaiters = []
    for (const w of waiters) w()
  }
}

/** `promise`, or its rejection with the signal's reason as soon as `signal` aborts (the work behind it is left to finish alone). */
function abortable(promise, signal) {
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort)
        resolve(v)
      },
      (e) => {
        signal.removeEventListener('abort', onAbort)
        reject(e)
      },
    )
  })
}

module.exports = { RunScope, abortable, MAX_PENDING_CALLS, MAX_RUN_BYTES }
