//! Terminal control sequences are data: every text the router returns to a client (a command's
//! stdout and stderr, a background job's output, a stored output read back, a file's content,
//! search lines, a refusal's reason quoting a path, the changed paths) comes back with its C0 and
//! C1 control characters shown escaped (`\u{1b}`), and the result says so in `escaped`, by field.
//! Positive control for each: the same text without the control characters comes back byte for
//! byte, and `escaped` is `null`. The web pair's texts are checked against the test network
//! (`web_net.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use common::{Env, Opts, router};
use serde_json::json;
use spear_core::ExecutionMode::{Auto, Safe};
use spear_core::ToolStatus;
use spear_tools::{ToolResultEnvelope, ToolRouter};

/// An OSC 52 clipboard write, two CSI sequences (clear the screen, home the cursor), a C1 CSI
/// (U+009B), a lone carriage return and DEL: seven control characters, each escaped once.
const HOSTILE: &str = "A\u{1b}]52;c;aGVsbG8=\u{7}B\u{1b}[2J\u{1b}[HC\u{9b}31mD\rE\u{7f}F\r\n";
/// [`HOSTILE`] as the client must see it.
const SHOWN: &str =
    "A\\u{1b}]52;c;aGVsbG8=\\u{7}B\\u{1b}[2J\\u{1b}[HC\\u{9b}31mD\\u{d}E\\u{7f}F\r\n";
/// How many characters of [`HOSTILE`] are escaped.
const COUNT: usize = 7;
/// The same text without control characters (the CRLF ending kept: it is text).
const PLAIN: &str = "A]52;c;aGVsbG8=B[2J[HC31mDEF\r\n";

/// The count `escaped` gives for `field`, if any.
fn escaped(e: &ToolResultEnvelope, field: &str) -> Option<usize> {
    e.result
        .escaped
        .as_ref()
        .and_then(|m| m.get(field).copied())
}

/// The JSON a client receives holds no control character but the newline, the tab and a CRLF's
/// carriage return, in any string.
fn assert_wire_clean(e: &ToolResultEnvelope) {
    fn walk(v: &serde_json::Value, at: &str) {
        match v {
            serde_json::Value::String(s) => {
                assert!(
                    !spear_core::visible::has_controls(s),
                    "a control character reached the client in {at}: {s:?}"
                );
            }
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(x, &format!("{at}[{i}]"));
                }
            }
            serde_json::Value::Object(o) => {
                for (k, x) in o {
                    walk(x, &format!("{at}.{k}"));
                }
            }
            _ => {}
        }
    }
    walk(&serde_json::to_value(e).unwrap(), "envelope");
}

/// A script that prints `text` exactly (from a file, so the shell does not see it).
fn print_file(env: &Env, name: &str, text: &str) -> String {
    env.write(name, text);
    format!("cat {name}")
}

#[test]
fn command_output_is_escaped_and_plain_output_is_exact() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Safe));
    env.write("hostile.txt", HOSTILE);
    env.write("plain.txt", PLAIN);
    let e = r.call(
        "terminal",
        json!({"command": "cat hostile.txt; cat hostile.txt >&2"}),
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(e.result.stdout, SHOWN);
    assert_eq!(e.result.stderr, SHOWN);
    assert_eq!(escaped(&e, "stdout"), Some(COUNT));
    assert_eq!(escaped(&e, "stderr"), Some(COUNT));
    assert_wire_clean(&e);
    // Positive control: the same output without control characters, byte for byte.
    let e = r.call(
        "terminal",
        json!({"command": "cat plain.txt; cat plain.txt >&2"}),
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(e.result.stdout, PLAIN);
    assert_eq!(e.result.stderr, PLAIN);
    assert!(e.result.escaped.is_none(), "{e:?}");
    assert!(serde_json::to_value(&e).unwrap()["escaped"].is_null());
}

#[test]
fn file_content_and_search_lines_are_escaped() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Safe));
    env.write("hostile.txt", &format!("needle {HOSTILE}"));
    env.write("plain.txt", &format!("needle {PLAIN}"));
    let e = r.call("read_file", json!({"path": "hostile.txt"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    // read_file numbers the lines (and ends them with a newline of its own).
    assert!(
        e.result.stdout.contains(SHOWN.trim_end()),
        "{:?}",
        e.result.stdout
    );
    assert_eq!(escaped(&e, "stdout"), Some(COUNT));
    assert_wire_clean(&e);
    let e = r.call("read_file", json!({"path": "plain.txt"}));
    assert!(
        e.result.stdout.contains(PLAIN.trim_end()),
        "{:?}",
        e.result.stdout
    );
    assert!(e.result.escaped.is_none(), "{e:?}");

    let e = r.call("search_files", json!({"pattern": "needle", "path": "."}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert!(
        e.result.stdout.contains("\\u{1b}]52;c;"),
        "{:?}",
        e.result.stdout
    );
    assert!(escaped(&e, "stdout").is_some_and(|n| n > 0), "{e:?}");
    assert_wire_clean(&e);
    std::fs::remove_file(env.path("hostile.txt")).unwrap();
    let e = r.call("search_files", json!({"pattern": "needle", "path": "."}));
    assert!(
        e.result.stdout.contains("needle A]52;c;"),
        "{:?}",
        e.result.stdout
    );
    assert!(e.result.escaped.is_none(), "{e:?}");
}

#[test]
fn a_file_name_in_a_reason_and_in_changed_paths_is_escaped() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Auto));
    let name = "x\u{1b}]52;c;aGk=\u{7}\u{1b}[2J\u{9b}1m.txt";
    let shown = "x\\u{1b}]52;c;aGk=\\u{7}\\u{1b}[2J\\u{9b}1m.txt";
    // A refusal that quotes the path: outside the workspace.
    let e = r.call("read_file", json!({"path": format!("../{name}")}));
    assert_ne!(e.result.status, ToolStatus::Ok, "{e:?}");
    let reason = e.result.reason.clone().unwrap();
    assert!(reason.contains(shown), "{reason:?}");
    assert!(
        escaped(&e, "reason").is_some_and(|n| n >= 4 && n % 4 == 0),
        "{e:?}"
    );
    assert_wire_clean(&e);
    // A file missing: the reason quotes the name.
    let e = r.call("read_file", json!({"path": name}));
    assert_eq!(e.result.status, ToolStatus::NotFound, "{e:?}");
    assert!(e.result.reason.as_deref().unwrap().contains(shown), "{e:?}");
    assert_wire_clean(&e);
    // A write: the changed path names the file.
    let e = r.call("write_file", json!({"path": name, "content": "x"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert!(
        env.path(name).exists(),
        "the file has its real name on disk"
    );
    assert!(
        e.result.changed_paths.iter().any(|p| p.contains(shown)),
        "{:?}",
        e.result.changed_paths
    );
    assert!(
        escaped(&e, "changed_paths").is_some_and(|n| n >= 4 && n % 4 == 0),
        "{e:?}"
    );
    assert_wire_clean(&e);
    // Positive control: a plain name is named as it is.
    let e = r.call(
        "write_file",
        json!({"path": "plain-name.txt", "content": "x"}),
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert!(
        e.result
            .changed_paths
            .iter()
            .any(|p| p.ends_with("plain-name.txt")),
        "{e:?}"
    );
    assert!(e.result.escaped.is_none(), "{e:?}");
    let e = r.call("read_file", json!({"path": "no-such-plain.txt"}));
    assert!(
        e.result
            .reason
            .as_deref()
            .unwrap()
            .contains("no-such-plain.txt")
    );
    assert!(e.result.escaped.is_none(), "{e:?}");
}

/// Reads a background job until it ends; returns its whole stdout and whether any read said it
/// escaped something.
fn drain(r: &ToolRouter, id: &str) -> (String, bool) {
    let mut out = String::new();
    let mut said = false;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let e = r.call("terminal_output", json!({ "job_id": id }));
        assert_wire_clean(&e);
        out.push_str(&e.result.stdout);
        said |= escaped(&e, "stdout").is_some();
        if e.job
            .as_ref()
            .is_some_and(|j| j.state == spear_tools::JobPhase::Exited)
        {
            return (out, said);
        }
        assert!(Instant::now() < deadline, "the job did not end");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_background_jobs_output_is_escaped_when_read() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Safe));
    for (text, want, says) in [(HOSTILE, SHOWN, true), (PLAIN, PLAIN, false)] {
        let command = print_file(&env, "job.txt", text);
        let e = r.call("terminal", json!({"command": command, "background": true}));
        assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
        let id = e.job.clone().unwrap().id;
        let (out, said) = drain(&r, &id);
        assert_eq!(out, want);
        assert_eq!(said, says);
    }
}

#[test]
fn a_stored_output_read_back_is_escaped() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Safe));
    for (text, says) in [(HOSTILE, true), (PLAIN, false)] {
        // Long enough to be cut to the preview and kept whole in the result store.
        let mut long = String::new();
        for i in 0..3000 {
            let _ = write!(long, "{i:05} {text}");
        }
        let command = print_file(&env, "long.txt", &long);
        let e = r.call("terminal", json!({"command": command}));
        assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
        assert!(e.result.truncated, "cut to the preview");
        assert_eq!(
            escaped(&e, "stdout").is_some(),
            says,
            "{:?}",
            e.result.escaped
        );
        assert_wire_clean(&e);
        let reference = e.output_ref.clone().unwrap();
        let e = r.call(
            "read_output",
            json!({"ref": reference, "offset": 0, "limit": 4096}),
        );
        assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
        assert_eq!(
            escaped(&e, "stdout").is_some(),
            says,
            "{:?}",
            e.result.escaped
        );
        assert_wire_clean(&e);
        let first = if says { SHOWN } else { PLAIN };
        assert!(
            e.result.stdout.starts_with(&format!("00000 {first}")),
            "{:?}",
            &e.result.stdout[..200.min(e.result.stdout.len())]
        );
    }
}
