//! `spear classify` as users and tests call it: the JSON contract, the text form, and exit status 2
//! for every kind of bad input.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};

fn spear(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spear"))
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd.join("home"))
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .expect("spear runs")
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws/src")).unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    std::fs::write(dir.path().join("ws/README.md"), "x\n").unwrap();
    dir
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object on stdout")
}

#[test]
fn json_has_exactly_the_documented_keys() {
    let dir = workspace();
    let ws = dir.path().join("ws");
    let v = json(&spear(
        &[
            "classify",
            "--json",
            "--workspace",
            ws.to_str().unwrap(),
            "ls -la",
        ],
        dir.path(),
    ));
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "capabilities",
            "class",
            "host_reads",
            "modes",
            "reason",
            "write_targets"
        ]
    );
    assert_eq!(v["class"], "READ_ONLY");
    assert_eq!(v["capabilities"], serde_json::json!(["filesystem:read"]));
    assert_eq!(
        v["modes"],
        serde_json::json!({"safe": "allow", "ask": "allow", "auto": "allow"})
    );
}

#[test]
fn a_write_is_refused_in_safe_asked_in_ask_and_allowed_in_auto() {
    let dir = workspace();
    let ws = dir.path().join("ws");
    let v = json(&spear(&["classify", "--json", "echo hi > out.txt"], &ws));
    assert_eq!(v["class"], "WORKSPACE_MUTATING");
    assert_eq!(
        v["modes"],
        serde_json::json!({"safe": "deny", "ask": "confirm", "auto": "allow"})
    );
    let target = ws.canonicalize().unwrap().join("out.txt");
    assert_eq!(v["write_targets"], serde_json::json!([target]));
    assert!(
        v["capabilities"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("workspace:write"))
    );
}

#[test]
fn dangerous_is_denied_everywhere_and_says_why() {
    let dir = workspace();
    let ws = dir.path().join("ws");
    let v = json(&spear(&["classify", "--json", "sudo rm -rf /"], &ws));
    assert_eq!(v["class"], "DANGEROUS");
    assert_eq!(
        v["modes"],
        serde_json::json!({"safe": "deny", "ask": "deny", "auto": "deny"})
    );
    assert!(v["reason"].as_str().unwrap().contains("privilege"));
}

#[test]
fn no_network_removes_the_network_from_every_mode() {
    let dir = workspace();
    let ws = dir.path().join("ws");
    let v = json(&spear(
        &["classify", "--json", "curl https://example.com"],
        &ws,
    ));
    assert_eq!(v["modes"]["auto"], "allow");
    let v = json(&spear(
        &[
            "classify",
            "--json",
            "--no-network",
            "curl https://example.com",
        ],
        &ws,
    ));
    assert_eq!(
        v["modes"],
        serde_json::json!({"safe": "deny", "ask": "deny", "auto": "deny"})
    );
}

#[test]
fn text_output_names_every_field() {
    let dir = workspace();
    let ws = dir.path().join("ws");
    let out = spear(&["classify", "touch new.txt"], &ws);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for field in [
        "class:",
        "capabilities:",
        "writes:",
        "host reads:",
        "reason:",
        "safe:",
        "ask:",
        "auto:",
    ] {
        assert!(text.contains(field), "{field} missing from:\n{text}");
    }
    assert!(
        text.contains("--ask or --auto"),
        "the SAFE refusal names the way forward:\n{text}"
    );
}

#[test]
fn scripts_come_from_stdin_or_a_file() {
    let dir = workspace();
    let ws = dir.path().join("ws");
    let mut child = Command::new(env!("CARGO_BIN_EXE_spear"))
        .args(["classify", "--json", "-"])
        .current_dir(&ws)
        .env("HOME", dir.path().join("home"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"rm -rf src\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(json(&out)["class"], "WORKSPACE_MUTATING");

    std::fs::write(dir.path().join("script.sh"), "cat README.md | wc -l\n").unwrap();
    let file = dir.path().join("script.sh");
    let v = json(&spear(
        &["classify", "--json", "--file", file.to_str().unwrap()],
        &ws,
    ));
    assert_eq!(v["class"], "READ_ONLY");
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    let dir = workspace();
    let ws = dir.path().join("ws");
    std::fs::write(dir.path().join("binary.sh"), [0xff, 0xfe, b'l', b's']).unwrap();
    std::fs::write(dir.path().join("bad.toml"), "[paths\nread = 3").unwrap();
    let binary = dir.path().join("binary.sh");
    let bad_config = dir.path().join("bad.toml");
    let cases: &[(&[&str], &str)] = &[
        (&["classify", "--frobnicate", "ls"], "--frobnicate"),
        (&["classify"], "required"),
        (
            &["classify", "--workspace", "/nonexistent/spear/ws", "ls"],
            "/nonexistent/spear/ws",
        ),
        (
            &["classify", "--file", "/nonexistent/script.sh"],
            "/nonexistent/script.sh",
        ),
        (
            &["classify", "--file", binary.to_str().unwrap()],
            "binary.sh",
        ),
        (
            &["classify", "--config", bad_config.to_str().unwrap(), "ls"],
            "bad.toml",
        ),
        (&["no-such-subcommand"], "no-such-subcommand"),
    ];
    for (args, mention) in cases {
        let out = spear(args, &ws);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(mention),
            "{args:?}: stderr does not mention {mention:?}:\n{err}"
        );
        assert!(
            out.stdout.is_empty(),
            "{args:?}: nothing on stdout on error"
        );
    }
}

#[test]
fn classify_runs_nothing() {
    let dir = workspace();
    let ws = dir.path().join("ws");
    let canary = dir.path().join("canary");
    let script = format!("touch {}; touch created-here", canary.display());
    let out = spear(&["classify", &script], &ws);
    assert!(out.status.success());
    assert!(!canary.exists(), "classify must not run the script");
    assert!(!ws.join("created-here").exists());
    // Positive control: the same script, run by a shell, does create both.
    let status = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&ws)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(canary.exists() && ws.join("created-here").exists());
}

#[test]
fn help_lists_classify() {
    let out = Command::new(env!("CARGO_BIN_EXE_spear"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("classify"));
}

/// `spear classify ... | head -1`: a reader that goes away ends the output, never a panic.
#[test]
fn a_closed_stdout_is_no_panic() {
    let dir = workspace();
    let ws = dir.path().join("ws");
    for closed in [true, false] {
        let (reader, writer) = std::io::pipe().unwrap();
        if closed {
            drop(reader);
        }
        let out = Command::new(env!("CARGO_BIN_EXE_spear"))
            .args(["classify", "ls"])
            .current_dir(&ws)
            .env("HOME", dir.path().join("home"))
            .env_remove("XDG_CONFIG_HOME")
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Positive control: with the reader open, the same call prints and succeeds too.
        assert_eq!(out.status.code(), Some(0), "closed={closed}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
