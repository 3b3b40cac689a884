//! Fuzzes what spear's MCP server reads from a client on the way to running an approved call:
//! the echoed `requestState` (`StateSealer::open`) and the answer in `inputResponses`
//! (`asking::answer_in`).
//!
//! The input is split at the first NUL: the state text, then a JSON answer. Invariants: no panic;
//! a state this process did not seal never opens; a state it sealed opens once, only for its own
//! session, tool and arguments; and an answer approves only as an accept.

#![no_main]
// A failed invariant must abort the run: that is how libFuzzer learns of it.
#![allow(clippy::manual_assert, clippy::panic)]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use spear_mcp::fuzzing::{CONFIRM_KEY, answer_in};
use spear_mcp::fuzzing::StateSealer;
use spear_policy::Confirmation;

fn sealer() -> &'static StateSealer {
    static SEALER: OnceLock<StateSealer> = OnceLock::new();
    SEALER.get_or_init(|| StateSealer::new().expect("a sealer"))
}

fuzz_target!(
    init: spear_fuzz::install_panic_hook(),
    |data: &[u8]| {
        let (state, answer) = match data.iter().position(|&b| b == 0) {
            Some(i) => (&data[..i], &data[i + 1..]),
            None => (data, &b""[..]),
        };
        let state = String::from_utf8_lossy(state);
        let args = serde_json::json!({ "command": state.as_ref() });
        if sealer().open(&state, "s", "terminal", &args).is_ok() {
            panic!("a state this process never sealed opened: {state:?}");
        }

        // A state sealed for these arguments opens for them once, and for nothing else.
        let sealed = sealer().seal("s", "terminal", &args, &[9; 32]);
        let other = serde_json::json!({ "command": format!("{state}x") });
        if sealer().open(&sealed, "s", "terminal", &other).is_ok()
            || sealer().open(&sealed, "t", "terminal", &args).is_ok()
            || sealer().open(&sealed, "s", "write_file", &args).is_ok()
        {
            panic!("a state opened for another call");
        }
        if sealer().open(&sealed, "s", "terminal", &args) != Ok([9; 32]) {
            panic!("a sealed state did not open for its own call");
        }
        if sealer().open(&sealed, "s", "terminal", &args).is_ok() {
            panic!("a state opened twice");
        }

        // Any answer parses or is none; only an accept approves.
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(answer) {
            let mut responses = std::collections::BTreeMap::new();
            responses.insert(CONFIRM_KEY.to_owned(), value.clone());
            if answer_in(Some(&responses)) == Some(Confirmation::Approved)
                && value.get("action").and_then(|a| a.as_str()) != Some("accept")
            {
                panic!("approved without an accept: {value}");
            }
        }
    }
);
