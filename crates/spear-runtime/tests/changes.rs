//! The change tracker: what changed between two walks, with what each entry held before.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use spear_runtime::changes::{ChangeLimits, ChangeTracker, changed_labels};
use spear_runtime::checkpoint::{CheckpointStore, EntryState};
use spear_workspace::{Workspace, WorkspaceConfig};

struct Fx {
    _dir: tempfile::TempDir,
    ws_dir: PathBuf,
    outside: PathBuf,
    store: CheckpointStore,
    ws: Workspace,
}

fn fx() -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let ws_dir = base.join("ws");
    let outside = base.join("outside");
    std::fs::create_dir_all(ws_dir.join("src")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(ws_dir.join("src/a.rs"), "fn a() {}\n").unwrap();
    std::fs::write(ws_dir.join("keep.txt"), "unchanged\n").unwrap();
    std::fs::write(ws_dir.join("gone.txt"), "to be removed\n").unwrap();
    let store = CheckpointStore::open(&base.join("store")).unwrap();
    let ws = Workspace::open(&WorkspaceConfig::new(&ws_dir)).unwrap();
    Fx {
        _dir: dir,
        ws_dir,
        outside,
        store,
        ws,
    }
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn finds_every_kind_of_change_with_its_state_before() {
    let f = fx();
    let fs = f.ws.fs().unwrap();
    let t = ChangeTracker::default();
    let before = t.before(&f.ws, &fs).unwrap();
    assert!(!before.is_empty());

    write(&f.ws_dir.join("src/a.rs"), "fn a() { changed }\n");
    std::fs::remove_file(f.ws_dir.join("gone.txt")).unwrap();
    write(&f.ws_dir.join("new/dir/made.txt"), "made\n");
    std::os::unix::fs::symlink("keep.txt", f.ws_dir.join("link")).unwrap();
    std::fs::set_permissions(
        f.ws_dir.join("keep.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();

    let changes = t.after(&f.ws, &fs, &before, &f.store).unwrap();
    let labels = changed_labels(&changes);
    assert_eq!(
        labels,
        [
            "gone.txt",
            "keep.txt",
            "link",
            "new",
            "new/dir",
            "new/dir/made.txt",
            "src/a.rs"
        ]
    );
    let by = |l: &str| changes.iter().find(|c| c.label == l).unwrap();
    match by("src/a.rs").before.as_ref().unwrap() {
        EntryState::File { hash, .. } => {
            assert_eq!(f.store.read_blob(hash).unwrap(), b"fn a() {}\n");
        }
        other => panic!("{other:?}"),
    }
    match by("gone.txt").before.as_ref().unwrap() {
        EntryState::File { hash, .. } => {
            assert_eq!(f.store.read_blob(hash).unwrap(), b"to be removed\n");
        }
        other => panic!("{other:?}"),
    }
    assert!(!by("gone.txt").exists_now);
    assert_eq!(by("new/dir/made.txt").before, Some(EntryState::Absent));
    assert_eq!(by("link").before, Some(EntryState::Absent));
    // Nothing else: the directory `src` whose entry changed is not itself a change.
    assert!(changes.iter().all(|c| c.label != "src"));
}

#[test]
fn a_write_that_puts_the_modification_time_back_is_still_found() {
    let f = fx();
    let fs = f.ws.fs().unwrap();
    let t = ChangeTracker::default();
    let path = f.ws_dir.join("keep.txt");
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let before = t.before(&f.ws, &fs).unwrap();
    // Same size, same modification time: only the status-change time tells.
    std::fs::write(&path, "UNCHANGED\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let changes = t.after(&f.ws, &fs, &before, &f.store).unwrap();
    assert_eq!(changed_labels(&changes), ["keep.txt"]);
}

#[test]
fn nothing_changed_is_nothing() {
    let f = fx();
    let fs = f.ws.fs().unwrap();
    let t = ChangeTracker::default();
    let before = t.before(&f.ws, &fs).unwrap();
    let _ = std::fs::read(f.ws_dir.join("keep.txt")).unwrap();
    assert!(t.after(&f.ws, &fs, &before, &f.store).unwrap().is_empty());
}

#[test]
fn ignored_entries_and_git_are_not_tracked() {
    let f = fx();
    write(&f.ws_dir.join(".gitignore"), "/target\n*.log\n");
    write(&f.ws_dir.join(".git/info/exclude"), "scratch/\n");
    write(&f.ws_dir.join("target/old.o"), "old");
    let fs = f.ws.fs().unwrap();
    let t = ChangeTracker::default();
    let before = t.before(&f.ws, &fs).unwrap();
    write(&f.ws_dir.join("target/debug/new.o"), "new");
    write(&f.ws_dir.join("target/old.o"), "rebuilt");
    write(&f.ws_dir.join("build.log"), "log");
    write(&f.ws_dir.join("scratch/x"), "x");
    write(&f.ws_dir.join(".git/index"), "index");
    // Positive control: a tracked file beside them is found.
    write(&f.ws_dir.join("src/b.rs"), "b");
    let changes = t.after(&f.ws, &fs, &before, &f.store).unwrap();
    assert_eq!(changed_labels(&changes), ["src/b.rs"]);
}

#[test]
fn the_baseline_keeps_up_between_commands() {
    let f = fx();
    let fs = f.ws.fs().unwrap();
    let t = ChangeTracker::default();
    let first = t.before(&f.ws, &fs).unwrap();
    write(&f.ws_dir.join("src/a.rs"), "second\n");
    t.after(&f.ws, &fs, &first, &f.store).unwrap();
    // Changed between commands (by a file tool or the user): the next command's "before" is the
    // new content, not the first.
    write(&f.ws_dir.join("src/a.rs"), "third\n");
    let second = t.before(&f.ws, &fs).unwrap();
    write(&f.ws_dir.join("src/a.rs"), "fourth\n");
    let changes = t.after(&f.ws, &fs, &second, &f.store).unwrap();
    match changes[0].before.as_ref().unwrap() {
        EntryState::File { hash, .. } => assert_eq!(f.store.read_blob(hash).unwrap(), b"third\n"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn bounds() {
    let f = fx();
    write(&f.ws_dir.join("big.bin"), &"x".repeat(4096));
    let fs = f.ws.fs().unwrap();
    let t = ChangeTracker::new(ChangeLimits {
        max_entries: 1000,
        max_file_bytes: 1024,
        max_total_bytes: 1 << 20,
    });
    let before = t.before(&f.ws, &fs).unwrap();
    write(&f.ws_dir.join("big.bin"), "small now");
    let changes = t.after(&f.ws, &fs, &before, &f.store).unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(
        changes[0].before, None,
        "too large to keep: found, not kept"
    );

    // More entries than the bound: fails closed.
    for i in 0..20 {
        write(&f.ws_dir.join(format!("many/{i}")), "");
    }
    let t = ChangeTracker::new(ChangeLimits {
        max_entries: 10,
        ..ChangeLimits::default()
    });
    assert!(t.before(&f.ws, &fs).is_err());
}

#[test]
fn a_link_to_the_outside_is_never_read() {
    let f = fx();
    write(&f.outside.join("secret"), "outside secret");
    std::os::unix::fs::symlink(f.outside.join("secret"), f.ws_dir.join("leak")).unwrap();
    std::os::unix::fs::symlink(&f.outside, f.ws_dir.join("leakdir")).unwrap();
    let fs = f.ws.fs().unwrap();
    let t = ChangeTracker::default();
    let before = t.before(&f.ws, &fs).unwrap();
    // The links are replaced by files, so their "before" is taken.
    std::fs::remove_file(f.ws_dir.join("leak")).unwrap();
    write(&f.ws_dir.join("leak"), "now a file");
    let changes = t.after(&f.ws, &fs, &before, &f.store).unwrap();
    let leak = changes.iter().find(|c| c.label == "leak").unwrap();
    assert_eq!(
        leak.before,
        Some(EntryState::Symlink {
            target: f.outside.join("secret")
        }),
        "the link itself, never its target's content"
    );
    assert!(changes.iter().all(|c| !c.label.starts_with("leakdir/")));
    // No blob in the store holds the outside content.
    for entry in walk(&f.store.dir().join("blobs")) {
        assert_ne!(std::fs::read(entry).unwrap(), b"outside secret");
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// A command that runs across another (a background job) keeps its own "before": what the other
/// one did to the baseline in between does not change it.
#[test]
fn overlapping_commands_each_keep_their_own_before() {
    let f = fx();
    let fs = f.ws.fs().unwrap();
    let t = ChangeTracker::default();
    let job = t.before(&f.ws, &fs).unwrap();
    write(&f.ws_dir.join("src/a.rs"), "by the job\n");
    // A foreground command starts and ends while the job runs.
    let fg = t.before(&f.ws, &fs).unwrap();
    write(&f.ws_dir.join("src/a.rs"), "by the foreground\n");
    let fg_changes = t.after(&f.ws, &fs, &fg, &f.store).unwrap();
    let blob = |state: &Option<EntryState>| match state {
        Some(EntryState::File { hash, .. }) => f.store.read_blob(hash).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(blob(&fg_changes[0].before), b"by the job\n");
    let job_changes = t.after(&f.ws, &fs, &job, &f.store).unwrap();
    assert_eq!(job_changes.len(), 1);
    assert_eq!(
        blob(&job_changes[0].before),
        b"fn a() {}\n",
        "the job's own before"
    );
}

/// The memory budget counts what snapshots still hold, not only the baseline: content a running
/// command's snapshot keeps alive is paid for until that command ends.
#[test]
fn the_budget_counts_what_snapshots_hold() {
    let f = fx();
    std::fs::remove_file(f.ws_dir.join("src/a.rs")).unwrap();
    std::fs::remove_file(f.ws_dir.join("keep.txt")).unwrap();
    std::fs::remove_file(f.ws_dir.join("gone.txt")).unwrap();
    write(&f.ws_dir.join("a.txt"), &"a".repeat(4000));
    write(&f.ws_dir.join("b.txt"), &"b".repeat(4000));
    let fs = f.ws.fs().unwrap();
    let t = ChangeTracker::new(ChangeLimits {
        max_entries: 1000,
        max_file_bytes: 1 << 20,
        max_total_bytes: 10_000,
    });
    let long = t.before(&f.ws, &fs).unwrap(); // holds a and b: 8,000 bytes
    write(&f.ws_dir.join("a.txt"), &"A".repeat(4000));
    let second = t.before(&f.ws, &fs).unwrap(); // the new a would make 12,000: not kept
    write(&f.ws_dir.join("a.txt"), &"x".repeat(4000));
    let changes = t.after(&f.ws, &fs, &second, &f.store).unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(
        changes[0].before, None,
        "over budget while the long snapshot holds its priors"
    );
    drop(long);
    let third = t.before(&f.ws, &fs).unwrap(); // the old a is gone from memory: kept again
    write(&f.ws_dir.join("a.txt"), &"y".repeat(4000));
    let changes = t.after(&f.ws, &fs, &third, &f.store).unwrap();
    assert!(
        changes[0].before.is_some(),
        "positive control: within budget it is kept"
    );
}
