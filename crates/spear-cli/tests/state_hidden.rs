//! spear's state directory (audit log, checkpoints, the `spear approve` sockets) is never visible
//! in a sandbox nor to the file tools: not through a workspace root inside it or holding it, not
//! through a host-read path the operator named that holds it.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::{Dirs, SpearCommands as _};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `spear ARGS` with the state directory at `state` instead of the default one.
fn spear_with_state(d: &Dirs, state: &Path, args: &[&str]) -> Output {
    d.spear(args)
        .env("XDG_STATE_HOME", state)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// `shared/` holds the state directory and a file beside it; the operator names `shared/` as a
/// host path commands may read.
fn shared(d: &Dirs) -> std::path::PathBuf {
    let shared = d.path("shared");
    std::fs::create_dir_all(shared.join("state")).unwrap();
    std::fs::write(shared.join("beside.txt"), "beside\n").unwrap();
    let config = d.home.join(".config/spear");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!("[paths]\nread = [\"{}\"]\n", shared.display()),
    )
    .unwrap();
    shared
}

#[test]
fn a_named_read_path_holding_the_state_directory_shows_it_masked() {
    let d = Dirs::with(&[("a.txt", "a\n")]);
    let shared = shared(&d);
    let state = shared.join("state");
    // A first run makes the audit log.
    let out = spear_with_state(&d, &state, &["exec", "--auto", "--", "true"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let audit = state.join("spear/audit.jsonl");
    assert!(audit.exists(), "the state directory is where it should be");
    // Positive control: the file beside it is readable through the named path.
    let beside = shared.join("beside.txt");
    let out = spear_with_state(
        &d,
        &state,
        &["exec", "--auto", "--", "cat", beside.to_str().unwrap()],
    );
    assert_eq!(text(&out.stdout), "beside\n", "{}", text(&out.stderr));
    // Naming the audit log, or the state directory, is refused before anything runs.
    for path in [audit.clone(), state.join("spear")] {
        let out = spear_with_state(
            &d,
            &state,
            &["exec", "--auto", "--", "cat", path.to_str().unwrap()],
        );
        assert_eq!(out.status.code(), Some(126), "{}", text(&out.stdout));
        assert_eq!(text(&out.stdout), "");
        assert!(
            text(&out.stderr).contains("spear's own state directory"),
            "{}",
            text(&out.stderr)
        );
    }
    // A search of the named path does not list it either.
    let found = spear_with_state(
        &d,
        &state,
        &["exec", "--auto", "--", "find", shared.to_str().unwrap()],
    );
    assert!(found.status.success(), "{}", text(&found.stderr));
    let found = text(&found.stdout);
    assert!(found.contains("beside.txt"), "{found}");
    // The state directory is there as an empty mask, nothing in it.
    assert!(found.contains("state/spear\n"), "{found}");
    assert!(!found.contains("state/spear/"), "{found}");
    assert!(audit.exists(), "the host still has it");
}

#[test]
fn a_workspace_inside_or_holding_the_state_directory_is_refused() {
    let d = Dirs::with(&[("a.txt", "a\n")]);
    let state = d.path("st");
    let inside = state.join("spear").join("approve");
    std::fs::create_dir_all(&inside).unwrap();
    std::fs::write(inside.join("secret"), "s\n").unwrap();
    for (workspace, says) in [
        (&inside, "lies inside spear's state directory"),
        (&state, "lies inside the workspace root"),
    ] {
        let ws = workspace.to_str().unwrap();
        for words in [
            vec!["exec", "--auto", "--workspace", ws, "--", "cat", "secret"],
            vec![
                "tool",
                "read_file",
                "--args",
                r#"{"path": "secret"}"#,
                "--workspace",
                ws,
            ],
        ] {
            let out = spear_with_state(&d, &state, &words);
            assert!(!out.status.success(), "{words:?}");
            assert!(!text(&out.stdout).contains("s\n"), "{words:?}");
            let err = text(&out.stderr);
            assert!(err.contains(says), "{words:?}: {err}");
        }
    }
    // Positive control: the workspace beside it runs, and reads its own file.
    let out = spear_with_state(
        &d,
        &state,
        &["tool", "read_file", "--args", r#"{"path": "a.txt"}"#],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "ok", "{v}");
}

#[test]
fn the_file_tools_do_not_reach_the_state_directory() {
    let d = Dirs::with(&[("a.txt", "a\n")]);
    let shared = shared(&d);
    let state = shared.join("state");
    let out = spear_with_state(&d, &state, &["exec", "--auto", "--", "true"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let audit = state.join("spear/audit.jsonl");
    let before = std::fs::read(&audit).unwrap();
    for (tool, args) in [
        ("read_file", format!(r#"{{"path": "{}"}}"#, audit.display())),
        (
            "search_files",
            format!(
                r#"{{"pattern": "tool", "path": "{}"}}"#,
                state.join("spear").display()
            ),
        ),
        (
            "write_file",
            format!(r#"{{"path": "{}", "content": "x"}}"#, audit.display()),
        ),
        (
            "delete_file",
            format!(r#"{{"path": "{}"}}"#, audit.display()),
        ),
    ] {
        let out = spear_with_state(&d, &state, &["tool", tool, "--args", &args, "--auto"]);
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{tool}: {e}: {}", text(&out.stderr)));
        assert_ne!(v["status"], "ok", "{tool}: {v}");
        assert!(
            !v["stdout"].as_str().unwrap_or("").contains("exec"),
            "{tool}: {v}"
        );
    }
    assert!(audit.exists(), "not deleted");
    assert!(
        std::fs::read(&audit).unwrap().starts_with(&before),
        "not rewritten"
    );
    // Positive control: the same tools reach the workspace.
    let out = spear_with_state(
        &d,
        &state,
        &["tool", "read_file", "--args", r#"{"path": "a.txt"}"#],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "ok", "{v}");
}
