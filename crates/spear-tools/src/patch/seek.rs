//! Finding a hunk's old lines in a file: strictest comparison first, never fuzzier than
//! ignoring surrounding whitespace and typographic punctuation.
//!
//! The levels, tried in order, each over every allowed position before the next:
//! exact; equal but for trailing whitespace; equal but for leading and trailing whitespace;
//! equal once typographic dashes, quotes and spaces read as their ASCII forms (and trimmed).

/// How strictly two lines are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Exact,
    TrimEnd,
    Trim,
    Typographic,
}

const LEVELS: [Level; 4] = [
    Level::Exact,
    Level::TrimEnd,
    Level::Trim,
    Level::Typographic,
];

/// Whether a file line and a patch line are the same at `level`.
fn same(level: Level, file: &str, patch: &str) -> bool {
    match level {
        Level::Exact => file == patch,
        Level::TrimEnd => file.trim_end() == patch.trim_end(),
        Level::Trim => file.trim() == patch.trim(),
        Level::Typographic => file
            .trim()
            .chars()
            .map(ascii_form)
            .eq(patch.trim().chars().map(ascii_form)),
    }
}

/// The ASCII form of common typographic punctuation; any other character is itself.
fn ascii_form(c: char) -> char {
    match c {
        // Hyphens, dashes and the minus sign.
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        // Single quotes and primes.
        '\u{2018}'..='\u{201B}' | '\u{2032}' => '\'',
        // Double quotes and double primes.
        '\u{201C}'..='\u{201F}' | '\u{2033}' => '"',
        // No-break and fixed-width spaces.
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

/// Which of several matching positions wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Anchor {
    /// The first at or after the start.
    First,
    /// The nearest to this index (the earlier one on a tie).
    Near(usize),
    /// Only the one that ends at the end of the file.
    End,
}

/// A bound on the line comparisons of one `plan`, so a huge, repetitive file cannot make the
/// search run for minutes.
#[derive(Debug)]
pub(super) struct Budget(u64);

/// The search ran out of [`Budget`].
#[derive(Debug)]
pub(super) struct OutOfBudget;

impl Budget {
    /// Comparisons allowed per plan: far more than any sane patch needs.
    pub const PER_PLAN: u64 = 50_000_000;

    /// A budget of `n` line comparisons.
    pub fn new(n: u64) -> Self {
        Self(n)
    }
}

/// Finds `pattern` in `lines` at an index `>= from`, by the strictest level that matches
/// anywhere allowed, then by `anchor`. An empty pattern matches at `from` (`End`: at the end).
pub(super) fn seek(
    lines: &[&str],
    pattern: &[&str],
    from: usize,
    anchor: Anchor,
    budget: &mut Budget,
) -> Result<Option<usize>, OutOfBudget> {
    let Some(last) = lines.len().checked_sub(pattern.len()) else {
        return Ok(None);
    };
    if from > last {
        return Ok(None);
    }
    for level in LEVELS {
        let mut at = |i: usize| matches_at(level, lines, pattern, i, budget);
        let found = match anchor {
            Anchor::End => at(last)?.then_some(last),
            Anchor::First => {
                let mut found = None;
                for i in from..=last {
                    if at(i)? {
                        found = Some(i);
                        break;
                    }
                }
                found
            }
            Anchor::Near(hint) => {
                let hint = hint.clamp(from, last);
                let mut found = None;
                for d in 0..=(last - from) {
                    let below = hint.checked_sub(d).filter(|&i| i >= from);
                    let above = hint.checked_add(d).filter(|&i| i <= last && d > 0);
                    if below.is_none() && above.is_none() {
                        break;
                    }
                    if let Some(i) = below
                        && at(i)?
                    {
                        found = Some(i);
                        break;
                    }
                    if let Some(i) = above
                        && at(i)?
                    {
                        found = Some(i);
                        break;
                    }
                }
                found
            }
        };
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

/// Whether `pattern` matches `lines` at `start` at `level`, charging one unit per comparison.
fn matches_at(
    level: Level,
    lines: &[&str],
    pattern: &[&str],
    start: usize,
    budget: &mut Budget,
) -> Result<bool, OutOfBudget> {
    for (k, p) in pattern.iter().enumerate() {
        budget.0 = budget.0.checked_sub(1).ok_or(OutOfBudget)?;
        if !same(level, lines[start + k], p) {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn find(lines: &[&str], pattern: &[&str], from: usize, anchor: Anchor) -> Option<usize> {
        seek(lines, pattern, from, anchor, &mut Budget::new(1_000)).unwrap()
    }

    #[test]
    fn levels_and_anchors() {
        let file = ["a", "b  ", "  c", "x \u{2014} \u{201C}q\u{201D}", "a", "b"];
        // Exact wins over a fuzzier match earlier in the file.
        assert_eq!(find(&file, &["a", "b"], 0, Anchor::First), Some(4));
        assert_eq!(find(&file, &["b"], 0, Anchor::First), Some(5));
        assert_eq!(find(&file, &["a", "b"], 0, Anchor::End), Some(4));
        assert_eq!(find(&file, &["a", "b"], 0, Anchor::Near(0)), Some(4));
        // Fuzzy levels.
        assert_eq!(find(&file, &["  c"], 0, Anchor::First), Some(2));
        assert_eq!(find(&file, &["c"], 0, Anchor::First), Some(2));
        assert_eq!(find(&file, &["x - \"q\""], 0, Anchor::First), Some(3));
        // Never fuzzier than that.
        assert_eq!(find(&file, &["x-\"q\""], 0, Anchor::First), None);
        assert_eq!(find(&file, &["C"], 0, Anchor::First), None);
        // Nearest to the hint, earlier on a tie, never before `from`.
        let rep = ["k", "k", "k", "k", "k"];
        assert_eq!(find(&rep, &["k"], 0, Anchor::Near(3)), Some(3));
        assert_eq!(find(&rep, &["k"], 4, Anchor::Near(1)), Some(4));
        assert_eq!(find(&rep, &["k", "k"], 0, Anchor::Near(9)), Some(3));
        assert_eq!(find(&rep, &["k"], 5, Anchor::First), None);
        // The end anchor only looks at the end.
        assert_eq!(find(&file, &["a"], 0, Anchor::End), None);
    }

    #[test]
    fn budget_runs_out() {
        let file = vec!["same"; 100];
        let pattern = vec!["same"; 50];
        let mut budget = Budget::new(10);
        assert!(seek(&file, &["nope"], 0, Anchor::First, &mut budget).is_err());
        let mut plenty = Budget::new(1_000_000);
        assert_eq!(
            seek(&file, &pattern, 0, Anchor::First, &mut plenty).unwrap(),
            Some(0)
        );
    }
}
