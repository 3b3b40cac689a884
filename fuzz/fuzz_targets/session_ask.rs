//! Fuzzes what a client of `spear mcp --listen` names when it asks for a session: the query of
//! `/mcp?workspace=DIR&template=NAME` (`ask_of_query`) and the JSON body of `POST /mcp/sessions`
//! (`ask_of_json`).
//!
//! The input is split at the first NUL: the query text, then the body. Invariants: no panic; a
//! query that parses names each key at most once, and writing what it parsed back as a query
//! parses to the same ask; a body that parses is whitespace only (no ask) or a JSON object with
//! no key but `workspace` and `template`, whose values are the ask's.

#![no_main]
// A failed invariant must abort the run: that is how libFuzzer learns of it.
#![allow(clippy::manual_assert, clippy::panic)]

use libfuzzer_sys::fuzz_target;
use spear_mcp::fuzzing::{ask_of_json, ask_of_query};

fuzz_target!(|data: &[u8]| {
    let (query, body) = match data.iter().position(|b| *b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    if let Ok(query) = std::str::from_utf8(query)
        && let Ok(ask) = ask_of_query(Some(query))
    {
        let mut again = url::form_urlencoded::Serializer::new(String::new());
        if let Some(w) = &ask.workspace {
            again.append_pair("workspace", &w.to_string_lossy());
        }
        if let Some(t) = &ask.template {
            again.append_pair("template", t);
        }
        let again = again.finish();
        // A workspace that is not UTF-8 cannot come from a query (it decodes lossily).
        if ask.workspace.as_ref().is_none_or(|w| w.to_str().is_some()) {
            let back = ask_of_query(Some(&again))
                .unwrap_or_else(|e| panic!("{again:?} does not parse back: {e}"));
            if back != ask {
                panic!("{query:?} gave {ask:?}, written back {again:?} gave {back:?}");
            }
        }
    }
    if let Ok(ask) = ask_of_json(body) {
        if body.iter().all(u8::is_ascii_whitespace) {
            if ask != spear_mcp::SessionAsk::default() {
                panic!("a blank body asked for {ask:?}");
            }
            return;
        }
        let value: serde_json::Value = serde_json::from_slice(body)
            .unwrap_or_else(|e| panic!("an ask was read from a body that is not JSON: {e}"));
        let Some(object) = value.as_object() else {
            panic!("an ask was read from {value}, not an object");
        };
        if let Some(key) = object.keys().find(|k| *k != "workspace" && *k != "template") {
            panic!("an ask was read from a body with the key {key:?}");
        }
        let text = |k: &str| object.get(k).and_then(serde_json::Value::as_str);
        if ask.workspace.as_deref().and_then(std::path::Path::to_str) != text("workspace")
            || ask.template.as_deref() != text("template")
        {
            panic!("{value} gave {ask:?}");
        }
    }
});
