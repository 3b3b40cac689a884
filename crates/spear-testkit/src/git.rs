//! Repositories made by the host's own git (never through spear), as a user's would be.

use std::process::Command;

/// The identity test commits are made as, for `git -c ... commit`: no configuration of the
/// machine's is needed.
pub const TEST_IDENTITY: [&str; 4] = ["-c", "user.name=t", "-c", "user.email=t@t"];

/// Runs `git` (a command for the host's git, its directory and environment already set) with
/// `args`; fails the test, showing git's output, unless git succeeds.
pub fn run(mut git: Command, args: &[&str]) {
    let out = git.args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// Makes the directory `git` runs in a repository on `main` holding one commit ("one") of
/// everything in it, as [`TEST_IDENTITY`]; `git` makes each command (the host's git, its
/// directory and environment set). Fails the test unless every step succeeds.
pub fn commit_everything(git: impl Fn() -> Command) {
    run(git(), &["init", "-q", "-b", "main"]);
    run(git(), &["add", "-A"]);
    let mut commit = TEST_IDENTITY.to_vec();
    commit.extend(["commit", "-qm", "one"]);
    run(git(), &commit);
}
