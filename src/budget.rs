//! Per-request CPU, memory and wall-clock budgets (SPEC §6).
//!
//! Semantics:
//! - **Wall clock**: elapsed = the largest clock reading seen minus the reading
//!   at start. A clock that goes backwards never shrinks it.
//! - **Memory**: the latest resident-memory sample, in MB.
//! - **CPU percent**: `100 * (cpu - cpu at start) / elapsed`, where `cpu` is the
//!   largest cumulative CPU-time reading seen (ms). Not enforced until elapsed
//!   reaches the grace window ([`DEFAULT_CPU_GRACE_MS`] unless set), so a short
//!   burst at start does not trip it. Without a CPU reading at start (no CPU
//!   sampler: readings are pushed through `record`), the baseline is 0: a
//!   pushed `cpuTimeMs` is the CPU time used since the request started, so
//!   CPU used before the first push is counted, never absorbed as a baseline.
//! - The grace window is at most [`MAX_CPU_GRACE_MS`]; a longer one (which
//!   would leave the CPU budget unenforced) is refused.
//! - A value strictly greater than its limit is a breach. When several are
//!   over at once, the one reported is the first of wall clock, memory, CPU.
//! - A breach is sticky: every later status reports the first breach (with the
//!   current elapsed time). Each budget kind counts at most once in
//!   `plugin.budget_exceeded_total` per tracker.
//! - NaN, infinite or negative readings are `INVALID_SAMPLE` and leave the
//!   state unchanged; they are never treated as within budget.
//! - A budget the tracker cannot measure (`cpuPercent` without a CPU sampler,
//!   `memoryMb` without a memory sampler) is refused when the tracker is
//!   built ([`UnmeasuredBudget`]) unless the host declares it in
//!   [`TrackerOptions::unmeasured`] (measured elsewhere, or pushed through
//!   `record`): a budget is never silently unenforced. The wall clock always
//!   has the tracker's clock.

use crate::error::{BudgetExceeded, BudgetKind, InvalidSample, UnmeasuredBudget};
use crate::metrics::Instruments;
use crate::policy::Budgets;

/// Default CPU grace window, in ms of wall clock.
pub const DEFAULT_CPU_GRACE_MS: f64 = 250.0;

/// Longest CPU grace window accepted, in ms of wall clock (one minute).
pub const MAX_CPU_GRACE_MS: f64 = 60_000.0;

/// One set of readings. `now_ms` is a monotonic clock in ms; the others are optional.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Sample {
    /// The clock, ms (monotonic; a reading lower than an earlier one never shrinks elapsed time).
    pub now_ms: f64,
    /// Cumulative CPU time of the request's thread or process, ms.
    pub cpu_time_ms: Option<f64>,
    /// Resident memory, MB.
    pub rss_mb: Option<f64>,
}

/// A breach: which budget, its limit, what was observed, and when.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Breach {
    /// Which budget.
    pub budget: BudgetKind,
    /// Its limit.
    pub limit: f64,
    /// The value observed over it.
    pub observed: f64,
    /// Wall-clock time since the start, ms, when the status was taken.
    pub elapsed_ms: f64,
}

/// A status: within budget, with the current figures, or the (first) breach.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BudgetStatus {
    /// Within every budget.
    Ok {
        /// Wall-clock time since the start, ms.
        elapsed_ms: f64,
        /// `None` before two CPU readings exist.
        cpu_percent: Option<f64>,
        /// `None` before a memory reading exists.
        memory_mb: Option<f64>,
    },
    /// Over a budget: the first breach, sticky (with the current elapsed time).
    Exceeded(Breach),
}

impl BudgetStatus {
    /// Whether within every budget.
    #[must_use]
    pub fn is_ok(&self) -> bool {
        matches!(self, BudgetStatus::Ok { .. })
    }
    /// Wall-clock time since the start, ms.
    #[must_use]
    pub fn elapsed_ms(&self) -> f64 {
        match self {
            BudgetStatus::Ok { elapsed_ms, .. } => *elapsed_ms,
            BudgetStatus::Exceeded(b) => b.elapsed_ms,
        }
    }
}

fn valid(field: &'static str, v: f64) -> Result<f64, InvalidSample> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(InvalidSample { field })
    }
}

/// The budget arithmetic as a pure state machine: no clock, no hooks, no
/// allocation per sample. [`BudgetTracker`] wraps it with a clock and samplers.
#[derive(Debug, Clone)]
pub struct BudgetState {
    budgets: Budgets,
    cpu_grace_ms: f64,
    start_ms: f64,
    last_now_ms: f64,
    /// The CPU reading at start, or 0 without one (pushed readings count from the request's start).
    cpu_base: f64,
    cpu_last: Option<f64>,
    rss_last: Option<f64>,
    breach: Option<Breach>,
    counted: [bool; 3],
}

impl BudgetState {
    /// Starts at `start`: its `now_ms` is time zero, its CPU reading the
    /// baseline (0 without one). A grace window over [`MAX_CPU_GRACE_MS`] is
    /// `INVALID_SAMPLE` (`cpuGraceMs`).
    pub fn new(budgets: Budgets, start: Sample, cpu_grace_ms: f64) -> Result<Self, InvalidSample> {
        let start_ms = valid("now", start.now_ms)?;
        let cpu_start = start.cpu_time_ms.map(|c| valid("cpuTimeMs", c)).transpose()?;
        let rss = start.rss_mb.map(|r| valid("rssMb", r)).transpose()?;
        let cpu_grace_ms = valid("cpuGraceMs", cpu_grace_ms)?;
        if cpu_grace_ms > MAX_CPU_GRACE_MS {
            return Err(InvalidSample { field: "cpuGraceMs" });
        }
        Ok(Self {
            budgets,
            cpu_grace_ms,
            start_ms,
            last_now_ms: start_ms,
            cpu_base: cpu_start.unwrap_or(0.0),
            cpu_last: cpu_start,
            rss_last: rss,
            breach: None,
            counted: [false; 3],
        })
    }

    /// The budgets it enforces.
    pub fn budgets(&self) -> Budgets {
        self.budgets
    }

    /// Wall-clock time since the start, ms.
    pub fn elapsed_ms(&self) -> f64 {
        self.last_now_ms - self.start_ms
    }

    fn cpu_percent(&self) -> Option<f64> {
        let (base, last) = (self.cpu_base, self.cpu_last?);
        let elapsed = self.elapsed_ms();
        (elapsed > 0.0).then(|| 100.0 * (last - base) / elapsed)
    }

    /// Records readings (validated all together first), then evaluates.
    /// Returns the status and the budgets newly breached by this call, which a
    /// caller counts in `plugin.budget_exceeded_total`.
    pub fn record(&mut self, s: Sample) -> Result<(BudgetStatus, NewBreaches), InvalidSample> {
        let now = valid("now", s.now_ms)?;
        let cpu = s.cpu_time_ms.map(|c| valid("cpuTimeMs", c)).transpose()?;
        let rss = s.rss_mb.map(|r| valid("rssMb", r)).transpose()?;
        self.last_now_ms = self.last_now_ms.max(now);
        if let Some(c) = cpu {
            self.cpu_last = Some(self.cpu_last.map_or(c, |l| l.max(c)));
        }
        if let Some(r) = rss {
            self.rss_last = Some(r);
        }
        Ok(self.evaluate())
    }

    /// Evaluates without new readings (wall clock as last recorded).
    pub fn evaluate(&mut self) -> (BudgetStatus, NewBreaches) {
        let elapsed = self.elapsed_ms();
        let cpu_percent = self.cpu_percent();
        let over = |limit: Option<f64>, v: Option<f64>| match (limit, v) {
            (Some(l), Some(v)) if v > l => Some((l, v)),
            _ => None,
        };
        let cpu_enforced = elapsed >= self.cpu_grace_ms;
        let checks = [
            (BudgetKind::WallClockMs, over(self.budgets.wall_clock_ms, Some(elapsed))),
            (BudgetKind::MemoryMb, over(self.budgets.memory_mb, self.rss_last)),
            (BudgetKind::CpuPercent, if cpu_enforced { over(self.budgets.cpu_percent, cpu_percent) } else { None }),
        ];
        let mut new = NewBreaches::default();
        for (kind, hit) in checks {
            if let Some((limit, observed)) = hit {
                let i = kind.index() as usize;
                if !self.counted[i] {
                    self.counted[i] = true;
                    new.0 |= 1 << i;
                }
                if self.breach.is_none() {
                    self.breach = Some(Breach { budget: kind, limit, observed, elapsed_ms: elapsed });
                }
            }
        }
        let status = match self.breach {
            Some(b) => BudgetStatus::Exceeded(Breach { elapsed_ms: elapsed, ..b }),
            None => BudgetStatus::Ok { elapsed_ms: elapsed, cpu_percent, memory_mb: self.rss_last },
        };
        (status, new)
    }
}

/// Which readings a tracker has a sampler for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Measured {
    pub cpu_time_ms: bool,
    pub rss_mb: bool,
}

impl Measured {
    /// The first budget (memory, then CPU) that `budgets` sets, that no
    /// sampler measures, and that the host did not `declared` as measured
    /// elsewhere; `None` when every budget is enforced.
    pub fn unmeasured(self, budgets: &Budgets, declared: impl IntoIterator<Item = BudgetKind>) -> Option<BudgetKind> {
        let declared = declared.into_iter().fold(0u8, |m, k| m | 1 << k.index());
        [
            (BudgetKind::MemoryMb, budgets.memory_mb.is_some() && !self.rss_mb),
            (BudgetKind::CpuPercent, budgets.cpu_percent.is_some() && !self.cpu_time_ms),
        ]
        .into_iter()
        .find(|&(kind, missing)| missing && declared & (1 << kind.index()) == 0)
        .map(|(kind, _)| kind)
    }
}

/// A set of budget kinds, as bits by [`BudgetKind::index`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NewBreaches(pub(crate) u8);

impl NewBreaches {
    /// The kinds in the set, in [`BudgetKind::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = BudgetKind> {
        BudgetKind::ALL.iter().copied().filter(move |k| self.0 & (1 << k.index()) != 0)
    }
    /// Whether the set is empty.
    #[must_use]
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// A monotonic clock in ms. Only hosts build real ones; tests drive a manual one.
///
/// Any `FnMut() -> f64` is one.
pub trait Clock {
    /// The current reading, ms. A reading lower than an earlier one is
    /// accepted and never shrinks elapsed time; NaN, infinite or negative is `INVALID_SAMPLE`.
    fn now_ms(&mut self) -> f64;
}

impl<F: FnMut() -> f64> Clock for F {
    fn now_ms(&mut self) -> f64 {
        self()
    }
}

/// A sampler of one reading (cumulative CPU ms, or RSS MB).
pub type Sampler = Box<dyn FnMut() -> f64 + Send>;

/// Why `assert_within` failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// Over a budget: `BUDGET_EXCEEDED`.
    #[error(transparent)]
    Exceeded(#[from] BudgetExceeded),
    /// The clock gave an invalid reading: `INVALID_SAMPLE`.
    #[error(transparent)]
    InvalidSample(#[from] InvalidSample),
}

/// Why [`BudgetTracker::new`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TrackerError {
    /// The clock or a sampler's first reading (or the grace window) is invalid.
    #[error(transparent)]
    InvalidSample(#[from] InvalidSample),
    /// A budget with no sampler, not declared in [`TrackerOptions::unmeasured`].
    #[error(transparent)]
    Unmeasured(#[from] UnmeasuredBudget),
}

/// A budget tracker with an injected clock, optional samplers, and metrics.
///
/// The clock is any [`Clock`] (an `FnMut() -> f64` in ms); samplers are
/// boxed `FnMut() -> f64` readings of cumulative CPU ms and resident MB. A
/// budget with no way to measure it is refused when the tracker is built.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use api_sandbox_permissions::budget::{BudgetStatus, TrackerError, TrackerOptions};
/// use api_sandbox_permissions::serde_json::json;
/// use api_sandbox_permissions::{BudgetKind, BudgetTracker, PermissionPolicy, PolicyOptions};
///
/// let policy = PermissionPolicy::from_manifest(&json!({ "budgets": { "memoryMb": 64 } }), PolicyOptions::new("p"))?;
///
/// // No memory sampler and not declared measured elsewhere: refused, never silently unenforced.
/// let refused = BudgetTracker::new(&policy, || 0.0, TrackerOptions::default()).unwrap_err();
/// assert!(matches!(refused, TrackerError::Unmeasured(u) if u.budget == BudgetKind::MemoryMb));
///
/// let rss = Arc::new(Mutex::new(10.0));
/// let sampler = { let rss = rss.clone(); move || *rss.lock().unwrap() };
/// let options = TrackerOptions { rss_mb: Some(Box::new(sampler)), ..TrackerOptions::default() };
/// let mut tracker = BudgetTracker::new(&policy, || 0.0, options)?;
/// assert!(tracker.sample()?.is_ok());
/// *rss.lock().unwrap() = 64.5;
/// assert!(matches!(tracker.sample()?, BudgetStatus::Exceeded(b) if b.budget == BudgetKind::MemoryMb));
/// // A breach is sticky, even when memory drops again.
/// *rss.lock().unwrap() = 1.0;
/// assert!(!tracker.sample()?.is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BudgetTracker<C: Clock> {
    state: BudgetState,
    clock: C,
    cpu: Option<Sampler>,
    rss: Option<Sampler>,
    plugin: String,
    capability: String,
    instruments: Option<Instruments>,
    /// The shadow policy's budgets on the same readings (SPEC §12), report-only.
    shadow: Option<BudgetState>,
}

impl<C: Clock> std::fmt::Debug for BudgetTracker<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BudgetTracker").field("state", &self.state).field("plugin", &self.plugin).finish()
    }
}

/// Options of [`BudgetTracker::new`].
pub struct TrackerOptions {
    /// Cumulative CPU time sampler (ms). Default: none (CPU enforced only from recorded samples).
    pub cpu_time_ms: Option<Sampler>,
    /// Resident memory sampler (MB). Default: none.
    pub rss_mb: Option<Sampler>,
    /// The `capability` label of breach metrics. Default: `"request"`.
    pub capability: String,
    /// CPU grace window in ms. Default: [`DEFAULT_CPU_GRACE_MS`].
    pub cpu_grace_ms: f64,
    /// Where breaches are counted. Default: nowhere.
    pub instruments: Option<Instruments>,
    /// Budgets the host measures elsewhere (pushed with `record`, or enforced
    /// by other means) although this tracker has no sampler for them.
    /// Default: none, so a `cpuPercent` budget without `cpu_time_ms` or a
    /// `memoryMb` budget without `rss_mb` is [`TrackerError::Unmeasured`].
    pub unmeasured: Vec<BudgetKind>,
    /// A shadow (candidate) policy's budgets, `policy.budgets()` (SPEC §12):
    /// evaluated on the same readings, each breach kind counted once in
    /// `plugin.budget_shadow_exceeded_total`, never returned or raised.
    /// Default: none. Its budgets need samplers like the enforced ones.
    pub shadow: Option<Budgets>,
}

impl Default for TrackerOptions {
    fn default() -> Self {
        Self {
            cpu_time_ms: None,
            rss_mb: None,
            capability: "request".into(),
            cpu_grace_ms: DEFAULT_CPU_GRACE_MS,
            instruments: None,
            unmeasured: Vec::new(),
            shadow: None,
        }
    }
}

impl<C: Clock> BudgetTracker<C> {
    /// Starts tracking now: reads the clock and the samplers once for the
    /// baseline. Refuses a budget it cannot measure (see [`TrackerOptions::unmeasured`]).
    pub fn new(
        policy: &crate::PermissionPolicy,
        mut clock: C,
        mut options: TrackerOptions,
    ) -> Result<Self, TrackerError> {
        let measured = Measured { cpu_time_ms: options.cpu_time_ms.is_some(), rss_mb: options.rss_mb.is_some() };
        if let Some(budget) = measured.unmeasured(&policy.budgets(), options.unmeasured.iter().copied()) {
            return Err(UnmeasuredBudget { budget }.into());
        }
        if let Some(b) = &options.shadow {
            if let Some(budget) = measured.unmeasured(b, options.unmeasured.iter().copied()) {
                return Err(UnmeasuredBudget { budget }.into());
            }
        }
        let start = Sample {
            now_ms: clock.now_ms(),
            cpu_time_ms: options.cpu_time_ms.as_mut().map(|f| f()),
            rss_mb: options.rss_mb.as_mut().map(|f| f()),
        };
        let shadow = match options.shadow {
            Some(b) => Some(BudgetState::new(b, start, options.cpu_grace_ms)?),
            None => None,
        };
        Ok(Self {
            shadow,
            state: BudgetState::new(policy.budgets(), start, options.cpu_grace_ms)?,
            clock,
            cpu: options.cpu_time_ms,
            rss: options.rss_mb,
            plugin: policy.plugin().to_owned(),
            capability: options.capability,
            instruments: options.instruments,
        })
    }

    fn counted(&self, (status, new): (BudgetStatus, NewBreaches)) -> BudgetStatus {
        if let Some(i) = &self.instruments {
            for kind in new.iter() {
                i.budget_exceeded(&self.plugin, &self.capability, kind.reason());
            }
        }
        status
    }

    /// Reads the clock and every sampler, records, and evaluates.
    pub fn sample(&mut self) -> Result<BudgetStatus, InvalidSample> {
        let s = Sample {
            now_ms: self.clock.now_ms(),
            cpu_time_ms: self.cpu.as_mut().map(|f| f()),
            rss_mb: self.rss.as_mut().map(|f| f()),
        };
        self.record(s)
    }

    /// Records pushed readings and evaluates.
    pub fn record(&mut self, s: Sample) -> Result<BudgetStatus, InvalidSample> {
        let r = self.state.record(s)?;
        if let Some(sh) = &mut self.shadow {
            // The same readings were just accepted; a shadow error changes nothing.
            if let (Ok((_, new)), Some(i)) = (sh.record(s), &self.instruments) {
                for kind in new.iter() {
                    i.budget_shadow_exceeded(&self.plugin, &self.capability, kind.reason());
                }
            }
        }
        Ok(self.counted(r))
    }

    /// Reads the clock only, and evaluates.
    pub fn check(&mut self) -> Result<BudgetStatus, InvalidSample> {
        let now = self.clock.now_ms();
        self.record(Sample { now_ms: now, ..Sample::default() })
    }

    /// `check`, as an error when over budget.
    pub fn assert_within(&mut self) -> Result<(), BudgetError> {
        match self.check()? {
            BudgetStatus::Ok { .. } => Ok(()),
            BudgetStatus::Exceeded(b) => Err(BudgetError::Exceeded(BudgetExceeded {
                plugin: self.plugin.clone(),
                budget: b.budget,
                limit: b.limit,
                observed: b.observed,
                elapsed_ms: b.elapsed_ms,
            })),
        }
    }

    /// Wall-clock time since the tracker started, ms (the largest clock reading seen minus the first).
    pub fn elapsed_ms(&self) -> f64 {
        self.state.elapsed_ms()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budgets(cpu: Option<f64>, mem: Option<f64>, wall: Option<f64>) -> Budgets {
        Budgets { cpu_percent: cpu, memory_mb: mem, wall_clock_ms: wall }
    }
    fn at(now: f64) -> Sample {
        Sample { now_ms: now, ..Sample::default() }
    }

    #[test]
    fn wall_clock_exact_limit_is_within_and_one_more_is_over() {
        let mut s = BudgetState::new(budgets(None, None, Some(100.0)), at(1000.0), 0.0).unwrap();
        assert!(s.record(at(1100.0)).unwrap().0.is_ok());
        let (st, new) = s.record(at(1100.5)).unwrap();
        assert_eq!(
            st,
            BudgetStatus::Exceeded(Breach {
                budget: BudgetKind::WallClockMs,
                limit: 100.0,
                observed: 100.5,
                elapsed_ms: 100.5
            })
        );
        assert_eq!(new.iter().collect::<Vec<_>>(), vec![BudgetKind::WallClockMs]);
        // Sticky, counted once.
        let (st, new) = s.record(at(2000.0)).unwrap();
        assert!(!st.is_ok());
        assert!(new.is_empty());
    }

    #[test]
    fn clock_going_backwards_never_shrinks_elapsed() {
        let mut s = BudgetState::new(budgets(None, None, None), at(50.0), 0.0).unwrap();
        s.record(at(80.0)).unwrap();
        s.record(at(10.0)).unwrap();
        assert_eq!(s.elapsed_ms(), 30.0);
    }

    #[test]
    fn invalid_samples_are_errors_and_change_nothing() {
        let mut s = BudgetState::new(budgets(Some(50.0), Some(10.0), Some(100.0)), at(0.0), 0.0).unwrap();
        for (sample, field) in [
            (at(f64::NAN), "now"),
            (at(f64::INFINITY), "now"),
            (at(-1.0), "now"),
            (Sample { now_ms: 5.0, cpu_time_ms: Some(f64::NAN), rss_mb: None }, "cpuTimeMs"),
            (Sample { now_ms: 5.0, cpu_time_ms: None, rss_mb: Some(-0.5) }, "rssMb"),
            (Sample { now_ms: 5.0, cpu_time_ms: None, rss_mb: Some(f64::NEG_INFINITY) }, "rssMb"),
        ] {
            assert_eq!(s.record(sample), Err(InvalidSample { field }));
        }
        assert_eq!(s.elapsed_ms(), 0.0);
        assert!(BudgetState::new(Budgets::default(), at(f64::NAN), 0.0).is_err());
    }

    #[test]
    fn memory_is_the_latest_sample() {
        let mut s = BudgetState::new(budgets(None, Some(64.0), None), at(0.0), 0.0).unwrap();
        let mem = |v| Sample { now_ms: 1.0, cpu_time_ms: None, rss_mb: Some(v) };
        assert!(s.record(mem(64.0)).unwrap().0.is_ok());
        assert!(s.record(mem(10.0)).unwrap().0.is_ok());
        let (st, _) = s.record(mem(64.01)).unwrap();
        assert!(matches!(st, BudgetStatus::Exceeded(Breach { budget: BudgetKind::MemoryMb, .. })));
    }

    #[test]
    fn cpu_grace_window_then_enforced() {
        let mut s = BudgetState::new(
            budgets(Some(50.0), None, None),
            Sample { now_ms: 0.0, cpu_time_ms: Some(1000.0), rss_mb: None },
            100.0,
        )
        .unwrap();
        let cpu = |now, c| Sample { now_ms: now, cpu_time_ms: Some(c), rss_mb: None };
        // 100% CPU, but inside the grace window.
        assert!(s.record(cpu(50.0, 1050.0)).unwrap().0.is_ok());
        // Exactly 50% at 200 ms: within.
        assert!(s.record(cpu(200.0, 1100.0)).unwrap().0.is_ok());
        let (st, new) = s.record(cpu(300.0, 1200.0)).unwrap();
        match st {
            BudgetStatus::Exceeded(b) => {
                assert_eq!(b.budget, BudgetKind::CpuPercent);
                assert!((b.observed - 66.666).abs() < 0.01);
            }
            _ => panic!("{st:?}"),
        }
        assert_eq!(new.iter().collect::<Vec<_>>(), vec![BudgetKind::CpuPercent]);
    }

    #[test]
    fn cpu_reading_going_backwards_does_not_lower_usage() {
        let mut s = BudgetState::new(
            budgets(Some(50.0), None, None),
            Sample { now_ms: 0.0, cpu_time_ms: Some(0.0), rss_mb: None },
            0.0,
        )
        .unwrap();
        let cpu = |now, c| Sample { now_ms: now, cpu_time_ms: Some(c), rss_mb: None };
        assert!(s.record(cpu(100.0, 40.0)).unwrap().0.is_ok());
        assert!(s.record(cpu(100.0, 0.0)).unwrap().0.is_ok());
        assert!(!s.record(cpu(100.0, 60.0)).unwrap().0.is_ok());
    }

    #[test]
    fn several_breaches_report_wall_clock_first_and_count_each_once() {
        let mut s = BudgetState::new(
            budgets(Some(10.0), Some(1.0), Some(10.0)),
            Sample { now_ms: 0.0, cpu_time_ms: Some(0.0), rss_mb: None },
            0.0,
        )
        .unwrap();
        let (st, new) = s.record(Sample { now_ms: 100.0, cpu_time_ms: Some(100.0), rss_mb: Some(5.0) }).unwrap();
        assert!(matches!(st, BudgetStatus::Exceeded(Breach { budget: BudgetKind::WallClockMs, .. })));
        assert_eq!(new.iter().count(), 3);
        let (_, new) = s.record(Sample { now_ms: 200.0, cpu_time_ms: Some(200.0), rss_mb: Some(9.0) }).unwrap();
        assert!(new.is_empty());
    }

    fn policy_with(budgets: serde_json::Value) -> crate::PermissionPolicy {
        crate::PermissionPolicy::from_manifest(
            &serde_json::json!({ "budgets": budgets }),
            crate::PolicyOptions::new("p"),
        )
        .unwrap()
    }

    fn sampler(v: f64) -> Option<Sampler> {
        Some(Box::new(move || v))
    }

    fn refused(policy: &crate::PermissionPolicy, options: TrackerOptions) -> Option<BudgetKind> {
        match BudgetTracker::new(policy, || 0.0, options) {
            Ok(_) => None,
            Err(TrackerError::Unmeasured(UnmeasuredBudget { budget })) => Some(budget),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_budget_without_a_sampler_is_refused_unless_declared_unmeasured() {
        use BudgetKind::*;
        let all = policy_with(serde_json::json!({ "cpuPercent": 50, "memoryMb": 64, "wallClockMs": 100 }));
        let opts = |cpu: bool, rss: bool, unmeasured: Vec<BudgetKind>| TrackerOptions {
            cpu_time_ms: if cpu { sampler(0.0) } else { None },
            rss_mb: if rss { sampler(1.0) } else { None },
            unmeasured,
            ..Default::default()
        };
        assert_eq!(refused(&all, opts(false, false, vec![])), Some(MemoryMb), "memory is named first");
        assert_eq!(refused(&all, opts(true, false, vec![])), Some(MemoryMb));
        assert_eq!(refused(&all, opts(false, true, vec![])), Some(CpuPercent));
        assert_eq!(refused(&all, opts(false, false, vec![MemoryMb])), Some(CpuPercent));
        assert_eq!(refused(&all, opts(false, false, vec![CpuPercent])), Some(MemoryMb));
        assert_eq!(
            refused(&all, opts(true, false, vec![WallClockMs])),
            Some(MemoryMb),
            "the wall clock covers nothing else"
        );
        assert_eq!(refused(&all, opts(true, true, vec![])), None);
        assert_eq!(refused(&all, opts(false, false, vec![MemoryMb, CpuPercent])), None);
        assert_eq!(refused(&all, opts(true, false, vec![MemoryMb, MemoryMb])), None);
        // A budget the policy does not set needs nothing.
        let wall = policy_with(serde_json::json!({ "wallClockMs": 100 }));
        assert_eq!(refused(&wall, opts(false, false, vec![])), None);
        let mem = policy_with(serde_json::json!({ "memoryMb": 64 }));
        assert_eq!(refused(&mem, opts(false, false, vec![])), Some(MemoryMb));
        assert_eq!(refused(&mem, opts(false, true, vec![])), None);
        let cpu = policy_with(serde_json::json!({ "cpuPercent": 5 }));
        assert_eq!(refused(&cpu, opts(false, false, vec![])), Some(CpuPercent));
        assert_eq!(refused(&cpu, opts(false, true, vec![])), Some(CpuPercent));
        assert_eq!(refused(&cpu, opts(true, false, vec![])), None);
        assert_eq!(refused(&policy_with(serde_json::json!({})), opts(false, false, vec![])), None);
        // The error names the budget and the missing sampler.
        let e = BudgetTracker::new(&cpu, || 0.0, opts(false, false, vec![])).unwrap_err();
        assert!(e.to_string().contains("cpuPercent") && e.to_string().contains("cpuTimeMs"), "{e}");
    }

    #[test]
    fn a_declared_budget_is_enforced_from_pushed_samples() {
        let policy = policy_with(serde_json::json!({ "cpuPercent": 50, "memoryMb": 64 }));
        let mut t = BudgetTracker::new(
            &policy,
            || 0.0,
            TrackerOptions {
                unmeasured: vec![BudgetKind::MemoryMb, BudgetKind::CpuPercent],
                cpu_grace_ms: 0.0,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(t.record(Sample { now_ms: 10.0, cpu_time_ms: Some(0.0), rss_mb: Some(64.0) }).unwrap().is_ok());
        let st = t.record(Sample { now_ms: 10.0, cpu_time_ms: None, rss_mb: Some(64.5) }).unwrap();
        assert!(matches!(st, BudgetStatus::Exceeded(Breach { budget: BudgetKind::MemoryMb, .. })), "{st:?}");
    }

    #[test]
    fn without_a_cpu_sampler_pushed_cpu_counts_from_the_request_start() {
        // Red team F5a: the first pushed reading used to become the baseline,
        // so CPU used before the first push was never counted.
        let mut s = BudgetState::new(budgets(Some(50.0), None, None), at(0.0), 0.0).unwrap();
        let st = s.record(Sample { now_ms: 1000.0, cpu_time_ms: Some(1000.0), rss_mb: None }).unwrap().0;
        assert!(
            matches!(st, BudgetStatus::Exceeded(Breach { budget: BudgetKind::CpuPercent, observed, .. }) if observed == 100.0),
            "{st:?}"
        );
        // With a reading at start, that reading stays the baseline.
        let start = Sample { now_ms: 0.0, cpu_time_ms: Some(1000.0), rss_mb: None };
        let mut s = BudgetState::new(budgets(Some(50.0), None, None), start, 0.0).unwrap();
        let st = s.record(Sample { now_ms: 1000.0, cpu_time_ms: Some(1400.0), rss_mb: None }).unwrap().0;
        assert_eq!(st, BudgetStatus::Ok { elapsed_ms: 1000.0, cpu_percent: Some(40.0), memory_mb: None });
    }

    #[test]
    fn the_cpu_grace_window_is_capped() {
        let b = budgets(Some(50.0), None, None);
        assert!(BudgetState::new(b, at(0.0), MAX_CPU_GRACE_MS).is_ok());
        for g in [MAX_CPU_GRACE_MS + 0.001, 1e300, f64::INFINITY, f64::NAN, -1.0] {
            assert_eq!(BudgetState::new(b, at(0.0), g).unwrap_err(), InvalidSample { field: "cpuGraceMs" }, "{g}");
        }
    }

    #[test]
    fn measured_unmeasured_is_exact() {
        let b = budgets(Some(1.0), Some(1.0), Some(1.0));
        let m = |cpu, rss| Measured { cpu_time_ms: cpu, rss_mb: rss };
        assert_eq!(m(true, true).unmeasured(&b, []), None);
        assert_eq!(m(true, false).unmeasured(&b, []), Some(BudgetKind::MemoryMb));
        assert_eq!(m(false, true).unmeasured(&b, []), Some(BudgetKind::CpuPercent));
        assert_eq!(m(false, true).unmeasured(&b, [BudgetKind::CpuPercent]), None);
        assert_eq!(m(false, false).unmeasured(&budgets(None, None, Some(1.0)), []), None);
        assert_eq!(
            m(false, false).unmeasured(&budgets(None, Some(1.0), None), [BudgetKind::CpuPercent]),
            Some(BudgetKind::MemoryMb)
        );
    }

    #[test]
    fn tracker_with_manual_clock_and_samplers() {
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::sync::Arc;
        let policy = crate::PermissionPolicy::from_manifest(
            &serde_json::json!({ "budgets": { "memoryMb": 100, "wallClockMs": 1000 } }),
            crate::PolicyOptions::new("p"),
        )
        .unwrap();
        let now = Arc::new(AtomicU64::new(0));
        let rss = Arc::new(AtomicU64::new(50));
        let (n2, r2) = (now.clone(), rss.clone());
        let mut t = BudgetTracker::new(
            &policy,
            move || n2.load(Ordering::SeqCst) as f64,
            TrackerOptions { rss_mb: Some(Box::new(move || r2.load(Ordering::SeqCst) as f64)), ..Default::default() },
        )
        .unwrap();
        now.store(500, Ordering::SeqCst);
        assert!(t.sample().unwrap().is_ok());
        assert_eq!(t.elapsed_ms(), 500.0);
        rss.store(101, Ordering::SeqCst);
        assert!(t.assert_within().is_ok(), "check reads the clock only");
        let st = t.sample().unwrap();
        assert!(matches!(st, BudgetStatus::Exceeded(Breach { budget: BudgetKind::MemoryMb, .. })));
        match t.assert_within() {
            Err(BudgetError::Exceeded(e)) => {
                assert_eq!((e.budget, e.limit, e.observed), (BudgetKind::MemoryMb, 100.0, 101.0))
            }
            other => panic!("{other:?}"),
        }
    }
}
