//! The WASI gate's wire (`lib/wasi.js` is its one caller): the core's
//! compound fs operations ([`crate::wasi`]) on a policy handle, decided
//! uncounted. JS counts a refusal once through its checker, as every other
//! check (the OpenTelemetry meter lives in JS).
//!
//! A call crosses as a [`WasiCall`] (the import's name and its arguments,
//! paths already joined to the host directories of their fds); its answer
//! as a [`WasiAnswer`]. `leftMs`: the wall-clock budget left for the host's
//! work on the call (`null`: none); past it the answer is `outOfBudget` and
//! the host ends the guest with its budget breach.

use std::time::{Duration, Instant};

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::wire::{policy_of, WireError};
use crate::wasi::{self, Deadline, FsOps, Outcome, PathCall};
use crate::{Decision, FsMode};

/// One preview1 path call. `op` names the import; the fields it reads:
/// `path_open` `path dirflags oflags rightsBase fdflags`; `path_filestat_get`
/// and `path_filestat_set_times` `path flags`; `path_readlink`,
/// `path_create_directory`, `path_remove_directory`, `path_unlink_file`
/// `path`; `path_rename` `oldPath newPath`; `path_link` `oldPath oldFlags
/// newPath`; `path_symlink` `target newPath`. `rightsBase`: a decimal u64.
#[napi(object)]
pub struct WasiCall {
    pub op: String,
    pub path: Option<String>,
    pub old_path: Option<String>,
    pub new_path: Option<String>,
    pub target: Option<String>,
    pub flags: Option<u32>,
    pub dirflags: Option<u32>,
    pub oflags: Option<u32>,
    pub old_flags: Option<u32>,
    pub fdflags: Option<u32>,
    pub rights_base: Option<String>,
}

/// How a call was decided: `errno` for the guest (0: perform it); `code`:
/// the decision code of a denial (0 otherwise); `paths`: each path as
/// node:wasi reads it, checked; `kernelPaths`: as the kernel reads it;
/// `base`: `path_open`'s path string for the new fd; `outOfBudget`: the
/// budget ran out first.
#[napi(object)]
pub struct WasiAnswer {
    pub errno: u32,
    pub code: u32,
    pub paths: Option<Vec<String>>,
    pub kernel_paths: Option<Vec<String>>,
    pub base: Option<String>,
    pub out_of_budget: bool,
}

fn answer(o: Outcome) -> WasiAnswer {
    let errno = u32::from(o.errno());
    match o {
        Outcome::Allowed { paths, base } => WasiAnswer {
            errno,
            code: 0,
            kernel_paths: Some(paths.iter().map(|p| p.kernel.clone()).collect()),
            paths: Some(paths.into_iter().map(|p| p.lexical).collect()),
            base,
            out_of_budget: false,
        },
        Outcome::Denied(d) => WasiAnswer {
            errno,
            code: Decision::Denied(d).code(),
            paths: None,
            kernel_paths: None,
            base: None,
            out_of_budget: false,
        },
        Outcome::OutOfBudget => {
            WasiAnswer { errno, code: 0, paths: None, kernel_paths: None, base: None, out_of_budget: true }
        }
        _ => WasiAnswer { errno, code: 0, paths: None, kernel_paths: None, base: None, out_of_budget: false },
    }
}

/// The budget of one call: `left_ms` from now (non-finite or absent: none;
/// negative: already out).
fn deadline(left_ms: Option<f64>) -> Deadline {
    match left_ms {
        Some(ms) if ms.is_finite() => Deadline(Some(
            Duration::try_from_secs_f64(ms.max(0.0) / 1000.0)
                .ok()
                .and_then(|d| Instant::now().checked_add(d))
                .unwrap_or_else(Instant::now),
        )),
        _ => Deadline(None),
    }
}

fn arg(env: &Env, v: Option<String>, name: &str) -> Result<String> {
    v.ok_or_else(|| WireError::Type(format!("a WASI call's {name} must be a string")).throw(env))
}

/// The call as the core reads it, or a TypeError naming what is missing.
fn path_call(env: &Env, c: WasiCall) -> Result<PathCall> {
    let flags = |v: Option<u32>| v.unwrap_or(0);
    Ok(match c.op.as_str() {
        "path_open" => PathCall::Open {
            path: arg(env, c.path, "path")?,
            dirflags: flags(c.dirflags),
            oflags: flags(c.oflags),
            // A rights value that does not read as a u64: every right (a write).
            rights_base: c.rights_base.as_deref().map_or(0, |r| r.parse::<u64>().unwrap_or(u64::MAX)),
            fdflags: flags(c.fdflags),
        },
        "path_filestat_get" => PathCall::FilestatGet { path: arg(env, c.path, "path")?, flags: flags(c.flags) },
        "path_filestat_set_times" => {
            PathCall::FilestatSetTimes { path: arg(env, c.path, "path")?, flags: flags(c.flags) }
        }
        "path_readlink" => PathCall::Readlink { path: arg(env, c.path, "path")? },
        "path_create_directory" => PathCall::CreateDirectory { path: arg(env, c.path, "path")? },
        "path_remove_directory" => PathCall::RemoveDirectory { path: arg(env, c.path, "path")? },
        "path_unlink_file" => PathCall::UnlinkFile { path: arg(env, c.path, "path")? },
        "path_rename" => {
            PathCall::Rename { old: arg(env, c.old_path, "oldPath")?, new: arg(env, c.new_path, "newPath")? }
        }
        "path_link" => PathCall::Link {
            old: arg(env, c.old_path, "oldPath")?,
            old_flags: flags(c.old_flags),
            new: arg(env, c.new_path, "newPath")?,
        },
        "path_symlink" => {
            PathCall::Symlink { target: arg(env, c.target, "target")?, new: arg(env, c.new_path, "newPath")? }
        }
        op => return Err(WireError::Type(format!("not a gated WASI path call: {op:?}")).throw(env)),
    })
}

/// One path call on the policy (uncounted): [`FsOps::path_call`].
#[napi(catch_unwind)]
pub fn wasi_path_call(env: Env, handle: Unknown<'_>, call: WasiCall, left_ms: Option<f64>) -> Result<WasiAnswer> {
    let p = policy_of(&env, &handle)?;
    let call = path_call(&env, call)?;
    Ok(answer(FsOps::new(&p).path_call(&call, &mut deadline(left_ms))))
}

/// An fd-level call on the fd's recorded path (uncounted): [`FsOps::fd_call`].
#[napi(catch_unwind)]
pub fn wasi_fd_call(
    env: Env,
    handle: Unknown<'_>,
    path: String,
    write: bool,
    capable: bool,
    reread: bool,
    left_ms: Option<f64>,
) -> Result<WasiAnswer> {
    let p = policy_of(&env, &handle)?;
    let mode = if write { FsMode::Write } else { FsMode::Read };
    Ok(answer(FsOps::new(&p).fd_call(&path, mode, capable, reread, &mut deadline(left_ms))))
}

/// One path check under every reading (uncounted): [`FsOps::check_path`].
#[napi(catch_unwind)]
pub fn wasi_check_path(
    env: Env,
    handle: Unknown<'_>,
    path: String,
    write: bool,
    follow: bool,
    left_ms: Option<f64>,
) -> Result<WasiAnswer> {
    let p = policy_of(&env, &handle)?;
    let mode = if write { FsMode::Write } else { FsMode::Read };
    Ok(answer(match FsOps::new(&p).check_path(&path, mode, follow, &mut deadline(left_ms)) {
        Ok(c) => Outcome::Allowed { paths: vec![c], base: None },
        Err(o) => o,
    }))
}

/// The mode a `path_open` needs: `true` for a write ([`wasi::open_mode`]).
#[napi(catch_unwind)]
pub fn wasi_open_mode(oflags: u32, rights_base: String, fdflags: u32) -> bool {
    let rights = rights_base.parse::<u64>().unwrap_or(u64::MAX);
    wasi::open_mode(oflags, rights, fdflags) == FsMode::Write
}

/// The call table ([`wasi::CALLS_JSON`]), read once by `lib/wasi.js`.
#[napi(catch_unwind)]
pub fn wasi_calls() -> String {
    wasi::CALLS_JSON.to_owned()
}
