//! The repeated-refusal tracker: a model that keeps asking for the same refused operation is
//! stopped instead of looping.
//!
//! Two refusals are the same when their tool, rule and subject (what the rule refused) match, the
//! subject once spacing, quoting, a leading `./` and trailing slashes are set aside, so
//! `write_file ./gen.rs` and `write_file "gen.rs/"` count together. The rule is the refusal's
//! type, never its wording: rewording a message cannot change what counts as a repeat.

use std::collections::HashMap;

use spear_core::RefusalRule;

/// How many identical refusals stop a turn unless `SPEAR_REFUSAL_REPEATS` says otherwise.
pub const DEFAULT_REFUSAL_REPEATS: u32 = 5;

/// The environment variable that sets the number of identical refusals that stop a turn.
pub const REFUSAL_REPEATS_VAR: &str = "SPEAR_REFUSAL_REPEATS";

/// The limit from the value of [`REFUSAL_REPEATS_VAR`]: a whole number of at least 2, or the
/// default when unset or malformed.
pub fn repeats_from_env(value: Option<&str>) -> u32 {
    value
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|n| *n >= 2)
        .unwrap_or(DEFAULT_REFUSAL_REPEATS)
}

/// Counts refusals per (tool, rule, normalised subject) within one turn.
#[derive(Debug, Clone)]
pub struct RefusalTracker {
    limit: u32,
    counts: HashMap<(String, RefusalRule, String), u32>,
}

/// What [`RefusalTracker::record`] says about a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// Seen this many times in the turn, below the limit.
    Counted(u32),
    /// This refusal reached the limit: the turn stops.
    Stop(u32),
}

impl RefusalTracker {
    /// A tracker that stops a turn at the `limit`-th identical refusal.
    pub fn new(limit: u32) -> Self {
        RefusalTracker {
            limit: limit.max(2),
            counts: HashMap::new(),
        }
    }

    /// The limit.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Counts one refusal of `tool` by `rule` of `subject`.
    pub fn record(&mut self, tool: &str, rule: RefusalRule, subject: &str) -> Repeat {
        let key = (tool.to_owned(), rule, normalise(subject));
        let n = self.counts.entry(key).or_insert(0);
        *n += 1;
        if *n >= self.limit {
            Repeat::Stop(*n)
        } else {
            Repeat::Counted(*n)
        }
    }

    /// Forgets every count (a new turn).
    pub fn reset(&mut self) {
        self.counts.clear();
    }
}

/// `text` with quotes removed, runs of whitespace made one space, and each word's leading `./`
/// and trailing `/` dropped.
pub fn normalise(text: &str) -> String {
    let unquoted: String = text
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '`'))
        .collect();
    unquoted
        .split_whitespace()
        .map(|word| {
            let mut w = word;
            while let Some(rest) = w.strip_prefix("./") {
                w = rest;
            }
            let trimmed = w.trim_end_matches('/');
            if trimmed.is_empty() { w } else { trimmed }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation() {
        for (a, b) in [
            ("./gen.rs", "gen.rs"),
            ("'gen.rs'", "gen.rs"),
            ("\"src/gen/\"", "src/gen"),
            ("  a   b\tc ", "a b c"),
            ("././x", "x"),
            ("/", "/"),
            (
                "cannot write ./gen.rs: generated",
                "cannot write gen.rs: generated",
            ),
        ] {
            assert_eq!(normalise(a), normalise(b), "{a} vs {b}");
        }
        assert_ne!(normalise("a.rs"), normalise("b.rs"));
        assert_ne!(normalise("/etc/x"), normalise("etc/x"));
    }

    #[test]
    fn stops_at_the_limit() {
        let mut t = RefusalTracker::new(5);
        for i in 1..5 {
            let target = if i % 2 == 0 { "./gen.rs" } else { "'gen.rs'" };
            assert_eq!(
                t.record("write_file", RefusalRule::GeneratedFile, target),
                Repeat::Counted(i)
            );
        }
        // A different subject, rule or tool counts apart.
        assert_eq!(
            t.record("write_file", RefusalRule::GeneratedFile, "b.rs"),
            Repeat::Counted(1)
        );
        assert_eq!(
            t.record("write_file", RefusalRule::ProtectedEntry, "gen.rs"),
            Repeat::Counted(1)
        );
        assert_eq!(
            t.record("patch", RefusalRule::GeneratedFile, "gen.rs"),
            Repeat::Counted(1)
        );
        assert_eq!(
            t.record("write_file", RefusalRule::GeneratedFile, "gen.rs/"),
            Repeat::Stop(5)
        );
        t.reset();
        assert_eq!(
            t.record("write_file", RefusalRule::GeneratedFile, "gen.rs"),
            Repeat::Counted(1)
        );
    }

    #[test]
    fn limit_from_env() {
        assert_eq!(repeats_from_env(None), 5);
        assert_eq!(repeats_from_env(Some("3")), 3);
        assert_eq!(repeats_from_env(Some("1")), 5);
        assert_eq!(repeats_from_env(Some("x")), 5);
    }
}
