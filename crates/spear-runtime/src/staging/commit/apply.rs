//! Steps 4 and 5 of a commit: the changes judged allowed put into the workspace through
//! [`WorkspaceFs`] (removals, directories, modes, files, links, times), each entry the host changed
//! while the command ran kept aside as a conflict, and the state before of what changes recorded
//! for the checkpoint.

use std::os::fd::AsFd;
use std::path::Path;

use spear_core::ChangeKind;
use spear_workspace::{EntryKind, EntryMeta, FsError, Location};

use super::committer::Committer;
use super::judge::{Action, Below, Judged};
use super::layers::staged_entry;
use super::plan::{Op, Planned, change_kind};
use crate::checkpoint::{CheckpointError, EntryState};
use crate::staging::area::clock_now;
use crate::staging::tracked::in_git_dir;
use crate::staging::upper::Staged;

impl Committer<'_> {
    /// Pass 2: applies a change judged allowed, unless the host changed it meanwhile or what it
    /// lies in could not be applied.
    pub(super) fn apply_one(&mut self, p: &Planned, judged: Judged) {
        let Judged {
            label,
            tracked,
            below,
            action,
            ..
        } = judged;
        if self.is_blocked(&p.loc) {
            return;
        }
        if let Action::Touch(touch) = action {
            if let Some(mtime) = touch {
                let _ = self.fs.set_mtime(&p.loc, mtime.0, mtime.1);
            }
            return;
        }
        let kind = change_kind(&p.op);
        // Attack: another writer changed this entry (or, for a removal, anything below it) while
        // the command ran; overwriting or removing it would lose that change. A directory's own
        // time moves with every entry in it, so only a removal looks at it.
        let changed_meanwhile = p.host.is_some_and(|h| {
            (h.kind != EntryKind::Dir || kind == ChangeKind::Remove) && self.after_start(&h)
        }) || below.iter().any(|b| self.after_start(&b.meta));
        let appeared_meanwhile = p.host.is_none()
            && matches!(p.op, Op::File | Op::Symlink(_))
            && self.fs.entry_meta(&p.loc).ok().flatten().is_some();
        if changed_meanwhile || appeared_meanwhile {
            if let Op::File = p.op {
                self.keep_conflict(&p.loc);
            }
            self.report.conflicts.push(label);
            self.blocked.push(p.loc.clone());
            return;
        }
        // A removal is kept whole, untracked entries too (ignored files, a git directory's): what
        // the command removed, undo puts back.
        let removal = matches!(p.op, Op::Remove);
        if tracked || removal {
            self.capture(&p.loc, p.host.as_ref(), tracked, &below, removal);
        }
        if !tracked {
            self.report.untracked += 1;
        }
        let applied = match &p.op {
            Op::Remove => match self.fs.remove_tree(&p.loc) {
                Ok(()) | Err(FsError::NotFound { .. }) => Ok(()),
                Err(e) => Err(e),
            },
            Op::Dir(mode) => self.fs.install_dir(&p.loc, *mode),
            Op::Mode(mode) => self.fs.set_mode(&p.loc, *mode),
            Op::File => self.install_file(&p.loc),
            Op::Symlink(target) => self.fs.install_symlink(&p.loc, target),
        };
        if let Err(e) = applied {
            self.report.failures.push(e.to_string());
            self.blocked.push(p.loc.clone());
            return;
        }
        if matches!(p.op, Op::File) && in_git_dir(&p.loc.rel) {
            self.to_sync.push(p.loc.clone());
        }
        // Named in the result: files and links, and directories that appeared or vanished; every
        // removal, tracked or not (a removed tree by its top, and its tracked files one by one).
        let named = !matches!(p.op, Op::Mode(_)) || !p.is_dir();
        if (tracked && named) || removal {
            self.report.changed.push(label);
        }
        for b in &below {
            if b.tracked && b.meta.kind != EntryKind::Dir {
                self.report.changed.push(self.ws.label(&b.loc));
            }
        }
    }

    /// Flushes what git wrote (objects, refs, the index): git syncs them itself, and inside the
    /// command its syncs reached only the (volatile) layer. Each file, then each directory once.
    pub(super) fn sync(&mut self) {
        let mut dirs: Vec<Location> = Vec::new();
        for loc in std::mem::take(&mut self.to_sync) {
            if let Err(e) = self.fs.sync(&loc) {
                tracing::warn!("could not sync {}: {e}", self.ws.label(&loc));
            }
            if let Some(parent) = loc.rel.parent() {
                let dir = Location {
                    root: loc.root,
                    rel: parent.to_path_buf(),
                };
                if !dirs.contains(&dir) {
                    dirs.push(dir);
                }
            }
        }
        for dir in dirs {
            let _ = self.fs.sync(&dir);
        }
    }

    /// Whether the host changed `meta`'s entry after the command started.
    fn after_start(&self, meta: &EntryMeta) -> bool {
        let started = i128::from(self.started.0) * 1_000_000_000 + i128::from(self.started.1);
        meta.ctime_ns > started
    }

    /// When `ops[i]` makes a directory the host does not have and every operation below it was
    /// judged allowed (no fifo, socket or device, no set-user-ID bit in it), the end of its
    /// operations: the tree can be moved whole.
    pub(super) fn movable_tree(
        &self,
        ops: &[Planned],
        judged: &[Option<Judged>],
        i: usize,
    ) -> Option<usize> {
        let root = &ops[i];
        if !matches!(root.op, Op::Dir(mode) if mode & 0o6000 == 0) || root.host.is_some() {
            return None;
        }
        judged[i].as_ref()?;
        let (tree, _) = self.layers.tree(root.loc.root)?;
        if !plain_tree(staged_entry(tree, &root.loc.rel)?) {
            return None;
        }
        let mut end = i + 1;
        while end < ops.len()
            && ops[end].loc.root == root.loc.root
            && ops[end].loc.rel.starts_with(&root.loc.rel)
        {
            if judged[end].is_none()
                || !matches!(ops[end].op, Op::Dir(_) | Op::File | Op::Symlink(_))
            {
                return None;
            }
            end += 1;
        }
        Some(end)
    }

    /// Moves the new tree planned as `ops` (its directory first) into the workspace in one
    /// rename; its directories lose overlayfs's attributes (a file moved in from elsewhere in
    /// the workspace keeps its inert `overlay.origin`). `false` when it could not (the layer on
    /// another filesystem, or the place taken meanwhile): the caller applies the operations one
    /// by one.
    pub(super) fn move_tree(&mut self, ops: &[Planned], judged: &[Option<Judged>]) -> bool {
        let top = &ops[0].loc;
        let Some((dir, name)) = self.layer_parent(top) else {
            return false;
        };
        match self.fs.install_tree(top, dir.as_fd(), &name) {
            Ok(true) => {}
            Ok(false) | Err(_) => return false,
        }
        for (p, j) in ops.iter().zip(judged) {
            if matches!(p.op, Op::Dir(_)) {
                self.fs.strip_layer_attrs(&p.loc);
            }
            if j.as_ref().is_some_and(|j| j.tracked) {
                if self.store.is_some() {
                    self.report
                        .captured
                        .push((p.loc.clone(), EntryState::Absent));
                }
                self.report.changed.push(self.ws.label(&p.loc));
            } else {
                self.report.untracked += 1;
            }
            if matches!(p.op, Op::File) && in_git_dir(&p.loc.rel) {
                self.to_sync.push(p.loc.clone());
            }
        }
        true
    }

    /// Records the state before of `loc` (`host`: what the host holds there, `tracked`: whether it
    /// is tracked) and, for a removal, of every entry below it. An untracked file is kept only
    /// within the commit's budget for them
    /// ([`MAX_UNTRACKED_KEPT`](crate::staging::limits::MAX_UNTRACKED_KEPT)): a removed build tree
    /// must not take the checkpoint store's room (and the earlier turns it holds); what is past it
    /// is named in the result as not kept.
    fn capture(
        &mut self,
        loc: &Location,
        host: Option<&EntryMeta>,
        tracked: bool,
        below: &[Below],
        removal: bool,
    ) {
        let Some(store) = self.store else {
            return;
        };
        let below = below
            .iter()
            .filter(|b| removal || b.tracked)
            .map(|b| (&b.loc, Some(&b.meta), b.tracked));
        for (l, meta, tracked) in std::iter::once((loc, host, tracked)).chain(below) {
            if !tracked && meta.is_some_and(|m| m.kind == EntryKind::File) {
                let size = meta.map_or(0, |m| m.size);
                if size > self.untracked_budget {
                    self.report.not_kept_untracked.push(self.ws.label(l));
                    continue;
                }
                self.untracked_budget -= size;
            }
            match store.read_state(self.fs, l) {
                Ok(state) => self.report.captured.push((l.clone(), state)),
                Err(CheckpointError::TooLarge { .. } | CheckpointError::Unsupported { .. }) => {
                    self.report.not_kept.push(self.ws.label(l));
                }
                Err(e) => self
                    .report
                    .failures
                    .push(format!("{}: could not checkpoint: {e}", self.ws.label(l))),
            }
        }
    }

    /// Installs the staged file at `loc` into the workspace.
    fn install_file(&self, loc: &Location) -> Result<(), FsError> {
        let Some((dir, name)) = self.layer_parent(loc) else {
            return Err(FsError::NotFound {
                label: self.ws.label(loc),
            });
        };
        self.fs.install_file(loc, dir.as_fd(), &name).map(|_| ())
    }

    /// Moves the staged file at `loc` aside, into the staging base's `conflicts` directory.
    fn keep_conflict(&mut self, loc: &Location) {
        let Some(layer) = self.staging.layers.iter().find(|l| l.root == loc.root) else {
            return;
        };
        let Some(base) = layer.upper.parent().and_then(Path::parent) else {
            return;
        };
        let dir = self.conflict_dir.get_or_insert_with(|| {
            let (s, n) = clock_now();
            base.join("conflicts")
                .join(format!("{s}.{n:09}-{}", std::process::id()))
        });
        let dest = dir.join(loc.root.to_string()).join(&loc.rel);
        let src = layer.upper.join(&loc.rel);
        let moved = dest
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                // The source is a file of the layer; a link there is moved, never followed.
                std::fs::rename(&src, &dest)
            });
        if moved.is_ok() {
            self.report.kept_at = Some(dir.clone());
        }
    }
}

/// Whether a staged tree holds only directories, files and links, none set-user-ID or
/// set-group-ID: what may be moved to the host whole.
fn plain_tree(staged: &Staged) -> bool {
    match staged {
        Staged::Dir { mode, children, .. } => {
            mode & 0o6000 == 0 && children.values().all(plain_tree)
        }
        Staged::File { mode, .. } => mode & 0o6000 == 0,
        Staged::Symlink { .. } => true,
        Staged::Whiteout | Staged::Special => false,
    }
}
