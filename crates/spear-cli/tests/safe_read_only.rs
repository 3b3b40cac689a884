//! Issue 32: SAFE runs inline programs that only read, and one that writes where spear cannot see
//! it before it runs meets the read-only mount: nothing on the host changes, and the result says
//! why and which flag grants writing. Real bwrap, real interpreters.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace(base: &Path) -> PathBuf {
    let ws = base.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("data.json"), "{\"name\": \"calc\"}\n").unwrap();
    std::fs::write(ws.join("notes.txt"), "before\n").unwrap();
    ws
}

/// `spear exec MODE --json -c SCRIPT` in `ws`: the result object.
fn exec(base: &Path, ws: &Path, mode: &str, script: &str) -> serde_json::Value {
    let home = base.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_spear"))
        .args(["exec", mode, "--json", "--workspace"])
        .arg(ws)
        .args(["-c", script])
        .current_dir(ws)
        .env("HOME", &home)
        .env("XDG_STATE_HOME", base.join("state"))
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .expect("spear runs");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn safe_runs_a_reading_program_and_a_writing_one_meets_the_mount() {
    let tmp = tempfile::tempdir_in("/var/tmp").unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let ws = workspace(&base);

    // Reads: run, with bash's answer.
    let read = exec(
        &base,
        &ws,
        "--safe",
        "python3 -c \"import json; print(json.load(open('data.json'))['name'])\"",
    );
    assert_eq!(read["status"], "ok", "{read}");
    assert_eq!(read["stdout"], "calc\n", "{read}");

    // A write whose target the program computes: it runs, meets EROFS, and the result says why.
    let script = "python3 -c \"import sys; open(sys.argv[1], 'w').write('after')\" notes.txt";
    let wrote = exec(&base, &ws, "--safe", script);
    assert_eq!(wrote["status"], "failed", "{wrote}");
    assert_ne!(wrote["exit_code"], 0, "{wrote}");
    assert!(
        wrote["stderr"]
            .as_str()
            .unwrap()
            .contains("Read-only file system"),
        "{wrote}"
    );
    let reason = wrote["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("SAFE mode the workspace is read-only")
            && reason.contains("--ask or --auto"),
        "{reason}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "before\n",
        "the host's file is unchanged"
    );

    // A write the program names: refused before anything runs, naming the flag.
    let named = exec(
        &base,
        &ws,
        "--safe",
        "python3 -c \"open('notes.txt', 'w').write('after')\"",
    );
    assert_eq!(named["status"], "denied", "{named}");
    assert!(
        named["reason"]
            .as_str()
            .unwrap()
            .contains("--ask or --auto"),
        "{named}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "before\n"
    );

    // The positive control: the same program in AUTO writes the file, so the probe would have
    // seen a write that got through.
    let auto = exec(&base, &ws, "--auto", script);
    assert_eq!(auto["status"], "ok", "{auto}");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "after"
    );
}
