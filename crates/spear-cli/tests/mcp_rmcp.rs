//! `spear mcp` driven by rmcp's own client over a child process, as an agent built on the official
//! Rust SDK would drive it: the tool list, results as structured content, refusals and failures as
//! `isError` results, and ASK confirmations in both protocol generations (`elicitation/create`
//! before 2026-07-28, input-required results from 2026-07-28).
//!
//! Every client call has a deadline: a server that hangs fails the test instead of hanging it.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod mcp_client;
mod support;

use mcp_client::{Generation, Session, TOOLS, User, envelope, within};
use rmcp::model::{CallToolRequestParams, CallToolResponse, ElicitationAction};
use serde_json::{Value, json};

#[tokio::test]
async fn lists_the_tools_with_annotations_and_the_output_schema() {
    let s = Session::start(&[], User::mute(), Generation::Initialize).await;
    let tools = within("tools/list", s.client.list_all_tools())
        .await
        .unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    let mut want = TOOLS.to_vec();
    want.sort_unstable();
    assert_eq!(names, want);
    for tool in &tools {
        let a = tool.annotations.as_ref().expect("annotations");
        for (hint, value) in [
            ("readOnlyHint", a.read_only_hint),
            ("destructiveHint", a.destructive_hint),
            ("idempotentHint", a.idempotent_hint),
            ("openWorldHint", a.open_world_hint),
        ] {
            assert!(value.is_some(), "{}: {hint} not set", tool.name);
        }
        let read_only = ["read_file", "search_files", "read_output"].contains(&tool.name.as_ref());
        if read_only {
            assert_eq!(a.read_only_hint, Some(true), "{}", tool.name);
        }
        if ["write_file", "patch", "delete_file", "terminal"].contains(&tool.name.as_ref()) {
            assert_eq!(
                (a.read_only_hint, a.destructive_hint),
                (Some(false), Some(true)),
                "{}",
                tool.name
            );
        }
        let out = tool.output_schema.as_ref().expect("an output schema");
        assert_eq!(out.get("type"), Some(&json!("object")), "{}", tool.name);
        let props = out.get("properties").and_then(Value::as_object).unwrap();
        for field in ["status", "exit_code", "stdout", "stderr", "changed_paths"] {
            assert!(props.contains_key(field), "{}: {field}", tool.name);
        }
        assert_eq!(
            tool.input_schema.get("type"),
            Some(&json!("object")),
            "{}",
            tool.name
        );
        assert!(tool.description.as_deref().is_some_and(|d| !d.is_empty()));
    }
    s.stop().await;
}

#[tokio::test]
async fn a_role_without_writes_lists_no_writer() {
    let s = Session::start(
        &["--role", "reviewer"],
        User::mute(),
        Generation::Initialize,
    )
    .await;
    let tools = within("tools/list", s.client.list_all_tools())
        .await
        .unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"read_file"), "{names:?}");
    for writer in ["write_file", "patch", "delete_file"] {
        assert!(!names.contains(&writer), "{writer} in {names:?}");
    }
    let r = s
        .call("write_file", json!({"path": "w.txt", "content": "x"}))
        .await;
    let e = envelope(&r);
    assert_eq!(e["status"], "failed", "{e}");
    assert!(e["reason"].as_str().unwrap().contains("reviewer"), "{e}");
    assert!(!s.dirs.ws.join("w.txt").exists());
    s.stop().await;
}

#[tokio::test]
async fn read_file_returns_the_file_as_structured_content() {
    for generation in [Generation::Initialize, Generation::Discover] {
        let s = Session::start(&[], User::mute(), generation).await;
        let r = s.call("read_file", json!({"path": "a.txt"})).await;
        let e = envelope(&r);
        assert_eq!(e["status"], "ok", "{e}");
        assert_eq!(e["tool"], "read_file");
        assert_eq!(e["stdout"], "     1\talpha\n     2\tbeta\n", "{e}");
        for field in [
            "exit_code",
            "stderr",
            "changed_paths",
            "reason",
            "class",
            "duration_ms",
            "truncated",
        ] {
            assert!(e.get(field).is_some(), "{field} missing from {e}");
        }
        let r = s.call("read_file", json!({"path": "missing.txt"})).await;
        assert_eq!(envelope(&r)["status"], "not_found");
        s.stop().await;
    }
}

#[tokio::test]
async fn safe_refuses_a_write_and_auto_makes_it() {
    let s = Session::start(&["--safe"], User::mute(), Generation::Initialize).await;
    let r = s
        .call("write_file", json!({"path": "w.txt", "content": "new\n"}))
        .await;
    let e = envelope(&r);
    assert_eq!(e["status"], "denied", "{e}");
    assert!(e["reason"].as_str().unwrap().contains("--"), "{e}");
    assert!(!s.dirs.ws.join("w.txt").exists(), "SAFE wrote the file");
    s.stop().await;

    let s = Session::start(&["--auto"], User::mute(), Generation::Initialize).await;
    let r = s
        .call("write_file", json!({"path": "w.txt", "content": "new\n"}))
        .await;
    let e = envelope(&r);
    assert_eq!(e["status"], "ok", "{e}");
    assert_eq!(e["changed_paths"], json!(["w.txt"]), "{e}");
    assert_eq!(
        std::fs::read_to_string(s.dirs.ws.join("w.txt")).unwrap(),
        "new\n"
    );
    s.stop().await;
}

#[tokio::test]
async fn terminal_reports_the_exit_code() {
    let s = Session::start(&["--safe"], User::mute(), Generation::Initialize).await;
    let r = s.call("terminal", json!({"command": "true"})).await;
    let e = envelope(&r);
    assert_eq!(
        (e["status"].as_str(), e["exit_code"].as_i64()),
        (Some("ok"), Some(0)),
        "{e}"
    );
    let r = s
        .call("terminal", json!({"command": "cat a.txt; exit 3"}))
        .await;
    let e = envelope(&r);
    assert_eq!(r.is_error, Some(true));
    assert_eq!(
        (e["status"].as_str(), e["exit_code"].as_i64()),
        (Some("failed"), Some(3)),
        "{e}"
    );
    assert_eq!(e["stdout"], "alpha\nbeta\n", "{e}");
    s.stop().await;
}

#[tokio::test]
async fn bad_arguments_are_error_results_not_protocol_errors() {
    let s = Session::start(&[], User::mute(), Generation::Initialize).await;
    for (tool, args, says) in [
        (
            "read_file",
            json!({"path": "a.txt", "x": 1}),
            "unknown field `x`",
        ),
        ("read_file", json!({}), "path"),
        ("read_file", json!({"path": 7}), "invalid type: integer `7`"),
        (
            "terminal",
            json!({"command": ["true"]}),
            "invalid type: sequence",
        ),
        ("write_file", json!({"path": "w.txt"}), "content"),
    ] {
        let r = s.call(tool, args.clone()).await;
        let e = envelope(&r);
        assert_ne!(e["status"], "ok", "{tool} {args}: {e}");
        let reason = e["reason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with(&format!("invalid arguments for {tool}: ")),
            "{tool} {args}: {e}"
        );
        assert!(reason.contains(says), "{tool} {args}: {says:?} not in {e}");
    }
    assert!(!s.dirs.ws.join("w.txt").exists());
    s.stop().await;
}

#[tokio::test]
async fn a_tool_outside_the_view_is_an_error_result() {
    let s = Session::start(&[], User::mute(), Generation::Initialize).await;
    let r = s.call("no_such_tool", json!({})).await;
    let e = envelope(&r);
    assert_eq!(e["status"], "failed", "{e}");
    let reason = e["reason"].as_str().unwrap();
    assert!(reason.contains("no tool named `no_such_tool`"), "{e}");
    assert!(reason.contains("read_file"), "{e}");
    s.stop().await;
}

/// An ASK write, answered by `user`, in `generation`: what the file and the result say.
async fn ask_write(user: User, generation: Generation) -> (Value, bool, Vec<String>) {
    let s = Session::start(&["--ask"], user.clone(), generation).await;
    let r = s
        .call("write_file", json!({"path": "w.txt", "content": "asked\n"}))
        .await;
    let e = envelope(&r).clone();
    let path = s.dirs.ws.join("w.txt");
    let written = path.exists();
    if written {
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "asked\n");
    }
    s.stop().await;
    (e, written, user.questions())
}

#[tokio::test]
async fn ask_writes_when_the_user_approves_in_both_generations() {
    for generation in [Generation::Initialize, Generation::Discover] {
        let (e, written, asked) =
            ask_write(User::answering(ElicitationAction::Accept), generation).await;
        assert_eq!(e["status"], "ok", "{generation:?}: {e}");
        assert!(written, "{generation:?}: approved but not written: {e}");
        assert_eq!(asked.len(), 1, "{generation:?}: {asked:?}");
        assert!(asked[0].contains("w.txt"), "{generation:?}: {}", asked[0]);
        assert!(asked[0].contains("ASK"), "{generation:?}: {}", asked[0]);
    }
}

#[tokio::test]
async fn ask_writes_nothing_when_the_user_declines_in_both_generations() {
    for generation in [Generation::Initialize, Generation::Discover] {
        for answer in [ElicitationAction::Decline, ElicitationAction::Cancel] {
            let (e, written, asked) = ask_write(User::answering(answer.clone()), generation).await;
            assert_eq!(e["status"], "denied", "{generation:?} {answer:?}: {e}");
            assert!(!written, "{generation:?} {answer:?}: declined but written");
            assert_eq!(asked.len(), 1, "{generation:?}: {asked:?}");
        }
    }
}

#[tokio::test]
async fn ask_without_a_way_to_ask_runs_nothing() {
    for generation in [Generation::Initialize, Generation::Discover] {
        let (e, written, asked) = ask_write(User::mute(), generation).await;
        assert_eq!(e["status"], "cancelled", "{generation:?}: {e}");
        assert!(!written, "{generation:?}: written without asking");
        assert!(asked.is_empty());
        assert!(
            e["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "{generation:?}: {e}"
        );
    }
}

/// The 2026-07-28 exchange round by round, with `call_tool_once`: the first round writes nothing
/// and returns the question and a sealed state; the retry with an approval writes; the same state
/// does not open twice, nor once altered.
#[tokio::test]
async fn the_input_required_exchange_round_by_round() {
    let s = Session::start(
        &["--ask"],
        User::answering(ElicitationAction::Accept),
        Generation::Discover,
    )
    .await;
    let path = s.dirs.ws.join("w.txt");
    let Value::Object(args) = json!({"path": "w.txt", "content": "asked\n"}) else {
        unreachable!()
    };
    let first = CallToolRequestParams::new("write_file").with_arguments(args);
    let once = |params: CallToolRequestParams| async {
        within("tools/call", s.client.call_tool_once(params))
            .await
            .unwrap_or_else(|e| panic!("no result: {e}\n{}", s.dirs.log()))
    };
    let CallToolResponse::InputRequired(asked) = once(first.clone()).await else {
        panic!("the first round of an ASK write is not input-required")
    };
    assert!(!path.exists(), "written before the answer");
    let requests = asked.input_requests.as_ref().unwrap();
    let question = serde_json::to_value(&requests["spear_confirm"]).unwrap();
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap()
            .contains("w.txt"),
        "{question}"
    );
    let state = asked.request_state.clone().expect("a sealed request state");
    let approve = || {
        let mut responses = rmcp::model::InputResponses::new();
        responses.insert(
            "spear_confirm".into(),
            json!({"action": "accept", "content": {"approve": true}}),
        );
        responses
    };
    let complete = |response: CallToolResponse| match response {
        CallToolResponse::Complete(r) => r,
        other => panic!("not a final result: {other:?}"),
    };

    // Attack: an altered state. Refused, nothing written.
    let mid = state.len() / 2;
    let flipped = if state.as_bytes()[mid] == b'A' {
        "B"
    } else {
        "A"
    };
    let altered = format!("{}{flipped}{}", &state[..mid], &state[mid + 1..]);
    let r = complete(
        once(
            first
                .clone()
                .with_input_responses(approve())
                .with_request_state(altered),
        )
        .await,
    );
    let e = envelope(&r);
    assert_eq!(e["status"], "denied", "{e}");
    assert!(
        e["reason"].as_str().unwrap().contains("does not verify"),
        "{e}"
    );
    assert!(!path.exists(), "written on an altered state");

    // Positive control: the state as sealed, with an approval, writes.
    let r = complete(
        once(
            first
                .clone()
                .with_input_responses(approve())
                .with_request_state(state.clone()),
        )
        .await,
    );
    assert_eq!(envelope(&r)["status"], "ok", "{r:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "asked\n");

    // Attack: the same state replayed. Refused, nothing written again.
    std::fs::remove_file(&path).unwrap();
    let r = complete(
        once(
            first
                .with_input_responses(approve())
                .with_request_state(state),
        )
        .await,
    );
    let e = envelope(&r);
    assert_eq!(e["status"], "denied", "{e}");
    assert!(
        e["reason"].as_str().unwrap().contains("already used"),
        "{e}"
    );
    assert!(!path.exists(), "a replayed state wrote again");
    s.stop().await;
}
