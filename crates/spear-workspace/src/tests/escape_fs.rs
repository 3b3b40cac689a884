//! `WorkspaceFs` when the filesystem changes after `resolve`, and against links at the entry:
//! nothing outside a root may be read, written, created or removed. Each case has a positive
//! control showing a plain open by name would have reached outside.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use super::{Tree, ok};
use crate::{FsError, Location, ResolvedPath};

fn is_escape<T: std::fmt::Debug>(r: &Result<T, FsError>) -> bool {
    matches!(r, Err(FsError::Escape { .. }))
}

/// `ws/a` is a real directory at resolution; then it becomes a link to `outside` (which holds a
/// `b.txt` canary), spelled `target`.
fn link_created_after_resolution(target: &str) {
    let t = Tree::standard();
    t.file("ws/a/b.txt", "inside");
    t.file("outside/b.txt", "OUTSIDE CANARY");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let file = ok(&ws, "a/b.txt");
    let dir = ok(&ws, "a");
    let new_file = ok(&ws, "a/new.txt");
    let new_nested = ok(&ws, "a/sub/new.txt");
    assert_eq!(file.target.rel, PathBuf::from("a/b.txt"));

    // The swap.
    std::fs::rename(t.path("ws/a"), t.path("ws/a-moved")).unwrap();
    t.link(target.replace("{BASE}", &t.base.to_string_lossy()), "ws/a");
    let before = t.snapshot("outside");

    // Positive control: a plain open by name now reaches the outside file.
    assert_eq!(t.read("ws/a/b.txt"), "OUTSIDE CANARY");

    assert!(is_escape(&fs.read(&file, 1024)), "read");
    assert!(is_escape(&fs.read_head(&file.target, 1024)), "read_head");
    assert!(is_escape(&fs.write(&file, b"pwned")), "write existing");
    assert!(is_escape(&fs.write(&new_file, b"pwned")), "write new");
    assert!(is_escape(&fs.write(&new_nested, b"pwned")), "write nested");
    assert!(is_escape(&fs.delete(&file)), "delete");
    assert!(is_escape(&fs.list(&dir)), "list");

    // Nothing outside changed: same files, same contents, nothing created.
    assert_eq!(t.snapshot("outside"), before);
    assert_eq!(t.read("outside/b.txt"), "OUTSIDE CANARY");
    assert!(!t.path("outside/new.txt").exists());
    assert!(!t.path("outside/sub").exists());
    assert_eq!(t.read("ws/a-moved/b.txt"), "inside");
}

#[test]
fn absolute_link_created_after_resolution() {
    link_created_after_resolution("{BASE}/outside");
}

#[test]
fn relative_link_created_after_resolution() {
    link_created_after_resolution("../outside");
}

#[test]
fn link_through_proc_created_after_resolution() {
    link_created_after_resolution("/proc/self/cwd/../../../../../../../../..{BASE}/outside");
}

#[test]
fn parent_created_as_a_link_after_resolution() {
    let t = Tree::standard();
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let r = ok(&ws, "newdir/deeper/x.txt");
    assert!(!r.exists);
    t.link(t.path("outside"), "ws/newdir");
    t.dir("outside/deeper");
    let before = t.snapshot("outside");
    // Positive control: the path now reaches outside by name.
    std::fs::write(t.path("ws/newdir/deeper/probe"), "p").unwrap();
    assert_eq!(t.read("outside/deeper/probe"), "p");
    std::fs::remove_file(t.path("outside/deeper/probe")).unwrap();
    assert_eq!(t.snapshot("outside"), before);

    assert!(is_escape(&fs.write(&r, b"pwned")));
    assert_eq!(t.snapshot("outside"), before);
    assert!(!t.path("outside/deeper/x.txt").exists());
}

#[test]
fn leaf_swapped_for_a_link_after_resolution() {
    for target in ["{BASE}/outside/secret.txt", "../outside/secret.txt"] {
        let t = Tree::standard();
        let ws = t.ws();
        let fs = ws.fs().unwrap();
        let r = ok(&ws, "f.txt");
        std::fs::remove_file(t.path("ws/f.txt")).unwrap();
        t.link(
            target.replace("{BASE}", &t.base.to_string_lossy()),
            "ws/f.txt",
        );
        // Positive control.
        assert_eq!(t.read("ws/f.txt"), "SECRET");

        assert!(is_escape(&fs.read(&r, 1024)), "{target}");
        // A write replaces the link itself: the secret is untouched.
        fs.write(&r, b"replaced").unwrap();
        assert_eq!(t.read("outside/secret.txt"), "SECRET");
        let meta = std::fs::symlink_metadata(t.path("ws/f.txt")).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(t.read("ws/f.txt"), "replaced");
    }
}

#[test]
fn hard_linked_file_is_replaced_not_written_through() {
    let t = Tree::standard();
    let canary = t.file("outside/canary.txt", "CANARY");
    std::fs::hard_link(&canary, t.path("ws/hard.txt")).unwrap();
    let canary_ino = std::fs::metadata(&canary).unwrap().ino();
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let r = ok(&ws, "hard.txt");
    // Positive control: the workspace entry is the outside file (same inode, same content).
    assert_eq!(
        std::fs::metadata(t.path("ws/hard.txt")).unwrap().ino(),
        canary_ino
    );
    assert_eq!(fs.read(&r, 100).unwrap().bytes, b"CANARY");
    assert_eq!(std::fs::metadata(&canary).unwrap().nlink(), 2);

    fs.write(&r, b"new content").unwrap();

    let after = std::fs::metadata(&canary).unwrap();
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "CANARY");
    assert_eq!(after.ino(), canary_ino);
    assert_eq!(after.nlink(), 1);
    assert_eq!(t.read("ws/hard.txt"), "new content");
    assert_ne!(
        std::fs::metadata(t.path("ws/hard.txt")).unwrap().ino(),
        canary_ino
    );
}

#[test]
fn symlink_leaf_is_replaced_by_write() {
    let t = Tree::standard();
    t.link("f.txt", "ws/link.txt");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let r = ok(&ws, "link.txt");
    assert_eq!(r.entry.rel, PathBuf::from("link.txt"));
    assert_eq!(r.target.rel, PathBuf::from("f.txt"));
    // The link is retargeted outside after resolution.
    std::fs::remove_file(t.path("ws/link.txt")).unwrap();
    t.link(t.path("outside/secret.txt"), "ws/link.txt");
    // Positive control: writing through the link by name would hit the secret.
    assert_eq!(t.read("ws/link.txt"), "SECRET");

    let out = fs.write(&r, b"new").unwrap();
    assert!(!out.created);
    assert_eq!(t.read("outside/secret.txt"), "SECRET");
    assert_eq!(t.read("ws/f.txt"), "in workspace");
    let meta = std::fs::symlink_metadata(t.path("ws/link.txt")).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(t.read("ws/link.txt"), "new");
}

#[test]
fn write_to_a_hand_built_entry_that_is_a_link_out_replaces_the_link() {
    let t = Tree::standard();
    t.link(t.path("outside/secret.txt"), "ws/out.txt");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    // resolve refuses it ...
    assert!(ws.resolve("out.txt").is_err());
    // ... and even a caller that skips resolve cannot write through it.
    let loc = Location {
        root: 0,
        rel: PathBuf::from("out.txt"),
    };
    let r = ResolvedPath {
        as_written: "out.txt".into(),
        entry: loc.clone(),
        target: loc,
        exists: true,
    };
    assert_eq!(t.read("ws/out.txt"), "SECRET");
    assert!(is_escape(&fs.read(&r, 100)));
    fs.write(&r, b"mine").unwrap();
    assert_eq!(t.read("outside/secret.txt"), "SECRET");
    assert_eq!(t.read("ws/out.txt"), "mine");
}

#[test]
fn delete_on_a_link_removes_only_the_link() {
    let t = Tree::standard();
    t.link("f.txt", "ws/inner-link");
    t.link(t.path("outside/secret.txt"), "ws/outer-link");
    t.link("a", "ws/dir-link");
    let ws = t.ws();
    let fs = ws.fs().unwrap();

    let r = ok(&ws, "inner-link");
    fs.delete(&r).unwrap();
    assert!(std::fs::symlink_metadata(t.path("ws/inner-link")).is_err());
    assert_eq!(t.read("ws/f.txt"), "in workspace");

    // A link to a directory is a link, not a directory.
    fs.delete(&ok(&ws, "dir-link")).unwrap();
    assert!(std::fs::symlink_metadata(t.path("ws/dir-link")).is_err());
    assert_eq!(t.read("ws/a/b.txt"), "a/b in workspace");

    // A link leading out: resolve refuses it; deleting the entry by hand removes the link only.
    assert!(ws.resolve("outer-link").is_err());
    let loc = Location {
        root: 0,
        rel: PathBuf::from("outer-link"),
    };
    let hand = ResolvedPath {
        as_written: "outer-link".into(),
        entry: loc.clone(),
        target: loc,
        exists: true,
    };
    fs.delete(&hand).unwrap();
    assert!(std::fs::symlink_metadata(t.path("ws/outer-link")).is_err());
    assert_eq!(t.read("outside/secret.txt"), "SECRET");
}

#[test]
fn a_link_swapped_in_that_stays_inside_is_followed_for_reads() {
    // Positive control for the escape tests: BENEATH refuses only what leaves the root.
    let t = Tree::standard();
    t.file("ws/a2/b.txt", "moved inside");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let r = ok(&ws, "a/b.txt");
    std::fs::rename(t.path("ws/a"), t.path("ws/a-old")).unwrap();
    t.link("a2", "ws/a");
    assert_eq!(fs.read(&r, 100).unwrap().bytes, b"moved inside");
}
