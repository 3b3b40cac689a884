//! Which entries a commit names in its result and checkpoints: all but `.git` and what the root's
//! ignore rules ignored when the session began (build outputs, which a build rewrites by the
//! thousand). Every entry is judged and committed either way; this only decides what is reported
//! and kept for undo.
//!
//! The rules are read once, at first use: they are the workspace's own, and a command must not
//! be able to hide its later changes by rewriting them.

use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use spear_workspace::{Location, Workspace, WorkspaceFs};

/// The frozen ignore rules of a session's roots.
#[derive(Debug, Default)]
pub struct TrackedRules {
    ignores: Mutex<Option<Vec<Gitignore>>>,
}

impl TrackedRules {
    /// Rules not read yet (they are read at the first question).
    pub fn new() -> Self {
        TrackedRules::default()
    }

    /// Whether `loc` is tracked: not inside a `.git` directory, and not ignored (itself or a
    /// parent) by its root's top `.gitignore` and `.git/info/exclude` as they were at first use.
    pub fn is_tracked(
        &self,
        ws: &Workspace,
        fs: &WorkspaceFs,
        loc: &Location,
        is_dir: bool,
    ) -> bool {
        if in_git_dir(&loc.rel) {
            return false;
        }
        let mut frozen = self
            .ignores
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let rules = frozen.get_or_insert_with(|| {
            (0..ws.roots().len())
                .map(|root| root_ignore(ws, fs, root))
                .collect()
        });
        rules.get(loc.root).is_none_or(|ignore| {
            !ignore
                .matched_path_or_any_parents(&loc.rel, is_dir)
                .is_ignore()
        })
    }
}

/// The ignore rules of root `root`: its top `.gitignore` and `.git/info/exclude`, read through
/// `fs`. Rules that cannot be read are left out: that only makes more entries tracked.
fn root_ignore(ws: &Workspace, fs: &WorkspaceFs, root: usize) -> Gitignore {
    let Some(r) = ws.roots().get(root) else {
        return Gitignore::empty();
    };
    let mut builder = GitignoreBuilder::new(r.host_path());
    for rel in [".gitignore", ".git/info/exclude"] {
        let loc = Location {
            root,
            rel: PathBuf::from(rel),
        };
        let Ok(bytes) = fs.read_head(&loc, 1 << 20) else {
            continue;
        };
        for line in String::from_utf8_lossy(&bytes).lines() {
            let _ = builder.add_line(None, line);
        }
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// Whether `rel` lies in a `.git` directory (or is one).
pub fn in_git_dir(rel: &Path) -> bool {
    rel.components()
        .any(|c| matches!(c, Component::Normal(n) if n == ".git"))
}
