//! Instrument descriptors (SPEC §5), exported as data so every host emits the
//! same names and label sets, and the counters the Rust checker records to.

use opentelemetry::metrics::{Counter, Meter};
use opentelemetry::KeyValue;

/// An instrument as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstrumentDescriptor {
    /// The instrument name (`plugin.permission_denied_total`).
    pub name: &'static str,
    /// Always `counter`.
    pub kind: &'static str,
    /// The UCUM unit (`{denial}`, `{breach}`).
    pub unit: &'static str,
    /// One line for dashboards.
    pub description: &'static str,
    /// The attribute keys, the only labels recorded.
    pub attribute_keys: &'static [&'static str],
}

/// The instrumentation scope name both languages record under.
pub const METER_NAME: &str = "@suaveplan/api-sandbox-permissions";

/// `plugin.permission_denied_total{plugin, capability, reason}`: one per denied call (SPEC §5).
pub const PERMISSION_DENIED_TOTAL: InstrumentDescriptor = InstrumentDescriptor {
    name: "plugin.permission_denied_total",
    kind: "counter",
    unit: "{denial}",
    description: "Capability calls denied by the sandbox permission policy",
    attribute_keys: &["plugin", "capability", "reason"],
};

/// `plugin.budget_exceeded_total{plugin, capability, reason}`: one per budget kind a tracker breaches (SPEC §6).
pub const BUDGET_EXCEEDED_TOTAL: InstrumentDescriptor = InstrumentDescriptor {
    name: "plugin.budget_exceeded_total",
    kind: "counter",
    unit: "{breach}",
    description: "Requests that went over a CPU, memory or wall-clock budget",
    attribute_keys: &["plugin", "capability", "reason"],
};

/// Calls a shadow (candidate) policy would have denied (SPEC §12); the
/// enforced policy decided them. `reason` is the candidate's.
pub const PERMISSION_SHADOW_DENIED_TOTAL: InstrumentDescriptor = InstrumentDescriptor {
    name: "plugin.permission_shadow_denied_total",
    kind: "counter",
    unit: "{denial}",
    description: "Capability calls a shadow (report-only) permission policy would have denied",
    attribute_keys: &["plugin", "capability", "reason"],
};

/// Breaches of a shadow policy's budgets, once per kind (SPEC §12).
pub const BUDGET_SHADOW_EXCEEDED_TOTAL: InstrumentDescriptor = InstrumentDescriptor {
    name: "plugin.budget_shadow_exceeded_total",
    kind: "counter",
    unit: "{breach}",
    description: "Requests that went over a shadow (report-only) policy's CPU, memory or wall-clock budget",
    attribute_keys: &["plugin", "capability", "reason"],
};

/// Every descriptor; new ones are appended.
pub const INSTRUMENTS: &[InstrumentDescriptor] =
    &[PERMISSION_DENIED_TOTAL, BUDGET_EXCEEDED_TOTAL, PERMISSION_SHADOW_DENIED_TOTAL, BUDGET_SHADOW_EXCEEDED_TOTAL];

fn counter(meter: &Meter, d: &InstrumentDescriptor) -> Counter<u64> {
    meter.u64_counter(d.name).with_unit(d.unit).with_description(d.description).build()
}

/// The counters, created once per checker or tracker: pass them in
/// [`TrackerOptions::instruments`](crate::budget::TrackerOptions::instruments).
/// Only the crate records through them, so every label value comes from a
/// closed set or is the policy's plugin id.
#[derive(Clone)]
pub struct Instruments {
    denied: Counter<u64>,
    budget: Counter<u64>,
    shadow_denied: Counter<u64>,
    budget_shadow: Counter<u64>,
}

impl std::fmt::Debug for Instruments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Instruments")
    }
}

impl Instruments {
    /// Instruments on `meter`.
    pub fn new(meter: &Meter) -> Self {
        Self {
            denied: counter(meter, &PERMISSION_DENIED_TOTAL),
            budget: counter(meter, &BUDGET_EXCEEDED_TOTAL),
            shadow_denied: counter(meter, &PERMISSION_SHADOW_DENIED_TOTAL),
            budget_shadow: counter(meter, &BUDGET_SHADOW_EXCEEDED_TOTAL),
        }
    }

    /// Instruments on the global meter provider's meter named [`METER_NAME`].
    pub fn global() -> Self {
        Self::new(&opentelemetry::global::meter(METER_NAME))
    }

    /// One permission denial. Every value is from a closed set or the host-chosen plugin id.
    pub(crate) fn denied(&self, plugin: &str, capability: &'static str, reason: &'static str) {
        count(&self.denied, plugin, capability, reason);
    }

    /// One call the shadow policy would have denied.
    pub(crate) fn shadow_denied(&self, plugin: &str, capability: &'static str, reason: &'static str) {
        count(&self.shadow_denied, plugin, capability, reason);
    }

    /// One shadow budget breach.
    pub(crate) fn budget_shadow_exceeded(&self, plugin: &str, capability: &str, reason: &'static str) {
        count(&self.budget_shadow, plugin, capability.to_owned(), reason);
    }

    /// One budget breach.
    pub(crate) fn budget_exceeded(&self, plugin: &str, capability: &str, reason: &'static str) {
        count(&self.budget, plugin, capability.to_owned(), reason);
    }
}

/// Adds one to `counter` under the three labels every instrument carries
/// (a `&'static str` capability is not copied).
fn count(counter: &Counter<u64>, plugin: &str, capability: impl Into<opentelemetry::Value>, reason: &'static str) {
    counter.add(
        1,
        &[
            KeyValue::new("plugin", plugin.to_owned()),
            KeyValue::new("capability", capability),
            KeyValue::new("reason", reason),
        ],
    );
}
