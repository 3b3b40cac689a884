//! Fuzzes `CommandPolicy::classify_script`: any script, however hostile, is classified without a
//! panic, a hang or a stack overflow, and the assessment keeps its invariants; its SIGPIPE
//! rewrite is judged as the original.
//!
//! The input is taken as text (`String::from_utf8_lossy`) and the red-team placeholders (`{WS}`,
//! `{HOME}`, `{CANARY}`...) are replaced by the fixture's paths, so the seeds taken from
//! `testdata/redteam-public-cases.jsonl` mean what they say.

#![no_main]
// A failed invariant must abort the run: that is how libFuzzer learns of it.
#![allow(clippy::manual_assert, clippy::panic)]

use libfuzzer_sys::fuzz_target;
use spear_core::{Capability, CommandClass};

/// `NAME (N arg[s])[ + M more]` with a plain or `(computed)` name of at most 64 characters (and
/// `…`), or one of the fixed words.
fn summary_shape(summary: &str) -> bool {
    if matches!(summary, "(empty)" | "(no program)" | "(not parsed)") {
        return true;
    }
    // The count is the last parenthesis; `+ M more` follows it.
    let Some((name, rest)) = summary.rsplit_once(" (") else {
        return false;
    };
    let Some((count, more)) = rest.split_once(')') else {
        return false;
    };
    let count_ok = count
        .strip_suffix(" args")
        .or_else(|| count.strip_suffix(" arg"))
        .is_some_and(|n| n.parse::<usize>().is_ok());
    let more_ok = more.is_empty()
        || more
            .strip_prefix(" + ")
            .and_then(|m| m.strip_suffix(" more"))
            .is_some_and(|m| m.parse::<usize>().is_ok());
    let name = name.strip_suffix('…').unwrap_or(name);
    let name_ok = name == "(computed)"
        || (name.chars().count() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._+-/@:,=[]".contains(c)));
    count_ok && more_ok && name_ok
}

fuzz_target!(
    init: spear_fuzz::install_panic_hook(),
    |data: &[u8]| {
        let fixture = spear_fuzz::policy_fixture();
        let script = fixture.substitute(&String::from_utf8_lossy(data));
        let a = fixture.policy.classify_script(&script, &fixture.ws);

        // DANGEROUS is exactly "refused in every mode".
        if (a.class == CommandClass::Dangerous) != a.refusal.is_some() {
            panic!(
                "class {} but refusal {:?} for {script:?} ({})",
                a.class, a.refusal, a.reason
            );
        }
        // Every script may at least read.
        if !a.capabilities.contains(Capability::FilesystemRead) {
            panic!("no filesystem:read in {:?} for {script:?}", a.capabilities);
        }
        // READ_ONLY changes nothing.
        if a.class == CommandClass::ReadOnly && (a.mutates() || !a.write_targets.is_empty()) {
            panic!(
                "READ_ONLY but writes {:?} / caps {:?} for {script:?}",
                a.write_targets, a.capabilities
            );
        }
        if a.reason.is_empty() {
            panic!("no reason for {script:?}");
        }
        // The executable summary is a program word and counts, never argument text.
        if !summary_shape(&a.executable) {
            panic!("summary {:?} of {script:?}", a.executable);
        }
        // The SIGPIPE rewrite runs what was judged: the same class and capabilities.
        if let Some(rewritten) = spear_policy::tolerate_sigpipe(&script) {
            let b = fixture.policy.classify_script(&rewritten, &fixture.ws);
            if (a.class, a.capabilities) != (b.class, b.capabilities) {
                panic!("the rewrite of {script:?} is judged {} {:?}", b.class, b.capabilities);
            }
        }
    }
);
