//! A push to a repository inside the workspace, end to end through the real binary, bwrap,
//! overlay and git (issue 32, item 5): `git push ./origin.git HEAD:main` in AUTO exits 0 and the
//! host's bare repository gets the ref, and a push through a configured remote whose URL is that
//! path does too; a push to a repository outside the roots, or to a remote whose URL is the
//! network, is refused before anything runs, and the repository there does not change.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::{Output, Stdio};

use spear_testkit::git;
use support::{Dirs, SpearCommands as _};

/// A workspace outside `/tmp`, `/var/tmp` and the home directory (the sandbox's private places,
/// where a write beside the workspace would be the sandbox's own and never refused), holding a
/// repository with one commit and a bare repository `origin.git`; and a bare repository
/// `elsewhere.git` beside the workspace, outside the roots.
fn workspace() -> Dirs {
    // Not the build's own temporary directory: a checkout under /tmp puts it in a private
    // place. scripts/test-unprivileged.sh names one its user may write; root writes /run.
    let outside = std::env::var_os("SPEAR_TEST_OUTSIDE")
        .map_or_else(|| Path::new("/run").to_path_buf(), Into::into);
    let d = Dirs::within(&outside, &[("README.md", "readme\n")]);
    git::commit_everything(|| d.command("git"));
    git::run(d.command("git"), &["init", "-q", "--bare", "origin.git"]);
    let mut beside = d.command("git");
    beside.current_dir(&d.base);
    git::run(beside, &["init", "-q", "--bare", "elsewhere.git"]);
    d
}

/// `spear exec --auto -c SCRIPT`.
fn auto(d: &Dirs, script: &str) -> Output {
    d.spear(&["exec", "--auto", "-c", script])
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The commit `rev` names in the repository at `git_dir` (`None` when it names none).
fn rev(d: &Dirs, git_dir: &Path, rev: &str) -> Option<String> {
    let out = d
        .command("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["rev-parse", "--verify", "-q", rev])
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_push_inside_the_workspace_lands_and_one_outside_is_refused() {
    let d = workspace();
    let head = rev(&d, &d.ws.join(".git"), "HEAD").unwrap();
    let origin = d.ws.join("origin.git");
    let elsewhere = d.path("elsewhere.git");

    // Refused: a repository beside the workspace, outside the roots. Nothing runs, nothing
    // changes there.
    let out = auto(&d, "git push ../elsewhere.git HEAD:main");
    assert_eq!(out.status.code(), Some(126), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("outside"),
        "says the write is outside the workspace: {}",
        text(&out.stderr)
    );
    assert_eq!(rev(&d, &elsewhere, "refs/heads/main"), None);

    // Positive control: the same push to the bare repository inside the workspace runs, and the
    // host's copy has the ref.
    let out = auto(&d, "git push ./origin.git HEAD:main");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(rev(&d, &origin, "refs/heads/main").as_deref(), Some(&*head));

    // A configured remote whose URL is that path (added by one command, pushed to by the next,
    // which reads the configuration the first committed).
    let out = auto(&d, "git remote add origin ./origin.git");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = auto(&d, "git push origin HEAD:feature");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        rev(&d, &origin, "refs/heads/feature").as_deref(),
        Some(&*head)
    );

    // Refused: a remote whose URL is the network, and one whose URL is the path outside.
    let out = auto(&d, "git remote add up https://example.invalid/x.git");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = auto(&d, "git push up HEAD:main");
    assert_eq!(out.status.code(), Some(126), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("remote:write"),
        "{}",
        text(&out.stderr)
    );
    let out = auto(&d, "git remote add out ../elsewhere.git");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = auto(&d, "git push out HEAD:main");
    assert_eq!(out.status.code(), Some(126), "{}", text(&out.stderr));
    assert_eq!(rev(&d, &elsewhere, "refs/heads/main"), None);
}
