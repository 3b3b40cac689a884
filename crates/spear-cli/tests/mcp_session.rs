//! An MCP session is long: one `spear mcp` process serves an agent for hours, over many of the
//! model's turns, and the protocol says nothing of turns. These tests hold the server to what a
//! long session needs.
//!
//! Both FAIL today, for one cause: spear-mcp never begins a router turn (`ToolRouter::begin_turn`
//! is called only by `spear tool --turn`), so the whole session is one turn. The turn's evidence
//! grows by one record a call, for good, and a turn stopped by repeated refusals stays stopped
//! for the rest of the session.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod mcp_client;

use mcp_client::{Generation, Session, User, envelope};
use serde_json::json;

/// The resident memory of the server, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn repeated_refusals_do_not_stop_the_session_for_good() {
    let s = Session::start(&["--safe"], User::mute(), Generation::Initialize).await;
    // Positive control: the session reads.
    let r = s.call("read_file", json!({"path": "a.txt"})).await;
    assert_eq!(envelope(&r)["status"], "ok");
    // The same refused write, five times (SPEAR_REFUSAL_REPEATS' default): the fifth stops.
    let mut last = serde_json::Value::Null;
    for _ in 0..5 {
        let r = s
            .call("write_file", json!({"path": "w.txt", "content": "x"}))
            .await;
        last = envelope(&r).clone();
        assert_eq!(last["status"], "denied", "{last}");
    }
    assert_eq!(last["turn_stopped"], true, "{last}");
    let reason = last["reason"].as_str().unwrap();
    assert!(reason.contains("do something else"), "{reason}");
    // The refusal says "do something else"; something else is refused too, and so is every call
    // after it: nothing in MCP ends the turn, so only restarting the server ends the stop.
    for (tool, args) in [
        ("read_file", json!({"path": "a.txt"})),
        ("search_files", json!({"pattern": "alpha"})),
        ("terminal", json!({"command": "true"})),
    ] {
        let r = s.call(tool, args).await;
        let e = envelope(&r);
        assert_eq!(
            e["status"], "ok",
            "{tool} after a stopped turn, in a session that cannot begin another: {e}"
        );
    }
    s.stop().await;
}

#[tokio::test]
async fn the_server_keeps_nothing_per_call() {
    const WARM: usize = 2_000;
    const CALLS: usize = 20_000;
    let s = Session::start(&["--safe"], User::mute(), Generation::Initialize).await;
    let pid = s.pid();
    let args = json!({"path": "a.txt"});
    for _ in 0..WARM {
        assert_eq!(
            envelope(&s.call("read_file", args.clone()).await)["status"],
            "ok"
        );
    }
    let before = rss_kib(pid);
    for _ in 0..CALLS {
        assert_eq!(
            envelope(&s.call("read_file", args.clone()).await)["status"],
            "ok"
        );
    }
    let after = rss_kib(pid);
    // Today: about 120 bytes a call (one `Evidence` in the session's single turn), 2.3 MiB here.
    assert!(
        after.saturating_sub(before) < 1024,
        "the server grew by {} KiB over {CALLS} read_file calls ({before} KiB to {after} KiB)",
        after.saturating_sub(before)
    );
    s.stop().await;
}
