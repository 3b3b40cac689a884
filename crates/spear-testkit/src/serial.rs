//! Taking turns: tests of one binary that must not run at the same time (they bind fixed ports,
//! load both cores, or count processes the others would start) each hold the same [`Turns`]'
//! guard while they run.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// A turn that one test at a time holds. A test that failed while holding it does not poison it:
/// the next test still gets its turn (and fails or passes on its own).
pub struct Turns(Mutex<()>);

impl Turns {
    /// A new, free turn; `const`, for a `static`.
    pub const fn new() -> Turns {
        Turns(Mutex::new(()))
    }

    /// Waits until no other test holds the turn, then holds it until the guard is dropped.
    pub fn take(&self) -> MutexGuard<'_, ()> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Default for Turns {
    fn default() -> Self {
        Turns::new()
    }
}
