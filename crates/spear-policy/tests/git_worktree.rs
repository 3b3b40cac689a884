//! The commit-time judge on a linked worktree's pointers (issue 32): the set `git worktree add wt`
//! makes inside the workspace, which only sends git back to the repository the host already has,
//! lands; a pointer that sends git anywhere else (outside the root, to another git directory, to a
//! repository the command made) stays host-run configuration, asked about and never silent.

// Test fixtures fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::staged::Staged;
use spear_core::{ChangeKind, RefusalRule};
use spear_policy::{CommandPolicy, PolicyConfig};
use spear_workspace::{Location, Workspace, WorkspaceConfig};

/// A repository on the host, and the judge's verdict on each of `checked` when the command
/// staged `files` (`{WS}` is the workspace's path).
fn judge(files: &[(&str, &str)], checked: &[&str]) -> Vec<Result<(), RefusalRule>> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for d in [".git/hooks", ".git/objects", ".git/refs/heads", "src"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    let ws = Workspace::open(&WorkspaceConfig::new(&root)).unwrap();
    let policy = CommandPolicy::new(Arc::new(ws), PolicyConfig::new(None));
    let fs = policy.workspace().fs().unwrap();
    let shown = root.display().to_string();
    let view = Staged {
        host: &fs,
        files: files
            .iter()
            .map(|(rel, text)| {
                (
                    PathBuf::from(rel),
                    text.replace("{WS}", &shown).into_bytes(),
                )
            })
            .collect(),
    };
    let git = policy.git_indirections();
    checked
        .iter()
        .map(|rel| {
            let loc = Location {
                root: 0,
                rel: Path::new(rel).to_path_buf(),
            };
            policy
                .judge_change(&git, &loc, ChangeKind::File, false, &view, &fs)
                .map_err(|r| r.rule())
        })
        .collect()
}

/// What `git worktree add -b x wt` writes, with `gitdir`, `commondir` and the worktree's `.git`
/// as given.
fn worktree<'a>(dot_git: &'a str, gitdir: &'a str, commondir: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("wt/.git", dot_git),
        (".git/worktrees/wt/gitdir", gitdir),
        (".git/worktrees/wt/commondir", commondir),
        (".git/worktrees/wt/HEAD", "ref: refs/heads/x\n"),
        ("wt/README.md", "x\n"),
    ]
}

const POINTERS: &[&str] = &[
    "wt/.git",
    ".git/worktrees/wt/gitdir",
    ".git/worktrees/wt/commondir",
];

#[test]
fn a_worktree_of_the_repository_itself_lands() {
    let own = worktree(
        "gitdir: {WS}/.git/worktrees/wt\n",
        "{WS}/wt/.git\n",
        "../..\n",
    );
    assert_eq!(judge(&own, POINTERS), vec![Ok(()); 3]);
    // The same, with the `.git` file relative (`git worktree add --relative-paths`).
    let relative = worktree(
        "gitdir: ../.git/worktrees/wt\n",
        "../../../wt/.git\n",
        "../..\n",
    );
    assert_eq!(judge(&relative, POINTERS), vec![Ok(()); 3]);
}

#[test]
fn pointers_anywhere_else_stay_host_run() {
    use RefusalRule::HostRunConfig as P;
    // The worktree outside the workspace (`git worktree add ../wt`): its admin directory's
    // `gitdir` points out of the root.
    let outside = worktree(
        "gitdir: {WS}/.git/worktrees/wt\n",
        "/elsewhere/wt/.git\n",
        "../..\n",
    );
    assert_eq!(judge(&outside, &[".git/worktrees/wt/gitdir"]), vec![Err(P)]);
    // A commondir that sends git to a directory the command chose: every pointer of the set.
    let foreign = worktree(
        "gitdir: {WS}/.git/worktrees/wt\n",
        "{WS}/wt/.git\n",
        "../../../src\n",
    );
    assert_eq!(judge(&foreign, POINTERS), vec![Err(P); 3]);
    let absolute = worktree(
        "gitdir: {WS}/.git/worktrees/wt\n",
        "{WS}/wt/.git\n",
        "{WS}/.git\n",
    );
    assert_eq!(
        judge(&absolute, &[".git/worktrees/wt/commondir"]),
        vec![Err(P)]
    );
    // A `.git` file sending git to the repository's git directory itself, or to an admin
    // directory of a repository the command made.
    let direct = vec![("wt/.git", "gitdir: {WS}/.git\n")];
    assert_eq!(judge(&direct, &["wt/.git"]), vec![Err(P)]);
    let made = vec![
        ("wt/.git", "gitdir: {WS}/new/.git/worktrees/wt\n"),
        ("new/.git/HEAD", "ref: refs/heads/main\n"),
        ("new/.git/worktrees/wt/commondir", "../..\n"),
        ("new/.git/worktrees/wt/HEAD", "ref: refs/heads/main\n"),
    ];
    assert_eq!(judge(&made, &["wt/.git"]), vec![Err(P)]);
    // An admin directory's `gitdir` rewritten to a directory the command chose, and a `.git`
    // file whose admin directory names another worktree: the two must name each other.
    let elsewhere = worktree("gitdir: {WS}/.git/worktrees/wt\n", "{WS}/src\n", "../..\n");
    assert_eq!(
        judge(&elsewhere, &["wt/.git", ".git/worktrees/wt/gitdir"]),
        vec![Err(P); 2]
    );
    let other = worktree(
        "gitdir: {WS}/.git/worktrees/wt\n",
        "{WS}/other/.git\n",
        "../..\n",
    );
    assert_eq!(judge(&other, &["wt/.git"]), vec![Err(P)]);
    // A `.git` file whose target lies outside the root.
    let out = vec![("wt/.git", "gitdir: /elsewhere/.git/worktrees/wt\n")];
    assert_eq!(judge(&out, &["wt/.git"]), vec![Err(P)]);
}
