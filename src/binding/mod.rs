//! The Node-API binding: every `#[napi]` item, and every conversion between
//! JS and the core. `wire.rs` owns the encodings that cross (tables, codes,
//! the tracker's slot layout, cold result structs, and the one error
//! conversion); `raw.rs` the hot paths registered straight on Node-API.
//! `lib/native.js` is the one decoder on the JS side. Every entry point
//! catches panics, so a Rust panic becomes a JS error.
//!
//! Strings: the raw hot paths read theirs with `raw::string`, which never
//! returns a prefix. The napi-rs `String` arguments of `wire.rs` are read by
//! napi-rs as `napi_get_value_string_utf8` for the length (V8 `Utf8Length`),
//! then again into a buffer of exactly that length plus the NUL, so they are
//! whole strings too; the core counts every limit on them in UTF-8 bytes
//! (`MAX_URL_BYTES` in `fetch`, the manifest limits in `policy`). Lone
//! surrogates would arrive as U+FFFD: the JS side refuses ill-formed strings
//! before any of them is passed here.
//!
//! Test hooks (`__panicForTesting`, `__rawPanicForTesting`,
//! `__lockdownProbe`) exist only with the `test-hooks` cargo feature, which
//! the shipped addon is never built with (`scripts/test-hooks-addon.js`
//! builds a separate debug addon for the tests that need them).

mod handles;
mod raw;
pub mod wasi;
pub mod wire;

use napi::bindgen_prelude::*;
use napi_derive::napi;

/// Panics on purpose, inside the napi-rs layer, so the test suite can prove a
/// Rust panic reaches JS as an error and never aborts the process.
#[cfg(feature = "test-hooks")]
#[napi(catch_unwind, js_name = "__panicForTesting")]
pub fn panic_for_testing() {
    panic!("deliberate panic for the test suite");
}

/// Test probe for the process tier: raw `openat`, `socket` and `execve`
/// (of `/bin/true`, which never runs when denied), returning each errno
/// (0 when the call succeeded). Only meaningful after `lockdown()`.
#[cfg(feature = "test-hooks")]
#[napi(catch_unwind, js_name = "__lockdownProbe")]
pub fn lockdown_probe() -> Vec<i32> {
    #[cfg(all(feature = "lockdown", target_os = "linux"))]
    // SAFETY: plain syscalls with valid arguments: NUL-terminated C string
    // literals, NULL-terminated argv/envp arrays that outlive the call, and
    // descriptors closed only when the call returned one. `__errno_location`
    // is this thread's errno. A successful execve replaces the process, which
    // is what a test that runs this before lockdown would see.
    unsafe {
        let errno = || *libc::__errno_location();
        let fd = libc::openat(libc::AT_FDCWD, c"/etc/hostname".as_ptr(), libc::O_RDONLY);
        let open = if fd < 0 {
            errno()
        } else {
            libc::close(fd);
            0
        };
        let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        let sock = if s < 0 {
            errno()
        } else {
            libc::close(s);
            0
        };
        // execve only returns on failure; a success would replace this process, so probe it
        // with an argv that makes /bin/true exit 0 — the caller sees the process vanish.
        let argv = [c"true".as_ptr(), std::ptr::null()];
        let envp = [std::ptr::null()];
        let rc = libc::execve(c"/bin/true".as_ptr(), argv.as_ptr(), envp.as_ptr());
        let exec = if rc < 0 { errno() } else { 0 };
        vec![open, sock, exec]
    }
    #[cfg(not(all(feature = "lockdown", target_os = "linux")))]
    {
        vec![]
    }
}

/// Test switch: every checked open walks the path one component at a time,
/// as on a kernel without `openat2`, so the tests hold that path to the
/// same kernel oracle.
#[cfg(all(feature = "test-hooks", unix))]
#[napi(catch_unwind, js_name = "__openWalkForTesting")]
pub fn open_walk_for_testing(on: bool) {
    crate::open::FORCE_WALK.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Registers the raw hot-path functions (see `raw.rs`) next to the napi-rs ones.
#[napi(module_exports)]
pub fn init(exports: Object, env: Env) -> Result<()> {
    // SAFETY: `env` and `exports` are the live environment and exports object of module init.
    if unsafe { raw::register(env.raw(), exports.raw()) } {
        Ok(())
    } else {
        Err(Error::new(Status::GenericFailure, "could not register the raw functions"))
    }
}
