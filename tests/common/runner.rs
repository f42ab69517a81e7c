//! Runs a proptest strategy for a fixed number of cases, as the `proptest!`
//! macro does (a failure shrinks, and its seed is saved in the test file's
//! `.proptest-regressions` sibling and replayed first on the next run), and
//! sums what each case reports it compared, so a differential test can
//! assert it was not vacuous.

use std::cell::Cell;

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};

/// Runs `test` on `cases` values of `strategy`; returns the sum of its counts.
/// Pass `file!()` as `source_file`, so regressions are saved beside the test.
pub fn run_counted<S: Strategy>(
    source_file: &'static str,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<usize, TestCaseError>,
) -> usize {
    let total = Cell::new(0);
    let mut runner = TestRunner::new(Config {
        cases,
        source_file: Some(source_file),
        failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel("proptest-regressions"))),
        ..Config::default()
    });
    if let Err(e) = runner.run(&strategy, |v| {
        total.set(total.get() + test(v)?);
        Ok(())
    }) {
        panic!("{e}");
    }
    total.get()
}
