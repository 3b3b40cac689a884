//! Printing to standard output without panicking when the reader has gone.
//!
//! `println!` panics when stdout is a pipe whose reader exited (`spear classify ... | head -1`).
//! [`outln!`] writes the line and, once stdout is found closed, stops writing: the command
//! finishes its work (cleanup included) and exits with its own status.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write found stdout closed; later writes are skipped.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `args` and a newline to stdout; a closed stdout is remembered, never a panic.
pub fn line(args: std::fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{args}").and_then(|()| out.flush()).is_err() {
        CLOSED.store(true, Ordering::Relaxed);
    }
}

/// `println!` for the CLI's own output: a reader that went away ends the output, not spear.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;
