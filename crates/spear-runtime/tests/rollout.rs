//! Rollout workspaces on the real mechanism (kernel overlayfs as root, fuse-overlayfs as a user):
//! the template never changes, a session's patch rebuilds its tree from a fresh copy of the
//! template, sessions do not see each other, and nothing is left mounted or on disk after a close,
//! a drop or a crash.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use spear_runtime::{RolloutWorkspace, sweep_rollouts};

/// One entry of a tree, as compared.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir(u32),
    File(u32, Vec<u8>),
    Link(PathBuf),
}

/// How much of a mode a digest keeps.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Modes {
    /// Every permission bit, and directories (the template must not change at all).
    Full,
    /// What git keeps: files' executable bit; no directories.
    Git,
}

/// Every entry under `root` (paths, modes, contents, link targets), links not followed.
fn digest(root: &Path, modes: Modes) -> BTreeMap<PathBuf, Node> {
    let mut out = BTreeMap::new();
    walk(root, Path::new(""), modes, &mut out);
    out
}

fn walk(dir: &Path, rel: &Path, modes: Modes, out: &mut BTreeMap<PathBuf, Node>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let (path, rel) = (entry.path(), rel.join(entry.file_name()));
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = meta.permissions().mode() & 0o7777;
        if meta.file_type().is_symlink() {
            out.insert(rel, Node::Link(std::fs::read_link(&path).unwrap()));
        } else if meta.is_dir() {
            if modes == Modes::Full {
                out.insert(rel.clone(), Node::Dir(mode));
            }
            walk(&path, &rel, modes, out);
        } else {
            let mode = match modes {
                Modes::Full => mode,
                Modes::Git if mode & 0o100 != 0 => 0o755,
                Modes::Git => 0o644,
            };
            out.insert(rel, Node::File(mode, std::fs::read(&path).unwrap()));
        }
    }
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Bytes of every value (a low byte wrapped on purpose), different for each seed.
#[allow(clippy::cast_possible_truncation)]
fn binary(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

/// A template with files, binary files, an empty file, links, executables and nested
/// directories.
fn template(at: &Path) -> PathBuf {
    let t = at.join("template");
    write(&t.join("a.txt"), b"hello\n");
    write(&t.join("bin.dat"), &binary(1, 70_000));
    write(&t.join("modify.bin"), &binary(2, 4096));
    write(&t.join("run.sh"), b"#!/bin/sh\necho run\n");
    chmod(&t.join("run.sh"), 0o755);
    write(&t.join("chmod_me.sh"), b"#!/bin/sh\necho me\n");
    write(&t.join("empty.txt"), b"");
    write(&t.join("private.txt"), b"secret-ish\n");
    chmod(&t.join("private.txt"), 0o600);
    write(&t.join("nested/deep/x.txt"), b"x\n");
    write(&t.join("nested/deep/y.txt"), b"y\n");
    write(&t.join("gone_dir/one"), b"1\n");
    write(&t.join("gone_dir/sub/two"), &binary(3, 100));
    write(&t.join("swap"), b"a file that becomes a directory\n");
    let long: Vec<u8> = (0..200)
        .flat_map(|i| format!("line {i} of a file that is renamed\n").into_bytes())
        .collect();
    write(&t.join("rename_me.txt"), &long);
    std::os::unix::fs::symlink("a.txt", t.join("link")).unwrap();
    std::os::unix::fs::symlink("../a.txt", t.join("nested/up")).unwrap();
    write(&t.join("odd names/caf\u{e9} \"q\"\t.txt"), b"odd\n");
    write(&t.join("moved_dir/m1"), b"m1\n");
    write(&t.join("moved_dir/inner/m2"), &binary(4, 300));
    write(&t.join("to_link"), b"becomes a link\n");
    std::os::unix::fs::symlink("a.txt", t.join("link_to_file")).unwrap();
    t
}

/// Renames a directory as `mv` does: in place where the mechanism can, else (kernel overlayfs
/// without redirects refuses a directory of the lower layer: EXDEV) by copying and removing.
fn move_dir(from: &Path, to: &Path) {
    match std::fs::rename(from, to) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(18) => {
            let status = Command::new("cp")
                .arg("-a")
                .arg(from)
                .arg(to)
                .status()
                .unwrap();
            assert!(status.success());
            std::fs::remove_dir_all(from).unwrap();
        }
        Err(e) => panic!("rename {}: {e}", from.display()),
    }
}

/// git with no configuration of the user's or the system's.
fn git(dir: &Path) -> Command {
    let home = dir.parent().unwrap().join("git-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = Command::new("git");
    cmd.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap())
        .current_dir(dir);
    cmd
}

/// A fresh plain copy of `template` at `to`, with `patch` applied by `git apply`.
fn apply_to_copy(template: &Path, patch: &[u8], to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(template)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
    let file = to.parent().unwrap().join("session.patch");
    std::fs::write(&file, patch).unwrap();
    let out = git(to)
        .args(["apply", "--binary", "--whitespace=nowarn"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git apply: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(patch)
    );
}

fn mountinfo_names(path: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(path.to_str().unwrap()))
}

/// The session's directories under `under` (named `PID-N-RAND`).
fn areas(under: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(under)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            !p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("kept-")
        })
        .collect()
}

#[test]
fn a_session_changes_its_view_and_its_patch_rebuilds_it_but_never_the_template() {
    let base = tempfile::tempdir().unwrap();
    let t = template(base.path());
    let before = digest(&t, Modes::Full);
    let under = base.path().join("rollouts");
    let ws = RolloutWorkspace::open(&t, &under).unwrap();
    eprintln!("mechanism: {:?}", ws.backend());
    let m = ws.root().to_path_buf();
    assert_eq!(
        digest(&m, Modes::Git),
        digest(&t, Modes::Git),
        "a fresh view is the template"
    );
    assert_eq!(ws.patch().unwrap(), b"", "no change, no patch");

    write(&m.join("a.txt"), b"hello, changed\n");
    write(&m.join("new_dir/inner/new.txt"), b"new\n");
    write(&m.join("new_empty"), b"");
    write(&m.join("new.bin"), &binary(9, 5000));
    let mut bytes = std::fs::read(m.join("modify.bin")).unwrap();
    bytes[100] ^= 0xff;
    bytes.extend_from_slice(&[0, 0, 0, 1]);
    write(&m.join("modify.bin"), &bytes);
    std::fs::remove_file(m.join("nested/deep/y.txt")).unwrap();
    std::fs::rename(m.join("rename_me.txt"), m.join("renamed.txt")).unwrap();
    chmod(&m.join("chmod_me.sh"), 0o755);
    chmod(&m.join("run.sh"), 0o644);
    chmod(&m.join("private.txt"), 0o644);
    std::fs::remove_dir_all(m.join("gone_dir")).unwrap();
    std::os::unix::fs::symlink("nested/deep/x.txt", m.join("newlink")).unwrap();
    std::fs::remove_file(m.join("link")).unwrap();
    std::os::unix::fs::symlink("run.sh", m.join("link")).unwrap();
    std::fs::remove_file(m.join("swap")).unwrap();
    write(&m.join("swap/in.txt"), b"now a directory\n");
    std::fs::create_dir(m.join("gone_dir")).unwrap();
    write(
        &m.join("gone_dir/again"),
        b"a deleted directory made again\n",
    );
    write(
        &m.join("odd names/caf\u{e9} \"q\"\t.txt"),
        b"odd, changed\n",
    );
    write(&m.join("odd names/new\nline"), b"a newline in a name\n");
    move_dir(&m.join("moved_dir"), &m.join("dir_moved"));
    std::fs::remove_file(m.join("to_link")).unwrap();
    std::os::unix::fs::symlink("a.txt", m.join("to_link")).unwrap();
    std::fs::remove_file(m.join("link_to_file")).unwrap();
    write(&m.join("link_to_file"), b"was a link\n");

    let session = digest(&m, Modes::Git);
    assert_ne!(
        session,
        digest(&t, Modes::Git),
        "positive control: the view changed"
    );
    assert_eq!(
        digest(&t, Modes::Full),
        before,
        "the template changed under a session"
    );

    let patch = ws.patch().unwrap();
    let text = String::from_utf8_lossy(&patch);
    for expected in [
        "rename from rename_me.txt",
        "GIT binary patch",
        "new mode 100755",
        "deleted file mode 100644",
        "new file mode 120000",
        "dir_moved/inner/m2",
        "link_to_file",
    ] {
        assert!(text.contains(expected), "no `{expected}` in:\n{text}");
    }
    let copy = base.path().join("copy/tree");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    apply_to_copy(&t, &patch, &copy);
    assert_eq!(
        digest(&copy, Modes::Git),
        session,
        "the patched copy is not the session's tree"
    );
    assert_eq!(
        digest(&t, Modes::Full),
        before,
        "making the patch changed the template"
    );

    ws.close(false).unwrap();
    assert_eq!(digest(&t, Modes::Full), before);
}

#[test]
fn two_sessions_of_one_template_do_not_see_each_other() {
    let base = tempfile::tempdir().unwrap();
    let t = template(base.path());
    let under = base.path().join("rollouts");
    let a = RolloutWorkspace::open(&t, &under).unwrap();
    let b = RolloutWorkspace::open(&t, &under).unwrap();
    assert_ne!(a.root(), b.root());
    write(&a.root().join("a.txt"), b"from a\n");
    write(&a.root().join("only_a"), b"a\n");
    std::fs::remove_file(b.root().join("run.sh")).unwrap();
    assert_eq!(std::fs::read(b.root().join("a.txt")).unwrap(), b"hello\n");
    assert!(!b.root().join("only_a").exists());
    assert!(a.root().join("run.sh").exists(), "a saw b's delete");
    assert!(t.join("run.sh").exists() && !t.join("only_a").exists());
    assert!(String::from_utf8_lossy(&b.patch().unwrap()).contains("deleted file mode 100755"));
    assert!(!String::from_utf8_lossy(&b.patch().unwrap()).contains("only_a"));
    a.close(false).unwrap();
    // b goes on after a is gone.
    assert!(!b.root().join("run.sh").exists());
    b.close(false).unwrap();
}

#[test]
fn close_and_drop_leave_no_mount_and_no_directory_and_keep_leaves_the_tree() {
    let base = tempfile::tempdir().unwrap();
    let t = template(base.path());
    let under = base.path().join("rollouts");

    let ws = RolloutWorkspace::open(&t, &under).unwrap();
    let root = ws.root().to_path_buf();
    assert!(
        mountinfo_names(&root),
        "positive control: the view is mounted"
    );
    write(&root.join("a.txt"), b"x\n");
    ws.close(false).unwrap();
    assert!(!mountinfo_names(&root), "close left a mount");
    assert!(areas(&under).is_empty(), "close left {:?}", areas(&under));

    let ws = RolloutWorkspace::open(&t, &under).unwrap();
    let root = ws.root().to_path_buf();
    drop(ws);
    assert!(!mountinfo_names(&root), "drop left a mount");
    assert!(areas(&under).is_empty(), "drop left {:?}", areas(&under));

    let ws = RolloutWorkspace::open(&t, &under).unwrap();
    let root = ws.root().to_path_buf();
    write(&root.join("kept.txt"), b"keep me\n");
    std::fs::remove_file(root.join("a.txt")).unwrap();
    let session = digest(&root, Modes::Git);
    let kept = ws.close(true).unwrap().expect("a kept path");
    assert!(!mountinfo_names(&root), "close(keep) left a mount");
    assert!(
        areas(&under).is_empty(),
        "close(keep) left {:?}",
        areas(&under)
    );
    assert!(
        kept.starts_with(&under)
            && kept
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("kept-")
    );
    assert_eq!(
        digest(&kept, Modes::Git),
        session,
        "the kept tree is not the session's"
    );
    assert_eq!(sweep_rollouts(&under), 0);
    assert!(kept.exists(), "a sweep removed a kept tree");
}

/// A "crashed" session: a directory named as spear names them, with a view mounted in it, whose
/// lock nobody holds. The next open sweeps it: unmounted, then removed.
#[test]
fn a_crashed_sessions_view_is_unmounted_and_removed_by_the_next_open() {
    let base = tempfile::tempdir().unwrap();
    let t = template(base.path());
    let under = base.path().join("rollouts");
    std::fs::create_dir(&under).unwrap();
    chmod(&under, 0o700);
    let under = std::fs::canonicalize(&under).unwrap();
    let dead = under.join("999999999-1-0000abcd");
    let [upper, work, merged] = ["upper", "work", "merged"].map(|d| dead.join(d));
    for d in [&upper, &work, &merged] {
        std::fs::create_dir_all(d).unwrap();
    }
    let mount = spear_sandbox::CowMount::mount(&t, &upper, &work, &merged).unwrap();
    std::mem::forget(mount);
    write(&merged.join("left.txt"), b"left by a crash\n");
    assert!(
        mountinfo_names(&merged),
        "positive control: the crash left a mount"
    );

    let ws = RolloutWorkspace::open(&t, &under).unwrap();
    assert!(!mountinfo_names(&merged), "the sweep left the mount");
    assert!(!dead.exists(), "the sweep left the directory");
    assert!(!t.join("left.txt").exists());
    assert_eq!(areas(&under), [ws.root().parent().unwrap()]);
    ws.close(false).unwrap();
}

#[test]
fn a_template_that_is_not_a_directory_or_would_hold_the_layers_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let t = template(base.path());
    let before = digest(&t, Modes::Full);
    let e = RolloutWorkspace::open(&t.join("a.txt"), &base.path().join("r")).unwrap_err();
    assert!(e.to_string().contains("not a directory"), "{e}");
    let e =
        RolloutWorkspace::open(&base.path().join("missing"), &base.path().join("r")).unwrap_err();
    assert!(e.to_string().contains("name an existing directory"), "{e}");
    let e = RolloutWorkspace::open(&t, &t.join("rollouts")).unwrap_err();
    assert!(e.to_string().contains("lies inside it"), "{e}");
    assert!(
        !t.join("rollouts").exists(),
        "the refusal wrote the template"
    );
    let e = RolloutWorkspace::open(&t, base.path()).unwrap_err();
    assert!(
        e.to_string().contains("inside the rollout directory"),
        "{e}"
    );
    assert_eq!(digest(&t, Modes::Full), before);
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

/// Opening costs little: a 10,000-file, 100 MB template, opened again and again; each session
/// changes 20 files and makes its patch. Prints the figures (no timing is asserted).
#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn opening_a_large_template_is_cheap() {
    let base = tempfile::tempdir().unwrap();
    let t = base.path().join("big");
    for i in 0..10_000u32 {
        let mut bytes = binary((i % 251) as u8, 10_000);
        bytes[..4].copy_from_slice(&i.to_le_bytes());
        write(&t.join(format!("d{:03}/f{i:05}.bin", i / 100)), &bytes);
    }
    let under = base.path().join("rollouts");
    let (mut opens, mut patches, mut closes) = (Vec::new(), Vec::new(), Vec::new());
    let mut backend = None;
    for round in 0..20u32 {
        let started = Instant::now();
        let ws = RolloutWorkspace::open(&t, &under).unwrap();
        opens.push(started.elapsed());
        backend = ws.backend();
        for k in 0..10u32 {
            let i = (round * 37 + k * 997) % 10_000;
            write(
                &ws.root().join(format!("d{:03}/f{i:05}.bin", i / 100)),
                b"changed",
            );
            write(&ws.root().join(format!("new/{k}.txt")), b"new\n");
        }
        let started = Instant::now();
        let patch = ws.patch().unwrap();
        patches.push(started.elapsed());
        assert!(!patch.is_empty());
        let started = Instant::now();
        ws.close(false).unwrap();
        closes.push(started.elapsed());
    }
    for v in [&mut opens, &mut patches, &mut closes] {
        v.sort();
    }
    eprintln!(
        "{backend:?} on 10,000 files / 100 MB, 20 rounds: open p50 {:?} p99 {:?}; patch (20 changed files) p50 {:?} p99 {:?}; close p50 {:?} p99 {:?}",
        percentile(&opens, 50),
        percentile(&opens, 99),
        percentile(&patches, 50),
        percentile(&patches, 99),
        percentile(&closes, 50),
        percentile(&closes, 99),
    );
}
