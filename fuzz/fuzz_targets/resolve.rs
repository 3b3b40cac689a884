//! Fuzzes `Workspace::resolve`: any path a caller writes either is refused or resolves to a place
//! that really lies inside a root, in every workspace shape of the fixture (see
//! `spear_fuzz::resolve_fixture`). Reads and listings of the result must not panic, and must see
//! what the host sees.
//!
//! The input is taken as text (`String::from_utf8_lossy`); `{BASE}`, `{WS}` and `{OTHER}` are
//! replaced by the fixture's absolute host paths, which the fuzzer could not guess.

#![no_main]
// A failed invariant must abort the run: that is how libFuzzer learns of it.
#![allow(clippy::manual_assert, clippy::panic)]

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use spear_workspace::{ResolvedPath, Workspace, WorkspaceFs};

/// Bytes read from a file, at most.
const READ_LIMIT: u64 = 4096;

fuzz_target!(
    init: spear_fuzz::install_panic_hook(),
    |data: &[u8]| {
        let fixture = spear_fuzz::resolve_fixture();
        let path = fixture.substitute(&String::from_utf8_lossy(data));
        for (i, (what, ws)) in fixture.workspaces.iter().enumerate() {
            match ws.resolve(&path) {
                Ok(r) => check(what, ws, fs_of(i), &path, &r),
                Err(e) => {
                    let _ = e.to_string();
                }
            }
        }
    }
);

/// One `WorkspaceFs` per workspace of the fixture, opened once.
fn fs_of(i: usize) -> &'static WorkspaceFs {
    static FS: OnceLock<Vec<WorkspaceFs>> = OnceLock::new();
    let all = FS.get_or_init(|| {
        spear_fuzz::resolve_fixture()
            .workspaces
            .iter()
            .map(|(_, w)| w.fs().expect("root fds"))
            .collect()
    });
    &all[i]
}

fn check(what: &str, ws: &Workspace, fs: &WorkspaceFs, written: &str, r: &ResolvedPath) {
    let fail = |msg: String| -> ! { panic!("[{what}] resolve({written:?}) = {r:?}: {msg}") };
    if r.as_written != written {
        fail("as_written differs".into());
    }

    // Lexical containment: the locations are well formed and map under their root.
    for loc in [&r.entry, &r.target] {
        let Some(root) = ws.roots().get(loc.root) else {
            fail(format!("no root {}", loc.root));
        };
        if !loc
            .rel
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
        {
            fail(format!("rel {:?} is not normalised", loc.rel));
        }
        if !ws.host_path(loc).starts_with(root.host_path()) {
            fail(format!("host path {:?} outside root", ws.host_path(loc)));
        }
        if !ws.mount_path(loc).starts_with(root.mount_path()) {
            fail(format!("mount path {:?} outside root", ws.mount_path(loc)));
        }
        let _ = ws.label(loc);
    }

    // Physical containment: every link was followed, so what exists of the target is
    // symlink-free and stays inside its root.
    let target = ws.host_path(&r.target);
    let (prefix, complete) = existing_prefix(&target);
    match std::fs::canonicalize(&prefix) {
        Ok(real) if real == prefix => {}
        Ok(real) => fail(format!(
            "{prefix:?} really is {real:?}: a link was not followed"
        )),
        Err(e) => fail(format!("canonicalize {prefix:?}: {e}")),
    }
    if !ws
        .roots()
        .iter()
        .any(|root| prefix.starts_with(root.host_path()))
    {
        fail(format!("existing prefix {prefix:?} outside every root"));
    }
    if complete != r.exists {
        fail(format!(
            "exists is {} but the host says {complete}",
            r.exists
        ));
    }

    // The entry: its parent is the target's kind of place; the entry itself is a link only when
    // it differs from the target.
    let entry = ws.host_path(&r.entry);
    if let Some(parent) = entry.parent() {
        let (prefix, _) = existing_prefix(parent);
        if std::fs::canonicalize(&prefix).ok().as_deref() != Some(prefix.as_path()) {
            fail(format!("entry parent {prefix:?} is not physical"));
        }
    }
    if r.entry != r.target
        && !std::fs::symlink_metadata(&entry).is_ok_and(|m| m.file_type().is_symlink())
    {
        fail(format!(
            "entry {entry:?} differs from the target but is not a link"
        ));
    }

    // Resolving the result again (mount spelling) lands on the same place.
    let again = ws.mount_path(&r.target);
    if again.as_os_str().len() < 4000 {
        let again = again.to_string_lossy();
        match ws.resolve(&again) {
            Ok(r2) if r2.target == r.target && r2.exists == r.exists => {}
            other => fail(format!("re-resolving {again:?} gave {other:?}")),
        }
    }

    // What the fs layer reads and lists is what the host has there.
    let meta = std::fs::metadata(&target).ok();
    match fs.read(r, READ_LIMIT) {
        Ok(out) => {
            let host = std::fs::read(&target).unwrap_or_default();
            let n = host.len().min(READ_LIMIT as usize);
            if out.bytes != host[..n] {
                fail("read bytes differ from the host file".into());
            }
        }
        Err(e) => {
            if meta.as_ref().is_some_and(std::fs::Metadata::is_file) {
                fail(format!("read of a regular file failed: {e}"));
            }
        }
    }
    match fs.list(r) {
        Ok(entries) => {
            let got: BTreeSet<String> = entries.into_iter().map(|e| e.name).collect();
            if got != host_names(&target) {
                fail(format!("listing differs from the host: {got:?}"));
            }
        }
        Err(e) => {
            if meta.as_ref().is_some_and(std::fs::Metadata::is_dir) {
                fail(format!("list of a directory failed: {e}"));
            }
        }
    }
}

/// The longest prefix of `path` that exists (without following a final link), and whether that
/// is all of it.
fn existing_prefix(path: &Path) -> (PathBuf, bool) {
    let mut prefix = PathBuf::new();
    for c in path.components() {
        let next = prefix.join(c);
        if std::fs::symlink_metadata(&next).is_err() {
            return (prefix, false);
        }
        prefix = next;
    }
    (prefix, true)
}

fn host_names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|it| {
            it.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}
