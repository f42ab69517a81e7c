//! An example Rust WASI host: wasmtime runs WASI preview1 guests, and every
//! path-taking preview1 call and every host import is checked with the
//! `api-sandbox-permissions` checker before it runs. A denial is the WASI
//! errno `EACCES` (2) for the guest and one increment of
//! `plugin.permission_denied_total`. Budgets: epoch interruption samples a
//! `BudgetTracker` (wall clock, and the guest thread's CPU time), and
//! a `ResourceLimiter` bounds the guest's memory: every linear memory and
//! table of the store summed against `memoryMb`, a growth past it a
//! `BUDGET_EXCEEDED` (memory) that ends the run. Epoch interruption fires only
//! in guest code, so the host calls that block (`poll_oneoff`, the `fetch`
//! import) are bounded by what is left of `wallClockMs` and, past it, end the
//! guest with the same breach, recorded through the same tracker.
//!
//! How the gate sits in front of wasmtime-wasi: the linker gets wasmtime-wasi's
//! preview1 functions (`add_to_linker_sync`), then the gated names are defined
//! again (shadowing) by functions that read the guest's path, check it, and
//! only then call wasmtime-wasi's own preview1 implementation
//! (`wasmtime_wasi::p1::wasi_snapshot_preview1::*`) with the same arguments.
//! Which call needs which check is data shared with the Node host
//! (`data/wasi-calls.json`): fd-level calls are checked with
//! their mode on the path recorded for the fd, sockets are refused, and an
//! import the table does not classify stops the host before it runs a guest.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use api_sandbox_permissions::budget::{
    Breach, BudgetStatus, BudgetTracker, Sample, Sampler, TrackerError, TrackerOptions,
};
use api_sandbox_permissions::error::{BudgetKind, Decision};
use api_sandbox_permissions::metrics::Instruments;
use api_sandbox_permissions::wasi::Outcome as GateOutcome;
use api_sandbox_permissions::wasi::{calls, Budget, CallGate, Checked, Deadline, PathCall, WasiGate};
use api_sandbox_permissions::{FsCheckOptions, FsMode, PermissionChecker, PermissionPolicy};
use opentelemetry::metrics::Meter;
use serde_json::json;
use wasmtime::{
    AsContextMut, Caller, Config, Engine, Extern, Linker, Module, ResourceLimiter, Store, UpdateDeadline, Val,
};
use wasmtime_wasi::p1::wasi_snapshot_preview1 as p1;
use wasmtime_wasi::p1::wasi_snapshot_preview1::WasiSnapshotPreview1;
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::runtime::in_tokio;
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtxBuilder};
use wiggle::GuestMemory;

/// WASI preview1 errno values as the guest reads them (`i32`): the core's
/// [`wasi::errno`], which decides them.
pub mod errno {
    use api_sandbox_permissions::wasi::errno as e;
    pub const SUCCESS: i32 = e::SUCCESS as i32;
    pub const ACCES: i32 = e::ACCES as i32;
    pub const BADF: i32 = e::BADF as i32;
    pub const FAULT: i32 = e::FAULT as i32;
    pub const EXIST: i32 = e::EXIST as i32;
    pub const ILSEQ: i32 = e::ILSEQ as i32;
    pub const INVAL: i32 = e::INVAL as i32;
    pub const IO: i32 = e::IO as i32;
    pub const LOOP: i32 = e::LOOP as i32;
    pub const PERM: i32 = e::PERM as i32;
    pub const NOTCAPABLE: i32 = e::NOTCAPABLE as i32;
}

/// Linear memories and tables one guest may declare (multi-memory guests included).
pub const MAX_MEMORIES: usize = 32;
/// See [`MAX_MEMORIES`].
pub const MAX_TABLES: usize = 32;
/// Bytes a table element holds in wasmtime (a pointer), counted against `memoryMb`.
const TABLE_ELEMENT_BYTES: usize = std::mem::size_of::<usize>();

/// One gated call as the host saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub op: String,
    pub what: String,
    pub capability: String,
    pub allowed: bool,
    pub reason: Option<String>,
}

/// Entries the trace keeps (the newest; older ones are dropped and counted).
pub const MAX_TRACE: usize = 10_000;
/// UTF-8 bytes of one trace entry's `what`, the `…` marker included.
pub const MAX_WHAT: usize = 256;

/// `text` cut to at most [`MAX_WHAT`] bytes at a char boundary, ending in `…`
/// when cut (as the Node host's `clip`): a guest path may be megabytes.
pub fn clip(text: &str) -> String {
    if text.len() <= MAX_WHAT {
        return text.to_owned();
    }
    let mut end = MAX_WHAT - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The gate: the core's [`WasiGate`] (every rule of a compound fs operation,
/// each refused call counted once) plus the trace of gated calls (bounded:
/// see [`Gate::record`]).
pub struct Gate {
    pub wasi: WasiGate,
    /// The newest [`MAX_TRACE`] gated calls, oldest first.
    pub calls: VecDeque<Call>,
    /// Trace entries dropped past [`MAX_TRACE`] (the oldest first).
    pub dropped_calls: u64,
}

/// How a gated call ends when it is not performed: an errno for the guest,
/// or the budget ran out during the host's work (the guest is ended with its breach).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    Errno(i32),
    OutOfBudget,
}

impl Gate {
    pub fn new(checker: PermissionChecker) -> Self {
        Self { wasi: WasiGate::new(checker), calls: VecDeque::new(), dropped_calls: 0 }
    }

    /// The checker the gate counts on.
    pub fn checker(&self) -> &PermissionChecker {
        self.wasi.checker()
    }

    /// Appends one trace entry, its `what` cut by [`clip`]; the trace keeps the
    /// newest [`MAX_TRACE`] entries, counting the ones it drops.
    pub fn record(&mut self, mut call: Call) {
        if call.what.len() > MAX_WHAT {
            call.what = clip(&call.what);
        }
        while self.calls.len() >= MAX_TRACE {
            self.calls.pop_front();
            self.dropped_calls += 1;
        }
        self.calls.push_back(call);
    }

    /// Records what the core decided for a call named `op` (`what`: the guest's
    /// names) and turns it into the host's answer.
    fn answer(&mut self, op: &str, what: &str, mode: FsMode, outcome: GateOutcome) -> Result<Vec<Checked>, Refused> {
        let what = clip(what);
        let (allowed, capability, reason) = match &outcome {
            GateOutcome::Denied(d) => (false, d.capability.as_str(), Some(d.reason.as_str().to_owned())),
            GateOutcome::OutOfBudget => return Err(Refused::OutOfBudget),
            _ => (true, mode.capability().as_str(), None),
        };
        self.record(Call { op: op.into(), what, capability: capability.into(), allowed, reason });
        match outcome {
            GateOutcome::Allowed { paths, .. } => Ok(paths),
            other => Err(Refused::Errno(i32::from(other.errno()))),
        }
    }

    /// A WASI path call through the core ([`WasiGate::path_call`]): `Ok` with
    /// its paths as checked to perform it, else the guest's errno (a denial:
    /// `EACCES`, counted once) or [`Refused::OutOfBudget`].
    pub fn path(&mut self, call: &PathCall, what: &str, budget: &mut dyn Budget) -> Result<Vec<Checked>, Refused> {
        let outcome = self.wasi.path_call(call, budget);
        self.answer(call.op(), what, call.mode(), outcome)
    }

    /// An fd-level call ([`WasiGate::fd_call`]): `mode` on the path recorded
    /// for the fd (already resolved when recorded, so checked lexically); a
    /// denial is `EACCES` (counted), an fd opened without the call's right
    /// `ENOTCAPABLE`, as preview1 says and node:wasi does.
    pub fn fd(&mut self, op: &str, path: &str, mode: FsMode, capable: bool, what: &str) -> Result<(), Refused> {
        let outcome = self.wasi.fd_call(path, mode, capable, false, &mut Deadline(None));
        if let GateOutcome::Denied(_) = outcome {
            self.answer(op, what, mode, outcome).map(|_| ())
        } else {
            match outcome.errno() {
                0 => Ok(()),
                e => Err(Refused::Errno(i32::from(e))),
            }
        }
    }

    /// A host import: `checkCapability`; `Err(EACCES)` on denial.
    pub fn capability(&mut self, id: &str, payload: serde_json::Value, what: &str) -> Result<(), i32> {
        match self.capability_decision(id, &payload, what) {
            Decision::Allowed => Ok(()),
            Decision::Denied(_) => Err(errno::ACCES),
        }
    }

    /// The decision behind [`Gate::capability`], recorded in the trace.
    pub fn capability_decision(&mut self, id: &str, payload: &serde_json::Value, what: &str) -> Decision {
        let d = self.checker().check_capability(id, payload);
        let (allowed, reason) = match d {
            Decision::Allowed => (true, None),
            Decision::Denied(x) => (false, Some(x.reason.as_str().to_owned())),
        };
        self.record(Call { op: id.into(), what: clip(what), capability: id.into(), allowed, reason });
        d
    }

    /// The lexical check alone (what the conformance cases specify; the path
    /// calls add the readings and symlink rules of [`WasiGate::path_call`]).
    pub fn check_lexical(&self, path: &str, mode: FsMode) -> Decision {
        self.checker().check_fs(path, mode, FsCheckOptions::default())
    }

    /// The re-check of a fetch's resolved address before connecting.
    pub fn fetch_address(&self, url: &str, ip: &str) -> Decision {
        self.checker().check_fetch_address(url, ip)
    }
}

/// What one run needs.
pub struct HostConfig {
    pub policy: PermissionPolicy,
    pub meter: Meter,
    /// (guest path, host dir), numbered from fd 3 in this order.
    pub preopens: Vec<(String, PathBuf)>,
    pub args: Vec<String>,
    pub secrets: HashMap<String, String>,
}

/// How a run ended.
#[derive(Debug)]
pub enum Outcome {
    Exited(i32),
    BudgetExceeded(Breach),
    Trap(String),
}

/// The result of one run.
#[derive(Debug)]
pub struct RunResult {
    pub outcome: Outcome,
    /// `(tag, value)` the guest reported through `host.report`.
    pub reports: Vec<(String, i32)>,
    /// The newest [`MAX_TRACE`] gated calls.
    pub calls: Vec<Call>,
    /// Gated calls dropped from `calls` past [`MAX_TRACE`].
    pub dropped_calls: u64,
    pub events: Vec<(String, String)>,
}

/// The clock of the host's budget tracker.
pub type Clock = Box<dyn FnMut() -> f64 + Send>;

/// The host's budget tracker: the crate's `BudgetTracker` counting breaches on
/// `meter`. The host passes its wall clock and the guest thread's CPU clock;
/// the conformance adapter the harness's hooks.
pub fn budget_tracker(
    policy: &PermissionPolicy,
    meter: &Meter,
    clock: Clock,
    cpu_time_ms: Option<Sampler>,
    rss_mb: Option<Sampler>,
    cpu_grace_ms: Option<f64>,
    unmeasured: &[BudgetKind],
) -> Result<BudgetTracker<Clock>, TrackerError> {
    let mut options = TrackerOptions {
        cpu_time_ms,
        rss_mb,
        instruments: Some(Instruments::new(meter)),
        unmeasured: unmeasured.to_vec(),
        ..TrackerOptions::default()
    };
    if let Some(g) = cpu_grace_ms {
        options.cpu_grace_ms = g;
    }
    BudgetTracker::new(policy, clock, options)
}

/// What the host recorded for an fd: its real path (`None`: stdio, passed
/// through) and the rights it was opened with (`None`: a preopen, every right;
/// its mode is the grant's, re-checked per call).
#[derive(Debug, Clone)]
struct FdEntry {
    path: Option<String>,
    rights: Option<u64>,
}

struct State {
    wasi: WasiP1Ctx,
    gate: Gate,
    fds: HashMap<u32, FdEntry>,
    /// `memoryMb` in bytes, over every memory and table of the store together.
    memory_cap: Option<usize>,
    guest_bytes: usize,
    last_grow: usize,
    started: Instant,
    /// When `wallClockMs` runs out (a hair past it): what bounds a guest blocked
    /// in a host call, where epoch interruption does not fire.
    wall_deadline: Option<Instant>,
    tracker: BudgetTracker<Clock>,
    breach: Option<Breach>,
    secrets: HashMap<String, String>,
    reports: Vec<(String, i32)>,
    events: Vec<(String, String)>,
}

/// The budget of the host's work for one call: the tracker sampled before
/// each step (a rename's walk asks per entry), so a call never holds the
/// guest past its budget; a breach is recorded (the tracker counts it once)
/// and stops the work.
fn sampled<'a>(tracker: &'a mut BudgetTracker<Clock>, breach: &'a mut Option<Breach>) -> impl FnMut() -> bool + 'a {
    move || match tracker.sample() {
        Ok(BudgetStatus::Ok { .. }) => true,
        Ok(BudgetStatus::Exceeded(b)) => {
            breach.get_or_insert(b);
            false
        }
        // A sample the tracker refuses: stop (fail closed); the run ends as a trap.
        Err(_) => false,
    }
}

impl State {
    /// A path call through the gate, under the budget: `Ok(Ok(paths))` to
    /// perform it, `Ok(Err(errno))` for the guest, `Err` (a trap) when the
    /// budget ran out during the host's work.
    fn gate_path(&mut self, call: &PathCall, what: &str) -> wasmtime::Result<Result<Vec<Checked>, i32>> {
        let State { gate, tracker, breach, .. } = self;
        let r = gate.path(call, what, &mut sampled(tracker, breach));
        match r {
            Ok(paths) => Ok(Ok(paths)),
            Err(Refused::Errno(e)) => Ok(Err(e)),
            Err(Refused::OutOfBudget) => Err(self.out_of_budget()),
        }
    }

    /// The trap that ends a guest whose budget ran out during a host call.
    fn out_of_budget(&self) -> wasmtime::Error {
        match self.breach {
            Some(b) => wasmtime::format_err!("BUDGET_EXCEEDED {}", b.budget.as_str()),
            None => wasmtime::format_err!("INVALID_SAMPLE: the budget could not be sampled during a host call"),
        }
    }

    /// The wall-clock budget ran out while the guest was blocked in a host call:
    /// the breach recorded (and counted, once) by the tracker as the epoch
    /// callback records it, and the trap that ends the guest.
    fn wall_breach(&mut self) -> wasmtime::Error {
        // The deadline is a hair past the budget; the tracker's clock may still
        // read just under it, so give it a few ms.
        for _ in 0..1000 {
            match self.tracker.sample() {
                Ok(BudgetStatus::Exceeded(b)) => {
                    self.breach = Some(b);
                    return wasmtime::format_err!("BUDGET_EXCEEDED {}", b.budget.as_str());
                }
                Ok(BudgetStatus::Ok { .. }) => std::thread::sleep(Duration::from_millis(1)),
                Err(e) => return wasmtime::format_err!("INVALID_SAMPLE: {e}"),
            }
        }
        wasmtime::format_err!("BUDGET_EXCEEDED wallClockMs: the tracker did not see the breach")
    }

    /// One growth of a memory or table by `delta` bytes, against the total.
    fn grow(&mut self, delta: usize) -> wasmtime::Result<bool> {
        let total = self.guest_bytes.saturating_add(delta);
        if let Some(cap) = self.memory_cap {
            if total > cap {
                let observed = total as f64 / (1024.0 * 1024.0);
                let now_ms = self.started.elapsed().as_secs_f64() * 1000.0;
                // The tracker decides and counts the breach once; a growth past the cap
                // ends the guest whatever it says (fail closed).
                match self.tracker.record(Sample { now_ms, cpu_time_ms: None, rss_mb: Some(observed) }) {
                    Ok(BudgetStatus::Exceeded(b)) => {
                        self.breach.get_or_insert(b);
                    }
                    Ok(BudgetStatus::Ok { .. }) => {}
                    Err(e) => wasmtime::bail!("INVALID_SAMPLE: {e}"),
                }
                wasmtime::bail!(
                    "BUDGET_EXCEEDED memoryMb: the guest's memories and tables would hold {observed:.2} MB"
                );
            }
        }
        self.guest_bytes = total;
        self.last_grow = delta;
        Ok(true)
    }
}

/// `memoryMb` bounds the guest: every linear memory (multi-memory included) and
/// table of the store, summed; wasmtime calls this for initial sizes too.
impl ResourceLimiter for State {
    fn memory_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.grow(desired.saturating_sub(current))
    }
    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        self.guest_bytes -= std::mem::take(&mut self.last_grow);
        Ok(())
    }
    fn table_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.grow(desired.saturating_sub(current).saturating_mul(TABLE_ELEMENT_BYTES))
    }
    fn table_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        self.guest_bytes -= std::mem::take(&mut self.last_grow);
        Ok(())
    }
    // Counts too: each linear memory reserves its own address space whatever its
    // size, so a guest may not declare thousands of empty ones; one instance.
    fn instances(&self) -> usize {
        1
    }
    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
    fn tables(&self) -> usize {
        MAX_TABLES
    }
}

/// The calling thread's CPU time in ms (the epoch callback runs on the guest's thread).
fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid pointer to a timespec; CLOCK_THREAD_CPUTIME_ID exists on Linux and macOS.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN; // INVALID_SAMPLE, never "within budget"
    }
    ts.tv_sec as f64 * 1000.0 + ts.tv_nsec as f64 / 1e6
}

fn memory(caller: &mut Caller<'_, State>) -> Result<wasmtime::Memory, i32> {
    match caller.get_export("memory") {
        Some(Extern::Memory(m)) => Ok(m),
        _ => Err(errno::FAULT),
    }
}

fn guest_bytes(caller: &mut Caller<'_, State>, ptr: i32, len: i32) -> Result<Vec<u8>, i32> {
    let m = memory(caller)?;
    let data = m.data(&*caller);
    let (ptr, len) = (ptr as u32 as usize, len as u32 as usize);
    data.get(ptr..ptr.checked_add(len).ok_or(errno::FAULT)?).map(<[u8]>::to_vec).ok_or(errno::FAULT)
}

fn guest_str(caller: &mut Caller<'_, State>, ptr: i32, len: i32) -> Result<String, i32> {
    String::from_utf8(guest_bytes(caller, ptr, len)?).map_err(|_| errno::ILSEQ)
}

fn put(caller: &mut Caller<'_, State>, ptr: i32, cap: i32, bytes: &[u8]) -> Result<u32, i32> {
    let m = memory(caller)?;
    let n = bytes.len().min(cap as u32 as usize);
    m.write(&mut *caller, ptr as u32 as usize, &bytes[..n]).map_err(|_| errno::FAULT)?;
    Ok(n as u32)
}

fn put_u32(caller: &mut Caller<'_, State>, ptr: i32, v: u32) -> Result<(), i32> {
    let m = memory(caller)?;
    m.write(&mut *caller, ptr as u32 as usize, &v.to_le_bytes()).map_err(|_| errno::FAULT)
}

fn host_path(caller: &Caller<'_, State>, fd: i32, guest: &str) -> Result<String, i32> {
    // An absolute guest path is checked as the host path it names (wasmtime-wasi
    // refuses it anyway); a relative one is joined raw, `..` and all.
    if guest.starts_with('/') {
        return Ok(guest.to_owned());
    }
    let dir = caller.data().fds.get(&(fd as u32)).and_then(|e| e.path.as_deref()).ok_or(errno::BADF)?;
    Ok(format!("{dir}/{guest}"))
}

/// Calls wasmtime-wasi's own preview1 implementation, as its linker glue does.
fn delegate<R>(
    caller: &mut Caller<'_, State>,
    f: impl FnOnce(&mut WasiP1Ctx, &mut GuestMemory<'_>) -> wasmtime::Result<R>,
) -> wasmtime::Result<R> {
    let fuel = caller.as_context_mut().hostcall_fuel();
    let Some(Extern::Memory(m)) = caller.get_export("memory") else {
        wasmtime::bail!("missing required memory export")
    };
    let (mem, state) = m.data_and_store_mut(&mut *caller);
    state.wasi.set_hostcall_fuel(fuel);
    f(&mut state.wasi, &mut GuestMemory::Unshared(mem))
}

/// `f` bounded by the wall-clock deadline: `None` when it ran out first (`f`
/// is dropped, cancelling what it waits on).
async fn within<F: std::future::Future>(deadline: Option<Instant>, f: F) -> Option<F::Output> {
    match deadline {
        Some(d) => tokio::time::timeout_at(tokio::time::Instant::from_std(d), f).await.ok(),
        None => Some(f.await),
    }
}

/// What is left of the wall-clock budget (`None`: no budget); `Err` when none is.
fn wall_left(deadline: Option<Instant>) -> Result<Option<Duration>, ()> {
    match deadline {
        None => Ok(None),
        Some(d) => match d.checked_duration_since(Instant::now()) {
            Some(left) if !left.is_zero() => Ok(Some(left)),
            _ => Err(()),
        },
    }
}

/// `poll_oneoff` blocks in the host (a clock subscription of any length), where
/// epoch interruption cannot end the guest: it is wasmtime-wasi's own, bounded
/// by the wall-clock budget (as the Node host waits clock polls out in slices
/// its watchdog can end). The ctx must not `allow_blocking_current_thread`:
/// wasmtime-wasi would then `thread::sleep` a lone relative clock, unbounded.
fn add_poll_oneoff(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    linker.func_wrap(
        M,
        "poll_oneoff",
        |mut c: Caller<'_, State>, subs: i32, events: i32, n: i32, nevents: i32| -> wasmtime::Result<i32> {
            let deadline = c.data().wall_deadline;
            let r = delegate(&mut c, |ctx, mem| {
                Ok(in_tokio(within(deadline, p1::poll_oneoff(ctx, mem, subs, events, n, nevents))))
            })?;
            match r {
                Some(r) => r,
                None => Err(c.data_mut().wall_breach()),
            }
        },
    )?;
    Ok(())
}

/// Gate then delegate: `Ok(errno)` for the guest. `$call`: the [`PathCall`]
/// and the guest's names for the trace, or the errno reading them gave.
macro_rules! gated {
    ($caller:ident, $call:expr, $delegate:expr) => {{
        let call: Result<(PathCall, String), i32> = $call;
        let (call, what) = match call {
            Ok(c) => c,
            Err(e) => return Ok(e),
        };
        if let Err(e) = $caller.data_mut().gate_path(&call, &what)? {
            return Ok(e);
        }
        delegate(&mut $caller, $delegate)
    }};
}

const M: &str = "wasi_snapshot_preview1";

/// Every path call goes through the core's [`WasiGate::path_call`], which
/// holds the rules (modes from flags, which calls follow a final symlink,
/// the readings of a path, what a rename moves, the no-follow errnos);
/// this host only reads the guest's arguments and joins them to its fds.
fn add_gated(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    linker.func_wrap(
        M,
        "path_open",
        |mut c: Caller<'_, State>,
         fd: i32,
         dirflags: i32,
         p: i32,
         l: i32,
         oflags: i32,
         base: i64,
         inh: i64,
         fdflags: i32,
         out: i32|
         -> wasmtime::Result<i32> {
            let call = (|| {
                let g = guest_str(&mut c, p, l)?;
                let path = host_path(&c, fd, &g)?;
                let (dirflags, oflags, fdflags) = (dirflags as u32, oflags as u32, fdflags as u32);
                Ok((PathCall::Open { path, dirflags, oflags, rights_base: base as u64, fdflags }, g))
            })();
            let (call, what) = match call {
                Ok(c) => c,
                Err(e) => return Ok(e),
            };
            // The path that was checked (the real path when following symlinks).
            let checked = match c.data_mut().gate_path(&call, &what)? {
                Ok(mut paths) => paths.remove(0).kernel,
                Err(e) => return Ok(e),
            };
            let r = delegate(&mut c, |ctx, mem| {
                in_tokio(p1::path_open(ctx, mem, fd, dirflags, p, l, oflags, base, inh, fdflags, out))
            })?;
            if r == errno::SUCCESS {
                // The new fd can be a directory base: remember the host path that was checked.
                let bytes = guest_bytes(&mut c, out, 4).map_err(|e| wasmtime::format_err!("fd out of bounds: {e}"))?;
                let new_fd = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                c.data_mut().fds.insert(new_fd, FdEntry { path: Some(checked), rights: Some(base as u64) });
            }
            Ok(r)
        },
    )?;
    linker.func_wrap(M, "fd_close", |mut c: Caller<'_, State>, fd: i32| -> wasmtime::Result<i32> {
        let r = delegate(&mut c, |ctx, mem| in_tokio(p1::fd_close(ctx, mem, fd)))?;
        if r == errno::SUCCESS {
            c.data_mut().fds.remove(&(fd as u32));
        }
        Ok(r)
    })?;
    linker.func_wrap(M, "fd_renumber", |mut c: Caller<'_, State>, from: i32, to: i32| -> wasmtime::Result<i32> {
        let r = delegate(&mut c, |ctx, mem| in_tokio(p1::fd_renumber(ctx, mem, from, to)))?;
        if r == errno::SUCCESS && from != to {
            let fds = &mut c.data_mut().fds;
            match fds.remove(&(from as u32)) {
                Some(e) => fds.insert(to as u32, e),
                None => fds.remove(&(to as u32)),
            };
        }
        Ok(r)
    })?;
    linker.func_wrap(
        M,
        "path_filestat_get",
        |mut c: Caller<'_, State>, fd: i32, flags: i32, p: i32, l: i32, buf: i32| -> wasmtime::Result<i32> {
            let call = (|| {
                let g = guest_str(&mut c, p, l)?;
                Ok((PathCall::FilestatGet { path: host_path(&c, fd, &g)?, flags: flags as u32 }, g))
            })();
            gated!(c, call, |ctx, mem| in_tokio(p1::path_filestat_get(ctx, mem, fd, flags, p, l, buf)))
        },
    )?;
    linker.func_wrap(
        M,
        "path_filestat_set_times",
        |mut c: Caller<'_, State>,
         fd: i32,
         flags: i32,
         p: i32,
         l: i32,
         atim: i64,
         mtim: i64,
         fst: i32|
         -> wasmtime::Result<i32> {
            let call = (|| {
                let g = guest_str(&mut c, p, l)?;
                Ok((PathCall::FilestatSetTimes { path: host_path(&c, fd, &g)?, flags: flags as u32 }, g))
            })();
            gated!(c, call, |ctx, mem| in_tokio(p1::path_filestat_set_times(
                ctx, mem, fd, flags, p, l, atim, mtim, fst
            )))
        },
    )?;
    for name in ["path_create_directory", "path_remove_directory", "path_unlink_file", "path_readlink"] {
        let make = move |path: String| match name {
            "path_create_directory" => PathCall::CreateDirectory { path },
            "path_remove_directory" => PathCall::RemoveDirectory { path },
            "path_unlink_file" => PathCall::UnlinkFile { path },
            _ => PathCall::Readlink { path },
        };
        if name == "path_readlink" {
            linker.func_wrap(
                M,
                name,
                move |mut c: Caller<'_, State>,
                      fd: i32,
                      p: i32,
                      l: i32,
                      buf: i32,
                      len: i32,
                      used: i32|
                      -> wasmtime::Result<i32> {
                    let call = (|| {
                        let g = guest_str(&mut c, p, l)?;
                        Ok((make(host_path(&c, fd, &g)?), g))
                    })();
                    gated!(c, call, |ctx, mem| in_tokio(p1::path_readlink(ctx, mem, fd, p, l, buf, len, used)))
                },
            )?;
            continue;
        }
        linker.func_wrap(
            M,
            name,
            move |mut c: Caller<'_, State>, fd: i32, p: i32, l: i32| -> wasmtime::Result<i32> {
                let call = (|| {
                    let g = guest_str(&mut c, p, l)?;
                    Ok((make(host_path(&c, fd, &g)?), g))
                })();
                gated!(c, call, |ctx, mem| match name {
                    "path_create_directory" => in_tokio(p1::path_create_directory(ctx, mem, fd, p, l)),
                    "path_remove_directory" => in_tokio(p1::path_remove_directory(ctx, mem, fd, p, l)),
                    _ => in_tokio(p1::path_unlink_file(ctx, mem, fd, p, l)),
                })
            },
        )?;
    }
    linker.func_wrap(
        M,
        "path_rename",
        |mut c: Caller<'_, State>, fd: i32, op: i32, ol: i32, nfd: i32, np: i32, nl: i32| -> wasmtime::Result<i32> {
            // The two names, then what the rename moves (a directory's contents, a symlink's meaning).
            let call = (|| {
                let from = guest_str(&mut c, op, ol)?;
                let to = guest_str(&mut c, np, nl)?;
                let call = PathCall::Rename { old: host_path(&c, fd, &from)?, new: host_path(&c, nfd, &to)? };
                Ok((call, format!("{} -> {}", clip(&from), clip(&to))))
            })();
            gated!(c, call, |ctx, mem| in_tokio(p1::path_rename(ctx, mem, fd, op, ol, nfd, np, nl)))
        },
    )?;
    linker.func_wrap(
        M,
        "path_link",
        |mut c: Caller<'_, State>,
         fd: i32,
         oflags: i32,
         op: i32,
         ol: i32,
         nfd: i32,
         np: i32,
         nl: i32|
         -> wasmtime::Result<i32> {
            let call = (|| {
                let from = guest_str(&mut c, op, ol)?;
                let to = guest_str(&mut c, np, nl)?;
                let old = host_path(&c, fd, &from)?;
                let call = PathCall::Link { old, old_flags: oflags as u32, new: host_path(&c, nfd, &to)? };
                Ok((call, format!("{} -> {}", clip(&from), clip(&to))))
            })();
            gated!(c, call, |ctx, mem| in_tokio(p1::path_link(ctx, mem, fd, oflags, op, ol, nfd, np, nl)))
        },
    )?;
    linker.func_wrap(
        M,
        "path_symlink",
        |mut c: Caller<'_, State>, tp: i32, tl: i32, fd: i32, np: i32, nl: i32| -> wasmtime::Result<i32> {
            let call = (|| {
                let target = guest_str(&mut c, tp, tl)?;
                let link = guest_str(&mut c, np, nl)?;
                let what = format!("{} -> {}", clip(&link), clip(&target));
                Ok((PathCall::Symlink { target, new: host_path(&c, fd, &link)? }, what))
            })();
            gated!(c, call, |ctx, mem| in_tokio(p1::path_symlink(ctx, mem, tp, tl, fd, np, nl)))
        },
    )?;
    Ok(())
}

/// The fd-level check of `op` (its table mode on the fd's recorded path):
/// `Ok(Ok(()))` to go on, `Ok(Err(errno))` for the guest.
fn fd_check(c: &mut Caller<'_, State>, op: &str, fd: i32) -> wasmtime::Result<Result<(), i32>> {
    let s = c.data_mut();
    let Some(CallGate::Fd { mode, right }) = calls().get(op).copied() else { return Ok(Ok(())) };
    match s.fds.get(&(fd as u32)).cloned() {
        None => Ok(Err(errno::BADF)),
        Some(FdEntry { path: None, .. }) => Ok(Ok(())),
        Some(FdEntry { path: Some(p), rights }) => {
            let capable = rights.is_none_or(|r| r & (1u64 << right) != 0);
            match s.gate.fd(op, &p, mode, capable, &format!("fd {}", fd as u32)) {
                Ok(()) => Ok(Ok(())),
                Err(Refused::Errno(e)) => Ok(Err(e)),
                Err(Refused::OutOfBudget) => Err(s.out_of_budget()),
            }
        }
    }
}

/// Check then delegate an fd-level call: `Ok(errno)` for the guest.
macro_rules! fd_gated {
    ($linker:ident, $name:literal, $f:path, ($($a:ident : $t:ty),*)) => {
        $linker.func_wrap(M, $name, |mut c: Caller<'_, State>, fd: i32, $($a: $t),*| -> wasmtime::Result<i32> {
            if let Err(e) = fd_check(&mut c, $name, fd)? {
                return Ok(e);
            }
            delegate(&mut c, |ctx, mem| in_tokio($f(ctx, mem, fd, $($a),*)))
        })?;
    };
    (sync $linker:ident, $name:literal, $f:path, ($($a:ident : $t:ty),*)) => {
        $linker.func_wrap(M, $name, |mut c: Caller<'_, State>, fd: i32, $($a: $t),*| -> wasmtime::Result<i32> {
            if let Err(e) = fd_check(&mut c, $name, fd)? {
                return Ok(e);
            }
            delegate(&mut c, |ctx, mem| $f(ctx, mem, fd, $($a),*))
        })?;
    };
}

/// The fd-level calls with a typed wrapper (each is `gate: "fd"` in the table).
const FD_GATED: [&str; 11] = [
    "fd_read",
    "fd_pread",
    "fd_readdir",
    "fd_filestat_get",
    "fd_write",
    "fd_pwrite",
    "fd_allocate",
    "fd_filestat_set_size",
    "fd_filestat_set_times",
    "fd_sync",
    "fd_datasync",
];

fn add_fd_gated(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    fd_gated!(linker, "fd_read", p1::fd_read, (iovs: i32, len: i32, out: i32));
    fd_gated!(linker, "fd_pread", p1::fd_pread, (iovs: i32, len: i32, off: i64, out: i32));
    fd_gated!(linker, "fd_readdir", p1::fd_readdir, (buf: i32, len: i32, cookie: i64, out: i32));
    fd_gated!(linker, "fd_filestat_get", p1::fd_filestat_get, (buf: i32));
    fd_gated!(linker, "fd_write", p1::fd_write, (iovs: i32, len: i32, out: i32));
    fd_gated!(linker, "fd_pwrite", p1::fd_pwrite, (iovs: i32, len: i32, off: i64, out: i32));
    fd_gated!(sync linker, "fd_allocate", p1::fd_allocate, (off: i64, len: i64));
    fd_gated!(linker, "fd_filestat_set_size", p1::fd_filestat_set_size, (size: i64));
    fd_gated!(linker, "fd_filestat_set_times", p1::fd_filestat_set_times, (atim: i64, mtim: i64, fst: i32));
    fd_gated!(linker, "fd_sync", p1::fd_sync, ());
    fd_gated!(linker, "fd_datasync", p1::fd_datasync, ());
    Ok(())
}

/// Checks the linker against the table: every import of the module is
/// classified (an unclassified one stops the host: fail closed on a runtime
/// upgrade), every `fd` entry has its wrapper, and `refuse` entries are
/// shadowed by a function that answers their errno.
fn add_table_gates(linker: &mut Linker<State>, store: &mut Store<State>) -> wasmtime::Result<()> {
    let table = calls();
    let names: Vec<String> =
        linker.iter(&mut *store).filter(|(m, _, _)| *m == M).map(|(_, n, _)| n.to_owned()).collect();
    for name in names {
        match table.get(&name).copied() {
            None => {
                wasmtime::bail!(
                    "{M}::{name} is not classified in data/wasi-calls.json: the host will not link it unchecked"
                )
            }
            Some(CallGate::Fd { .. }) if !FD_GATED.contains(&name.as_str()) => {
                wasmtime::bail!("{M}::{name} is an fd call in wasi-calls.json without a gated wrapper")
            }
            Some(CallGate::Refuse(e)) => {
                let e = i32::from(e);
                let Extern::Func(orig) = linker.get(&mut *store, M, &name)? else {
                    wasmtime::bail!("{M}::{name} is not a function")
                };
                let ty = orig.ty(&*store);
                linker.func_new(M, &name, ty, move |_, _, results| {
                    if let Some(r) = results.first_mut() {
                        *r = Val::I32(e);
                    }
                    Ok(())
                })?;
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Why a fetch failed: an errno for the guest, or the wall-clock budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FetchError {
    Errno(i32),
    OutOfTime,
}

impl From<i32> for FetchError {
    fn from(e: i32) -> Self {
        FetchError::Errno(e)
    }
}

/// The longest any one connect, write or read may wait, whatever the budget.
const FETCH_IO_TIMEOUT: Duration = Duration::from_secs(5);

/// The time one blocking step may take: at most [`FETCH_IO_TIMEOUT`], and never
/// past the wall-clock deadline (the whole fetch is bounded by it, however the
/// server dribbles its bytes).
fn fetch_step(deadline: Option<Instant>) -> Result<Duration, FetchError> {
    match wall_left(deadline) {
        Ok(None) => Ok(FETCH_IO_TIMEOUT),
        Ok(Some(left)) => Ok(left.min(FETCH_IO_TIMEOUT)),
        Err(()) => Err(FetchError::OutOfTime),
    }
}

/// An I/O error of one step: out of time if the deadline has passed meanwhile.
fn fetch_io(deadline: Option<Instant>) -> FetchError {
    match wall_left(deadline) {
        Err(()) => FetchError::OutOfTime,
        _ => FetchError::Errno(errno::IO),
    }
}

/// A minimal HTTP/1.0 GET for `http:` URLs (this example has no TLS client),
/// bounded as a whole by the wall-clock `deadline`.
fn http_get(checker: &PermissionChecker, url: &str, deadline: Option<Instant>) -> Result<(u32, Vec<u8>), FetchError> {
    const MAX_RESPONSE: usize = 1 << 20;
    let url = checker.assert_fetch(url).map_err(|_| errno::ACCES)?;
    if url.scheme() != "http" {
        return Err(errno::IO.into());
    }
    let addrs = url.socket_addrs(|| None).map_err(|_| errno::IO)?;
    let addr = *addrs.first().ok_or(errno::IO)?;
    // Re-check the resolved address (DNS rebinding), then connect to exactly it.
    checker.assert_fetch_address(url.as_str(), &addr.ip().to_string()).map_err(|_| errno::ACCES)?;
    let mut s = std::net::TcpStream::connect_timeout(&addr, fetch_step(deadline)?).map_err(|_| fetch_io(deadline))?;
    let host = url.host_str().unwrap_or_default();
    let port = url.port_or_known_default().unwrap_or(80);
    let req = format!(
        "GET {} HTTP/1.0\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n",
        &url[url::Position::BeforePath..]
    );
    s.set_write_timeout(Some(fetch_step(deadline)?)).map_err(|_| errno::IO)?;
    s.write_all(req.as_bytes()).map_err(|_| fetch_io(deadline))?;
    let mut resp = Vec::new();
    let mut buf = [0u8; 8192];
    while resp.len() < MAX_RESPONSE {
        // Each read waits at most what is left of the budget.
        s.set_read_timeout(Some(fetch_step(deadline)?)).map_err(|_| errno::IO)?;
        let want = buf.len().min(MAX_RESPONSE - resp.len());
        match s.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => resp.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(fetch_io(deadline)),
        }
    }
    let head_end = resp.windows(4).position(|w| w == b"\r\n\r\n").ok_or(errno::IO)?;
    let status = std::str::from_utf8(&resp[..head_end])
        .ok()
        .and_then(|h| h.split(' ').nth(1))
        .and_then(|s| s.parse::<u32>().ok())
        .ok_or(errno::IO)?;
    Ok((status, resp[head_end + 4..].to_vec()))
}

fn add_host(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "host",
        "fetch",
        |mut c: Caller<'_, State>,
         up: i32,
         ul: i32,
         out: i32,
         cap: i32,
         status_out: i32,
         len_out: i32|
         -> wasmtime::Result<i32> {
            let r = (|| {
                let url = guest_str(&mut c, up, ul)?;
                c.data_mut().gate.capability("fetch", json!({ "url": url }), &url)?;
                let deadline = c.data().wall_deadline;
                let (status, body) = http_get(c.data().gate.checker(), &url, deadline)?;
                put_u32(&mut c, status_out, status)?;
                let n = put(&mut c, out, cap, &body)?;
                Ok(put_u32(&mut c, len_out, n)?)
            })();
            match r {
                Ok(()) => Ok(errno::SUCCESS),
                Err(FetchError::Errno(e)) => Ok(e),
                // Blocked on the network past the budget: ended as a spinning guest is.
                Err(FetchError::OutOfTime) => Err(c.data_mut().wall_breach()),
            }
        },
    )?;
    linker.func_wrap(
        "host",
        "secret",
        |mut c: Caller<'_, State>, np: i32, nl: i32, out: i32, cap: i32, len_out: i32| -> i32 {
            let r = (|| {
                let name = guest_str(&mut c, np, nl)?;
                c.data_mut().gate.capability("secrets.get", json!({ "name": name }), &name)?;
                let value = c.data().secrets.get(&name).cloned().ok_or(errno::IO)?;
                let n = put(&mut c, out, cap, value.as_bytes())?;
                put_u32(&mut c, len_out, n)
            })();
            r.err().unwrap_or(errno::SUCCESS)
        },
    )?;
    linker.func_wrap("host", "publish", |mut c: Caller<'_, State>, tp: i32, tl: i32, dp: i32, dl: i32| -> i32 {
        let r = (|| {
            let topic = guest_str(&mut c, tp, tl)?;
            let data = guest_str(&mut c, dp, dl)?;
            c.data_mut().gate.capability("events.publish", json!({ "topic": topic }), &topic)?;
            c.data_mut().events.push((topic, data));
            Ok::<(), i32>(())
        })();
        r.err().unwrap_or(errno::SUCCESS)
    })?;
    linker.func_wrap("host", "report", |mut c: Caller<'_, State>, tp: i32, tl: i32, value: i32| {
        if let Ok(tag) = guest_str(&mut c, tp, tl) {
            c.data_mut().reports.push((tag, value));
        }
    })?;
    Ok(())
}

/// Runs a guest (WebAssembly text or binary) to completion, a trap, or a budget breach.
pub fn run_guest(guest: &[u8], cfg: HostConfig) -> wasmtime::Result<RunResult> {
    let mut config = Config::new();
    config.epoch_interruption(true);
    let engine = Engine::new(&config)?;
    let module = Module::new(&engine, guest)?;

    let mut linker: Linker<State> = Linker::new(&engine);
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s: &mut State| &mut s.wasi)?;
    add_gated(&mut linker)?;
    add_fd_gated(&mut linker)?;
    add_poll_oneoff(&mut linker)?;
    add_host(&mut linker)?;

    let mut builder = WasiCtxBuilder::new();
    builder.args(&cfg.args);
    let mut fds: HashMap<u32, FdEntry> = (0..3).map(|fd| (fd, FdEntry { path: None, rights: None })).collect();
    for (i, (guest_dir, host_dir)) in cfg.preopens.iter().enumerate() {
        // Full perms: the gate, not wasmtime-wasi's coarse per-preopen perms, is
        // what decides here (a host may narrow these too, as defence in depth).
        builder.preopened_dir(host_dir, guest_dir, FsPerms::ReadWrite)?;
        // Recorded as its real directory, as the Node host does.
        let real = std::fs::canonicalize(host_dir).unwrap_or_else(|_| host_dir.clone());
        let host = real.to_str().ok_or_else(|| wasmtime::format_err!("non-UTF-8 preopen"))?.to_owned();
        fds.insert(3 + i as u32, FdEntry { path: Some(host), rights: None });
    }

    let budgets = cfg.policy.budgets();
    let memory_cap = budgets.memory_mb.map(|mb| (mb * 1024.0 * 1024.0) as usize);
    let start = Instant::now();
    let clock: Clock = Box::new(move || start.elapsed().as_secs_f64() * 1000.0);
    let cpu: Sampler = Box::new(thread_cpu_ms);
    // Memory is measured by the ResourceLimiter (every memory and table summed) and
    // pushed to the tracker on a growth past the cap.
    let tracker = budget_tracker(&cfg.policy, &cfg.meter, clock, Some(cpu), None, None, &[BudgetKind::MemoryMb])
        .map_err(|e| wasmtime::format_err!("budget tracker: {e}"))?;

    let state = State {
        wasi: builder.build_p1(),
        gate: Gate::new(PermissionChecker::new(cfg.policy.clone(), &cfg.meter)),
        fds,
        memory_cap,
        guest_bytes: 0,
        last_grow: 0,
        started: start,
        // 1 ms past the budget: the tracker's breach is `elapsed > wallClockMs`.
        wall_deadline: budgets
            .wall_clock_ms
            .and_then(|ms| Duration::try_from_secs_f64(ms.max(0.0) / 1000.0 + 0.001).ok())
            .and_then(|d| start.checked_add(d)),
        tracker,
        breach: None,
        secrets: cfg.secrets,
        reports: Vec::new(),
        events: Vec::new(),
    };
    let mut store = Store::new(&engine, state);
    store.limiter(|s| s as &mut dyn ResourceLimiter);
    add_table_gates(&mut linker, &mut store)?;
    // Budgets run from instantiation: the deadline and its callback are in place
    // (and the ticker running) before `instantiate` runs a `start` function.
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|mut ctx| {
        let s = ctx.data_mut();
        match s.tracker.sample() {
            Ok(BudgetStatus::Ok { .. }) => Ok(UpdateDeadline::Continue(1)),
            Ok(BudgetStatus::Exceeded(b)) => {
                s.breach = Some(b);
                wasmtime::bail!("BUDGET_EXCEEDED {}", b.budget.as_str())
            }
            Err(e) => wasmtime::bail!("INVALID_SAMPLE: {e}"),
        }
    });

    // The ticker: one epoch every 5 ms while the guest runs.
    let stop = Arc::new(AtomicBool::new(false));
    let ticker = {
        let (engine, stop) = (engine.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
                engine.increment_epoch();
            }
        })
    };
    let run = (|| {
        let instance = linker.instantiate(&mut store, &module)?;
        instance.get_typed_func::<(), ()>(&mut store, "_start")?.call(&mut store, ())
    })();
    stop.store(true, Ordering::Relaxed);
    let _ = ticker.join();

    let outcome = match run {
        Ok(()) => Outcome::Exited(0),
        Err(e) => match (store.data().breach, e.downcast_ref::<I32Exit>()) {
            (Some(b), _) => Outcome::BudgetExceeded(b),
            (None, Some(exit)) => Outcome::Exited(exit.0),
            (None, None) => Outcome::Trap(format!("{e:#}")),
        },
    };
    let s = store.into_data();
    Ok(RunResult {
        outcome,
        reports: s.reports,
        calls: s.gate.calls.into(),
        dropped_calls: s.gate.dropped_calls,
        events: s.events,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use api_sandbox_permissions::wasi;

    use super::*;

    #[test]
    fn every_fd_call_of_the_table_has_a_gated_wrapper() {
        let table = calls();
        for (name, gate) in table {
            if let CallGate::Fd { .. } = gate {
                assert!(FD_GATED.contains(&name.as_str()), "{name}: an fd call without a gated wrapper");
            }
        }
        for name in FD_GATED {
            assert!(matches!(table.get(name), Some(CallGate::Fd { .. })), "{name}");
        }
    }

    /// A gate over `<root>/out/**` (readwrite) with these `deny.fs` globs, and its
    /// denials counted on an in-memory SDK meter.
    struct RenameWorld {
        _tmp: tempfile::TempDir,
        root: String,
        gate: Gate,
        provider: opentelemetry_sdk::metrics::SdkMeterProvider,
        exporter: opentelemetry_sdk::metrics::InMemoryMetricExporter,
    }

    impl RenameWorld {
        fn new(deny: &[&str]) -> Self {
            use opentelemetry::metrics::MeterProvider as _;
            let tmp = tempfile::tempdir().unwrap();
            let root = std::fs::canonicalize(tmp.path()).unwrap().to_str().unwrap().to_owned();
            std::fs::create_dir_all(format!("{root}/out/a/private")).unwrap();
            std::fs::write(format!("{root}/out/a/private/key.txt"), "KEY").unwrap();
            std::fs::create_dir_all(format!("{root}/out/c")).unwrap();
            std::fs::write(format!("{root}/out/c/f.txt"), "").unwrap();
            std::fs::write(format!("{root}/out/own.txt"), "").unwrap();
            std::fs::write(format!("{root}/secret.txt"), "SECRET").unwrap();
            let deny: Vec<String> = deny.iter().map(|g| g.replace("<root>", &root)).collect();
            let manifest = serde_json::json!({
                "fs": [{ "path": format!("{root}/out/**"), "mode": "readwrite" }],
                "deny": { "fs": deny },
            });
            let policy =
                PermissionPolicy::from_manifest(&manifest, api_sandbox_permissions::PolicyOptions::new("rename"))
                    .unwrap();
            let exporter = opentelemetry_sdk::metrics::InMemoryMetricExporter::default();
            let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
                .with_reader(opentelemetry_sdk::metrics::PeriodicReader::builder(exporter.clone()).build())
                .build();
            let gate = Gate::new(PermissionChecker::new(policy, &provider.meter("rename-test")));
            Self { _tmp: tmp, root, gate, provider, exporter }
        }

        /// What the `path_rename` wrapper does: the two names, then what the rename moves.
        fn rename(&mut self, from: &str, to: &str) -> Result<(), i32> {
            let r = &self.root;
            let call = PathCall::Rename { old: format!("{r}/out/{from}"), new: format!("{r}/out/{to}") };
            match self.gate.path(&call, &format!("{from} -> {to}"), &mut Deadline(None)) {
                Ok(_) => Ok(()),
                Err(Refused::Errno(e)) => Err(e),
                Err(Refused::OutOfBudget) => panic!("no budget here"),
            }
        }

        /// [`RenameWorld::rename`], then the rename itself when allowed (as the runtime would).
        fn rename_done(&mut self, from: &str, to: &str) -> Result<(), i32> {
            self.rename(from, to)?;
            let r = &self.root;
            std::fs::rename(format!("{r}/out/{from}"), format!("{r}/out/{to}")).unwrap();
            Ok(())
        }

        /// Denials counted: (capability, reason) -> n.
        fn denied(&self) -> HashMap<(String, String), u64> {
            api_sandbox_permissions::testing::counter_totals(&self.provider, &self.exporter)
                .into_iter()
                .filter(|((name, _, _, _), _)| name == "plugin.permission_denied_total")
                .map(|((_, _, capability, reason), n)| ((capability, reason), n))
                .collect()
        }

        fn last(&self) -> &Call {
            self.gate.calls.back().unwrap()
        }
    }

    fn explicitly_denied(n: u64) -> HashMap<(String, String), u64> {
        HashMap::from([(("fs.write".to_owned(), "explicitly_denied".to_owned()), n)])
    }

    #[test]
    fn renaming_a_directory_is_checked_against_the_denies_below_it() {
        let mut w = RenameWorld::new(&["<root>/out/a/private/**"]);
        assert_eq!(w.rename("a", "b"), Err(errno::ACCES), "out/a/private/key.txt would leave the deny");
        assert_eq!(w.denied(), explicitly_denied(1), "counted once");
        assert_eq!((w.last().allowed, w.last().reason.as_deref()), (false, Some("explicitly_denied")));
        assert_eq!(w.last().what, "a -> b");
        // Moving a directory onto the denied name moves paths into the deny's reach.
        assert_eq!(w.rename("c", "a"), Err(errno::ACCES));
        assert_eq!(w.denied(), explicitly_denied(2));
        // No deny related to either name: allowed, and nothing counted.
        assert_eq!(w.rename("c", "d"), Ok(()));
        assert!(w.last().allowed);
        // A file is not a directory: only its two names are checked.
        assert_eq!(w.rename("own.txt", "a2.txt"), Ok(()));
        assert_eq!(w.rename("a/private", "p"), Err(errno::ACCES), "the name itself is denied");
        assert_eq!(w.denied(), explicitly_denied(3));
        // The directory renamed out of the deny's reach is still where it was.
        assert!(Path::new(&format!("{}/out/a/private/key.txt", w.root)).exists());
    }

    #[test]
    fn a_wild_or_case_folded_deny_blocks_a_directory_rename() {
        let mut w = RenameWorld::new(&["<root>/out/*/private/**"]);
        assert_eq!(w.rename("a", "b"), Err(errno::ACCES));
        assert_eq!(w.denied(), explicitly_denied(1));
        // Folding: NFKC, case, and Default_Ignorable code points.
        let mut w = RenameWorld::new(&["<root>/out/A/private/**"]);
        assert_eq!(w.rename("a", "b"), Err(errno::ACCES));
        assert_eq!(w.denied(), explicitly_denied(1));
        assert_eq!(w.rename("c", "d"), Ok(()));
        // The deny check's own fold (NFC, full case folding, HFS+ ignorables and merges).
        for (deny, dir) in
            [("<root>/out/SS/**", "ß"), ("<root>/out/ẞ/**", "ss"), ("<root>/out/\u{10A0}/**", "\u{10D0}")]
        {
            let mut w = RenameWorld::new(&[deny]);
            std::fs::create_dir_all(format!("{}/out/{dir}", w.root)).unwrap();
            assert_eq!(w.rename(dir, "moved"), Err(errno::ACCES), "{deny} {dir}");
            assert_eq!(w.denied(), explicitly_denied(1));
        }
    }

    #[test]
    fn a_deny_that_may_match_below_a_directory_refuses_its_rename_counted_once() {
        // `**/z` may match below out/a (a `z` may be there, or be made there): refused.
        let mut w = RenameWorld::new(&["<root>/**/z"]);
        assert_eq!(w.rename("a", "b"), Err(errno::ACCES));
        assert_eq!(w.denied(), explicitly_denied(1));
        assert_eq!((w.last().capability.as_str(), w.last().reason.as_deref()), ("fs.write", Some("explicitly_denied")));
        assert!(!w.last().allowed);
        // A file carries nothing below it.
        assert_eq!(w.rename("own.txt", "own2.txt"), Ok(()));
        // A deny elsewhere does not: allowed.
        let mut w = RenameWorld::new(&["/elsewhere/**"]);
        assert_eq!(w.rename("a", "b"), Ok(()));
    }

    #[test]
    fn a_renamed_symlink_is_checked_for_what_it_means_from_its_new_directory() {
        use std::os::unix::fs::symlink;
        let mut w = RenameWorld::new(&[]);
        let r = w.root.clone();
        // From out/a, ../secret.txt is out/secret.txt (inside); from out/, the root's secret.
        symlink("../secret.txt", format!("{r}/out/a/l")).unwrap();
        assert_eq!(w.rename("a/l", "l"), Err(errno::ACCES));
        let denied = w.denied();
        assert_eq!(denied.values().sum::<u64>(), 1, "counted once: {denied:?}");
        assert!(denied.keys().all(|(cap, _)| cap == "fs.read"), "{denied:?}");
        assert!(!w.last().allowed);
        // A target that stays inside the grant from the new directory: allowed.
        symlink("../own.txt", format!("{r}/out/a/m")).unwrap();
        assert_eq!(w.rename("a/m", "a/n"), Ok(()));
        symlink(format!("{r}/out/own.txt"), format!("{r}/out/a/abs")).unwrap();
        assert_eq!(w.rename("a/abs", "abs"), Ok(()));
        symlink(format!("{r}/secret.txt"), format!("{r}/out/c/abs-out")).unwrap();
        assert_eq!(w.rename("c/abs-out", "c/abs-out2"), Err(errno::ACCES), "an absolute target outside");
        assert_eq!(w.denied().values().sum::<u64>(), 2);
    }

    #[test]
    fn a_renamed_directory_is_checked_for_what_its_inner_links_mean_from_their_new_directories() {
        use std::os::unix::fs::symlink;
        let mut w = RenameWorld::new(&[]);
        let r = w.root.clone();
        // The red team's shape: from out/s/a/b/c/y, ../../../.. is out/s (inside);
        // moved to out/z/x/y, it is the root (outside the grant).
        std::fs::create_dir_all(format!("{r}/out/s/a/b/c/y")).unwrap();
        std::fs::create_dir_all(format!("{r}/out/z/x")).unwrap();
        symlink("../../../..", format!("{r}/out/s/a/b/c/y/l")).unwrap();
        assert_eq!(w.rename_done("s/a/b/c/y", "z/x/y"), Err(errno::ACCES));
        let denied = w.denied();
        assert_eq!(denied.values().sum::<u64>(), 1, "counted once: {denied:?}");
        assert!(denied.keys().all(|(cap, _)| cap == "fs.read"), "{denied:?}");
        assert!(!w.last().allowed);
        assert_eq!(w.last().what, "s/a/b/c/y -> z/x/y");
        assert!(Path::new(&format!("{r}/out/s/a/b/c/y/l")).is_symlink(), "not moved");
        // Moved to the same depth, the link means out/t: allowed.
        std::fs::create_dir_all(format!("{r}/out/t/a/b/c")).unwrap();
        assert_eq!(w.rename_done("s/a/b/c/y", "t/a/b/c/y"), Ok(()), "{:?}", w.gate.calls);
        assert!(w.last().allowed);
        // Inner relative links, at several levels, that stay inside after the move: allowed.
        std::fs::create_dir_all(format!("{r}/out/d/e/f")).unwrap();
        symlink("../own.txt", format!("{r}/out/d/up")).unwrap();
        symlink("../../c/f.txt", format!("{r}/out/d/e/f2")).unwrap();
        symlink("../../../own.txt", format!("{r}/out/d/e/f/deep")).unwrap();
        symlink("f", format!("{r}/out/d/e/sib")).unwrap();
        symlink("./e/../e/f/", format!("{r}/out/d/dots")).unwrap();
        assert_eq!(w.rename_done("d", "d2"), Err(errno::ACCES), "a `..` after a name: fail closed");
        assert_eq!(w.denied().values().sum::<u64>(), 2, "counted, as every refusal");
        std::fs::remove_file(format!("{r}/out/d/dots")).unwrap();
        assert_eq!(w.rename_done("d", "d2"), Ok(()), "{:?}", w.gate.calls);
        assert_eq!(w.rename_done("d2", "g"), Ok(()));
        // Moved one level up, a link that climbed to out/ climbs to the root.
        std::fs::create_dir_all(format!("{r}/out/m/n/e")).unwrap();
        symlink("../../../secret.txt", format!("{r}/out/m/n/e/x")).unwrap();
        assert_eq!(w.rename_done("m/n", "n"), Err(errno::ACCES));
        assert_eq!(w.denied().values().sum::<u64>(), 3, "counted once more");
        assert_eq!(w.rename_done("m", "m2"), Ok(()), "the same depth: out/secret.txt");
        // An absolute inner link outside the grant: denied wherever it moves.
        std::fs::create_dir_all(format!("{r}/out/h/i")).unwrap();
        symlink(format!("{r}/secret.txt"), format!("{r}/out/h/i/abs")).unwrap();
        assert_eq!(w.rename_done("h", "h2"), Err(errno::ACCES), "an absolute inner target outside");
        assert_eq!(w.denied().values().sum::<u64>(), 4);
        // An absolute inner link inside the grant: allowed.
        std::fs::remove_file(format!("{r}/out/h/i/abs")).unwrap();
        symlink(format!("{r}/out/own.txt"), format!("{r}/out/h/i/abs")).unwrap();
        assert_eq!(w.rename_done("h", "h2"), Ok(()));
    }

    #[test]
    fn a_rename_is_checked_for_what_it_moves_under_both_readings_of_its_names() {
        use std::os::unix::fs::symlink;
        let mut w = RenameWorld::new(&[]);
        let r = w.root.clone();
        // `s2/../o`: the kernel (and wasmtime) climbs from s2's target, out/c/e,
        // to out/c/o (no such name); node:wasi normalises it to out/o, a link
        // to a file outside the grants. Refused in both hosts, counted once.
        std::fs::create_dir_all(format!("{r}/out/c/e")).unwrap();
        symlink(format!("{r}/out/c/e"), format!("{r}/out/s2")).unwrap();
        symlink(format!("{r}/secret.txt"), format!("{r}/out/o")).unwrap();
        assert_eq!(w.rename("s2/../o", "o2"), Err(errno::ACCES));
        assert_eq!(w.denied().values().sum::<u64>(), 1, "{:?}", w.denied());
        // The kernel's reading is checked too: out/c/o, a directory holding a
        // link out of the grants, while out/o is now a plain file.
        std::fs::remove_file(format!("{r}/out/o")).unwrap();
        std::fs::write(format!("{r}/out/o"), "").unwrap();
        std::fs::create_dir_all(format!("{r}/out/c/o")).unwrap();
        symlink(format!("{r}/secret.txt"), format!("{r}/out/c/o/abs")).unwrap();
        assert_eq!(w.rename("s2/../o", "o2"), Err(errno::ACCES));
        assert_eq!(w.denied().values().sum::<u64>(), 2, "{:?}", w.denied());
        std::fs::remove_file(format!("{r}/out/c/o/abs")).unwrap();
        assert_eq!(w.rename("s2/../o", "o2"), Ok(()));
    }

    #[test]
    fn a_directory_rename_past_the_walk_bounds_fails_closed_counted() {
        let mut w = RenameWorld::new(&[]);
        let r = w.root.clone();
        let mut deep = format!("{r}/out/deep");
        for _ in 0..wasi::MAX_RENAME_DEPTH {
            deep.push_str("/d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(w.rename_done("deep", "deep2"), Ok(()), "exactly the depth bound");
        std::fs::create_dir(format!("{deep}/d").replace("/out/deep/", "/out/deep2/")).unwrap();
        assert_eq!(w.rename_done("deep2", "deep3"), Err(errno::ACCES), "one level past it");
        let escape = HashMap::from([(("fs.read".to_owned(), "symlink_escape".to_owned()), 1)]);
        assert_eq!(w.denied(), escape);
        assert!(!w.last().allowed);
        std::fs::create_dir(format!("{r}/out/wide")).unwrap();
        for i in 0..wasi::MAX_RENAME_WALK {
            std::fs::write(format!("{r}/out/wide/{i}"), "").unwrap();
        }
        assert_eq!(w.rename_done("wide", "wide2"), Ok(()), "exactly the entry bound");
        std::fs::write(format!("{r}/out/wide2/one-more"), "").unwrap();
        assert_eq!(w.rename_done("wide2", "wide3"), Err(errno::ACCES));
        let escape = HashMap::from([(("fs.read".to_owned(), "symlink_escape".to_owned()), 2)]);
        assert_eq!(w.denied(), escape);
        assert_eq!(w.last().reason.as_deref(), Some("symlink_escape"));
    }

    #[test]
    fn the_trace_cuts_what_and_keeps_the_newest_entries() {
        let mut w = RenameWorld::new(&[]);
        let call =
            |what: String| Call { op: "t".into(), what, capability: "fs.read".into(), allowed: true, reason: None };
        w.gate.record(call("a".repeat(4 << 20)));
        let what = &w.last().what;
        assert!(what.len() <= MAX_WHAT && what.ends_with('…'), "{}", what.len());
        assert_eq!(what.len(), MAX_WHAT);
        // At a char boundary: 2-byte chars, cut short of a split one.
        w.gate.record(call("é".repeat(200)));
        let what = &w.last().what;
        assert!(what.len() <= MAX_WHAT && what.ends_with('…'));
        assert_eq!(what.trim_end_matches('…'), "é".repeat(126));
        assert_eq!(clip("short"), "short");
        assert_eq!(clip(&"b".repeat(MAX_WHAT)), "b".repeat(MAX_WHAT), "not cut at exactly the limit");
        // Through a path check (denied: over the path length limit) and an allowed one.
        let long = format!("{}/out/{}", w.root, "x".repeat(300));
        let stat = |path: &str| PathCall::FilestatGet { path: path.to_owned(), flags: 0 };
        assert!(w.gate.path(&stat(&long), &long, &mut Deadline(None)).is_ok());
        assert!(w.last().what.len() <= MAX_WHAT);
        let huge = "y".repeat(4 << 20);
        assert!(w.gate.path(&stat(&huge), &huge, &mut Deadline(None)).is_err());
        assert!(w.last().what.len() <= MAX_WHAT);
        // At most MAX_TRACE entries, the oldest dropped and counted.
        let before = w.gate.calls.len() as u64;
        for i in 0..MAX_TRACE + 5 {
            w.gate.record(call(format!("n{i}")));
        }
        assert_eq!(w.gate.calls.len(), MAX_TRACE);
        assert_eq!(w.gate.dropped_calls, before + 5);
        assert_eq!(w.gate.calls.front().unwrap().what, "n5");
        assert_eq!(w.last().what, format!("n{}", MAX_TRACE + 4));
    }
}
