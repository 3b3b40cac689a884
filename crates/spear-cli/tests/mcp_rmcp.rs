//! `spear mcp` driven by rmcp's own client over a child process, as an agent built on the official
//! Rust SDK would drive it: the tool list, results as structured content, refusals and failures as
//! `isError` results, and ASK confirmations in both protocol generations (`elicitation/create`
//! before 2026-07-28, input-required results from 2026-07-28).
//!
//! Every client call has a deadline: a server that hangs fails the test instead of hanging it.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod mcp_client;
mod support;

use rmcp::model::{CallToolRequestParams, CallToolResponse, ElicitationAction};
use serde_json::{Value, json};
use spear_testkit::mcp::{Generation, User, envelope, within};
use support::{SAFE_TOOLS, SpearCommands as _, TOOLS};

#[tokio::test]
async fn lists_the_tools_with_annotations_and_the_output_schema() {
    let s = mcp_client::start(&["--auto"], User::mute(), Generation::Initialize).await;
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
async fn safe_lists_only_the_tools_that_act_in_safe_and_says_how_to_get_the_others() {
    for generation in [Generation::Initialize, Generation::Discover] {
        let s = mcp_client::start(&["--safe"], User::mute(), generation).await;
        let tools = within("tools/list", s.client.list_all_tools())
            .await
            .unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort_unstable();
        assert_eq!(names, SAFE_TOOLS.to_vec(), "{generation:?}");
        // A call to an unlisted writer all the same: refused, naming the modes that have it and
        // saying that the user starts them; nothing written.
        for (tool, args) in [
            ("write_file", json!({"path": "w.txt", "content": "w"})),
            ("delete_file", json!({"path": "a.txt"})),
            (
                "patch",
                json!({"patch": "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** End Patch\n"}),
            ),
        ] {
            let r = s.call(tool, args).await;
            assert_eq!(r.is_error, Some(true), "{tool}: {r:?}");
            let e = envelope(&r);
            assert_eq!(e["status"], "denied", "{tool}: {e}");
            // A client acts on the rule; the wording is the rule's own (spear-core's tests).
            assert_eq!(e["rule"], "tool_not_in_mode", "{tool}: {e}");
            let reason = e["reason"].as_str().unwrap();
            assert!(reason.contains(&format!("`{tool}`")), "{reason}");
        }
        assert!(!s.dirs.ws.join("w.txt").exists());
        assert_eq!(
            std::fs::read_to_string(s.dirs.ws.join("a.txt")).unwrap(),
            "alpha\nbeta\n"
        );
        s.stop().await;
    }
    // Control: in AUTO the same write is listed and writes.
    let s = mcp_client::start(&["--auto"], User::mute(), Generation::Initialize).await;
    let r = s
        .call("write_file", json!({"path": "w.txt", "content": "w"}))
        .await;
    assert_eq!(envelope(&r)["status"], "ok", "{r:?}");
    assert_eq!(
        std::fs::read_to_string(s.dirs.ws.join("w.txt")).unwrap(),
        "w"
    );
    s.stop().await;
}

#[tokio::test]
async fn a_role_without_writes_lists_no_writer() {
    let s = mcp_client::start(
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
        let s = mcp_client::start(&[], User::mute(), generation).await;
        let r = s.call("read_file", json!({"path": "a.txt"})).await;
        let e = envelope(&r);
        assert_eq!(e["status"], "ok", "{e}");
        assert_eq!(e["tool"], "read_file");
        assert_eq!(e["stdout"], "     1\talpha\n     2\tbeta\n", "{e}");
        for field in spear_core::ToolResult::KEYS {
            assert!(e.get(field).is_some(), "{field} missing from {e}");
        }
        assert!(e["escaped"].is_null(), "nothing escaped in plain text: {e}");
        let r = s.call("read_file", json!({"path": "missing.txt"})).await;
        assert_eq!(envelope(&r)["status"], "not_found");
        s.stop().await;
    }
}

/// A file holding an OSC 52 clipboard write, a CSI and a C1 CSI reaches the client escaped, in
/// the structured content and in the text block, and `escaped` counts them; the plain file of the
/// test above is the positive control.
#[tokio::test]
async fn control_sequences_reach_the_client_escaped() {
    for generation in [Generation::Initialize, Generation::Discover] {
        let s = mcp_client::start(&[], User::mute(), generation).await;
        std::fs::write(
            s.dirs.ws.join("hostile.txt"),
            "x\u{1b}]52;c;aGVsbG8=\u{7}y\u{1b}[2Jz\u{9b}31mw\n",
        )
        .unwrap();
        let r = s.call("read_file", json!({"path": "hostile.txt"})).await;
        let e = envelope(&r);
        assert_eq!(e["status"], "ok", "{e}");
        assert_eq!(
            e["stdout"], "     1\tx\\u{1b}]52;c;aGVsbG8=\\u{7}y\\u{1b}[2Jz\\u{9b}31mw\n",
            "{e}"
        );
        assert_eq!(e["escaped"], json!({"stdout": 4}), "{e}");
        let text = &r.content[0].as_text().unwrap().text;
        assert!(text.contains("x\\u{1b}]52;c;"), "{text}");
        assert!(!spear_core::visible::has_controls(text), "{text:?}");
        s.stop().await;
    }
}

#[tokio::test]
async fn safe_refuses_a_write_and_auto_makes_it() {
    let s = mcp_client::start(&["--safe"], User::mute(), Generation::Initialize).await;
    let r = s
        .call("write_file", json!({"path": "w.txt", "content": "new\n"}))
        .await;
    let e = envelope(&r);
    assert_eq!(e["status"], "denied", "{e}");
    assert!(e["reason"].as_str().unwrap().contains("--"), "{e}");
    assert!(!s.dirs.ws.join("w.txt").exists(), "SAFE wrote the file");
    s.stop().await;

    let s = mcp_client::start(&["--auto"], User::mute(), Generation::Initialize).await;
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
    let s = mcp_client::start(&["--safe"], User::mute(), Generation::Initialize).await;
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
    // ASK lists write_file (SAFE does not); bad arguments are refused before anyone is asked.
    let s = mcp_client::start(&["--ask"], User::mute(), Generation::Initialize).await;
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
    let s = mcp_client::start(&[], User::mute(), Generation::Initialize).await;
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
    ask_write_with(&["--ask"], user, generation).await
}

/// [`ask_write`] with the server's `flags`.
async fn ask_write_with(
    flags: &[&str],
    user: User,
    generation: Generation,
) -> (Value, bool, Vec<String>) {
    let s = mcp_client::start(flags, user.clone(), generation).await;
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
        // Nobody runs `spear approve` within the wait (tests/mcp_approve.rs has someone who does).
        let (e, written, asked) =
            ask_write_with(&["--ask", "--approval-wait", "1"], User::mute(), generation).await;
        assert_eq!(e["status"], "cancelled", "{generation:?}: {e}");
        assert_eq!(e["rule"], "unapproved", "{generation:?}: {e}");
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
    let s = mcp_client::start(
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
    assert_eq!(e["rule"], "request_state_refused", "{e}");
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
    assert_eq!(e["rule"], "request_state_refused", "{e}");
    assert!(
        e["reason"].as_str().unwrap().contains("already used"),
        "{e}"
    );
    assert!(!path.exists(), "a replayed state wrote again");
    s.stop().await;
}

/// The question says where and how a command runs, not only its text: approving `./run.sh`
/// shown bare must not start another directory's `run.sh`, or a job with no timeout.
#[tokio::test]
async fn ask_shows_where_and_how_a_command_runs() {
    for generation in [Generation::Initialize, Generation::Discover] {
        let user = User::answering(ElicitationAction::Decline);
        let s = mcp_client::start(&["--ask"], user.clone(), generation).await;
        std::fs::create_dir_all(s.dirs.ws.join("sub")).unwrap();
        for args in [
            json!({"command": "touch made.txt", "workdir": "sub", "background": true}),
            json!({"command": "touch made.txt", "timeout": 7}),
        ] {
            let r = s.call("terminal", args.clone()).await;
            assert_eq!(envelope(&r)["status"], "denied", "{generation:?} {args}");
        }
        let asked = user.questions();
        assert_eq!(asked.len(), 2, "{generation:?}: {asked:?}");
        assert!(
            asked[0].contains("runs: in sub, as a background job with no timeout"),
            "{generation:?}: {}",
            asked[0]
        );
        assert!(
            asked[1].contains("runs: in ., in the foreground, with a timeout of 7 s"),
            "{generation:?}: {}",
            asked[1]
        );
        assert!(!s.dirs.ws.join("sub/made.txt").exists() && !s.dirs.ws.join("made.txt").exists());
        s.stop().await;
    }
}

/// When the client closes stdin, a running call is cancelled at once (not after the SDK's 5 s
/// drain): its process tree dies and the server exits. Spoken raw, so that the client only
/// closes stdin (rmcp's client would kill the server).
#[test]
fn closing_stdin_cancels_a_running_call_at_once() {
    use std::io::Write as _;
    let dirs = support::Dirs::with(&[]);
    let marker = format!("{}.{}", 300 + std::process::id() % 100, std::process::id());
    let mut server = dirs
        .spear_mcp(&["--auto"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    for line in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "terminal", "arguments": {"command": format!("sleep {marker}")}}}),
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    let alive = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
            std::fs::read(p.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&format!("sleep\0{marker}")))
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !alive() {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let closed = std::time::Instant::now();
    drop(stdin);
    loop {
        if server.try_wait().unwrap().is_some() && !alive() {
            break;
        }
        assert!(
            closed.elapsed() < std::time::Duration::from_secs(3),
            "still running {:?} after stdin closed (the command: {})",
            closed.elapsed(),
            alive()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// SIGTERM stops the server at once, before the handshake too, and with stdin a socket (Node.js
/// clients start servers so), whose blocking read would otherwise hold the runtime.
#[test]
fn sigterm_stops_the_server_at_once() {
    let dirs = support::Dirs::with(&[]);
    for handshake in [false, true] {
        let (mut ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut server = dirs
            .spear_mcp(&[])
            .stdin(std::process::Stdio::from(std::os::fd::OwnedFd::from(
                theirs,
            )))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        if handshake {
            use std::io::{BufRead as _, Write as _};
            let hello = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}}});
            writeln!(ours, "{hello}").unwrap();
            let mut answer = String::new();
            std::io::BufReader::new(server.stdout.take().unwrap())
                .read_line(&mut answer)
                .unwrap();
            assert!(answer.contains("\"protocolVersion\""), "{answer}");
        } else {
            // Positive control for "at once": the server is up and waiting.
            std::thread::sleep(std::time::Duration::from_millis(300));
            assert!(server.try_wait().unwrap().is_none());
        }
        let sent = std::time::Instant::now();
        let killed = std::process::Command::new("kill")
            .args(["-TERM", &server.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        loop {
            if let Some(status) = server.try_wait().unwrap() {
                assert!(status.success(), "handshake {handshake}: {status}");
                break;
            }
            assert!(
                sent.elapsed() < std::time::Duration::from_secs(3),
                "handshake {handshake}: still running {:?} after SIGTERM",
                sent.elapsed()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        drop(ours);
    }
}

/// A call cancelled while its question is open withdraws the question
/// (`notifications/cancelled` for the `elicitation/create`), and nothing runs. Spoken raw, to
/// see every message the server sends.
#[test]
fn cancelling_a_call_withdraws_its_open_question() {
    use std::io::{BufRead as _, Write as _};
    let dirs = support::Dirs::with(&[]);
    let mut server = dirs
        .spear_mcp(&["--ask"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let stdout = server.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let message: Value = serde_json::from_str(&line).expect("stdout carries JSON-RPC only");
            if tx.send(message).is_err() {
                break;
            }
        }
    });
    let send = |stdin: &mut std::process::ChildStdin, message: Value| {
        writeln!(stdin, "{message}").unwrap();
    };
    let next = |what: &str, pick: &dyn Fn(&Value) -> bool| -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let message = rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no {what} within 20 s"));
            if pick(&message) {
                return message;
            }
        }
    };
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "raw", "version": "0"}}}),
    );
    next("initialize result", &|m| m["id"] == 1);
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "terminal", "arguments": {"command": "touch asked.txt"}}}),
    );
    let question = next("the question", &|m| m["method"] == "elicitation/create");
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap()
            .contains("touch asked.txt"),
        "{question}"
    );
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "the user pressed stop"}}),
    );
    let withdrawn = next("the question's withdrawal", &|m| {
        m["method"] == "notifications/cancelled"
    });
    assert_eq!(
        withdrawn["params"]["requestId"], question["id"],
        "{withdrawn}"
    );
    // Answering now changes nothing: the call is over and nothing ran.
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept"}}),
    );
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "read_file", "arguments": {"path": "asked.txt"}}}),
    );
    let read = next("the read's result", &|m| m["id"] == 3);
    assert_eq!(
        read["result"]["structuredContent"]["status"], "not_found",
        "{read}"
    );
    assert!(!dirs.ws.join("asked.txt").exists());
    drop(stdin);
    server.wait().unwrap();
}
