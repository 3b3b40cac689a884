//! Fuzzes the screen in front of rmcp's stdio transport: every line a client sends is classified
//! (`screen::classify`) and scanned (`scan::Scanner`) before rmcp sees it.
//!
//! Invariants: no panic or hang; a line that passes is a JSON object serde_json parses once its
//! leading UTF-8 byte-order mark, if any, is set aside (as rmcp sets it aside, RFC 8259 §8.1), so
//! rmcp can read it and never drops it unanswered; a blank line is whitespace after that mark; a
//! line rejected gets at least one answer; the scan of a line fed in two pieces, split anywhere,
//! is the scan of the whole line.

#![no_main]
// A failed invariant must abort the run: that is how libFuzzer learns of it.
#![allow(clippy::manual_assert, clippy::panic)]

use libfuzzer_sys::fuzz_target;
use spear_mcp::fuzzing::Scanner;
use spear_mcp::fuzzing::{Verdict, classify};

/// The UTF-8 byte-order mark, which a line may start with and which nothing reads.
const BOM: &[u8] = b"\xEF\xBB\xBF";

fuzz_target!(
    init: spear_fuzz::install_panic_hook(),
    |data: &[u8]| {
        let body = data.strip_prefix(BOM).unwrap_or(data);
        match classify(data) {
            Verdict::Pass => {
                let value: serde_json::Value = serde_json::from_slice(body)
                    .unwrap_or_else(|e| panic!("a line that passes does not parse: {e}"));
                assert!(value.is_object(), "a line that passes is not an object");
            }
            Verdict::Blank => {
                assert!(
                    body.iter().all(|b| spear_mcp::fuzzing::is_whitespace(*b)),
                    "a blank line holds more than a byte-order mark and whitespace"
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
