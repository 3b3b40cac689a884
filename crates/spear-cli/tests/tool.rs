//! `spear tool`, `spear audit` and `spear undo` as users call them.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::{Output, Stdio};

use serde_json::Value;
use support::{Dirs, SpearCommands as _};

fn dirs() -> Dirs {
    Dirs::with(&[("README.md", "readme\n")])
}

fn spear(d: &Dirs, args: &[&str]) -> Output {
    d.spear(args)
        .stdin(Stdio::null())
        .output()
        .expect("spear runs")
}

fn tool(d: &Dirs, name: &str, args: &str, flags: &[&str]) -> (i32, Value) {
    let mut words = vec!["tool", name, "--args", args];
    words.extend_from_slice(flags);
    let out = spear(d, &words);
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), v)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn prints_the_envelope() {
    let d = dirs();
    let (code, v) = tool(&d, "read_file", r#"{"path": "README.md"}"#, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["tool"], "read_file");
    assert_eq!(v["status"], "ok");
    assert_eq!(v["stdout"], "     1\treadme\n");
    for key in spear_core::ToolResult::KEYS {
        assert!(v.get(key).is_some(), "{key} in {v}");
    }
}

#[test]
fn exit_statuses() {
    let d = dirs();
    let (code, v) = tool(
        &d,
        "write_file",
        r#"{"path": "a.txt", "content": "x"}"#,
        &[],
    );
    assert_eq!((code, v["status"].as_str()), (126, Some("denied")), "{v}");
    assert!(!d.ws.join("a.txt").exists());
    let (code, v) = tool(&d, "read_file", r#"{"path": "nope.txt"}"#, &[]);
    assert_eq!(
        (code, v["status"].as_str()),
        (127, Some("not_found")),
        "{v}"
    );
    let (code, v) = tool(&d, "read_file", r#"{"path": "../x"}"#, &[]);
    assert_eq!(
        (code, v["status"].as_str()),
        (126, Some("invalid_path")),
        "{v}"
    );
    let (code, v) = tool(&d, "read_file", r#"{"path": "README.md", "x": 1}"#, &[]);
    assert_eq!((code, v["status"].as_str()), (125, Some("failed")), "{v}");
    assert!(v["reason"].as_str().unwrap().contains("unknown field `x`"));
    let (code, v) = tool(&d, "terminal", r#"{"command": "exit 3"}"#, &["--auto"]);
    assert_eq!((code, v["exit_code"].as_i64()), (3, Some(3)), "{v}");
    let (code, v) = tool(
        &d,
        "terminal",
        r#"{"command": "sleep 1", "background": true}"#,
        &[],
    );
    assert_eq!(code, 125, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("spear mcp"), "{v}");
    let out = spear(&d, &["tool", "read_file", "--args", "{not json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--args is not valid JSON"));
}

#[test]
fn undo_restores_the_last_call_and_audit_shows_it() {
    let d = dirs();
    let (code, v) = tool(
        &d,
        "write_file",
        r#"{"path": "README.md", "content": "changed\n"}"#,
        &["--auto"],
    );
    assert_eq!(code, 0, "{v}");
    let (code, v) = tool(
        &d,
        "terminal",
        r#"{"command": "echo made > made.txt"}"#,
        &["--auto"],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["changed_paths"], serde_json::json!(["made.txt"]));
    assert_eq!(read(&d.ws.join("README.md")), "changed\n");

    // Each `spear tool` call is its own turn: undo goes back one call at a time.
    let out = spear(&d, &["undo"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!d.ws.join("made.txt").exists());
    assert_eq!(read(&d.ws.join("README.md")), "changed\n");
    let out = spear(&d, &["undo"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read(&d.ws.join("README.md")), "readme\n");

    // Two calls and two undos, each one record.
    let out = spear(&d, &["audit", "--tail", "3"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 3, "{text}");
    assert_eq!(records[0]["tool"], "terminal");
    assert_eq!(records[1]["event"], "undo");
    assert_eq!(records[1]["changed_paths"], serde_json::json!(["made.txt"]));
    assert_eq!(records[2]["event"], "undo");
    assert!(!text.contains("made >"), "no command text: {text}");
    let out = spear(&d, &["audit"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 4);
}

#[test]
fn a_cut_output_says_how_to_read_the_rest() {
    let d = dirs();
    let out = spear(
        &d,
        &[
            "tool",
            "terminal",
            "--args",
            r#"{"command": "seq 1 30000"}"#,
            "--session",
            "cli-session-1",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let reference = v["output_ref"].as_str().unwrap().to_owned();
    let hint = String::from_utf8_lossy(&out.stderr);
    assert!(
        hint.contains("--session cli-session-1") && hint.contains(&reference),
        "{hint}"
    );
    let args = format!(r#"{{"ref": "{reference}", "offset": 0, "limit": 10}}"#);
    let (code, v) = tool(&d, "read_output", &args, &["--session", "cli-session-1"]);
    assert_eq!(code, 0, "{v}");
    assert!(v["stdout"].as_str().unwrap().starts_with("1\n2\n3\n"));
    // Another session cannot read it.
    let (code, _) = tool(&d, "read_output", &args, &["--session", "cli-session-2"]);
    assert_ne!(code, 0);
}

#[test]
fn undo_refuses_a_conflict() {
    let d = dirs();
    let (code, _) = tool(
        &d,
        "write_file",
        r#"{"path": "README.md", "content": "by the agent\n"}"#,
        &["--auto"],
    );
    assert_eq!(code, 0);
    std::fs::write(d.ws.join("README.md"), "by the user\n").unwrap();
    let out = spear(&d, &["undo"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("README.md"));
    assert_eq!(read(&d.ws.join("README.md")), "by the user\n");
}

/// `spear tool terminal` takes the escalation fields where the session confines: without a
/// terminal to ask on, a SAFE escalation is refused as nobody could be asked, and nothing is
/// written; AUTO's terminal has no such field. A SAFE call without them runs (positive control).
#[test]
fn an_escalation_without_a_terminal_to_ask_on_writes_nothing() {
    let d = dirs();
    let escalating = r#"{"command": "echo no > canary.txt", "sandbox_permissions": ["workspace:write"], "justification": "the task writes the canary file"}"#;
    let (code, v) = tool(&d, "terminal", escalating, &["--safe"]);
    assert_eq!(
        (code, v["status"].as_str(), v["rule"].as_str()),
        (126, Some("cancelled"), Some("escalation_unavailable")),
        "{v}"
    );
    let (_, v) = tool(&d, "terminal", escalating, &["--auto"]);
    assert_eq!(v["status"], "failed", "{v}");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("takes no `sandbox_permissions`"),
        "{v}"
    );
    assert!(!d.ws.join("canary.txt").exists());
    let (code, v) = tool(&d, "terminal", r#"{"command": "echo fine"}"#, &["--safe"]);
    assert_eq!((code, v["stdout"].as_str()), (0, Some("fine\n")), "{v}");
}
