//! `spear exec` is the terminal tool from the command line: for the same command it gives the
//! same result, the same audit record, the same changed paths and the same checkpoint (`spear
//! undo` undoes it), refused or run, as a script or as an argv (real bwrap, real cgroups).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Output, Stdio};

use serde_json::Value;
use support::{Dirs, SpearCommands as _};

const FILES: &[(&str, &str)] = &[("README.md", "readme\n"), ("gone.txt", "bye\n")];

fn spear(d: &Dirs, args: &[&str]) -> Output {
    d.spear(args)
        .stdin(Stdio::null())
        .output()
        .expect("spear runs")
}

/// The JSON on stdout, with the test's own directory written `BASE` (the two workspaces differ
/// in nothing else).
fn json(d: &Dirs, out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout).replace(&*d.base.to_string_lossy(), "BASE");
    serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&out.stderr)))
}

/// `spear exec --json MODE -c SCRIPT` (or `-- ARGV` when `argv` is given).
fn exec(d: &Dirs, mode: &str, script: &str, argv: Option<&[&str]>) -> Value {
    let mut words = vec!["exec", "--json", mode];
    match argv {
        Some(argv) => {
            words.push("--");
            words.extend_from_slice(argv);
        }
        None => words.extend(["-c", script]),
    }
    json(d, &spear(d, &words))
}

/// `spear tool terminal MODE` with `{"command": script}`.
fn terminal(d: &Dirs, mode: &str, script: &str) -> Value {
    let args = serde_json::json!({ "command": script }).to_string();
    json(d, &spear(d, &["tool", "terminal", "--args", &args, mode]))
}

/// The audit log's records, without what differs by run (time, session, turn, duration).
fn audit(d: &Dirs) -> Vec<Value> {
    let text = std::fs::read_to_string(d.state.join("spear/audit.jsonl")).unwrap_or_default();
    text.lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            let o = v.as_object_mut().unwrap();
            for key in ["time", "session", "turn", "duration_ms"] {
                assert!(o.remove(key).is_some(), "{key} in {l}");
            }
            v
        })
        .collect()
}

/// Every file of the workspace and its content.
fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for entry in walk(root) {
        let rel = entry
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        out.insert(rel, std::fs::read_to_string(&entry).unwrap_or_default());
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files.extend(walk(&p));
        } else {
            files.push(p);
        }
    }
    files
}

/// The parts of a result that the same command must reproduce.
fn same_result(exec: &Value, tool: &Value) {
    for key in spear_core::ToolResult::KEYS {
        if key == "duration_ms" {
            continue;
        }
        assert_eq!(exec[key], tool[key], "{key}: exec {exec} / terminal {tool}");
    }
}

#[test]
fn exec_and_the_terminal_tool_record_change_and_undo_alike() {
    let by_exec = Dirs::with(FILES);
    let by_tool = Dirs::with(FILES);
    let before = tree(&by_exec.ws);
    let cases: &[(&str, &str, Option<&[&str]>)] = &[
        // A change of every kind: a new file, an edit, a removal.
        (
            "--auto",
            "echo made > made.txt && sed -i s/readme/changed/ README.md && rm gone.txt",
            None,
        ),
        // The same as an argv.
        ("--auto", "touch argv.txt", Some(&["touch", "argv.txt"])),
        // Refused by the mode: nothing runs, the refusal is audited.
        ("--safe", "touch refused.txt", None),
        // Refused by the classifier whatever the mode.
        ("--auto", "echo x > ~/.bashrc", None),
        // Read-only.
        ("--safe", "cat README.md", None),
    ];
    for (mode, script, argv) in cases {
        let e = exec(&by_exec, mode, script, *argv);
        let t = terminal(&by_tool, mode, script);
        same_result(&e, &t);
    }
    // Positive controls: the changes happened, the refusals are refusals.
    let after = tree(&by_exec.ws);
    assert_eq!(after.get("made.txt").map(String::as_str), Some("made\n"));
    assert_eq!(
        after.get("README.md").map(String::as_str),
        Some("changed\n")
    );
    assert!(after.contains_key("argv.txt") && !after.contains_key("gone.txt"));
    assert!(!after.contains_key("refused.txt"));
    assert_eq!(after, tree(&by_tool.ws));

    let (e, t) = (audit(&by_exec), audit(&by_tool));
    assert_eq!(e.len(), cases.len(), "one record a call: {e:?}");
    assert_eq!(e, t);
    assert_eq!(
        e[0]["changed_paths"],
        serde_json::json!(["README.md", "gone.txt", "made.txt"])
    );
    assert_eq!(e[0]["tool"], "terminal");
    assert_eq!(e[2]["status"], "denied");
    assert_eq!(e[2]["rule"], "mode_forbids");
    assert_eq!(e[3]["status"], "denied");
    assert_eq!(e[3]["rule"], "protected_entry");
    assert_eq!(e[4]["rule"], Value::Null);

    // Each call was its own turn: the same undos restore the same states, back to the start.
    for d in [&by_exec, &by_tool] {
        for _ in 0..2 {
            let out = spear(d, &["undo"]);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert_eq!(tree(&d.ws), before, "undone in {}", d.ws.display());
    }
}
