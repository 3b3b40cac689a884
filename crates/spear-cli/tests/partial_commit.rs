//! A commit the judge changed is not a success (issue 32, item 4), through the real binary,
//! sandbox, overlay and git: a command part of whose changes spear kept out is `denied` with a
//! non-zero exit code, never `ok` and 0, and a git operation's changes (refs, index, logs,
//! worktree metadata) reach the repository together or not at all. Each negative probe has a
//! positive control: the same kind of git work that nothing refuses is `ok` and lands.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::process::Stdio;

use serde_json::{Value, json};
use spear_testkit::git;
use support::{Dirs, SpearCommands as _};

/// A repository made by the host's git: one commit on `main`.
fn repository() -> Dirs {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    git::commit_everything(|| d.command("git"));
    d
}

/// `spear tool terminal --auto`: the envelope, and spear's exit status.
fn auto(d: &Dirs, command: &str) -> (Value, i32) {
    let args = json!({ "command": command }).to_string();
    let out = d
        .spear(&["tool", "terminal", "--args", &args, "--auto"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&out.stderr)));
    (v, out.status.code().unwrap())
}

/// Whether the host's repository has the branch `name`.
fn has_branch(d: &Dirs, name: &str) -> bool {
    d.command("git")
        .args(["rev-parse", "--verify", "-q", &format!("refs/heads/{name}")])
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success()
}

fn reason(v: &Value) -> &str {
    v["reason"].as_str().unwrap_or_default()
}

/// `git worktree add -b x ../wt` writes a branch and the worktree's metadata, whose `gitdir`
/// names a place outside the workspace; with nobody to approve that, none of it lands: no
/// branch, no `.git/worktrees/wt`, and the answer is `denied` with exit code 126 and a reason
/// naming `gitdir`. Positive control: `git branch y` alone is `ok`, exits 0, and makes the ref.
#[test]
fn a_worktree_kept_out_leaves_no_branch_behind() {
    let d = repository();
    let (v, code) = auto(&d, "git worktree add -b x ../wt");
    assert_eq!(v["status"], "denied", "{v}");
    assert_eq!(v["exit_code"], 126, "{v}");
    assert_eq!(code, 126, "{v}");
    let why = reason(&v);
    assert!(why.contains(".git/worktrees/wt/gitdir"), "{v}");
    assert!(
        why.contains("the command itself exited 0, but spear kept out part of what it changed"),
        "{v}"
    );
    assert!(
        why.contains("the rest of the changes to .git (")
            && why.contains("a git operation's changes are committed together or not at all"),
        "{v}"
    );
    assert!(
        !has_branch(&d, "x"),
        "the branch was kept out with its worktree: {v}"
    );
    for gone in [
        ".git/refs/heads/x",
        ".git/logs/refs/heads/x",
        ".git/worktrees",
    ] {
        assert!(
            std::fs::symlink_metadata(d.ws.join(gone)).is_err(),
            "{gone}: {v}"
        );
    }
    assert!(
        !d.path("wt").exists(),
        "nothing outside the workspace either"
    );
    let fsck = d
        .command("git")
        .args(["fsck", "--no-progress"])
        .output()
        .unwrap();
    assert!(fsck.status.success(), "{fsck:?}");
    // Positive control: a branch alone lands.
    let (v, code) = auto(&d, "git branch y");
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!((v["exit_code"].as_i64(), code), (Some(0), 0), "{v}");
    assert!(has_branch(&d, "y"), "{v}");
    assert!(d.ws.join(".git/logs/refs/heads/y").exists(), "{v}");
}

/// A worktree inside the workspace is ordinary git work: its `.git` file and its administrative
/// directory name each other and send git back to the repository the host has, so the branch,
/// the worktree and its metadata land together, and git on the host sees the worktree.
#[test]
fn a_worktree_inside_the_workspace_lands_whole() {
    let d = repository();
    let (v, code) = auto(
        &d,
        "git worktree add -q -b feature wt && git -C wt branch --show-current",
    );
    assert_eq!((v["status"].as_str(), code), (Some("ok"), 0), "{v}");
    assert_eq!(v["stdout"], "feature\n", "{v}");
    assert!(has_branch(&d, "feature"), "{v}");
    for landed in [
        "wt/.git",
        "wt/README.md",
        ".git/worktrees/wt/gitdir",
        ".git/worktrees/wt/commondir",
    ] {
        assert!(d.ws.join(landed).exists(), "{landed}: {v}");
    }
    let list = d
        .command("git")
        .args(["-C", "wt", "status", "--porcelain", "--branch"])
        .output()
        .unwrap();
    assert!(list.status.success(), "{list:?}");
    assert!(
        String::from_utf8_lossy(&list.stdout).contains("## feature"),
        "{list:?}"
    );
}

/// What lies outside the git directory is independent: the file the same command wrote lands
/// while its git operation is kept out, and the answer is still `denied`. A command that itself
/// failed keeps its own status and exit code.
#[test]
fn the_rest_of_the_workspace_lands_and_a_failure_keeps_its_code() {
    let d = repository();
    let (v, code) = auto(&d, "echo n > notes.txt && git worktree add -q -b x ../wt");
    assert_eq!((v["status"].as_str(), code), (Some("denied"), 126), "{v}");
    assert_eq!(
        std::fs::read_to_string(d.ws.join("notes.txt")).unwrap(),
        "n\n"
    );
    assert_eq!(v["changed_paths"], json!(["notes.txt"]), "{v}");
    assert!(!has_branch(&d, "x"), "{v}");
    let (v, code) = auto(&d, "git worktree add -q -b x ../wt; exit 3");
    assert_eq!((v["status"].as_str(), code), (Some("failed"), 3), "{v}");
    assert_eq!(v["exit_code"], 3, "{v}");
    assert!(reason(&v).contains(".git/worktrees/wt/gitdir"), "{v}");
    assert!(!reason(&v).contains("itself exited 0"), "{v}");
    assert!(!has_branch(&d, "x"), "{v}");
}

/// A refusal outside any git directory (host-run configuration nobody approved, written by a
/// script the classifier cannot see into) makes a command that exited 0 `denied` with 126 too;
/// the ordinary file beside it lands. Positive control: the same script writing only the
/// ordinary file is `ok` and 0.
#[test]
fn any_change_kept_out_makes_the_command_denied() {
    let d = repository();
    std::fs::write(
        d.ws.join("w.py"),
        "import sys\nfor p in sys.argv[1:]:\n    open(p, 'w').write('x')\n",
    )
    .unwrap();
    let (v, code) = auto(&d, "python3 w.py .envrc ok.txt");
    assert_eq!((v["status"].as_str(), code), (Some("denied"), 126), "{v}");
    assert!(reason(&v).contains(".envrc"), "{v}");
    assert!(!d.ws.join(".envrc").exists(), "{v}");
    assert!(d.ws.join("ok.txt").exists(), "{v}");
    let (v, code) = auto(&d, "python3 w.py other.txt");
    assert_eq!((v["status"].as_str(), code), (Some("ok"), 0), "{v}");
    assert!(d.ws.join("other.txt").exists(), "{v}");
}
