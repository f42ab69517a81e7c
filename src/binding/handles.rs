//! The binding's handle tables. A compiled policy (or, in the test-hooks
//! addon only, a budget state) lives in a table of the thread that made it (a Node environment runs
//! on one thread, its own); JS holds a number naming the slot
//! ([`crate::handle_table`]: a number from another thread's table, or a
//! released one, names nothing), and the JS object that owns it registers
//! that number with a `FinalizationRegistry`, which releases the slot once
//! the object is collected (`lib/policy.js` `ownerRegistry`: a policy, or
//! the `{ handle }` the policies of one short manifest text share).
//!
//! Why not an external with a finalizer, one per policy: Node-API tracks each
//! such finalizer (a weak global handle, a tracker node in a hash set, a
//! queued finalizer), which was about 40% of compiling an empty manifest.

use std::cell::RefCell;
use std::sync::Arc;

#[cfg(feature = "test-hooks")]
use crate::budget::BudgetState;
use crate::handle_table::{decode, Kind, Table};
use crate::policy::PermissionPolicy;

// A policy here may stand for JS policies of several plugin ids (the
// policies of one short manifest text share it, `lib/policy.js` `SHARED`):
// nothing in the binding reads its `plugin()` (a test scans for it).
thread_local! {
    pub(crate) static POLICIES: RefCell<Table<Arc<PermissionPolicy>>> = const { RefCell::new(Table::new(Kind::Policy)) };
}

// Budget states: only the test-hooks addon makes them (`raw.rs` `budget`);
// the shipped `BudgetTracker` keeps its arithmetic in JS (`lib/budget.js`).
#[cfg(feature = "test-hooks")]
thread_local! {
    pub(crate) static BUDGETS: RefCell<Table<BudgetState>> = const { RefCell::new(Table::new(Kind::Budget)) };
}

/// Releases whatever `h` names in this thread's tables (nothing for anything else).
/// The value is dropped after the table's borrow ends.
pub(crate) fn release(h: f64) {
    match decode(h) {
        Some((Kind::Policy, ..)) => drop(POLICIES.with(|t| t.borrow_mut().remove(h))),
        #[cfg(feature = "test-hooks")]
        Some((Kind::Budget, ..)) => drop(BUDGETS.with(|t| t.borrow_mut().remove(h))),
        _ => {}
    }
}
