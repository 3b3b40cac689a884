//! Fuzzes the screen in front of rmcp's stdio transport: every line a client sends is classified
//! (`screen::classify`) and scanned (`scan::Scanner`) before rmcp sees it.
//!
//! Invariants: no panic or hang; a line that passes is a JSON object serde_json parses (so rmcp
//! can read it, never dropping it unanswered); a line rejected gets at least one answer; the
//! scan of a line fed in two pieces, split anywhere, is the scan of the whole line.

#![no_main]
// A failed invariant must abort the run: that is how libFuzzer learns of it.
#![allow(clippy::manual_assert, clippy::panic)]

use libfuzzer_sys::fuzz_target;
use spear_mcp::fuzzing::Scanner;
use spear_mcp::fuzzing::{Verdict, classify};

fuzz_target!(
    init: spear_fuzz::install_panic_hook(),
    |data: &[u8]| {
        match classify(data) {
            Verdict::Pass => {
                let value: serde_json::Value = serde_json::from_slice(data)
                    .unwrap_or_else(|e| panic!("a line that passes does not parse: {e}"));
                assert!(value.is_object(), "a line that passes is not an object");
            }
            Verdict::Blank => {
                assert!(
                    data.iter().all(|b| spear_mcp::fuzzing::is_whitespace(*b)),
                    "a blank line holds more than whitespace"
                );
            }
            Verdict::Reject(rejection) => {
                assert!(!rejection.into_messages().is_empty(), "a rejection with no answer");
            }
        }
        let whole = Scanner::scan(data);
        let split = data.len() / 2 + usize::from(data.first().copied().unwrap_or(0)) % 7;
        let split = split.min(data.len());
        let mut scanner = Scanner::new();
        scanner.feed(&data[..split]);
        scanner.feed(&data[split..]);
        assert_eq!(scanner.finish(), whole, "a scan depends on how the line was cut");
    }
);
