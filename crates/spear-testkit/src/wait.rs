//! Waiting for something another process or thread does, with a deadline: the only sleeps a test
//! needs.

use std::time::{Duration, Instant};

/// How often a condition is checked again.
pub const POLL: Duration = Duration::from_millis(20);

/// Checks `done` every [`POLL`] until it holds (true) or `timeout` has passed (false); `done` is
/// checked at least once.
pub fn wait_for(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// Checks `found` every [`POLL`] until it finds something (that) or `timeout` has passed (`None`).
pub fn wait_for_value<T>(timeout: Duration, mut found: impl FnMut() -> Option<T>) -> Option<T> {
    let mut value = None;
    wait_for(timeout, || {
        value = found();
        value.is_some()
    });
    value
}
