//! An MCP session is long: one `spear mcp` process serves an agent for hours, over many of the
//! model's turns, and the protocol says nothing of turns. A pause with no call running (the
//! model handed back to the user; `--turn-gap`, 30 s by default) begins the next turn. These
//! tests hold the server to what a long session needs: a stopped turn ends with the pause, and
//! memory does not grow with the number of calls.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod mcp_client;
mod support;

use serde_json::json;
use spear_testkit::mcp::{Generation, User, envelope};

#[tokio::test]
async fn a_stopped_turn_ends_with_the_pause_that_begins_the_next() {
    let s = mcp_client::start(
        &["--safe", "--turn-gap", "1"],
        User::mute(),
        Generation::Initialize,
    )
    .await;
    // Positive control: the session reads.
    let r = s.call("read_file", json!({"path": "a.txt"})).await;
    assert_eq!(envelope(&r)["status"], "ok");
    // The same refused write, five times (SPEAR_REFUSAL_REPEATS' default): the fifth stops the
    // turn. The calls come back to back, well within the gap.
    let mut last = serde_json::Value::Null;
    for _ in 0..5 {
        let r = s
            .call("write_file", json!({"path": "w.txt", "content": "x"}))
            .await;
        last = envelope(&r).clone();
        assert_eq!(last["status"], "denied", "{last}");
    }
    assert_eq!(last["turn_stopped"], true, "{last}");
    assert_eq!(last["rule"], "turn_stopped", "{last}");
    let reason = last["reason"].as_str().unwrap();
    assert!(reason.contains("stop calling tools"), "{reason}");
    assert!(!reason.contains(".."), "{reason}");
    // Nothing more runs in the stopped turn, whatever the tool.
    let r = s.call("read_file", json!({"path": "a.txt"})).await;
    let e = envelope(&r);
    assert_eq!(e["status"], "denied", "{e}");
    assert_eq!(e["rule"], "turn_stopped", "{e}");
    // The model hands back to the user; the pause ends the turn, and the next one runs.
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    for (tool, args) in [
        ("read_file", json!({"path": "a.txt"})),
        ("search_files", json!({"pattern": "alpha"})),
        ("terminal", json!({"command": "true"})),
    ] {
        let r = s.call(tool, args).await;
        let e = envelope(&r);
        assert_eq!(e["status"], "ok", "{tool} in the turn after the pause: {e}");
    }
    // And its refusal count starts afresh: one more refused write does not stop it.
    let r = s
        .call("write_file", json!({"path": "w.txt", "content": "x"}))
        .await;
    assert_eq!(envelope(&r)["status"], "denied");
    assert!(
        envelope(&r).get("turn_stopped").is_none(),
        "{}",
        envelope(&r)
    );
    assert!(!s.dirs.ws.join("w.txt").exists());
    s.stop().await;
}

#[tokio::test]
async fn the_server_keeps_nothing_per_call() {
    const WARM: usize = 1_500;
    const CALLS: usize = 10_000;
    let s = mcp_client::start(&["--safe"], User::mute(), Generation::Initialize).await;
    let pid = s.pid();
    let args = json!({"path": "a.txt"});
    for _ in 0..WARM {
        assert_eq!(
            envelope(&s.call("read_file", args.clone()).await)["status"],
            "ok"
        );
    }
    let before = spear_testkit::process::rss_kib(pid);
    for _ in 0..CALLS {
        assert_eq!(
            envelope(&s.call("read_file", args.clone()).await)["status"],
            "ok"
        );
    }
    let after = spear_testkit::process::rss_kib(pid);
    // The turn's evidence is bounded (spear_runtime::EVIDENCE_KEPT calls); before it was, each
    // call kept about 120 bytes for good (2.3 MiB here).
    assert!(
        after.saturating_sub(before) < 512,
        "the server grew by {} KiB over {CALLS} read_file calls ({before} KiB to {after} KiB)",
        after.saturating_sub(before)
    );
    s.stop().await;
}
