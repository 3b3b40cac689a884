//! Whole trees: `walk`, `read_entry`, `remove_tree` and `restore`, including links to outside in
//! the tree being acted on and parents swapped for links. Each refusal has a positive control.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::{Tree, is_root};
use crate::{Budget, EntryKind, FsError, Location, MAX_TREE_DEPTH, Node, Walk, WorkspaceFs};

fn loc(rel: &str) -> Location {
    Location {
        root: 0,
        rel: PathBuf::from(rel),
    }
}

fn big() -> Budget {
    Budget {
        bytes: 1 << 20,
        entries: 10_000,
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Every entry a walk of root `root` reports, sorted, with `skip` answered `Skip`.
fn walked(fs: &WorkspaceFs, root: usize, skip: &[&str]) -> Vec<(String, EntryKind)> {
    let mut seen = Vec::new();
    fs.walk(root, 1_000, &mut |rel, kind| {
        let rel = rel.to_string_lossy().into_owned();
        let answer = if skip.contains(&rel.as_str()) {
            Walk::Skip
        } else {
            Walk::Continue
        };
        seen.push((rel, kind));
        answer
    })
    .unwrap();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    seen
}

fn file(mode: u32, bytes: &[u8]) -> Node {
    Node::File {
        mode,
        bytes: bytes.to_vec(),
    }
}

fn dir(mode: u32, children: &[(&str, Node)]) -> Node {
    Node::Dir {
        mode,
        children: children
            .iter()
            .map(|(n, c)| (OsString::from(n), c.clone()))
            .collect::<BTreeMap<_, _>>(),
    }
}

#[test]
fn walk_reports_every_entry_and_follows_no_link() {
    let t = Tree::standard();
    t.file("ws/.git/hooks/pre-commit", "#!/bin/sh");
    t.file("outside/hooks/pre-commit", "OUTSIDE");
    t.link(t.path("outside"), "ws/to-outside");
    t.link("a", "ws/to-a");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let got = walked(&fs, 0, &[]);
    let want: Vec<(String, EntryKind)> = [
        (".git", EntryKind::Dir),
        (".git/hooks", EntryKind::Dir),
        (".git/hooks/pre-commit", EntryKind::File),
        ("a", EntryKind::Dir),
        ("a/b.txt", EntryKind::File),
        ("f.txt", EntryKind::File),
        ("to-a", EntryKind::Symlink),
        ("to-outside", EntryKind::Symlink),
    ]
    .iter()
    .map(|(p, k)| ((*p).to_owned(), *k))
    .collect();
    assert_eq!(got, want);
    // Positive control: the links lead somewhere a following walk would have gone.
    assert!(t.path("ws/to-outside/hooks/pre-commit").exists());

    // Skip: the entry is reported, its content is not.
    let got = walked(&fs, 0, &[".git"]);
    assert!(got.iter().any(|(p, _)| p == ".git"));
    assert!(!got.iter().any(|(p, _)| p.starts_with(".git/")));

    // Another root.
    assert_eq!(
        walked(&fs, 1, &[]),
        vec![("x.txt".to_owned(), EntryKind::File)]
    );
    // No such root.
    assert!(fs.walk(7, 10, &mut |_, _| Walk::Continue).is_err());
}

#[test]
fn walk_fails_closed_above_its_entry_limit() {
    let t = Tree::new();
    for i in 0..10 {
        t.file(&format!("ws/d/f{i}"), "x");
    }
    let ws = crate::Workspace::open(&t.config("ws", &[])).unwrap();
    let fs = ws.fs().unwrap();
    // 11 entries: d and its ten files. Positive control: exactly the limit is fine.
    let mut n = 0;
    fs.walk(0, 11, &mut |_, _| {
        n += 1;
        Walk::Continue
    })
    .unwrap();
    assert_eq!(n, 11);
    let r = fs.walk(0, 10, &mut |_, _| Walk::Continue);
    assert!(
        matches!(&r, Err(FsError::LimitExceeded { what, .. }) if what.contains("10 entries")),
        "{r:?}"
    );
}

#[test]
fn walk_fails_closed_below_its_depth_limit() {
    let t = Tree::new();
    let deep = "d/".repeat(MAX_TREE_DEPTH + 1);
    t.dir(&format!("ws/{deep}"));
    let ws = crate::Workspace::open(&t.config("ws", &[])).unwrap();
    let fs = ws.fs().unwrap();
    let r = fs.walk(0, 1_000_000, &mut |_, _| Walk::Continue);
    assert!(
        matches!(&r, Err(FsError::LimitExceeded { what, .. }) if what.contains("deep")),
        "{r:?}"
    );
    // Positive control: one level less is walked to the bottom.
    std::fs::remove_dir(t.path(&format!("ws/{deep}"))).unwrap();
    let mut n = 0;
    fs.walk(0, 1_000_000, &mut |_, _| {
        n += 1;
        Walk::Continue
    })
    .unwrap();
    assert_eq!(n, MAX_TREE_DEPTH);
}

#[test]
fn walk_does_not_skip_a_directory_it_cannot_list() {
    if is_root() {
        return; // root lists any directory
    }
    let t = Tree::standard();
    t.file("ws/locked/.git/hooks/pre-commit", "x");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    // Positive control: readable, the hook is seen.
    assert!(
        walked(&fs, 0, &[])
            .iter()
            .any(|(p, _)| p == "locked/.git/hooks/pre-commit")
    );
    chmod(&t.path("ws/locked"), 0o100);
    let r = fs.walk(0, 1_000, &mut |_, _| Walk::Continue);
    chmod(&t.path("ws/locked"), 0o755);
    assert!(
        matches!(&r, Err(FsError::Io { label, .. }) if label == "locked"),
        "{r:?}"
    );
}

#[test]
fn read_entry_snapshots_files_dirs_and_links() {
    let t = Tree::standard();
    t.file("ws/.git/hooks/pre-commit", "#!/bin/sh\necho hi\n");
    chmod(&t.path("ws/.git/hooks/pre-commit"), 0o751);
    chmod(&t.path("ws/.git/hooks"), 0o750);
    t.link("../../outside/secret.txt", "ws/.git/hooks/link");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let mut budget = big();
    let got = fs.read_entry(&loc(".git/hooks"), &mut budget).unwrap();
    let want = dir(
        0o750,
        &[
            (
                "link",
                Node::Symlink {
                    target: "../../outside/secret.txt".into(),
                },
            ),
            ("pre-commit", file(0o751, b"#!/bin/sh\necho hi\n")),
        ],
    );
    assert_eq!(got, Some(want.clone()));
    assert_eq!(want.entries(), 3);
    assert_eq!(budget.entries, 10_000 - 3);
    assert_eq!(budget.bytes, (1 << 20) - want.bytes());
    assert_eq!(want.bytes(), 18 + 24);

    assert_eq!(fs.read_entry(&loc("nothing"), &mut big()).unwrap(), None);
    assert_eq!(
        fs.read_entry(&loc("no/such/dir"), &mut big()).unwrap(),
        None
    );
    // A link on the way is not followed: there is no entry at the location.
    t.link(t.path("outside"), "ws/out");
    assert!(t.path("ws/out/secret.txt").exists());
    assert_eq!(
        fs.read_entry(&loc("out/secret.txt"), &mut big()).unwrap(),
        None
    );
    // The root itself is not an entry.
    assert!(fs.read_entry(&loc(""), &mut big()).is_err());
    // Hand-built climbing locations are refused.
    assert!(matches!(
        fs.read_entry(&loc("../outside/secret.txt"), &mut big()),
        Err(FsError::Escape { .. })
    ));
}

#[test]
fn read_entry_stays_within_its_budget() {
    let t = Tree::standard();
    t.file("ws/.vscode/a.json", "0123456789");
    t.file("ws/.vscode/b.json", "0123456789");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    // Exactly enough: 3 entries, 20 bytes.
    let mut exact = Budget {
        bytes: 20,
        entries: 3,
    };
    assert!(
        fs.read_entry(&loc(".vscode"), &mut exact)
            .unwrap()
            .is_some()
    );
    assert_eq!(
        exact,
        Budget {
            bytes: 0,
            entries: 0
        }
    );
    for short in [
        Budget {
            bytes: 19,
            entries: 3,
        },
        Budget {
            bytes: 20,
            entries: 2,
        },
    ] {
        let mut b = short;
        let r = fs.read_entry(&loc(".vscode"), &mut b);
        assert!(
            matches!(r, Err(FsError::LimitExceeded { .. })),
            "{short:?}: {r:?}"
        );
    }
}

#[test]
fn remove_tree_removes_links_not_what_they_point_at() {
    let t = Tree::standard();
    t.file("outside/hooks/pre-commit", "OUTSIDE HOOK");
    let canary = t.file("outside/canary.txt", "CANARY");
    t.file("ws/sub/.git/hooks/pre-commit", "evil");
    t.file("ws/sub/.git/hooks/deeper/x", "x");
    t.link(t.path("outside"), "ws/sub/.git/hooks/abs");
    t.link("../../../../outside", "ws/sub/.git/hooks/rel");
    t.link(t.path("outside/canary.txt"), "ws/sub/.git/hooks/file-link");
    std::fs::hard_link(&canary, t.path("ws/sub/.git/hooks/hard")).unwrap();
    let before = t.snapshot("outside");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    // Positive control: the links do lead outside.
    assert_eq!(t.read("ws/sub/.git/hooks/abs/canary.txt"), "CANARY");
    assert_eq!(t.read("ws/sub/.git/hooks/rel/canary.txt"), "CANARY");

    fs.remove_tree(&loc("sub/.git/hooks")).unwrap();
    assert!(!t.path("ws/sub/.git/hooks").exists());
    assert!(t.path("ws/sub/.git").is_dir());
    assert_eq!(t.snapshot("outside"), before);
    assert_eq!(std::fs::metadata(&canary).unwrap().nlink(), 1);

    // A link itself as the entry.
    t.link(t.path("outside"), "ws/.envrc");
    fs.remove_tree(&loc(".envrc")).unwrap();
    assert!(std::fs::symlink_metadata(t.path("ws/.envrc")).is_err());
    assert_eq!(t.snapshot("outside"), before);

    assert!(matches!(
        fs.remove_tree(&loc("sub/.git/hooks")),
        Err(FsError::NotFound { .. })
    ));
    // The root itself is never removed.
    assert!(fs.remove_tree(&loc("")).is_err());
    assert!(t.path("ws/f.txt").exists());
}

#[test]
fn remove_tree_through_a_parent_link_is_refused() {
    let t = Tree::standard();
    t.dir("outside/.git/hooks");
    t.file("outside/.git/hooks/pre-commit", "OUTSIDE HOOK");
    let before = t.snapshot("outside");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    for (link, target) in [
        ("ws/abs", t.path("outside")),
        ("ws/rel", PathBuf::from("../outside")),
        ("ws/inside", PathBuf::from("a")),
    ] {
        t.link(&target, link);
    }
    // Positive control: by name, the paths reach outside.
    assert!(t.path("ws/abs/.git/hooks/pre-commit").exists());
    assert!(t.path("ws/rel/.git/hooks/pre-commit").exists());
    for rel in ["abs/.git/hooks", "rel/.git/hooks", "abs/.git"] {
        let r = fs.remove_tree(&loc(rel));
        assert!(matches!(r, Err(FsError::Escape { .. })), "{rel}: {r:?}");
    }
    // Even a link that stays inside is not followed.
    assert!(matches!(
        fs.remove_tree(&loc("inside/b.txt")),
        Err(FsError::Escape { .. })
    ));
    assert!(t.path("ws/a/b.txt").exists());
    assert_eq!(t.snapshot("outside"), before);
}

#[test]
fn remove_tree_gets_past_permissions_taken_away() {
    if is_root() {
        return; // permissions do not stop root; nothing to get past
    }
    let t = Tree::standard();
    t.file("ws/sub/.vscode/locked/tasks.json", "evil");
    t.file("ws/sub/.vscode/ro/settings.json", "evil");
    t.file("ws/sub/keep.txt", "keep");
    chmod(&t.path("ws/sub/.vscode/locked"), 0o000);
    chmod(&t.path("ws/sub/.vscode/ro"), 0o500);
    chmod(&t.path("ws/sub"), 0o555);
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    // Positive control: a plain removal is refused.
    assert!(std::fs::remove_dir_all(t.path("ws/sub/.vscode")).is_err());

    fs.remove_tree(&loc("sub/.vscode")).unwrap();
    assert!(std::fs::symlink_metadata(t.path("ws/sub/.vscode")).is_err());
    // The parent had its mode put back, and the rest of it is untouched.
    assert_eq!(mode(&t.path("ws/sub")), 0o555);
    assert_eq!(t.read("ws/sub/keep.txt"), "keep");
    chmod(&t.path("ws/sub"), 0o755);
}

#[test]
fn restore_round_trips_a_snapshot() {
    let t = Tree::standard();
    t.file("ws/.git/hooks/pre-commit", "#!/bin/sh\n");
    t.file("ws/.git/hooks/sub/x", "x");
    chmod(&t.path("ws/.git/hooks/pre-commit"), 0o777);
    chmod(&t.path("ws/.git/hooks/sub"), 0o555);
    t.link("pre-commit", "ws/.git/hooks/alias");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let snap = fs
        .read_entry(&loc(".git/hooks"), &mut big())
        .unwrap()
        .unwrap();
    chmod(&t.path("ws/.git/hooks/sub"), 0o755);
    std::fs::remove_dir_all(t.path("ws/.git")).unwrap();

    // Missing parents are made; modes are exact whatever the umask.
    fs.restore(&loc(".git/hooks"), &snap).unwrap();
    assert_eq!(
        fs.read_entry(&loc(".git/hooks"), &mut big()).unwrap(),
        Some(snap.clone())
    );
    assert_eq!(mode(&t.path("ws/.git/hooks/pre-commit")), 0o777);
    assert_eq!(mode(&t.path("ws/.git/hooks/sub")), 0o555);
    assert!(t.path("ws/.git").is_dir());

    // Over something else entirely: a file where the directory was.
    chmod(&t.path("ws/.git/hooks/sub"), 0o755);
    std::fs::remove_dir_all(t.path("ws/.git/hooks")).unwrap();
    t.file("ws/.git/hooks", "a file now");
    fs.restore(&loc(".git/hooks"), &snap).unwrap();
    assert_eq!(
        fs.read_entry(&loc(".git/hooks"), &mut big()).unwrap(),
        Some(snap)
    );
    chmod(&t.path("ws/.git/hooks/sub"), 0o755);

    // No temporary file is left behind.
    let names: Vec<String> = std::fs::read_dir(t.path("ws/.git/hooks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with(".spear-tmp")),
        "{names:?}"
    );
}

#[test]
fn restore_replaces_links_and_never_writes_through_them() {
    let t = Tree::standard();
    let canary = t.file("outside/canary.txt", "CANARY");
    t.file("outside/dir/inner", "INNER");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let config = file(0o644, b"[core]\n");
    // The entry is a link to an outside file, then a hard link to it, then a link to a directory.
    t.link(&canary, "ws/config");
    fs.restore(&loc("config"), &config).unwrap();
    std::fs::hard_link(&canary, t.path("ws/hard")).unwrap();
    fs.restore(&loc("hard"), &config).unwrap();
    t.link(t.path("outside/dir"), "ws/hooks");
    fs.restore(
        &loc("hooks"),
        &dir(0o755, &[("inner", file(0o755, b"mine"))]),
    )
    .unwrap();

    assert_eq!(t.read("outside/canary.txt"), "CANARY");
    assert_eq!(t.read("outside/dir/inner"), "INNER");
    assert_eq!(std::fs::metadata(&canary).unwrap().nlink(), 1);
    assert_eq!(t.read("ws/config"), "[core]\n");
    assert_eq!(t.read("ws/hard"), "[core]\n");
    assert!(
        std::fs::symlink_metadata(t.path("ws/hooks"))
            .unwrap()
            .is_dir()
    );
    assert_eq!(t.read("ws/hooks/inner"), "mine");
}

#[test]
fn restore_through_a_parent_link_is_refused() {
    let t = Tree::standard();
    t.dir("outside/.git");
    let before = t.snapshot("outside");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    t.link(t.path("outside"), "ws/sub");
    // Positive control: by name, the parent is the outside directory.
    assert!(t.path("ws/sub/.git").is_dir());
    let r = fs.restore(&loc("sub/.git/config"), &file(0o644, b"[core]"));
    assert!(matches!(r, Err(FsError::Escape { .. })), "{r:?}");
    let r = fs.restore(&loc("sub/.envrc"), &Node::Symlink { target: "x".into() });
    assert!(matches!(r, Err(FsError::Escape { .. })), "{r:?}");
    assert_eq!(t.snapshot("outside"), before);
    // The root itself is never restored over.
    assert!(fs.restore(&loc(""), &dir(0o755, &[])).is_err());
    assert!(t.path("ws/f.txt").exists());
}

#[test]
fn restore_cannot_make_a_fifo() {
    let t = Tree::standard();
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let r = fs.restore(&loc("x/fifo"), &Node::Other { mode: 0o644 });
    assert!(matches!(r, Err(FsError::Io { .. })), "{r:?}");
    assert!(std::fs::symlink_metadata(t.path("ws/x/fifo")).is_err());
}

#[test]
fn missing_parents_are_the_directories_a_write_would_make() {
    let t = Tree::standard();
    t.file("outside/x/y/z", "outside");
    t.link(t.path("outside"), "ws/out");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    assert_eq!(
        fs.missing_parents(&loc("a/new/deeper/f.txt")).unwrap(),
        [loc("a/new/deeper"), loc("a/new")],
        "nearest first, stopping at the existing `a`"
    );
    assert!(fs.missing_parents(&loc("a/b.txt")).unwrap().is_empty());
    assert!(fs.missing_parents(&loc("top.txt")).unwrap().is_empty());
    // A link on the way is not followed: what lies behind it counts as missing, never as there.
    assert_eq!(
        fs.missing_parents(&loc("out/x/y/f")).unwrap(),
        [loc("out/x/y"), loc("out/x")]
    );
}
