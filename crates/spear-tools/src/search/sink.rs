//! Collecting matched lines from the searcher, under a budget shared by every thread.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use grep_searcher::{Searcher, Sink, SinkMatch};

/// How many characters of a matched line are kept.
pub const MAX_LINE_CHARS: usize = 300;

/// The budget of one search: matches kept so far and whether one more than allowed was found.
#[derive(Debug)]
pub(super) struct Budget {
    max: usize,
    found: AtomicUsize,
    over: AtomicBool,
}

impl Budget {
    pub fn new(max: usize) -> Self {
        Budget {
            max,
            found: AtomicUsize::new(0),
            over: AtomicBool::new(false),
        }
    }

    /// Takes one match from the budget; `false` (and the budget marked as exceeded) when none is
    /// left. Exactly `max` takes succeed, whichever threads make them.
    fn take(&self) -> bool {
        if self.found.fetch_add(1, Ordering::Relaxed) < self.max {
            true
        } else {
            self.over.store(true, Ordering::Relaxed);
            false
        }
    }

    /// More matches were found than the budget allows.
    pub fn exceeded(&self) -> bool {
        self.over.load(Ordering::Relaxed)
    }
}

/// A matched line: its number and its cut text.
pub(super) type Hit = (u64, String);

/// The sink of one file's search: keeps matches while the budget lasts, then stops the search.
pub(super) struct Collect<'a> {
    pub budget: &'a Budget,
    pub hits: &'a mut Vec<Hit>,
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if !self.budget.take() {
            return Ok(false);
        }
        self.hits
            .push((m.line_number().unwrap_or(0), cut_line(m.bytes())));
        Ok(true)
    }
}

/// The line without its terminator, at most [`MAX_LINE_CHARS`] characters (a cut is marked `…`),
/// invalid UTF-8 replaced. Only the start of a long line is decoded.
pub(super) fn cut_line(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // A character takes at most 4 bytes, so this prefix holds more than MAX_LINE_CHARS whole
    // characters whenever it is a cut.
    let head = &line[..line.len().min(MAX_LINE_CHARS * 4)];
    let text = String::from_utf8_lossy(head);
    let mut chars = text.char_indices();
    match chars.nth(MAX_LINE_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None if head.len() < line.len() => format!("{text}…"),
        None => text.into_owned(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn cut_line_table() {
        let long = "x".repeat(MAX_LINE_CHARS + 5);
        let exact = "y".repeat(MAX_LINE_CHARS);
        let wide = "é".repeat(MAX_LINE_CHARS + 1);
        let cases: Vec<(Vec<u8>, String)> = vec![
            (b"fn main() {}\n".to_vec(), "fn main() {}".into()),
            (b"crlf\r\n".to_vec(), "crlf".into()),
            (b"no newline".to_vec(), "no newline".into()),
            (b"bad \xff byte\n".to_vec(), "bad \u{fffd} byte".into()),
            (
                long.clone().into_bytes(),
                format!("{}…", &long[..MAX_LINE_CHARS]),
            ),
            (exact.clone().into_bytes(), exact.clone()),
            (
                wide.clone().into_bytes(),
                format!("{}…", "é".repeat(MAX_LINE_CHARS)),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(
                cut_line(&input),
                want,
                "{:?}",
                String::from_utf8_lossy(&input)
            );
        }
    }

    #[test]
    fn a_huge_line_is_cut_without_decoding_it_all() {
        let mut line = vec![b'a'; 10 << 20];
        line.push(b'\n');
        let text = cut_line(&line);
        assert_eq!(text.chars().count(), MAX_LINE_CHARS + 1);
        assert!(text.ends_with('…'));
    }

    #[test]
    fn the_budget_grants_exactly_max_takes() {
        let budget = Budget::new(3);
        let granted = (0..10).filter(|_| budget.take()).count();
        assert_eq!(granted, 3);
        assert!(budget.exceeded());
        let budget = Budget::new(3);
        assert!((0..3).all(|_| budget.take()));
        assert!(!budget.exceeded());
    }
}
