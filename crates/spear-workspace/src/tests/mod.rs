//! Tests against the real filesystem, in temporary directories under `$TMPDIR`.
//!
//! They live inside the library so that the whole suite is one test binary, which can be run as
//! an unprivileged user as it is. Nothing here depends on running as root; the tests whose
//! outcome depends on it check the uid and assert the right outcome for each.
//!
//! Every negative test (something must not be reachable or must not change) has a positive
//! control showing the probe would have seen the effect.

mod escape_fs;
mod escape_resolve;
mod fs_ops;
mod mapping;
mod open;
mod props;
mod tree;

use std::path::{Path, PathBuf};

use crate::{MountSchemeChoice, ResolveError, ResolvedPath, Workspace, WorkspaceConfig};

/// A temporary tree: `base` is its canonical path. Conventional layout used by most tests:
/// `base/ws` (primary root), `base/other` (extra root), `base/outside` (outside every root, holds
/// canaries), `base/home/.ssh` (a stand-in for the user's credentials).
pub(crate) struct Tree {
    _tmp: tempfile::TempDir,
    pub(crate) base: PathBuf,
}

impl Tree {
    pub(crate) fn new() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        Tree { _tmp: tmp, base }
    }

    /// The standard layout described on [`Tree`].
    pub(crate) fn standard() -> Tree {
        let t = Tree::new();
        t.file("ws/f.txt", "in workspace");
        t.file("ws/a/b.txt", "a/b in workspace");
        t.file("other/x.txt", "in other root");
        t.file("outside/secret.txt", "SECRET");
        t.file("home/.ssh/id_rsa", "PRIVATE KEY");
        t
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.base.join(rel)
    }

    pub(crate) fn dir(&self, rel: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    pub(crate) fn file(&self, rel: &str, contents: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, contents).unwrap();
        p
    }

    /// `ln -s target base/rel`.
    pub(crate) fn link(&self, target: impl AsRef<Path>, rel: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, &p).unwrap();
        p
    }

    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// A configuration launched in `base/launch` with the given extra roots (relative to base).
    pub(crate) fn config(&self, launch: &str, extras: &[&str]) -> WorkspaceConfig {
        let mut c = WorkspaceConfig::new(self.path(launch));
        c.extra_roots = extras.iter().map(|e| self.path(e)).collect();
        c
    }

    /// The standard workspace: `ws` primary, `other` extra, identity scheme.
    pub(crate) fn ws(&self) -> Workspace {
        self.ws_with(MountSchemeChoice::Auto, false)
    }

    pub(crate) fn ws_with(&self, scheme: MountSchemeChoice, allow_absolute: bool) -> Workspace {
        let mut c = self.config("ws", &["other"]);
        c.mount_scheme = scheme;
        c.allow_absolute_paths = allow_absolute;
        let ws = Workspace::open(&c).unwrap();
        assert_eq!(ws.roots().len(), 2, "unexpected roots: {:?}", ws.roots());
        ws
    }

    /// Every file under `base/rel` with its contents, for "nothing changed here" checks.
    pub(crate) fn snapshot(&self, rel: &str) -> Vec<(PathBuf, Option<Vec<u8>>)> {
        let mut out = Vec::new();
        snapshot_into(&self.path(rel), &mut out);
        out.sort();
        out
    }
}

fn snapshot_into(dir: &Path, out: &mut Vec<(PathBuf, Option<Vec<u8>>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let e = e.unwrap();
        let p = e.path();
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            out.push((p.clone(), None));
            snapshot_into(&p, out);
        } else if ft.is_symlink() {
            out.push((
                p.clone(),
                Some(
                    std::fs::read_link(&p)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                ),
            ));
        } else {
            out.push((p.clone(), Some(std::fs::read(&p).unwrap())));
        }
    }
}

/// Resolves and unwraps, naming the path on failure.
pub(crate) fn ok(ws: &Workspace, path: &str) -> ResolvedPath {
    match ws.resolve(path) {
        Ok(r) => r,
        Err(e) => panic!("resolve({path:?}) failed: {e:?}"),
    }
}

/// Resolves and expects an error.
pub(crate) fn err(ws: &Workspace, path: &str) -> ResolveError {
    match ws.resolve(path) {
        Ok(r) => panic!("resolve({path:?}) unexpectedly succeeded: {r:?}"),
        Err(e) => e,
    }
}

/// Whether the tests run as root.
pub(crate) fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}
