//! One check run on many cells at once (each provider, each provider at
//! each level), every cell to the end, and one failure naming every cell
//! that failed: a case that breaks on two providers says so at once.

use std::fmt::Debug;

/// Runs `check` on every cell, each on its own thread, and fails naming
/// every cell that failed (`<case> × <cell>: <panic message>`).
#[track_caller]
pub fn each_cell<T>(case: &str, cells: &[T], check: impl Fn(T) + Sync)
where
    T: Copy + Debug + Send + Sync,
{
    let failures: Vec<String> = std::thread::scope(|scope| {
        let check = &check;
        let running: Vec<_> = cells
            .iter()
            .map(|&cell| (cell, scope.spawn(move || check(cell))))
            .collect();
        running
            .into_iter()
            .filter_map(|(cell, handle)| {
                handle.join().err().map(|payload| {
                    let what = payload
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    format!("{case} × {cell:?}: {what}")
                })
            })
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} cells failed:\n\n{}",
        failures.len(),
        cells.len(),
        failures.join("\n\n")
    );
}
