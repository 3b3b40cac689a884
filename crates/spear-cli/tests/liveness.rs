//! What another spear's sweep may remove (issue 31, part 3), through the real binary: a spear
//! started in another PID namespace (as root `unshare --pid`; as a user, in a user namespace of
//! their own) sweeps the session areas and staging layers of processes that are gone. It must
//! never take a live session's `/tmp` and home, or the staging layer of a command still running,
//! though it cannot see their process. Positive control: the same sweep does remove what a
//! killed spear left.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use spear_testkit::process::is_root;
use spear_testkit::wait::wait_for_value;
use support::Dirs;

/// `dirs`' spear environment, with a per-user runtime directory of its own (where session areas
/// live), for `cmd`.
fn spear_env<'a>(dirs: &Dirs, cmd: &'a mut Command) -> &'a mut Command {
    cmd.current_dir(&dirs.ws)
        .env("HOME", &dirs.home)
        .env("XDG_STATE_HOME", &dirs.state)
        .env("XDG_RUNTIME_DIR", runtime(dirs))
        .env_remove("XDG_CONFIG_HOME")
}

fn runtime(dirs: &Dirs) -> PathBuf {
    dirs.path("run")
}

/// `spear ARGS` run from another PID namespace (and, as a user, a user namespace mapping only
/// them, which lets them make one), with `/proc` of that namespace: no process of ours is in it.
fn from_another_pid_namespace(dirs: &Dirs, args: &[&str]) {
    let mut cmd = Command::new("unshare");
    if !is_root() {
        cmd.arg("--map-current-user");
    }
    cmd.args([
        "--pid",
        "--fork",
        "--mount-proc",
        env!("CARGO_BIN_EXE_spear"),
    ])
    .args(args)
    .stdin(Stdio::null());
    let out = spear_env(dirs, &mut cmd).output().unwrap();
    // Whatever the command does there, the sweep happened as spear started.
    assert!(
        out.status.code().is_some(),
        "spear {args:?} in another PID namespace: {out:?}"
    );
}

/// Both sweeps: session areas (a session area is made, `spear doctor`) and staging layers (a
/// runner is made, `spear exec`).
fn sweep_from_another_namespace(dirs: &Dirs) {
    from_another_pid_namespace(dirs, &["doctor"]);
    from_another_pid_namespace(dirs, &["exec", "--", "true"]);
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|e| e.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// What `found` finds within 20 s; fails the test, naming `what`, when it finds nothing.
fn wait_for<T>(what: &str, found: impl FnMut() -> Option<T>) -> T {
    let value = wait_for_value(Duration::from_secs(20), found);
    assert!(value.is_some(), "{what}");
    value.unwrap()
}

/// A `spear mcp` session, its stdin held open (it ends when stdin closes).
fn start_session(dirs: &Dirs) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spear"));
    cmd.args(["mcp", "--auto", "--workspace"])
        .arg(&dirs.ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    spear_env(dirs, &mut cmd).spawn().unwrap()
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_sweep_from_another_pid_namespace_takes_only_what_is_gone() {
    let dirs = Dirs::with(&[("README.md", "readme\n")]);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(runtime(&dirs))
        .unwrap();
    let sessions = runtime(&dirs).join("spear/sessions");
    let staging = dirs.state.join("spear/staging");

    // A live session, and a writable command still running (its writes staged, not yet
    // committed).
    let mut session = start_session(&dirs);
    // The area is made first and its places in it after: wait for all of them (a loaded machine
    // showed the area alone).
    let area = wait_for("the session's area", || {
        entries(&sessions)
            .pop()
            .filter(|a| a.join("tmp").is_dir() && a.join("home").is_dir())
    });
    std::fs::write(area.join("tmp/kept"), "between calls\n").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spear"));
    cmd.args([
        "exec",
        "--auto",
        "--",
        "sh",
        "-c",
        "echo landed > landed.txt && touch staged-and-waiting && sleep 4",
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let running = spear_env(&dirs, &mut cmd).spawn().unwrap();
    let layer = wait_for("the running command's staging layer", || {
        entries(&staging)
            .into_iter()
            .find(|d| d.join("0.upper/staged-and-waiting").exists())
    });

    sweep_from_another_namespace(&dirs);
    assert!(
        area.join("tmp/kept").exists(),
        "a live session's /tmp was swept by a spear that cannot see it"
    );
    assert!(
        layer.join("0.upper/landed.txt").exists(),
        "a running command's staging layer was swept"
    );
    let out = running.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(dirs.ws.join("landed.txt")).unwrap(),
        "landed\n",
        "the command's writes reached the workspace"
    );
    assert!(!layer.exists(), "its owner removed its layer");

    // Positive control: what a killed spear left (the session's area, a command's layer) is
    // removed by the same sweep from the same other namespace.
    kill(&mut session);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spear"));
    cmd.args(["exec", "--auto", "--", "sh", "-c", "touch left && sleep 60"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut doomed = spear_env(&dirs, &mut cmd).spawn().unwrap();
    let left = wait_for("the doomed command's staging layer", || {
        entries(&staging)
            .into_iter()
            .find(|d| d.join("0.upper/left").exists())
    });
    kill(&mut doomed);
    assert!(area.exists() && left.exists(), "a SIGKILL leaves them");
    sweep_from_another_namespace(&dirs);
    assert!(!area.exists(), "a dead session's area was left");
    assert!(!left.exists(), "a dead command's staging layer was left");
    assert!(!dirs.ws.join("left").exists());
}
