//! Quotas on spear's own state, as users meet them: the free-space floor on a small tmpfs, and
//! `spear gc` / `spear doctor` reporting what the stores hold against their quotas.
//!
//! The tmpfs is mounted in a private mount namespace (`unshare --mount`, with a user namespace
//! when the test is not root), so nothing of it is left on the host, whoever runs the test.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::Stdio;

use serde_json::Value;
use spear_testkit::process::is_root;
use support::{Dirs, SpearCommands as _};

/// Runs `script` with `sh` in a new mount namespace (and user namespace unless root), with
/// `STATE` (a tmpfs of `size` is mounted there first), `SPEAR`, `WS` and `OUT` set.
fn in_small_fs(d: &Dirs, size: &str, script: &str) -> std::process::Output {
    std::fs::create_dir_all(&d.state).unwrap();
    let out = d.path("out");
    std::fs::create_dir_all(&out).unwrap();
    let mut cmd = d.command("unshare");
    if !is_root() {
        cmd.args(["--user", "--map-root-user"]);
    }
    cmd.args(["--mount", "--propagation", "private", "sh", "-euc"])
        .arg(format!(
            "mount -t tmpfs -o size={size},mode=0700 spear-test-state \"$STATE\"\n{script}"
        ))
        .env("STATE", &d.state)
        .env("SPEAR", env!("CARGO_BIN_EXE_spear"))
        .env("WS", &d.ws)
        .env("OUT", &out)
        .stdin(Stdio::null())
        .output()
        .expect("unshare runs")
}

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// `echo ran > ran.txt` through `spear tool terminal` in AUTO writes `ran.txt`.
fn writing_command_writes(d: &Dirs, config: &str) {
    let control = d
        .spear(&[
            "tool",
            "terminal",
            "--args",
            r#"{"command": "echo ran > ran.txt"}"#,
            "--auto",
            "--config",
            config,
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let control: Value = serde_json::from_slice(&control.stdout).unwrap();
    assert_eq!(control["status"], "ok", "{control}");
    assert!(d.ws.join("ran.txt").exists(), "control: the command wrote");
}

#[test]
fn below_the_free_space_floor_writing_calls_are_refused_with_nothing_written() {
    let d = Dirs::with(&[("small.txt", "small\n")]);
    // A file whose checkpoint (6 MiB) would take the state's filesystem below the floor.
    std::fs::write(d.ws.join("big.bin"), vec![b'b'; 6 << 20]).unwrap();
    let cfg = support::config("[state]\nfree_floor = \"16M\"\n");
    let script = format!(
        r#"
CFG={cfg}
tool() {{ "$SPEAR" tool "$1" --args "$2" --auto --config "$CFG" > "$OUT/$3.json" || true; }}
# Positive control: with room to spare, a write goes through, and the overwrite of a small file
# stores its checkpoint.
tool write_file '{{"path": "small.txt", "content": "changed\n"}}' control_write
# 20 MiB free: the 6 MiB checkpoint of big.bin would leave 14, under the floor of 16.
head -c 12582912 /dev/zero > "$STATE/filler"
df -B1 --output=avail "$STATE" | tail -1 > "$OUT/free_before"
tool write_file '{{"path": "big.bin", "content": "x"}}' crossing
df -B1 --output=avail "$STATE" | tail -1 > "$OUT/free_after"
# Under the floor: no write, no writing command; reading still works.
head -c 8388608 /dev/zero > "$STATE/filler2"
tool write_file '{{"path": "new.txt", "content": "x"}}' below_write
tool terminal '{{"command": "echo ran > ran2.txt"}}' below_terminal
tool read_file '{{"path": "small.txt"}}' below_read
"$SPEAR" gc --json --config "$CFG" > "$OUT/gc.json"
"#,
        // The configuration lives outside the tmpfs.
        cfg = cfg.path
    );
    // Positive control for the writing command, run outside the namespace (an unprivileged
    // user's nested namespaces cannot stage with overlayfs): it writes when nothing stops it.
    writing_command_writes(&d, &cfg.path);
    let out = in_small_fs(&d, "32m", &script);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let o = d.path("out");
    let control = json(&o.join("control_write.json"));
    assert_eq!(control["status"], "ok", "{control}");
    assert_eq!(
        std::fs::read_to_string(d.ws.join("small.txt")).unwrap(),
        "changed\n"
    );

    let crossing = json(&o.join("crossing.json"));
    let reason = crossing["reason"].as_str().unwrap_or_default();
    assert_eq!(crossing["status"], "failed", "{crossing}");
    assert!(
        reason.contains("keeps 16 MiB") && reason.contains("spear gc"),
        "{reason}"
    );
    assert_eq!(
        std::fs::metadata(d.ws.join("big.bin")).unwrap().len(),
        6 << 20,
        "the refused write changed nothing"
    );
    let free = |name: &str| -> u64 {
        std::fs::read_to_string(o.join(name))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    assert!(free("free_before") >= 16 << 20, "the setup left room");
    // The audit record of the refusal is all that was written there (a page or so).
    assert!(
        free("free_after") + (64 << 10) >= free("free_before"),
        "nothing was stored: {} then {}",
        free("free_before"),
        free("free_after")
    );

    for name in ["below_write", "below_terminal"] {
        let v = json(&o.join(format!("{name}.json")));
        let reason = v["reason"].as_str().unwrap_or_default();
        assert_eq!(v["status"], "failed", "{name}: {v}");
        assert!(
            reason.contains("free") && reason.contains("spear gc"),
            "{name}: {reason}"
        );
    }
    assert!(!d.ws.join("new.txt").exists());
    assert!(
        !d.ws.join("ran2.txt").exists(),
        "the writing command did not run"
    );
    let read = json(&o.join("below_read.json"));
    assert_eq!(read["status"], "ok", "reading needs no space: {read}");

    let gc = json(&o.join("gc.json"));
    assert_eq!(gc["after"]["free_floor_bytes"], 16 << 20, "{gc}");
    assert!(
        gc["after"]["free_bytes"].as_u64().unwrap() < 16 << 20,
        "{gc}"
    );
    // The store holds the small file's checkpoint, never big.bin's 6 MiB.
    assert!(
        gc["after"]["checkpoints_bytes"].as_u64().unwrap() < 1 << 20,
        "{gc}"
    );
    // Nothing of the tmpfs is left on the host.
    assert!(!d.state.join("filler").exists());
}

#[test]
fn gc_and_doctor_report_the_stores_against_their_quotas_and_gc_clears_them() {
    let d = Dirs::with(&[("a.txt", "one\n")]);
    let cfg = support::config(
        "[state]\ncheckpoints = \"2M\"\ncheckpoints_all = \"8M\"\nresults = \"3M\"\naudit = \"1M\"\n\
         [limits]\nsession_tasks = 2048\nchanges = 1000\n",
    );
    let tool = |name: &str, args: &str, turn: &str| {
        let out = d
            .spear(&[
                "tool", name, "--args", args, "--auto", "--config", &cfg.path, "--turn", turn,
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["status"], "ok", "{v}");
    };
    tool(
        "write_file",
        r#"{"path": "a.txt", "content": "two\n"}"#,
        "t1",
    );
    tool(
        "write_file",
        r#"{"path": "a.txt", "content": "three\n"}"#,
        "t2",
    );
    // A long output, kept in the result store.
    tool("terminal", r#"{"command": "seq 1 200000"}"#, "t3");

    let report = |args: &[&str]| -> Value {
        let out = d.spear(args).stdin(Stdio::null()).output().unwrap();
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
    };
    let doctor = report(&["doctor", "--json", "--no-network", "--config", &cfg.path]);
    // The limits commands and sessions run with, the configuration's over the built-in ones.
    let limits = &doctor["limits"];
    assert_eq!(limits["session_tasks"], 2048, "{limits}");
    assert_eq!(limits["changes_per_command"], 1000, "{limits}");
    assert_eq!(limits["command_tasks"], 256, "{limits}");
    let state = &doctor["state"];
    assert_eq!(state["checkpoints_quota"], 2 << 20, "{state}");
    assert_eq!(state["checkpoints_all_quota"], 8 << 20);
    assert_eq!(state["results_quota"], 3 << 20);
    assert_eq!(state["audit_rotate_at"], 1 << 20);
    assert_eq!(state["checkpoints"].as_array().unwrap().len(), 1, "{state}");
    // The command changed nothing: no turn of its own.
    assert_eq!(state["checkpoints"][0]["turns"], 2, "{state}");
    assert!(state["checkpoints_bytes"].as_u64().unwrap() > 0);
    assert!(
        state["results_bytes"].as_u64().unwrap() > 100_000,
        "{state}"
    );
    assert!(state["audit_bytes"].as_u64().unwrap() > 0);

    // Plain gc keeps what is within quota: the last turn can still be undone.
    let gc = report(&["gc", "--json", "--config", &cfg.path]);
    assert_eq!(gc["after"]["checkpoints"][0]["turns"], 2, "{gc}");
    assert_eq!(gc["result_sessions_removed"], 0);
    let text = d.spear(&["gc", "--config", &cfg.path]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("quota 2 MiB a workspace, 8 MiB in all"),
        "{text}"
    );
    assert!(text.contains("quota 3 MiB a session"), "{text}");

    // --checkpoints clears every turn: nothing left to undo.
    let gc = report(&["gc", "--json", "--checkpoints", "--config", &cfg.path]);
    assert_eq!(gc["turns_cleared"], 2, "{gc}");
    assert_eq!(gc["after"]["checkpoints"][0]["turns"], 0, "{gc}");
    assert_eq!(gc["after"]["checkpoints"][0]["blobs"], 0, "{gc}");
    let undo = d.spear(&["undo", "--config", &cfg.path]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&undo.stderr).contains("nothing to undo")
            || String::from_utf8_lossy(&undo.stdout).contains("nothing to undo"),
        "{}{}",
        String::from_utf8_lossy(&undo.stdout),
        String::from_utf8_lossy(&undo.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(d.ws.join("a.txt")).unwrap(),
        "three\n"
    );
}
