//! `CheckpointStore` against real temporary directories: turns recorded the way the tool layer
//! records them (capture before, change through `WorkspaceFs`, capture after), then undone.
//!
//! "As before" is checked on whole trees, byte for byte and mode for mode. Every refusal (a
//! conflict, a tampered store, a link swapped in) asserts that nothing changed, and has a
//! positive control showing the same undo goes through once the cause is gone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use spear_runtime::{CheckpointError, CheckpointStore, EntryState, TurnCheckpoint, UndoError};
use spear_testkit::process::is_root;
use spear_workspace::{Location, Node, Workspace, WorkspaceConfig, WorkspaceFs};

/// One entry of a tree, as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Snap {
    File { mode: u32, bytes: Vec<u8> },
    Dir { mode: u32 },
    Link { target: PathBuf },
}

/// Every entry below `dir` by relative path, links not followed.
fn snapshot(dir: &Path) -> BTreeMap<String, Snap> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Snap>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.mode() & 0o7777;
            let snap = if meta.file_type().is_symlink() {
                Snap::Link {
                    target: std::fs::read_link(&path).unwrap(),
                }
            } else if meta.is_dir() {
                walk(base, &path, out);
                Snap::Dir { mode }
            } else {
                Snap::File {
                    mode,
                    bytes: std::fs::read(&path).unwrap(),
                }
            };
            out.insert(rel, snap);
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `base/ws` is the workspace (primary root), `base/other` an extra root, `base/outside` lies
/// outside every root, `base/state/ckpt` is the checkpoint store.
struct Fx {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    ws: Workspace,
    fs: WorkspaceFs,
    store: CheckpointStore,
}

impl Fx {
    fn new() -> Fx {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        for d in ["ws", "other", "outside"] {
            std::fs::create_dir(base.join(d)).unwrap();
        }
        let ws = open_ws(&base, "ws", &["other"]);
        let fs = ws.fs().unwrap();
        let store = CheckpointStore::open(&base.join("state/ckpt")).unwrap();
        Fx {
            _tmp: tmp,
            base,
            ws,
            fs,
            store,
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.base.join("ws").join(rel)
    }

    /// Sets up a file on the host (not part of any turn).
    fn file(&self, rel: &str, bytes: &[u8], mode: u32) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        chmod(&p, mode);
    }

    fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).unwrap()
    }

    fn tree(&self) -> BTreeMap<String, Snap> {
        snapshot(&self.base.join("ws"))
    }

    fn turn(&self, id: &str) -> TurnCheckpoint {
        self.store.turn(id).unwrap()
    }

    /// Records `change` on `rel` in `turn` as the tool layer does.
    fn change(&self, turn: &mut TurnCheckpoint, rel: &str, change: impl FnOnce(&Fx)) {
        let loc = loc(rel);
        self.store
            .capture_before(turn, &self.ws, &self.fs, &loc)
            .unwrap();
        change(self);
        self.store
            .capture_after(turn, &self.ws, &self.fs, &loc)
            .unwrap();
    }

    fn write(&self, turn: &mut TurnCheckpoint, rel: &str, bytes: &[u8]) {
        self.change(turn, rel, |fx| {
            fx.fs.write(&fx.ws.resolve(rel).unwrap(), bytes).unwrap();
        });
    }

    fn delete(&self, turn: &mut TurnCheckpoint, rel: &str) {
        self.change(turn, rel, |fx| {
            fx.fs.delete(&fx.ws.resolve(rel).unwrap()).unwrap();
        });
    }

    fn put(&self, turn: &mut TurnCheckpoint, rel: &str, node: &Node) {
        self.change(turn, rel, |fx| fx.fs.restore(&loc(rel), node).unwrap());
    }

    fn undo(&self) -> Result<spear_runtime::UndoReport, UndoError> {
        self.store.undo_last(&self.ws, &self.fs)
    }
}

fn open_ws(base: &Path, launch: &str, extras: &[&str]) -> Workspace {
    let mut c = WorkspaceConfig::new(base.join(launch));
    c.extra_roots = extras.iter().map(|e| base.join(e)).collect();
    Workspace::open(&c).unwrap()
}

fn loc(rel: &str) -> Location {
    Location {
        root: 0,
        rel: PathBuf::from(rel),
    }
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn writes_modes_deletes_new_dirs_and_links_are_undone_byte_for_byte() {
    let fx = Fx::new();
    fx.file("a.txt", b"alpha\n", 0o640);
    fx.file("b.sh", b"#!/bin/sh\necho b\n", 0o755);
    fx.file("del.txt", b"delete me", 0o600);
    fx.file("src/main.rs", b"fn main() {}\n", 0o644);
    chmod(&fx.path("src"), 0o750);
    std::os::unix::fs::symlink("a.txt", fx.path("link")).unwrap();
    let before = fx.tree();

    let mut t = fx.turn("t1");
    fx.write(&mut t, "a.txt", b"ALPHA, changed");
    fx.put(
        &mut t,
        "b.sh",
        &Node::File {
            mode: 0o600,
            bytes: b"replaced".to_vec(),
        },
    );
    fx.delete(&mut t, "del.txt");
    fx.write(&mut t, "new/deep/file.txt", b"created");
    fx.delete(&mut t, "link");
    fx.write(&mut t, "link", b"a file where a link was");
    fx.put(
        &mut t,
        "newlink",
        &Node::Symlink {
            target: "a.txt".into(),
        },
    );
    fx.delete(&mut t, "src/main.rs");
    t.save().unwrap();
    // Positive control: the turn did change the tree, modes included.
    assert_ne!(fx.tree(), before);
    assert_eq!(mode(&fx.path("b.sh")), 0o600);

    let report = fx.undo().unwrap();
    assert_eq!(fx.tree(), before);
    assert_eq!(report.turn, "t1");
    assert_eq!(
        sorted(report.restored),
        ["a.txt", "b.sh", "del.txt", "link", "src/main.rs"]
    );
    assert_eq!(
        sorted(report.removed),
        ["new", "new/deep", "new/deep/file.txt", "newlink"]
    );
    assert!(report.kept.is_empty());

    // The turn is marked undone: nothing is left to undo.
    assert_eq!(fx.store.last_turn(), None);
    assert!(matches!(fx.undo(), Err(UndoError::NothingToUndo)));
    assert_eq!(fx.tree(), before);
}

#[test]
fn the_first_capture_of_a_path_in_a_turn_wins() {
    let fx = Fx::new();
    fx.file("a.txt", b"v1", 0o644);
    let mut t = fx.turn("t1");
    fx.write(&mut t, "a.txt", b"v2");
    fx.write(&mut t, "a.txt", b"v3");
    let first = t.before(&fx.ws, &loc("a.txt")).unwrap().clone();
    assert!(matches!(first, EntryState::File { size: 2, .. }));
    assert_eq!(t.paths(), ["a.txt"]);
    t.save().unwrap();
    // A note_before after the first is ignored too.
    let mut t = fx.turn("t1");
    t.note_before(&fx.ws, &loc("a.txt"), EntryState::Absent);
    assert_eq!(t.before(&fx.ws, &loc("a.txt")), Some(&first));
    assert_eq!(fx.read("a.txt"), b"v3");

    fx.undo().unwrap();
    assert_eq!(fx.read("a.txt"), b"v1");
}

#[test]
fn a_file_changed_since_the_turn_is_a_conflict_and_nothing_is_restored() {
    let fx = Fx::new();
    fx.file("a.txt", b"a1", 0o644);
    fx.file("b.txt", b"b1", 0o644);
    let mut t = fx.turn("t1");
    fx.write(&mut t, "a.txt", b"a2");
    fx.write(&mut t, "b.txt", b"b2");
    t.save().unwrap();
    // Someone edits b.txt after the turn.
    std::fs::write(fx.path("b.txt"), b"edited by hand").unwrap();
    let before_undo = fx.tree();

    let got = fx.undo();
    let Err(UndoError::Conflict(conflicts)) = &got else {
        panic!("{got:?}");
    };
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].label, "b.txt");
    assert!(conflicts[0].expected.contains("2 bytes"), "{conflicts:?}");
    assert!(conflicts[0].found.contains("14 bytes"), "{conflicts:?}");
    assert!(got.unwrap_err().to_string().contains("b.txt"));
    // Nothing changed, a.txt included; the turn is still the one to undo.
    assert_eq!(fx.tree(), before_undo);
    assert_eq!(fx.store.last_turn().as_deref(), Some("t1"));

    // Positive control: b.txt back as the turn left it, the undo goes through.
    std::fs::write(fx.path("b.txt"), b"b2").unwrap();
    fx.undo().unwrap();
    assert_eq!(
        (fx.read("a.txt"), fx.read("b.txt")),
        (b"a1".to_vec(), b"b1".to_vec())
    );
}

#[test]
fn a_deleted_file_that_reappeared_is_a_conflict() {
    let fx = Fx::new();
    fx.file("x.txt", b"original", 0o644);
    fx.file("y.txt", b"y1", 0o644);
    let mut t = fx.turn("t1");
    fx.delete(&mut t, "x.txt");
    fx.write(&mut t, "y.txt", b"y2");
    t.save().unwrap();
    std::fs::write(fx.path("x.txt"), b"new work").unwrap();
    let before_undo = fx.tree();

    let got = fx.undo();
    let Err(UndoError::Conflict(conflicts)) = &got else {
        panic!("{got:?}");
    };
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].label, "x.txt");
    assert!(conflicts[0].expected.contains("absent"), "{conflicts:?}");
    assert!(conflicts[0].found.contains("a file"), "{conflicts:?}");
    assert_eq!(fx.tree(), before_undo);

    // Positive control.
    std::fs::remove_file(fx.path("x.txt")).unwrap();
    fx.undo().unwrap();
    assert_eq!(
        (fx.read("x.txt"), fx.read("y.txt")),
        (b"original".to_vec(), b"y1".to_vec())
    );
}

#[test]
fn a_failing_step_puts_back_what_was_already_restored() {
    let fx = Fx::new();
    fx.file("a.txt", b"v1", 0o644);
    fx.file("p/q/f.txt", b"inner", 0o644);
    let mut t = fx.turn("t1");
    fx.write(&mut t, "a.txt", b"v2");
    fx.delete(&mut t, "p/q/f.txt");
    t.save().unwrap();
    // `p` is replaced by a regular file: p/q/f.txt is still absent (no conflict), but it cannot
    // be restored (its parent cannot be made), even as root.
    std::fs::remove_dir_all(fx.path("p")).unwrap();
    std::fs::write(fx.path("p"), b"a file now").unwrap();
    let before_undo = fx.tree();
    // Held open, so that its inode number cannot be reused by the files a restore makes.
    let held = std::fs::File::open(fx.path("a.txt")).unwrap();

    let got = fx.undo();
    let Err(UndoError::Failed {
        label,
        not_put_back,
        ..
    }) = &got
    else {
        panic!("{got:?}");
    };
    assert_eq!(label, "p/q/f.txt");
    assert!(not_put_back.is_empty(), "{not_put_back:?}");
    // Every file is as before the undo...
    assert_eq!(fx.tree(), before_undo);
    // ...although a.txt had been restored (it is a new file, put back as the turn left it).
    assert_ne!(
        std::fs::metadata(fx.path("a.txt")).unwrap().ino(),
        held.metadata().unwrap().ino()
    );
    assert_eq!(fx.store.last_turn().as_deref(), Some("t1"));

    // Positive control: with `p` a directory again, everything is restored.
    std::fs::remove_file(fx.path("p")).unwrap();
    fx.undo().unwrap();
    assert_eq!(
        (fx.read("a.txt"), fx.read("p/q/f.txt")),
        (b"v1".to_vec(), b"inner".to_vec())
    );
}

#[test]
fn two_turns_are_undone_latest_first() {
    let fx = Fx::new();
    fx.file("a.txt", b"v1", 0o644);
    let mut t1 = fx.turn("t1");
    fx.write(&mut t1, "a.txt", b"v2");
    t1.save().unwrap();
    let mut t2 = fx.turn("t2");
    fx.write(&mut t2, "a.txt", b"v3");
    fx.write(&mut t2, "c.txt", b"new in t2");
    t2.save().unwrap();
    // A later turn that changed nothing is skipped.
    let mut t3 = fx.turn("t3");
    fx.write(&mut t3, "a.txt", b"v3");
    t3.save().unwrap();
    assert!(t2.seq() < t3.seq() && t1.seq() < t2.seq());

    assert_eq!(fx.store.last_turn().as_deref(), Some("t2"));
    assert_eq!(fx.undo().unwrap().turn, "t2");
    assert_eq!(fx.read("a.txt"), b"v2");
    assert!(!fx.path("c.txt").exists());

    assert_eq!(fx.store.last_turn().as_deref(), Some("t1"));
    assert_eq!(fx.undo().unwrap().turn, "t1");
    assert_eq!(fx.read("a.txt"), b"v1");
    assert!(matches!(fx.undo(), Err(UndoError::NothingToUndo)));
}

#[test]
fn a_tampered_blob_is_refused_and_nothing_is_restored() {
    let fx = Fx::new();
    fx.file("a.txt", b"v1", 0o644);
    fx.file("b.txt", b"b1", 0o644);
    let mut t = fx.turn("t1");
    fx.write(&mut t, "b.txt", b"b2");
    let before = fx
        .store
        .capture_before(&mut t, &fx.ws, &fx.fs, &loc("a.txt"))
        .unwrap();
    fx.fs
        .write(&fx.ws.resolve("a.txt").unwrap(), b"v2")
        .unwrap();
    fx.store
        .capture_after(&mut t, &fx.ws, &fx.fs, &loc("a.txt"))
        .unwrap();
    t.save().unwrap();
    let EntryState::File { hash, .. } = before else {
        panic!("{before:?}");
    };
    let blob = fx.store.dir().join("blobs").join(&hash);
    let before_undo = fx.tree();

    // Attack: the blob edited in the store (same size).
    std::fs::write(&blob, b"v9").unwrap();
    let got = fx.undo();
    assert!(
        matches!(
            &got,
            Err(UndoError::Store(CheckpointError::BlobTampered { .. }))
        ),
        "{got:?}"
    );
    assert_eq!(fx.tree(), before_undo, "b.txt was not restored either");

    // Attack: the blob swapped for a link to a file with the right content.
    let copy = fx.base.join("outside/copy");
    std::fs::write(&copy, b"v1").unwrap();
    std::fs::remove_file(&blob).unwrap();
    std::os::unix::fs::symlink(&copy, &blob).unwrap();
    let got = fx.undo();
    assert!(
        matches!(
            &got,
            Err(UndoError::Store(CheckpointError::BlobTampered { .. }))
        ),
        "{got:?}"
    );
    assert_eq!(fx.tree(), before_undo);

    // A missing blob is refused too.
    std::fs::remove_file(&blob).unwrap();
    let got = fx.undo();
    assert!(
        matches!(
            &got,
            Err(UndoError::Store(CheckpointError::BlobMissing { .. }))
        ),
        "{got:?}"
    );
    assert_eq!(fx.tree(), before_undo);

    // Positive control: the blob stored again, the undo goes through.
    assert_eq!(fx.store.put_blob(b"v1").unwrap(), hash);
    fx.undo().unwrap();
    assert_eq!(
        (fx.read("a.txt"), fx.read("b.txt")),
        (b"v1".to_vec(), b"b1".to_vec())
    );
}

#[test]
fn store_directories_are_0700_and_its_files_0600() {
    let fx = Fx::new();
    fx.file("a.txt", b"v1", 0o644);
    let mut t = fx.turn("t1");
    fx.write(&mut t, "a.txt", b"v2");
    t.save().unwrap();
    let dir = fx.store.dir();
    for d in [dir.to_path_buf(), dir.join("blobs"), dir.join("turns")] {
        assert_eq!(mode(&d), 0o700, "{}", d.display());
    }
    let mut files = 0;
    for sub in ["blobs", "turns"] {
        for e in std::fs::read_dir(dir.join(sub)).unwrap() {
            let p = e.unwrap().path();
            assert_eq!(mode(&p), 0o600, "{}", p.display());
            files += 1;
        }
    }
    // The state after is kept as a hash only (undo compares it, never restores it).
    assert_eq!(files, 2, "the blob of the state before and one manifest");
    assert!(dir.join("turns/t1.json").is_file());
}

#[test]
fn a_store_directory_that_is_a_link_or_not_ours_is_refused() {
    let fx = Fx::new();
    let real = fx.base.join("real");
    std::fs::create_dir(&real).unwrap();
    let link = fx.base.join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let got = CheckpointStore::open(&link);
    assert!(
        matches!(got, Err(CheckpointError::UnsafeDir { .. })),
        "{got:?}"
    );
    assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0);
    // `blobs` swapped for a link.
    std::fs::create_dir(fx.base.join("outside/blobs")).unwrap();
    std::os::unix::fs::symlink(fx.base.join("outside/blobs"), real.join("blobs")).unwrap();
    assert!(matches!(
        CheckpointStore::open(&real),
        Err(CheckpointError::UnsafeDir { .. })
    ));
    std::fs::remove_file(real.join("blobs")).unwrap();
    // Positive control.
    CheckpointStore::open(&real).unwrap();

    let theirs = if is_root() {
        let d = fx.base.join("theirs");
        std::fs::create_dir(&d).unwrap();
        std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
        d
    } else {
        PathBuf::from("/")
    };
    let got = CheckpointStore::open(&theirs);
    assert!(
        matches!(&got, Err(CheckpointError::UnsafeDir { why, .. }) if why.contains("belongs to")),
        "{got:?}"
    );
}

#[test]
fn a_link_in_the_workspace_never_gets_outside_content_captured() {
    let fx = Fx::new();
    let secret = b"-----BEGIN OPENSSH PRIVATE KEY----- outside";
    std::fs::write(fx.base.join("outside/id_rsa"), secret).unwrap();
    fx.file("a.txt", b"inside", 0o644);
    // Attack: a directory swapped for a link to outside, and a leaf that is a link to outside.
    std::os::unix::fs::symlink(fx.base.join("outside"), fx.path("dir")).unwrap();
    std::os::unix::fs::symlink(fx.base.join("outside/id_rsa"), fx.path("leaf")).unwrap();
    // Positive control: both links really lead to the secret.
    assert_eq!(std::fs::read(fx.path("dir/id_rsa")).unwrap(), secret);
    assert_eq!(std::fs::read(fx.path("leaf")).unwrap(), secret);

    let through_dir = fx.store.read_state(&fx.fs, &loc("dir/id_rsa"));
    assert!(
        matches!(through_dir, Ok(EntryState::Absent) | Err(_)),
        "{through_dir:?}"
    );
    assert_eq!(
        fx.store.read_state(&fx.fs, &loc("leaf")).unwrap(),
        EntryState::Symlink {
            target: fx.base.join("outside/id_rsa")
        }
    );
    let mut t = fx.turn("t1");
    fx.store
        .capture_before(&mut t, &fx.ws, &fx.fs, &loc("dir/id_rsa"))
        .unwrap();
    // Positive control: a real file is captured into a blob.
    assert!(matches!(
        fx.store.read_state(&fx.fs, &loc("a.txt")).unwrap(),
        EntryState::File { size: 6, .. }
    ));
    let blobs: Vec<Vec<u8>> = std::fs::read_dir(fx.store.dir().join("blobs"))
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    assert!(blobs.contains(&b"inside".to_vec()));
    assert!(
        !blobs.iter().any(|b| b == secret),
        "the secret was captured"
    );
}

#[test]
fn undo_never_writes_through_a_link_swapped_in_for_a_parent() {
    let fx = Fx::new();
    fx.file("sub/x.txt", b"v1", 0o644);
    let mut t = fx.turn("t1");
    fx.write(&mut t, "sub/x.txt", b"v2");
    t.save().unwrap();
    // Attack: `sub` replaced by a link to outside, where x.txt holds what the turn left.
    std::fs::remove_dir_all(fx.path("sub")).unwrap();
    std::fs::write(fx.base.join("outside/x.txt"), b"v2").unwrap();
    std::os::unix::fs::symlink(fx.base.join("outside"), fx.path("sub")).unwrap();
    assert_eq!(
        fx.read("sub/x.txt"),
        b"v2",
        "positive control: the link works"
    );

    let got = fx.undo();
    assert!(
        matches!(&got, Err(UndoError::Conflict(c)) if c[0].label == "sub/x.txt"),
        "{got:?}"
    );
    assert_eq!(std::fs::read(fx.base.join("outside/x.txt")).unwrap(), b"v2");
}

#[test]
fn a_created_directory_that_is_not_empty_is_kept() {
    let fx = Fx::new();
    let mut t = fx.turn("t1");
    fx.write(&mut t, "new/f.txt", b"from the turn");
    t.save().unwrap();
    std::fs::write(fx.path("new/later.txt"), b"not from the turn").unwrap();

    let report = fx.undo().unwrap();
    assert_eq!(report.removed, ["new/f.txt"]);
    assert_eq!(report.kept, ["new"]);
    assert!(!fx.path("new/f.txt").exists());
    assert_eq!(fx.read("new/later.txt"), b"not from the turn");
}

#[test]
fn roots_are_matched_by_host_path_and_a_missing_root_is_an_error() {
    let fx = Fx::new();
    std::fs::write(fx.base.join("other/x.txt"), b"v1").unwrap();
    let other = Location {
        root: 1,
        rel: PathBuf::from("x.txt"),
    };
    let mut t = fx.turn("t1");
    fx.store
        .capture_before(&mut t, &fx.ws, &fx.fs, &other)
        .unwrap();
    fx.fs
        .write(&fx.ws.resolve("../other/x.txt").unwrap(), b"v2")
        .unwrap();
    fx.store
        .capture_after(&mut t, &fx.ws, &fx.fs, &other)
        .unwrap();
    assert_eq!(t.paths(), ["other:x.txt"]);
    t.save().unwrap();

    // A workspace without that root.
    let single = open_ws(&fx.base, "ws", &[]);
    let got = fx.store.undo_last(&single, &single.fs().unwrap());
    assert!(
        matches!(&got, Err(UndoError::RootGone { root, .. }) if *root == fx.base.join("other")),
        "{got:?}"
    );
    assert_eq!(std::fs::read(fx.base.join("other/x.txt")).unwrap(), b"v2");

    // Positive control: a workspace where that root has another index.
    let swapped = open_ws(&fx.base, "other", &["ws"]);
    assert_eq!(swapped.roots()[0].host_path(), fx.base.join("other"));
    fx.store
        .undo_last(&swapped, &swapped.fs().unwrap())
        .unwrap();
    assert_eq!(std::fs::read(fx.base.join("other/x.txt")).unwrap(), b"v1");
}

#[test]
fn a_file_over_the_limit_is_not_checkpointed() {
    let fx = Fx::new();
    let store = fx.store.clone().with_max_file_bytes(4);
    fx.file("big.txt", b"12345", 0o644);
    fx.file("ok.txt", b"1234", 0o644);
    let got = store.read_state(&fx.fs, &loc("big.txt"));
    assert!(
        matches!(&got, Err(CheckpointError::TooLarge { max: 4, .. })),
        "{got:?}"
    );
    assert!(got.unwrap_err().to_string().contains("not checkpointed"));
    assert!(matches!(
        store.read_state(&fx.fs, &loc("ok.txt")).unwrap(),
        EntryState::File { size: 4, .. }
    ));
}

#[test]
fn a_tampered_manifest_is_refused() {
    let fx = Fx::new();
    fx.file("a.txt", b"v1", 0o644);
    std::fs::write(fx.base.join("outside/secret"), b"SECRET").unwrap();
    let mut t = fx.turn("t1");
    fx.write(&mut t, "a.txt", b"v2");
    t.save().unwrap();
    // Positive control: the turn is there to undo.
    assert_eq!(fx.store.last_turn().as_deref(), Some("t1"));

    // Attack: the manifest edited to name a path outside the root.
    let manifest = fx.store.dir().join("turns/t1.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(text.contains("\"a.txt\""));
    std::fs::write(
        &manifest,
        text.replace("\"a.txt\"", "\"../outside/secret\""),
    )
    .unwrap();
    let got = fx.undo();
    assert!(
        matches!(
            &got,
            Err(UndoError::Store(CheckpointError::BadManifest { .. }))
        ),
        "{got:?}"
    );
    assert_eq!(fx.store.last_turn(), None);
    assert_eq!(
        std::fs::read(fx.base.join("outside/secret")).unwrap(),
        b"SECRET"
    );
    assert_eq!(fx.read("a.txt"), b"v2");
}

#[test]
fn turns_are_loaded_again_and_ids_are_validated() {
    let fx = Fx::new();
    fx.file("a.txt", b"v1", 0o644);
    let mut t = fx.turn("t-1_A");
    fx.write(&mut t, "a.txt", b"v2");
    t.save().unwrap();
    let reopened = CheckpointStore::open(fx.store.dir()).unwrap();
    let again = reopened.turn("t-1_A").unwrap();
    assert_eq!((again.paths(), again.seq()), (t.paths(), t.seq()));
    for bad in ["", "..", "../x", "a/b", "a.json", &"x".repeat(65)] {
        assert!(
            matches!(
                reopened.turn(bad),
                Err(CheckpointError::InvalidTurnId { .. })
            ),
            "{bad:?}"
        );
    }
    assert_eq!(
        std::fs::read_dir(fx.store.dir().join("turns"))
            .unwrap()
            .count(),
        1
    );
}

#[test]
fn default_dir_is_keyed_by_the_primary_root() {
    let fx = Fx::new();
    let a = CheckpointStore::default_dir(Some(Path::new("/s")), None, &fx.ws).unwrap();
    assert!(a.starts_with("/s/spear/checkpoints"), "{}", a.display());
    let key = a.file_name().unwrap().to_str().unwrap();
    assert_eq!(key.len(), 32);
    assert!(key.bytes().all(|b| b.is_ascii_hexdigit()));
    let home = CheckpointStore::default_dir(None, Some(Path::new("/h")), &fx.ws).unwrap();
    assert_eq!(
        home,
        Path::new("/h/.local/state/spear/checkpoints").join(key)
    );
    let other = open_ws(&fx.base, "other", &[]);
    assert_ne!(
        CheckpointStore::default_dir(Some(Path::new("/s")), None, &other).unwrap(),
        a
    );
    assert_eq!(
        CheckpointStore::default_dir(Some(Path::new("rel")), None, &fx.ws),
        None
    );
}

/// A turn's undo needs each path's state before the turn, not every version written during it:
/// 50 writes of one file in a turn store one blob (the state before), and undo still restores it.
/// Positive control: a second file's first write in the same turn adds its own blob.
#[test]
fn many_writes_of_one_file_in_a_turn_keep_one_blob() {
    let fx = Fx::new();
    fx.file("a.txt", b"original", 0o644);
    fx.file("b.txt", b"other original", 0o644);
    let blobs = || {
        std::fs::read_dir(fx.base.join("state/ckpt/blobs"))
            .unwrap()
            .count()
    };
    let mut t = fx.turn("t1");
    for i in 0..50 {
        fx.write(&mut t, "a.txt", format!("version {i}").as_bytes());
    }
    assert_eq!(blobs(), 1, "one blob: a.txt as it was before the turn");
    fx.write(&mut t, "b.txt", b"changed");
    assert_eq!(blobs(), 2, "b.txt's state before is a blob of its own");
    t.save().unwrap();
    fx.store.undo_last(&fx.ws, &fx.fs).unwrap();
    assert_eq!(fx.read("a.txt"), b"original");
    assert_eq!(fx.read("b.txt"), b"other original");
}

/// Recording a turn of 20,000 new paths costs in proportion to them: every path is found by one
/// lookup, and undo removes all of them.
#[test]
fn a_turn_of_twenty_thousand_paths_is_recorded_and_undone() {
    let fx = Fx::new();
    let mut t = fx.turn("t1");
    for i in 0..20_000 {
        fx.write(&mut t, &format!("d/f{i}"), b"x");
    }
    t.save().unwrap();
    assert_eq!(std::fs::read_dir(fx.path("d")).unwrap().count(), 20_000);
    fx.store.undo_last(&fx.ws, &fx.fs).unwrap();
    assert!(!fx.path("d").exists());
}
