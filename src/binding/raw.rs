//! Hot paths registered directly on Node-API (`napi::sys`): no per-call
//! napi-rs layers, strings copied into a stack buffer, decisions returned as
//! numeric codes. Policy and budget handles are numbers naming slots of this
//! thread's handle tables (`handles.rs`); anything that names no live slot of
//! the right table is a TypeError, and no handle is ever read as a pointer.
//! Every callback catches panics.

use std::ffi::c_char;
use std::mem::MaybeUninit;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::Arc;

use napi::sys;

use super::handles::{self, POLICIES};

use super::wire::fs_bits;
use crate::error::{Capability, Decision, DenyReason};
use crate::fs::{FsMode, MAX_PATH_BYTES};
use crate::policy::PermissionPolicy;

const OK: sys::napi_status = sys::Status::napi_ok;

/// A string argument, copied whole (never a prefix) as UTF-8.
enum Str<'a> {
    Ok(&'a str),
    /// More UTF-8 bytes than the limit (counted over the whole string), or a
    /// copy that did not come back whole: denied as the entry point's invalid reason.
    TooLong,
    NotString,
}

/// Room [`string`] needs past `max` in its stack buffer so that every string
/// of at most `max` UTF-8 bytes is copied in one call (see [`string`]).
const UTF8_SLACK: usize = 5;

/// A stack buffer for strings of at most `max` bytes: `max + UTF8_SLACK`.
const fn buf_len(max: usize) -> usize {
    max + UTF8_SLACK
}

// SAFETY (all the helpers below): `env` is the environment of the current
// callback and every `napi_value` comes from its arguments, which is what
// Node-API requires of each call; out-pointers point to live locals.

/// Throws a TypeError; `msg` must end with a NUL.
unsafe fn throw_type_error(env: sys::napi_env, msg: &[u8]) -> sys::napi_value {
    debug_assert_eq!(msg.last(), Some(&0));
    // SAFETY: `msg` is NUL-terminated (every caller passes a `b"...\0"` literal).
    unsafe { sys::napi_throw_type_error(env, ptr::null(), msg.as_ptr() as *const c_char) };
    ptr::null_mut()
}

/// Throws an Error; `msg` must end with a NUL.
unsafe fn throw_error(env: sys::napi_env, msg: &[u8]) -> sys::napi_value {
    debug_assert_eq!(msg.last(), Some(&0));
    // SAFETY: `msg` is NUL-terminated (every caller passes a `b"...\0"` literal).
    unsafe { sys::napi_throw_error(env, ptr::null(), msg.as_ptr() as *const c_char) };
    ptr::null_mut()
}

unsafe fn ret_u32(env: sys::napi_env, x: u32) -> sys::napi_value {
    let mut out = ptr::null_mut();
    // SAFETY: `out` is a live local the call writes one napi_value into.
    unsafe { sys::napi_create_uint32(env, x, &mut out) };
    out
}

unsafe fn args<const N: usize>(env: sys::napi_env, info: sys::napi_callback_info) -> [sys::napi_value; N] {
    let mut argc = N;
    let mut argv = [ptr::null_mut(); N];
    // SAFETY: `argv` has room for `argc` = N values, the most the call writes;
    // `info` is this callback's info.
    unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut()) };
    // Missing arguments come back as `undefined`, which every reader rejects.
    argv
}

/// Copies a JS string as UTF-8 into `buf` (or `heap` when it does not fit),
/// `TooLong` when the whole string has more than `max` UTF-8 bytes. The one
/// string reader of every raw entry point; it never returns a prefix.
///
/// Why the slack: `napi_get_value_string_utf8(env, v, buf, n, &copied)` is
/// V8 `WriteUtf8(buf, n - 1, REPLACE_INVALID_UTF8 | NO_NULL_TERMINATION)`,
/// which writes whole characters only and stops *before* the first one that
/// does not fit. A character is at most 4 UTF-8 bytes (a lone surrogate
/// becomes U+FFFD, 3 bytes), so a copy that stopped early has
/// `copied > n - 1 - 4`, i.e. `copied + 4 >= n`. Hence:
/// - `copied > max`: the string has at least `copied` bytes, too long;
/// - `copied + 4 < n`: at least 4 bytes of room were left, so nothing was
///   left out: the copy is the whole string;
/// - otherwise it may be a prefix: more UTF-16 units than `max` is too long
///   (each is at least one byte; V8 knows the count without a scan); else ask
///   V8 for the full length
///   (`Utf8Length`, the same count), refuse it over `max`, and copy it whole
///   into a heap buffer with the same slack, refusing any copy that does not
///   come back with exactly that length.
///
/// With `N >= max + UTF8_SLACK` (every caller, checked at compile time) no
/// string within `max` ever takes the heap path.
unsafe fn string<'a, const N: usize>(
    env: sys::napi_env,
    v: sys::napi_value,
    buf: &'a mut [MaybeUninit<u8>; N],
    max: usize,
    heap: &'a mut Vec<u8>,
) -> Str<'a> {
    let mut copied = 0usize;
    // SAFETY: `buf` is N writable bytes and N > 0, so V8 writes at most
    // N - 1 bytes plus the NUL at `buf[copied]`; `copied` is a live local.
    let status = unsafe { sys::napi_get_value_string_utf8(env, v, buf.as_mut_ptr() as *mut c_char, N, &mut copied) };
    if status != OK {
        return Str::NotString;
    }
    if copied > max || copied >= N {
        return Str::TooLong;
    }
    if copied + 4 < N {
        // SAFETY: V8 wrote `copied` bytes (< N) at the start of `buf`; only those are read.
        let written = unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const u8, copied) };
        return std::str::from_utf8(written).map_or(Str::TooLong, Str::Ok);
    }
    // Every UTF-16 unit is at least one UTF-8 byte, so more units than `max`
    // is too long: V8 answers that in O(1), where the UTF-8 length below
    // scans the whole string (~100 ms for a 300 MB string a plugin built).
    let mut units = 0usize;
    // SAFETY: a null buffer asks only for the length, written to the live `units`.
    if unsafe { sys::napi_get_value_string_utf16(env, v, ptr::null_mut(), 0, &mut units) } != OK || units > max {
        return Str::TooLong;
    }
    let mut full = 0usize;
    // SAFETY: a null buffer asks only for the length, written to the live `full`.
    if unsafe { sys::napi_get_value_string_utf8(env, v, ptr::null_mut(), 0, &mut full) } != OK || full > max {
        return Str::TooLong;
    }
    heap.clear();
    heap.resize(full + UTF8_SLACK, 0);
    let mut again = 0usize;
    // SAFETY: `heap` is `heap.len()` (> 0) writable bytes, as above.
    let status =
        unsafe { sys::napi_get_value_string_utf8(env, v, heap.as_mut_ptr() as *mut c_char, heap.len(), &mut again) };
    if status != OK || again != full {
        return Str::TooLong;
    }
    std::str::from_utf8(&heap[..full]).map_or(Str::TooLong, Str::Ok)
}

unsafe fn number(env: sys::napi_env, v: sys::napi_value) -> Option<f64> {
    let mut x = 0f64;
    // SAFETY: `x` is a live local the call writes one f64 into.
    (unsafe { sys::napi_get_value_double(env, v, &mut x) } == OK).then_some(x)
}

unsafe fn is_nullish(env: sys::napi_env, v: sys::napi_value) -> bool {
    let mut t = 0;
    // SAFETY: `t` is a live local the call writes the type into.
    unsafe { sys::napi_typeof(env, v, &mut t) };
    t == sys::ValueType::napi_undefined || t == sys::ValueType::napi_null
}

fn guarded(env: sys::napi_env, f: impl FnOnce() -> sys::napi_value) -> sys::napi_value {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        // SAFETY: `env` is the current callback's environment; the message is NUL-terminated.
        Err(_) => unsafe { throw_error(env, b"api-sandbox-permissions: internal error (panic caught)\0") },
    }
}

/// The number of a handle argument; NaN (which names nothing) for a non-number.
unsafe fn handle_number(env: sys::napi_env, v: sys::napi_value) -> f64 {
    // SAFETY: the caller's contract: `env` is live and `v` one of its values.
    unsafe { number(env, v) }.unwrap_or(f64::NAN)
}

/// The policy a handle argument names, or `None` for anything else.
pub(crate) unsafe fn policy_arc(env: sys::napi_env, v: sys::napi_value) -> Option<Arc<PermissionPolicy>> {
    // SAFETY: the caller's contract: `env` is live and `v` one of its values.
    let h = unsafe { handle_number(env, v) };
    POLICIES.with(|t| t.borrow().get(h).cloned())
}

/// A new policy handle (a JS number), or null when this thread's table is full.
pub(crate) unsafe fn policy_handle(env: sys::napi_env, policy: Arc<PermissionPolicy>) -> sys::napi_value {
    match POLICIES.with(|t| t.borrow_mut().insert(policy)) {
        // SAFETY: `env` is the caller's live environment.
        Some(h) => unsafe { ret_f64(env, h) },
        None => ptr::null_mut(),
    }
}

/// Runs `f` on the policy a handle argument names, borrowed from this
/// thread's table for the call (no JS runs meanwhile, so nothing releases it);
/// a TypeError for anything else.
unsafe fn with_policy(
    env: sys::napi_env,
    h: sys::napi_value,
    f: impl FnOnce(&PermissionPolicy) -> sys::napi_value,
) -> sys::napi_value {
    // SAFETY: the caller's contract: `env` is live and `h` one of its values.
    let h = unsafe { handle_number(env, h) };
    POLICIES.with(|t| match t.borrow().get(h) {
        Some(p) => f(p),
        // SAFETY: `env` is live; the message is NUL-terminated.
        None => unsafe { throw_type_error(env, b"expected a policy handle\0") },
    })
}

unsafe fn ret_f64(env: sys::napi_env, x: f64) -> sys::napi_value {
    let mut out = ptr::null_mut();
    // SAFETY: `out` is a live local the call writes one napi_value into.
    unsafe { sys::napi_create_double(env, x, &mut out) };
    out
}

/// Stack buffers (left uninitialised: zeroing a 4 KiB path buffer was 7-10%
/// of a check; V8 writes the bytes that are read): every path, payload string and capability id within its
/// limit is copied in one call. URLs up to 2 KiB likewise; longer ones (the
/// limit is 64 KiB) are measured first and copied to the heap.
const PATH_BUF: usize = buf_len(MAX_PATH_BYTES);
const PAYLOAD_BUF: usize = buf_len(crate::capability::MAX_PAYLOAD_STRING_BYTES);
const URL_BUF: usize = 2048;
/// Longer than every capability id; a longer id is unknown.
const MAX_ID_BYTES: usize = 59;
const ID_BUF: usize = buf_len(MAX_ID_BYTES);
const NAME_BUF: usize = buf_len(crate::policy::MAX_NAME_BYTES);
/// Manifest text up to 2 KiB is copied on the stack; longer text is measured and copied to the heap.
const MANIFEST_BUF: usize = 2048;

/// `checkFs(handle, path, mode)`: mode 0 read, 1 write (2/3: with resolveSymlinks).
unsafe extern "C" fn check_fs(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: Node calls this with a live `env` and `info` (the helpers'
    // contract); `p` is borrowed from this thread's table for the call.
    guarded(env, || unsafe {
        let [h, path, mode] = args::<3>(env, info);
        with_policy(env, h, |p| {
            let mut m = 0u32;
            if sys::napi_get_value_uint32(env, mode, &mut m) != OK || m > (fs_bits::WRITE | fs_bits::RESOLVE) {
                return throw_type_error(env, b"mode must be 0-3\0");
            }
            let fs_mode = if m & fs_bits::WRITE != 0 { FsMode::Write } else { FsMode::Read };
            let mut buf = [MaybeUninit::<u8>::uninit(); PATH_BUF];
            let mut heap = Vec::new();
            let code = match string(env, path, &mut buf, MAX_PATH_BYTES, &mut heap) {
                Str::Ok(s) if m & fs_bits::RESOLVE != 0 => p.check_fs_resolved(s, fs_mode).code(),
                Str::Ok(s) => p.check_fs(s, fs_mode).code(),
                Str::TooLong => Decision::deny(fs_mode.capability(), DenyReason::InvalidPath).code(),
                Str::NotString => return throw_type_error(env, b"path must be a string\0"),
            };
            ret_u32(env, code)
        })
    })
}

/// `checkFetch(handle, url)`.
unsafe extern "C" fn check_fetch(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: as in `check_fs`: live `env`/`info`.
    guarded(env, || unsafe {
        let [h, url] = args::<2>(env, info);
        with_policy(env, h, |p| {
            let mut buf = [MaybeUninit::<u8>::uninit(); URL_BUF];
            let mut heap = Vec::new();
            let code = match string(env, url, &mut buf, crate::fetch::MAX_URL_BYTES, &mut heap) {
                Str::Ok(s) => p.check_fetch(s).code(),
                Str::TooLong => Decision::deny(Capability::Fetch, DenyReason::InvalidUrl).code(),
                Str::NotString => return throw_type_error(env, b"url must be a string\0"),
            };
            ret_u32(env, code)
        })
    })
}

/// `checkCapability(handle, id, field | null, second?)`: `second` is the
/// second payload field of a two-field capability (`secrets.use`: `url`).
unsafe extern "C" fn check_capability(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: as in `check_fs`: live `env`/`info`.
    guarded(env, || unsafe {
        let [h, id, field, second] = args::<4>(env, info);
        with_policy(env, h, |p| {
            let mut idbuf = [MaybeUninit::<u8>::uninit(); ID_BUF];
            let mut idheap = Vec::new();
            let id = match string(env, id, &mut idbuf, MAX_ID_BYTES, &mut idheap) {
                Str::Ok(s) => s,
                _ => return ret_u32(env, Decision::deny(Capability::Unknown, DenyReason::UnknownCapability).code()),
            };
            let mut buf = [MaybeUninit::<u8>::uninit(); PAYLOAD_BUF];
            let mut heap = Vec::new();
            let code = if is_nullish(env, field) {
                p.check_capability_field(id, None).code()
            } else {
                match string(env, field, &mut buf, crate::capability::MAX_PAYLOAD_STRING_BYTES, &mut heap) {
                    Str::Ok(s) if is_nullish(env, second) => p.check_capability_field(id, Some(s)).code(),
                    // A two-field payload (`secrets.use`: name, url): the second
                    // field through the same copy, with the same 4096-byte limit.
                    Str::Ok(s) => {
                        let mut buf2 = [MaybeUninit::<u8>::uninit(); PAYLOAD_BUF];
                        let mut heap2 = Vec::new();
                        match string(env, second, &mut buf2, crate::capability::MAX_PAYLOAD_STRING_BYTES, &mut heap2) {
                            Str::Ok(s2) => p.check_capability_fields(id, Some(s), Some(s2)).code(),
                            Str::TooLong | Str::NotString => match Capability::from_id(id) {
                                Some(cap) => Decision::deny(cap, DenyReason::InvalidPayload).code(),
                                None => Decision::deny(Capability::Unknown, DenyReason::UnknownCapability).code(),
                            },
                        }
                    }
                    Str::TooLong | Str::NotString => match Capability::from_id(id) {
                        Some(cap) => Decision::deny(cap, DenyReason::InvalidPayload).code(),
                        None => Decision::deny(Capability::Unknown, DenyReason::UnknownCapability).code(),
                    },
                }
            };
            ret_u32(env, code)
        })
    })
}

/// The Rust budget arithmetic (`src/budget.rs`) straight to JS, for the test
/// suite only: `BudgetTracker` does the arithmetic in JS (`lib/budget.js`,
/// the Node-API call cost more than the arithmetic), and
/// `__test__/budget-parity.test.js` drives both with the same readings. The
/// shipped addon has none of these.
#[cfg(feature = "test-hooks")]
mod budget {
    use std::ptr;

    use napi::sys;

    use super::super::handles::{BUDGETS, POLICIES};
    use super::super::wire::{code, invalid_sample_code, io};
    use super::{
        args, guarded, handle_number, is_nullish, number, ret_f64, ret_u32, throw_error, throw_type_error, OK,
    };
    use crate::budget::{BudgetState, BudgetStatus, Sample};
    use crate::error::BudgetKind;

    /// `budgetCreate(policyHandle, now, cpu?, rss?, graceMs, unmeasured)`: a
    /// budget handle (a number, never negative), or a negated code (the layout is [`code`]): the invalid-sample
    /// code, or `UNMEASURED` with the budget index for a budget with no sampler
    /// that `unmeasured` (a bit set by budget index) does not declare measured elsewhere.
    pub(super) unsafe extern "C" fn budget_create(
        env: sys::napi_env,
        info: sys::napi_callback_info,
    ) -> sys::napi_value {
        // SAFETY: as in `check_fs`: live `env`/`info`. The state moves into this
        // thread's budget table; the test releases it (rawRelease).
        guarded(env, || unsafe {
            let [h, now, cpu, rss, grace, unmeasured] = args::<6>(env, info);
            let h = handle_number(env, h);
            let Some(budgets) = POLICIES.with(|t| t.borrow().get(h).map(|p| p.budgets())) else {
                return throw_type_error(env, b"expected a policy handle\0");
            };
            let mut declared = 0u32;
            if sys::napi_get_value_uint32(env, unmeasured, &mut declared) != OK || declared > 7 {
                return throw_type_error(env, b"unmeasured must be a budget bit set\0");
            }
            let opt = |v| if is_nullish(env, v) { None } else { Some(number(env, v).unwrap_or(f64::NAN)) };
            let start =
                Sample { now_ms: number(env, now).unwrap_or(f64::NAN), cpu_time_ms: opt(cpu), rss_mb: opt(rss) };
            let declared = BudgetKind::ALL.iter().copied().filter(|k| declared & (1 << k.index()) != 0);
            let unmeasured =
                crate::budget::Measured { cpu_time_ms: start.cpu_time_ms.is_some(), rss_mb: start.rss_mb.is_some() }
                    .unmeasured(&budgets, declared);
            if let Some(kind) = unmeasured {
                return ret_f64(env, -f64::from(code::UNMEASURED | (kind.index() << code::FIELD_SHIFT)));
            }
            match BudgetState::new(budgets, start, number(env, grace).unwrap_or(f64::NAN)) {
                Ok(state) => match BUDGETS.with(|t| t.borrow_mut().insert(state)) {
                    Some(handle) => ret_f64(env, handle),
                    None => throw_error(env, b"could not create a budget handle (this thread's table is full)\0"),
                },
                Err(e) => ret_f64(env, -f64::from(invalid_sample_code(e.field))),
            }
        })
    }

    /// `budgetRecord(handle, io: Float64Array(io::LEN))`: the readings are
    /// passed in the input slots of [`io`] so the call converts no JS numbers.
    /// Returns the result code ([`code`]: `OK`, `EXCEEDED`, or `INVALID_SAMPLE`
    /// with the field index; the budgets newly breached from `FRESH_SHIFT`) and
    /// writes the status into the output slots of [`io`]. The array is looked up on
    /// every call (never cached), so a detached buffer is a TypeError, not a
    /// dangling pointer; one over a SharedArrayBuffer (which another thread could
    /// write while we read) is a TypeError too. The JS memory is only ever read
    /// and written by value through the raw pointer: no Rust reference into it.
    pub(super) unsafe extern "C" fn budget_record(
        env: sys::napi_env,
        info: sys::napi_callback_info,
    ) -> sys::napi_value {
        // SAFETY: as in `check_fs`: live `env`/`info`; `state` is borrowed
        // mutably from this thread's table for the call (no JS runs meanwhile).
        // `data` is checked below before any access.
        guarded(env, || unsafe {
            let [h, io] = args::<2>(env, info);
            let h = handle_number(env, h);
            BUDGETS.with(|t| {
                let mut t = t.borrow_mut();
                let Some(state) = t.get_mut(h) else {
                    return throw_type_error(env, b"expected a budget handle\0");
                };
                let Some(io) = F64Io::of(env, io) else {
                    return throw_type_error(
                        env,
                        b"io must be an ArrayBuffer of at least 9 f64 (not shared, not detached)\0",
                    );
                };
                let flags = io.get(io::PRESENCE) as u32;
                let sample = Sample {
                    now_ms: io.get(io::NOW),
                    cpu_time_ms: (flags & io::CPU_PRESENT != 0).then(|| io.get(io::CPU_TIME_MS)),
                    rss_mb: (flags & io::RSS_PRESENT != 0).then(|| io.get(io::RSS_MB)),
                };
                let code = match (*state).record(sample) {
                    Ok((status, new)) => {
                        let out = match status {
                            BudgetStatus::Ok { elapsed_ms, cpu_percent, memory_mb } => {
                                [1.0, elapsed_ms, cpu_percent.unwrap_or(-1.0), memory_mb.unwrap_or(-1.0), 0.0]
                            }
                            BudgetStatus::Exceeded(b) => {
                                [0.0, b.elapsed_ms, b.budget.index() as f64, b.limit, b.observed]
                            }
                        };
                        let slots =
                            [io::OK, io::ELAPSED_MS, io::CPU_PERCENT_OR_BUDGET, io::MEMORY_MB_OR_LIMIT, io::OBSERVED];
                        for (slot, x) in slots.into_iter().zip(out) {
                            io.set(slot, x);
                        }
                        (if status.is_ok() { code::OK } else { code::EXCEEDED }) | ((new.0 as u32) << code::FRESH_SHIFT)
                    }
                    Err(e) => invalid_sample_code(e.field),
                };
                ret_u32(env, code)
            })
        })
    }

    /// Nine f64 slots at the start of an ordinary (non-shared, attached)
    /// ArrayBuffer, accessed by value through a raw pointer only. The caller
    /// passes a Float64Array's buffer, not the array: a typed array's info
    /// costs Node a test of every element type, a buffer's is one pointer and
    /// one length.
    struct F64Io {
        data: *mut f64,
    }

    impl F64Io {
        /// `None` unless `v` is an ArrayBuffer (`napi_is_arraybuffer` is false for
        /// a SharedArrayBuffer and for any view) of at least 9 f64, not detached
        /// (a detached one reports length 0).
        unsafe fn of(env: sys::napi_env, v: sys::napi_value) -> Option<Self> {
            let mut plain = false;
            // SAFETY: `v` is a live argument; `plain` is a live local.
            if unsafe { sys::napi_is_arraybuffer(env, v, &mut plain) } != OK || !plain {
                return None;
            }
            let mut data = ptr::null_mut();
            let mut len = 0usize;
            // SAFETY: `v` is an ArrayBuffer (checked above); the out-pointers are live locals.
            if unsafe { sys::napi_get_arraybuffer_info(env, v, &mut data, &mut len) } != OK
                || data.is_null()
                || len < io::LEN * std::mem::size_of::<f64>()
            {
                return None;
            }
            Some(Self { data: data as *mut f64 })
        }

        fn get(&self, i: usize) -> f64 {
            assert!(i < io::LEN);
            // SAFETY: `of` checked that `data` holds at least 9 f64 of an
            // unshared, attached ArrayBuffer, and only this thread runs JS on it
            // while the callback runs; read by value, unaligned to assume nothing.
            unsafe { self.data.add(i).read_unaligned() }
        }

        fn set(&self, i: usize, x: f64) {
            assert!(i < io::LEN);
            // SAFETY: as in `get`; written by value, no reference formed.
            unsafe { self.data.add(i).write_unaligned(x) }
        }
    }

    /// `budgetElapsed(handle)`.
    pub(super) unsafe extern "C" fn budget_elapsed(
        env: sys::napi_env,
        info: sys::napi_callback_info,
    ) -> sys::napi_value {
        // SAFETY: as in `check_fs`: live `env`/`info`.
        guarded(env, || unsafe {
            let [h] = args::<1>(env, info);
            let h = handle_number(env, h);
            match BUDGETS.with(|t| t.borrow().get(h).map(BudgetState::elapsed_ms)) {
                Some(ms) => ret_f64(env, ms),
                None => throw_type_error(env, b"expected a budget handle\0"),
            }
        })
    }
}

/// `compile(json, plugin, platform)`: the fast path of `compilePolicy`
/// (`platform` is its index in the wire's `platforms`: 0 posix, 1 win32).
/// The new policy's handle, or `undefined` for anything refused (the
/// manifest, the plugin id, the platform, a full table): the caller then
/// calls `compilePolicy`, which throws the error with its details. The
/// strings cross through [`string`] (no per-argument allocation for the
/// plugin id; the manifest text copied once).
unsafe extern "C" fn compile(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: as in `check_fs`: live `env`/`info`.
    guarded(env, || unsafe {
        let [json, plugin, platform] = args::<3>(env, info);
        let mut p = 0u32;
        if sys::napi_get_value_uint32(env, platform, &mut p) != OK {
            return ptr::null_mut();
        }
        let Some(&platform) = crate::platform::Platform::ALL.get(p as usize) else {
            return ptr::null_mut();
        };
        let mut idbuf = [MaybeUninit::<u8>::uninit(); NAME_BUF];
        let mut idheap = Vec::new();
        let Str::Ok(plugin) = string(env, plugin, &mut idbuf, crate::policy::MAX_NAME_BYTES, &mut idheap) else {
            return ptr::null_mut();
        };
        let mut buf = [MaybeUninit::<u8>::uninit(); MANIFEST_BUF];
        let mut heap = Vec::new();
        let Str::Ok(json) = string(env, json, &mut buf, isize::MAX as usize / 2, &mut heap) else {
            return ptr::null_mut();
        };
        let options = crate::policy::PolicyOptions::new(plugin).platform(platform);
        match PermissionPolicy::from_json(json, options) {
            Ok(policy) => policy_handle(env, Arc::new(policy)),
            Err(_) => ptr::null_mut(),
        }
    })
}

/// `release(handle)`: frees what a policy or budget handle names (the
/// FinalizationRegistry of `lib/policy.js` calls it once the owner is
/// collected); anything else is ignored.
unsafe extern "C" fn release(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: as in `check_fs`: live `env`/`info`.
    guarded(env, || unsafe {
        let [h] = args::<1>(env, info);
        handles::release(handle_number(env, h));
        ptr::null_mut()
    })
}

/// Panics on purpose inside a raw callback (see `__panicForTesting`).
#[cfg(feature = "test-hooks")]
unsafe extern "C" fn panic_for_testing(env: sys::napi_env, _info: sys::napi_callback_info) -> sys::napi_value {
    guarded(env, || panic!("deliberate panic for the test suite"))
}

type Callback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

const FUNCTIONS: &[(&[u8], Callback)] = &[
    #[cfg(feature = "test-hooks")]
    (b"__rawPanicForTesting\0", panic_for_testing),
    (b"rawCheckFs\0", check_fs),
    (b"rawCheckFetch\0", check_fetch),
    (b"rawCheckCapability\0", check_capability),
    #[cfg(feature = "test-hooks")]
    (b"rawBudgetCreate\0", budget::budget_create),
    #[cfg(feature = "test-hooks")]
    (b"rawBudgetRecord\0", budget::budget_record),
    #[cfg(feature = "test-hooks")]
    (b"rawBudgetElapsed\0", budget::budget_elapsed),
    (b"rawRelease\0", release),
    (b"rawCompile\0", compile),
];

/// Adds the raw functions to `exports`.
pub(crate) unsafe fn register(env: sys::napi_env, exports: sys::napi_value) -> bool {
    for &(name, cb) in FUNCTIONS {
        let mut f = ptr::null_mut();
        // SAFETY: `env` and `exports` come from module init; every name is a
        // NUL-terminated literal whose length without the NUL is passed; `f` is a live local.
        let ok = unsafe {
            sys::napi_create_function(
                env,
                name.as_ptr() as *const c_char,
                (name.len() - 1) as isize,
                Some(cb),
                ptr::null_mut(),
                &mut f,
            ) == OK
                && sys::napi_set_named_property(env, exports, name.as_ptr() as *const c_char, f) == OK
        };
        if !ok {
            return false;
        }
    }
    true
}
