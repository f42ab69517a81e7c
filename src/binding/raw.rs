//! Hot paths registered directly on Node-API (`napi::sys`): no per-call
//! napi-rs layers, strings copied into a stack buffer, decisions returned as
//! numeric codes. Policy and budget handles are externals carrying a type tag
//! that every call checks, so a foreign external is a TypeError, never a
//! reinterpreted pointer. Every callback catches panics.

use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::Arc;

use napi::sys;

use crate::budget::{BudgetState, BudgetStatus, Sample};
use crate::error::{Capability, Decision, DenyReason};
use crate::fs::{FsMode, MAX_PATH_BYTES};
use crate::policy::PermissionPolicy;

const POLICY_TAG: sys::napi_type_tag =
    sys::napi_type_tag { lower: 0x7375_6176_6570_6c61, upper: 0x6e2d_706f_6c69_6379 };
const BUDGET_TAG: sys::napi_type_tag =
    sys::napi_type_tag { lower: 0x7375_6176_6570_6c61, upper: 0x6e2d_6275_6467_6574 };

const OK: sys::napi_status = sys::Status::napi_ok;

/// A string argument, copied into `buf` (or the heap when it does not fit and `grow` allows).
enum Str<'a> {
    Ok(&'a str),
    TooLong,
    NotString,
}

unsafe fn throw_type_error(env: sys::napi_env, msg: &[u8]) -> sys::napi_value {
    unsafe { sys::napi_throw_type_error(env, ptr::null(), msg.as_ptr() as *const c_char) };
    ptr::null_mut()
}

unsafe fn throw_error(env: sys::napi_env, msg: &[u8]) -> sys::napi_value {
    unsafe { sys::napi_throw_error(env, ptr::null(), msg.as_ptr() as *const c_char) };
    ptr::null_mut()
}

unsafe fn ret_u32(env: sys::napi_env, x: u32) -> sys::napi_value {
    let mut out = ptr::null_mut();
    unsafe { sys::napi_create_uint32(env, x, &mut out) };
    out
}

unsafe fn args<const N: usize>(env: sys::napi_env, info: sys::napi_callback_info) -> [sys::napi_value; N] {
    let mut argc = N;
    let mut argv = [ptr::null_mut(); N];
    unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut()) };
    // Missing arguments come back as `undefined`, which every reader rejects.
    argv
}

unsafe fn tagged<T>(env: sys::napi_env, v: sys::napi_value, tag: &sys::napi_type_tag) -> Option<*mut T> {
    let mut ok = false;
    if unsafe { sys::napi_check_object_type_tag(env, v, tag, &mut ok) } != OK || !ok {
        return None;
    }
    let mut data = ptr::null_mut();
    if unsafe { sys::napi_get_value_external(env, v, &mut data) } != OK || data.is_null() {
        return None;
    }
    Some(data as *mut T)
}

/// Copies a JS string as UTF-8 into `buf`; `TooLong` when it has more than `max` bytes.
unsafe fn string<'a>(
    env: sys::napi_env,
    v: sys::napi_value,
    buf: &'a mut [u8],
    max: usize,
    heap: &'a mut Vec<u8>,
) -> Str<'a> {
    let mut len = 0usize;
    let status =
        unsafe { sys::napi_get_value_string_utf8(env, v, buf.as_mut_ptr() as *mut c_char, buf.len(), &mut len) };
    if status != OK {
        return Str::NotString;
    }
    if len + 1 < buf.len() {
        return if len > max { Str::TooLong } else { std::str::from_utf8(&buf[..len]).map_or(Str::TooLong, Str::Ok) };
    }
    // Filled the buffer: maybe truncated. Ask for the real length.
    let mut full = 0usize;
    unsafe { sys::napi_get_value_string_utf8(env, v, ptr::null_mut(), 0, &mut full) };
    if full > max {
        return Str::TooLong;
    }
    heap.resize(full + 1, 0);
    unsafe { sys::napi_get_value_string_utf8(env, v, heap.as_mut_ptr() as *mut c_char, heap.len(), &mut len) };
    std::str::from_utf8(&heap[..len]).map_or(Str::TooLong, Str::Ok)
}

unsafe fn number(env: sys::napi_env, v: sys::napi_value) -> Option<f64> {
    let mut x = 0f64;
    (unsafe { sys::napi_get_value_double(env, v, &mut x) } == OK).then_some(x)
}

unsafe fn is_nullish(env: sys::napi_env, v: sys::napi_value) -> bool {
    let mut t = 0;
    unsafe { sys::napi_typeof(env, v, &mut t) };
    t == sys::ValueType::napi_undefined || t == sys::ValueType::napi_null
}

fn guarded(env: sys::napi_env, f: impl FnOnce() -> sys::napi_value) -> sys::napi_value {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => unsafe { throw_error(env, b"api-sandbox-permissions: internal error (panic caught)\0") },
    }
}

unsafe extern "C" fn finalize_policy(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    drop(unsafe { Arc::from_raw(data as *const PermissionPolicy) });
}

unsafe extern "C" fn finalize_budget(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    drop(unsafe { Box::from_raw(data as *mut BudgetState) });
}

/// A tagged external owning one reference to the policy.
pub(crate) unsafe fn policy_handle(env: sys::napi_env, policy: Arc<PermissionPolicy>) -> sys::napi_value {
    let raw = Arc::into_raw(policy) as *mut c_void;
    let mut out = ptr::null_mut();
    if unsafe { sys::napi_create_external(env, raw, Some(finalize_policy), ptr::null_mut(), &mut out) } != OK {
        drop(unsafe { Arc::from_raw(raw as *const PermissionPolicy) });
        return ptr::null_mut();
    }
    unsafe { sys::napi_type_tag_object(env, out, &POLICY_TAG) };
    out
}

const PATH_BUF: usize = MAX_PATH_BYTES + 2;

/// `checkFs(handle, path, mode)`: mode 0 read, 1 write (2/3: with resolveSymlinks).
unsafe extern "C" fn check_fs(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guarded(env, || unsafe {
        let [h, path, mode] = args::<3>(env, info);
        let Some(p) = tagged::<PermissionPolicy>(env, h, &POLICY_TAG) else {
            return throw_type_error(env, b"expected a policy handle\0");
        };
        let mut m = 0u32;
        if sys::napi_get_value_uint32(env, mode, &mut m) != OK || m > 3 {
            return throw_type_error(env, b"mode must be 0-3\0");
        }
        let fs_mode = if m & 1 == 1 { FsMode::Write } else { FsMode::Read };
        let mut buf = [0u8; PATH_BUF];
        let mut heap = Vec::new();
        let code = match string(env, path, &mut buf, MAX_PATH_BYTES, &mut heap) {
            Str::Ok(s) if m & 2 == 2 => (*p).check_fs_resolved(s, fs_mode).code(),
            Str::Ok(s) => (*p).check_fs(s, fs_mode).code(),
            Str::TooLong => Decision::deny(fs_mode.capability(), DenyReason::InvalidPath).code(),
            Str::NotString => return throw_type_error(env, b"path must be a string\0"),
        };
        ret_u32(env, code)
    })
}

/// `checkFetch(handle, url)`.
unsafe extern "C" fn check_fetch(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guarded(env, || unsafe {
        let [h, url] = args::<2>(env, info);
        let Some(p) = tagged::<PermissionPolicy>(env, h, &POLICY_TAG) else {
            return throw_type_error(env, b"expected a policy handle\0");
        };
        let mut buf = [0u8; 2048];
        let mut heap = Vec::new();
        let code = match string(env, url, &mut buf, crate::fetch::MAX_URL_BYTES, &mut heap) {
            Str::Ok(s) => (*p).check_fetch(s).code(),
            Str::TooLong => Decision::deny(Capability::Fetch, DenyReason::InvalidUrl).code(),
            Str::NotString => return throw_type_error(env, b"url must be a string\0"),
        };
        ret_u32(env, code)
    })
}

/// `checkCapability(handle, id, field | null)`.
unsafe extern "C" fn check_capability(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guarded(env, || unsafe {
        let [h, id, field] = args::<3>(env, info);
        let Some(p) = tagged::<PermissionPolicy>(env, h, &POLICY_TAG) else {
            return throw_type_error(env, b"expected a policy handle\0");
        };
        let mut idbuf = [0u8; 64];
        let mut idheap = Vec::new();
        let id = match string(env, id, &mut idbuf, 62, &mut idheap) {
            Str::Ok(s) => s,
            _ => return ret_u32(env, Decision::deny(Capability::Unknown, DenyReason::UnknownCapability).code()),
        };
        let mut buf = [0u8; PATH_BUF];
        let mut heap = Vec::new();
        let code = if is_nullish(env, field) {
            (*p).check_capability_field(id, None).code()
        } else {
            match string(env, field, &mut buf, crate::capability::MAX_PAYLOAD_STRING_BYTES, &mut heap) {
                Str::Ok(s) => (*p).check_capability_field(id, Some(s)).code(),
                Str::TooLong | Str::NotString => match Capability::from_id(id) {
                    Some(cap) => Decision::deny(cap, DenyReason::InvalidPayload).code(),
                    None => Decision::deny(Capability::Unknown, DenyReason::UnknownCapability).code(),
                },
            }
        };
        ret_u32(env, code)
    })
}

/// `budgetCreate(policyHandle, now, cpu?, rss?, graceMs)`: a budget handle, or a number (invalid-sample code).
unsafe extern "C" fn budget_create(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guarded(env, || unsafe {
        let [h, now, cpu, rss, grace] = args::<5>(env, info);
        let Some(p) = tagged::<PermissionPolicy>(env, h, &POLICY_TAG) else {
            return throw_type_error(env, b"expected a policy handle\0");
        };
        let opt = |v| if is_nullish(env, v) { None } else { Some(number(env, v).unwrap_or(f64::NAN)) };
        let start = Sample { now_ms: number(env, now).unwrap_or(f64::NAN), cpu_time_ms: opt(cpu), rss_mb: opt(rss) };
        match BudgetState::new((*p).budgets(), start, number(env, grace).unwrap_or(f64::NAN)) {
            Ok(state) => {
                let raw = Box::into_raw(Box::new(state)) as *mut c_void;
                let mut out = ptr::null_mut();
                if sys::napi_create_external(env, raw, Some(finalize_budget), ptr::null_mut(), &mut out) != OK {
                    drop(Box::from_raw(raw as *mut BudgetState));
                    return throw_error(env, b"could not create a budget handle\0");
                }
                sys::napi_type_tag_object(env, out, &BUDGET_TAG);
                out
            }
            Err(e) => ret_u32(env, invalid_code(e.field)),
        }
    })
}

fn invalid_code(field: &str) -> u32 {
    let f = match field {
        "now" => 0,
        "cpuTimeMs" => 1,
        "rssMb" => 2,
        _ => 3,
    };
    2 | (f << 8)
}

/// `budgetRecord(handle, io: Float64Array(9))`: the readings are passed in
/// `io[0..4]` (`now`, `cpuTimeMs`, `rssMb`, presence flags: bit 0 CPU, bit 1
/// RSS) so the call converts no JS numbers. Returns the result code (low
/// nibble 0 ok, 1 exceeded, 2 invalid sample with the field in bits 8+; bits
/// 4-6 the budgets newly breached) and writes the status into `io[4..9]`:
/// `[ok, elapsedMs, cpuPercent|-1, memoryMb|-1, 0]` or
/// `[0, elapsedMs, budgetIndex, limit, observed]`. The array is looked up on
/// every call (never cached), so a detached buffer is a TypeError, not a
/// dangling pointer.
unsafe extern "C" fn budget_record(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guarded(env, || unsafe {
        let [h, io] = args::<2>(env, info);
        let Some(state) = tagged::<BudgetState>(env, h, &BUDGET_TAG) else {
            return throw_type_error(env, b"expected a budget handle\0");
        };
        let mut kind = 0;
        let mut len = 0usize;
        let mut data = ptr::null_mut();
        if sys::napi_get_typedarray_info(env, io, &mut kind, &mut len, &mut data, ptr::null_mut(), ptr::null_mut())
            != OK
            || kind != sys::TypedarrayType::float64_array
            || len < 9
            || data.is_null()
        {
            return throw_type_error(env, b"io must be a Float64Array of at least 9\0");
        }
        let io = std::slice::from_raw_parts_mut(data as *mut f64, 9);
        let flags = io[3] as u32;
        let sample = Sample {
            now_ms: io[0],
            cpu_time_ms: (flags & 1 != 0).then_some(io[1]),
            rss_mb: (flags & 2 != 0).then_some(io[2]),
        };
        let code = match (*state).record(sample) {
            Ok((status, new)) => {
                match status {
                    BudgetStatus::Ok { elapsed_ms, cpu_percent, memory_mb } => {
                        io[4..9].copy_from_slice(&[
                            1.0,
                            elapsed_ms,
                            cpu_percent.unwrap_or(-1.0),
                            memory_mb.unwrap_or(-1.0),
                            0.0,
                        ]);
                    }
                    BudgetStatus::Exceeded(b) => {
                        io[4..9].copy_from_slice(&[0.0, b.elapsed_ms, b.budget.index() as f64, b.limit, b.observed]);
                    }
                }
                (if status.is_ok() { 0 } else { 1 }) | ((new.0 as u32) << 4)
            }
            Err(e) => invalid_code(e.field),
        };
        ret_u32(env, code)
    })
}

/// `budgetElapsed(handle)`.
unsafe extern "C" fn budget_elapsed(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guarded(env, || unsafe {
        let [h] = args::<1>(env, info);
        let Some(state) = tagged::<BudgetState>(env, h, &BUDGET_TAG) else {
            return throw_type_error(env, b"expected a budget handle\0");
        };
        let mut v = ptr::null_mut();
        sys::napi_create_double(env, (*state).elapsed_ms(), &mut v);
        v
    })
}

/// Panics on purpose inside a raw callback (see `__panicForTesting`).
unsafe extern "C" fn panic_for_testing(env: sys::napi_env, _info: sys::napi_callback_info) -> sys::napi_value {
    guarded(env, || panic!("deliberate panic for the test suite"))
}

type Callback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

/// Adds the raw functions to `exports`.
pub(crate) unsafe fn register(env: sys::napi_env, exports: sys::napi_value) -> bool {
    let fns: [(&[u8], Callback); 7] = [
        (b"__rawPanicForTesting\0", panic_for_testing),
        (b"rawCheckFs\0", check_fs),
        (b"rawCheckFetch\0", check_fetch),
        (b"rawCheckCapability\0", check_capability),
        (b"rawBudgetCreate\0", budget_create),
        (b"rawBudgetRecord\0", budget_record),
        (b"rawBudgetElapsed\0", budget_elapsed),
    ];
    for (name, cb) in fns {
        let mut f = ptr::null_mut();
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
