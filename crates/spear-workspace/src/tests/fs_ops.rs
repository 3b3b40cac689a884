//! `WorkspaceFs` doing its job: reads, writes, deletes and listings inside the roots.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;

use super::{Tree, ok};
use crate::{DirEntry, EntryKind, FsError, Location, ResolvedPath};

/// The process umask, read without changing it (changing it would race with other tests).
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line.trim_start_matches("Umask:").trim(), 8).unwrap()
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn mkfifo(path: &std::path::Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

fn hand_built(root: usize, rel: &str) -> ResolvedPath {
    let loc = Location {
        root,
        rel: PathBuf::from(rel),
    };
    ResolvedPath {
        as_written: rel.to_owned(),
        entry: loc.clone(),
        target: loc,
        exists: true,
    }
}

#[test]
fn read_a_file() {
    let t = Tree::standard();
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let out = fs.read(&ok(&ws, "f.txt"), 1024).unwrap();
    assert_eq!(out.bytes, b"in workspace");
    assert_eq!(out.size, 12);
    assert!(!out.truncated);
    // Through a link inside, and in another root.
    t.link("a/b.txt", "ws/to-b");
    assert_eq!(
        fs.read(&ok(&ws, "to-b"), 1024).unwrap().bytes,
        b"a/b in workspace"
    );
    let other = ok(&ws, &t.path("other/x.txt").to_string_lossy());
    assert_eq!(fs.read(&other, 1024).unwrap().bytes, b"in other root");
}

#[test]
fn read_is_capped() {
    let t = Tree::standard();
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let r = ok(&ws, "f.txt");
    let cases: &[(u64, &[u8], bool)] = &[
        (0, b"", true),
        (3, b"in ", true),
        (11, b"in workspac", true),
        (12, b"in workspace", false),
        (13, b"in workspace", false),
        (u64::MAX, b"in workspace", false),
    ];
    for (limit, bytes, truncated) in cases {
        let out = fs.read(&r, *limit).unwrap();
        assert_eq!(out.bytes, *bytes, "{limit}");
        assert_eq!(out.truncated, *truncated, "{limit}");
        assert_eq!(out.size, 12);
    }
}

#[test]
fn huge_file_read_is_bounded_pth_13() {
    let t = Tree::standard();
    let big = t.path("ws/big.bin");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(20 << 30).unwrap();
    drop(f);
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let out = fs.read(&ok(&ws, "big.bin"), 1 << 20).unwrap();
    assert_eq!(out.bytes.len(), 1 << 20);
    assert_eq!(out.size, 20 << 30);
    assert!(out.truncated);
    assert!(out.bytes.capacity() <= 2 << 20);
}

#[test]
fn read_refuses_what_is_not_a_regular_file() {
    let t = Tree::standard();
    mkfifo(&t.path("ws/fifo"));
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    assert!(matches!(
        fs.read(&ok(&ws, "a"), 10),
        Err(FsError::IsDirectory { label }) if label == "a"
    ));
    assert!(matches!(
        fs.read(&ok(&ws, "missing"), 10),
        Err(FsError::NotFound { label }) if label == "missing"
    ));
    // A fifo with no writer would block a plain open forever; this returns at once.
    assert!(matches!(
        fs.read(&ok(&ws, "fifo"), 10),
        Err(FsError::Io { .. })
    ));
    assert!(matches!(
        fs.read_head(&ok(&ws, "fifo").target, 10),
        Err(FsError::Io { .. })
    ));
}

#[test]
fn read_head() {
    let t = Tree::standard();
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let loc = ok(&ws, "f.txt").target;
    assert_eq!(fs.read_head(&loc, 2).unwrap(), b"in");
    assert_eq!(fs.read_head(&loc, 100).unwrap(), b"in workspace");
    assert!(matches!(
        fs.read_head(&ok(&ws, "nope").target, 2),
        Err(FsError::NotFound { .. })
    ));
    assert!(matches!(
        fs.read_head(&ok(&ws, "a").target, 2),
        Err(FsError::IsDirectory { .. })
    ));
}

#[test]
fn write_creates_the_file_and_its_parents() {
    let t = Tree::standard();
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let r = ok(&ws, "new/deep/file.txt");
    assert!(!r.exists);
    let out = fs.write(&r, b"hello").unwrap();
    assert!(out.created);
    assert_eq!(t.read("ws/new/deep/file.txt"), "hello");
    let mask = umask();
    assert_eq!(mode(&t.path("ws/new/deep/file.txt")), 0o644 & !mask);
    assert_eq!(mode(&t.path("ws/new")) & 0o777, 0o755 & !mask);
    assert_eq!(mode(&t.path("ws/new/deep")) & 0o777, 0o755 & !mask);
    // Writing again replaces it.
    let out = fs.write(&ok(&ws, "new/deep/file.txt"), b"again").unwrap();
    assert!(!out.created);
    assert_eq!(t.read("ws/new/deep/file.txt"), "again");
}

#[test]
fn write_keeps_the_mode_of_a_replaced_file_but_not_setuid() {
    let t = Tree::standard();
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let f = t.path("ws/f.txt");
    for (before, after) in [
        (0o640, 0o640),
        (0o755, 0o755),
        (0o600, 0o600),
        (0o4755, 0o755),
        (0o2750, 0o750),
    ] {
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(before)).unwrap();
        assert_eq!(mode(&f), before, "positive control: the mode was set");
        fs.write(&ok(&ws, "f.txt"), b"x").unwrap();
        assert_eq!(mode(&f), after, "{before:o}");
    }
}

#[test]
fn write_leaves_no_temporary_file() {
    let t = Tree::standard();
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    for i in 0..5 {
        fs.write(&ok(&ws, "a/b.txt"), format!("{i}").as_bytes())
            .unwrap();
    }
    // A failed write (the entry is a directory) leaves nothing either.
    std::fs::create_dir(t.path("ws/a/d")).unwrap();
    let r = ok(&ws, "a/d");
    assert!(matches!(
        fs.write(&r, b"x"),
        Err(FsError::IsDirectory { .. })
    ));
    let names: Vec<String> = fs
        .list(&ok(&ws, "a"))
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, vec!["b.txt", "d"]);
}

#[test]
fn write_refuses_directories_and_roots() {
    let t = Tree::standard();
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    for p in ["a", ".", "a/.."] {
        assert!(
            matches!(
                fs.write(&ok(&ws, p), b"x"),
                Err(FsError::IsDirectory { .. })
            ),
            "{p}"
        );
    }
    assert_eq!(t.read("ws/a/b.txt"), "a/b in workspace");
    // A parent that is a file.
    assert!(matches!(
        fs.write(&hand_built(0, "f.txt/x"), b"x"),
        Err(FsError::NotDirectory { .. })
    ));
    assert_eq!(t.read("ws/f.txt"), "in workspace");
}

#[test]
fn write_into_another_root_through_a_link() {
    let t = Tree::standard();
    t.link(t.path("other"), "ws/to-other");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let r = ok(&ws, "to-other/new.txt");
    fs.write(&r, b"cross").unwrap();
    assert_eq!(t.read("other/new.txt"), "cross");
    // The link itself is untouched.
    assert!(
        std::fs::symlink_metadata(t.path("ws/to-other"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn delete() {
    let t = Tree::standard();
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    fs.delete(&ok(&ws, "a/b.txt")).unwrap();
    assert!(!t.path("ws/a/b.txt").exists());
    assert!(matches!(
        fs.delete(&ok(&ws, "a/b.txt")),
        Err(FsError::NotFound { .. })
    ));
    assert!(matches!(
        fs.delete(&ok(&ws, "nope/x")),
        Err(FsError::NotFound { .. })
    ));
    assert!(matches!(
        fs.delete(&ok(&ws, "a")),
        Err(FsError::IsDirectory { .. })
    ));
    assert!(t.path("ws/a").is_dir());
    assert!(matches!(
        fs.delete(&ok(&ws, ".")),
        Err(FsError::IsDirectory { .. })
    ));
    assert!(t.path("ws").is_dir());
}

#[test]
fn list() {
    let t = Tree::standard();
    t.link("f.txt", "ws/link");
    mkfifo(&t.path("ws/fifo"));
    t.dir("ws/empty");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let e = |name: &str, kind| DirEntry {
        name: name.to_owned(),
        kind,
    };
    assert_eq!(
        fs.list(&ok(&ws, ".")).unwrap(),
        vec![
            e("a", EntryKind::Dir),
            e("empty", EntryKind::Dir),
            e("f.txt", EntryKind::File),
            e("fifo", EntryKind::Other),
            e("link", EntryKind::Symlink),
        ]
    );
    assert_eq!(fs.list(&ok(&ws, "empty")).unwrap(), vec![]);
    assert!(matches!(
        fs.list(&ok(&ws, "f.txt")),
        Err(FsError::NotDirectory { .. })
    ));
    assert!(matches!(
        fs.list(&ok(&ws, "gone")),
        Err(FsError::NotFound { .. })
    ));
    let other = ok(&ws, &t.path("other").to_string_lossy());
    assert_eq!(fs.list(&other).unwrap(), vec![e("x.txt", EntryKind::File)]);
}

#[test]
fn hand_built_locations_cannot_climb() {
    let t = Tree::standard();
    t.file("ws-sibling.txt", "sibling");
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    for rel in ["../outside/secret.txt", "a/../../outside/secret.txt"] {
        let r = hand_built(0, rel);
        assert!(
            matches!(fs.read(&r, 100), Err(FsError::Escape { .. })),
            "{rel}"
        );
        assert!(
            matches!(fs.write(&r, b"x"), Err(FsError::Escape { .. })),
            "{rel}"
        );
        assert!(
            matches!(fs.delete(&r), Err(FsError::Escape { .. })),
            "{rel}"
        );
        assert!(matches!(fs.list(&r), Err(FsError::Escape { .. })), "{rel}");
    }
    let abs = hand_built(0, &t.path("outside/secret.txt").to_string_lossy());
    assert!(matches!(fs.read(&abs, 100), Err(FsError::Escape { .. })));
    assert!(matches!(fs.write(&abs, b"x"), Err(FsError::Escape { .. })));
    assert_eq!(t.read("outside/secret.txt"), "SECRET");
    // An unknown root index is an error, not a panic.
    assert!(matches!(
        fs.read(&hand_built(7, "f.txt"), 100),
        Err(FsError::Io { .. })
    ));
    // Positive control: a hand-built location inside works.
    assert_eq!(
        fs.read(&hand_built(0, "f.txt"), 100).unwrap().bytes,
        b"in workspace"
    );
}

#[test]
fn inode_of_untouched_files_is_kept() {
    // Control for the hard-link tests: a plain rewrite through std keeps the inode, so an inode
    // comparison can tell "written through" from "replaced".
    let t = Tree::standard();
    let p = t.path("ws/f.txt");
    let before = std::fs::metadata(&p).unwrap().ino();
    std::fs::write(&p, "through").unwrap();
    assert_eq!(std::fs::metadata(&p).unwrap().ino(), before);
}
