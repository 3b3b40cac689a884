//! Every line a client sends `spear mcp` gets an answer, and the session goes on. A request too
//! large, not UTF-8, not JSON, nested too deep, or not an object gets a JSON-RPC error response
//! (with its id when the id can be read), never silence that leaves the client waiting; the next
//! call succeeds. Spoken raw over stdio, since no SDK client sends such lines.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use spear_testkit::mcp::RawClient;
use spear_testkit::process::peak_rss_kib;
use support::{Dirs, SpearCommands as _};

/// How long an answer may take.
const DEADLINE: Duration = Duration::from_secs(30);

/// `spear mcp --safe` over a workspace holding `a.txt`, after the handshake, spoken to line by
/// line.
fn start() -> RawClient {
    let dirs = Dirs::with(&[("a.txt", "alpha\nbeta\n")]);
    let server = dirs.spear_mcp(&["--safe"]);
    RawClient::start(dirs, server)
}

/// The next message on stdout; fails the test, showing the server's log, when none comes within
/// [`DEADLINE`].
fn next(raw: &RawClient) -> Value {
    raw.next(DEADLINE)
        .unwrap_or_else(|| panic!("no answer within {DEADLINE:?}\n{}", raw.dirs.log()))
}

/// A `read_file` call that must succeed (each with an id of its own, from 101 on).
fn read_file_succeeds(raw: &mut RawClient, after: &str) {
    static NEXT_ID: AtomicU64 = AtomicU64::new(101);
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    raw.call(id, "read_file", &json!({"path": "a.txt"}));
    let answer = next(raw);
    assert_eq!(answer["id"], id, "after {after}: {answer}");
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "after {after}: {answer}");
    assert_eq!(result["structuredContent"]["status"], "ok", "after {after}");
    assert!(
        result["structuredContent"]["stdout"]
            .as_str()
            .unwrap()
            .contains("alpha"),
        "after {after}: {answer}"
    );
}

/// A `tools/call` request of `read_file` whose arguments hold `extra` raw.
fn call_with(id: &str, extra: &[u8]) -> Vec<u8> {
    let mut line = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"read_file","arguments":{{"path":"a.txt","extra":"#
    )
    .into_bytes();
    line.extend_from_slice(extra);
    line.extend_from_slice(b"}}}");
    line
}

/// What is sent; the line; the code of the answer; the ids answered (none: one answer without an
/// id); a piece of the message.
type Case = (&'static str, Vec<u8>, i64, Vec<Value>, &'static str);

#[test]
fn every_malformed_line_is_answered_and_the_next_call_succeeds() {
    const MIB: usize = 1024 * 1024;
    let big = {
        // The id after 17 MiB of arguments, where the TypeScript SDK writes it.
        let mut line =
            br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt","extra":""#
                .to_vec();
        line.resize(line.len() + 17 * MIB, b'x');
        line.extend_from_slice(br#""}},"id":"big"}"#);
        line
    };
    let deep = call_with(
        "3",
        format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).as_bytes(),
    );
    let deep_unclosed = "[".repeat(100_000);
    let batch = br#"[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"six","method":"ping"}]"#;
    let cases: Vec<Case> = vec![
        (
            "a 17 MiB line",
            big,
            -32600,
            vec![json!("big")],
            "the request is larger than 16 MiB",
        ),
        (
            "invalid UTF-8",
            call_with("2", b"\"\xFF\xFEbad\xC3\x28\""),
            -32700,
            vec![json!(2)],
            "the request is not valid UTF-8",
        ),
        (
            "100,000 levels deep",
            deep,
            -32700,
            vec![json!(3)],
            "nested deeper than 100 levels",
        ),
        (
            "100,000 open brackets",
            deep_unclosed.into_bytes(),
            -32700,
            vec![],
            "nested deeper than 100 levels",
        ),
        (
            "not JSON",
            b"this is not JSON".to_vec(),
            -32700,
            vec![],
            "the request is not JSON",
        ),
        (
            "JSON broken after the id",
            br#"{"jsonrpc":"2.0","id":4,"method":"ping","params":{}"#.to_vec(),
            -32700,
            vec![json!(4)],
            "the request is not JSON",
        ),
        (
            // Valid to a parser that skips strings, so rmcp 3.11 alone drops it.
            "a lone surrogate escape",
            call_with("8", br#""\ud800""#),
            -32700,
            vec![json!(8)],
            "the request is not JSON",
        ),
        (
            "a number",
            b"42".to_vec(),
            -32600,
            vec![],
            "the request is a number, not a JSON-RPC message",
        ),
        (
            "a batch",
            batch.to_vec(),
            -32600,
            vec![json!(5), json!("six")],
            "a batch (a JSON array)",
        ),
    ];
    let mut raw = start();
    for (what, line, code, ids, message) in cases {
        raw.send_line(&line);
        let expected = ids.len().max(1);
        for k in 0..expected {
            let answer = next(&raw);
            assert_eq!(answer["jsonrpc"], "2.0", "{what}: {answer}");
            assert_eq!(answer["error"]["code"], code, "{what}: {answer}");
            let text = answer["error"]["message"].as_str().unwrap();
            assert!(text.contains(message), "{what}: {answer}");
            assert!(answer.get("result").is_none(), "{what}: {answer}");
            match ids.get(k) {
                Some(id) => assert_eq!(&answer["id"], id, "{what}: {answer}"),
                None => assert!(answer.get("id").is_none(), "{what}: {answer}"),
            }
        }
        read_file_succeeds(&mut raw, what);
    }
    // Each malformed line is logged on stderr, never written to stdout but as an answer.
    assert!(raw.dirs.log().contains("answering a malformed request"));
}

#[test]
fn answers_come_between_good_requests_sent_at_once() {
    let mut raw = start();
    let mut burst = Vec::new();
    for line in [
        br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.as_slice(),
        b"garbage",
        br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
        b"\"text\"",
        br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
    ] {
        burst.extend_from_slice(line);
        burst.push(b'\n');
    }
    // One write: the lines arrive together, as a pipelining client sends them.
    raw.write(&burst);
    let mut pongs = Vec::new();
    let mut errors = Vec::new();
    for _ in 0..5 {
        let answer = next(&raw);
        if answer.get("result").is_some() {
            pongs.push(answer["id"].as_i64().unwrap());
        } else {
            errors.push(answer["error"]["code"].as_i64().unwrap());
        }
    }
    pongs.sort_unstable();
    errors.sort_unstable();
    assert_eq!(pongs, vec![1, 2, 3]);
    assert_eq!(errors, vec![-32700, -32600]);
    read_file_succeeds(&mut raw, "a burst");
}

#[test]
fn an_oversized_line_is_never_held_whole() {
    const MIB: usize = 1024 * 1024;
    let mut raw = start();
    let before = peak_rss_kib(raw.pid());
    // 96 MiB in one line, streamed: the server holds at most the 16 MiB limit of it.
    let head = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"s":""#;
    raw.write(head);
    let block = vec![b'y'; MIB];
    for _ in 0..96 {
        raw.write(&block);
    }
    raw.send_line(br#""}}"#);
    let answer = next(&raw);
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let grew = peak_rss_kib(raw.pid()).saturating_sub(before);
    assert!(
        grew < 48 * 1024,
        "the server's peak memory grew by {grew} KiB reading a 96 MiB line"
    );
    read_file_succeeds(&mut raw, "a 96 MiB line");
}
