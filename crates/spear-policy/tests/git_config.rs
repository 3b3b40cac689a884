//! The commit-time judge on a rewritten `.git/config`: a rewrite that adds, changes or removes only
//! entries that run nothing is allowed, also over a host configuration that already names hooks
//! or programs; one that adds, changes or removes a code-running entry is host-run
//! configuration (asked about, never silent).

// Test fixtures fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use common::staged::Staged;
use spear_core::{ChangeKind, RefusalRule};
use spear_policy::{CommandPolicy, PolicyConfig};
use spear_workspace::{Location, Workspace, WorkspaceConfig};

/// A repository whose `.git/config` is `host_config`, and the judge's verdict on rewriting the
/// file at `rel` to `staged`.
fn judge(host_config: &str, rel: &str, staged: &str) -> Result<(), RefusalRule> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for d in [".git/hooks", ".git/objects", ".git/refs", ".husky", "src"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(root.join(".git/config"), host_config).unwrap();
    let ws = Workspace::open(&WorkspaceConfig::new(&root)).unwrap();
    let policy = CommandPolicy::new(Arc::new(ws), PolicyConfig::new(None));
    let fs = policy.workspace().fs().unwrap();
    let loc = Location {
        root: 0,
        rel: PathBuf::from(rel),
    };
    // One file replaced (or added), in the workspace's one root.
    let view = Staged {
        host: &fs,
        files: HashMap::from([(loc.rel.clone(), staged.as_bytes().to_vec())]),
    };
    let git = policy.git_indirections();
    policy
        .judge_change(&git, &loc, ChangeKind::File, false, &view, &fs)
        .map_err(|r| r.rule())
}

const PLAIN: &str = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n";
const HOOKS: &str =
    "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\thooksPath = .husky\n\tpager = less\n";

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a table: one case per rewrite of .git/config, the inert ones then those that make git run code"
)]
fn inert_rewrites_pass_and_code_running_ones_are_refused() {
    use RefusalRule::HostRunConfig as P;
    let with = |base: &str, extra: &str| format!("{base}{extra}");
    let user = "[user]\n\tname = x\n\temail = x@example.com\n";
    for (host, staged, expected, what) in [
        // Positive controls: what `git config user.name x` and `git remote add` write.
        (
            PLAIN,
            with(PLAIN, user),
            Ok(()),
            "user over a plain configuration",
        ),
        (
            PLAIN,
            with(
                PLAIN,
                "[remote \"origin\"]\n\turl = https://example.com/x.git\n",
            ),
            Ok(()),
            "a remote URL",
        ),
        (
            HOOKS,
            with(HOOKS, user),
            Ok(()),
            "user over one that names hooks",
        ),
        (
            HOOKS,
            with(HOOKS, "[branch \"main\"]\n\tremote = origin\n"),
            Ok(()),
            "a branch over one that names hooks",
        ),
        (HOOKS, HOOKS.to_owned(), Ok(()), "rewritten unchanged"),
        (
            "[user]\n\tname = old\n",
            "[user]\n\tname = new\n".to_owned(),
            Ok(()),
            "an inert value changed",
        ),
        // Negative: what makes git run code later, added, changed or removed.
        (
            PLAIN,
            with(PLAIN, "\tfsmonitor = ./x.sh\n"),
            Err(P),
            "fsmonitor added",
        ),
        (
            PLAIN,
            with(PLAIN, "[core]\n\thooksPath = .husky\n"),
            Err(P),
            "hooksPath added",
        ),
        (
            HOOKS,
            HOOKS.replace(".husky", "src"),
            Err(P),
            "hooksPath changed",
        ),
        (
            HOOKS,
            HOOKS.replace("\thooksPath = .husky\n", ""),
            Err(P),
            "hooksPath removed",
        ),
        (
            PLAIN,
            with(PLAIN, "[include]\n\tpath = ../x\n"),
            Err(P),
            "an include",
        ),
        (
            PLAIN,
            with(PLAIN, "[alias]\n\tx = !sh -c 'touch y'\n"),
            Err(P),
            "a shell alias",
        ),
        (
            PLAIN,
            with(PLAIN, "[remote \"o\"]\n\turl = ext::sh -c x\n"),
            Err(P),
            "an ext:: URL",
        ),
        (
            PLAIN,
            with(PLAIN, "[filter \"x\"]\n\tsmudge = ./x\n"),
            Err(P),
            "a filter driver",
        ),
        (
            PLAIN,
            with(PLAIN, "[credential]\n\thelper = store\n"),
            Err(P),
            "a credential helper",
        ),
        (
            PLAIN,
            "[core\n\tbare = false\n".to_owned(),
            Err(P),
            "unparsable",
        ),
    ] {
        assert_eq!(judge(host, ".git/config", &staged), expected, "{what}");
    }
}

#[test]
fn a_new_repository_takes_an_inert_configuration_only() {
    use RefusalRule::HostRunConfig as P;
    let init = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n";
    assert_eq!(judge(PLAIN, "sub/x/.git/config", init), Ok(()));
    assert_eq!(
        judge(
            PLAIN,
            "sub/x/.git/config",
            &format!("{init}[user]\n\tname = me\n")
        ),
        Ok(())
    );
    assert_eq!(
        judge(PLAIN, "sub/x/.git/config", &format!("{init}\tpager = x\n")),
        Err(P),
        "`git init x && git -C x config core.pager x`"
    );
}

#[test]
fn what_the_configuration_names_stays_protected() {
    // The directory core.hooksPath names is host-run, whatever the config rewrite allows.
    assert_eq!(
        judge(HOOKS, ".husky/pre-commit", "#!/bin/sh\n"),
        Err(RefusalRule::HostRunConfig)
    );
    assert_eq!(
        judge(HOOKS, "tools/pre-commit", "#!/bin/sh\n"),
        Ok(()),
        "a directory no configuration names"
    );
    assert_eq!(judge(HOOKS, "src/main.rs", "fn main() {}\n"), Ok(()));
}
