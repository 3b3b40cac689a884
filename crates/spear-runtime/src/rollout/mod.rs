//! Rollout workspaces: each session on an operator's template gets its own writable copy of it,
//! ready at once and costing disk only for what the session changes; the template never changes.
//!
//! Where it lives: `UNDER/PID-N-RAND/{upper,work,merged}`, every level mode 0700, the
//! `PID-N-RAND` directory held by this process's lock ([`crate::owned_dir`]) while the session
//! lives. `merged` is a copy-on-write view mounted on the host ([`spear_sandbox::CowMount`]:
//! kernel overlayfs as root, `fuse-overlayfs` as a user), the template its read-only lower layer:
//! nothing here opens the template for writing, and every write to the view lands in `upper`.
//! `merged` is [`RolloutWorkspace::root`], the session's workspace.
//!
//! What removes it: [`RolloutWorkspace::close`], or dropping it: the view is unmounted (lazily
//! at worst, and checked) and then the directory removed. A directory whose process is gone (a
//! crash, a kill) is swept by the next [`RolloutWorkspace::open`] on the same `UNDER` (or
//! [`sweep`]): its lock is free, so what is mounted at its `merged` is unmounted, and only then is
//! it removed. A directory whose view cannot be unmounted is never removed (removing it would
//! delete through the mount).
//!
//! Keeping: `close(true)` copies the session's tree (its view, links as links, `.git` included)
//! to `UNDER/kept-PID-N-RAND/` and returns that path, then unmounts and removes the rest; a
//! sweep never touches a `kept-` directory: it is the operator's to remove.
//!
//! The patch ([`RolloutWorkspace::patch`]): the paths the upper layer nominates ([`upper`]) are
//! copied, from the template and from the view, into two small trees, and git diffs them
//! ([`patch`]): `git apply` of it to a fresh copy of the template gives the session's tree as git
//! sees one (contents, the executable bit, links; not other permission bits, owners, times, empty
//! directories, nor anything in a `.git` directory, which `git apply` refuses to write).

mod copy;
mod error;
mod patch;
mod upper;

use std::io;
use std::path::{Path, PathBuf};

use spear_sandbox::{CowBackend, CowMount, unmount_stale};

pub use error::RolloutError;

use crate::owned_dir::{OwnedDir, remove_all};
use crate::staging::area::{new_name, private_dir};
use copy::GitEntries;

/// The prefix of a kept session's directory under `UNDER`.
pub const KEPT_PREFIX: &str = "kept-";

/// One session's copy-on-write copy of a template (see the module's doc). Unmounted and removed
/// when closed or dropped.
#[derive(Debug)]
pub struct RolloutWorkspace {
    template: PathBuf,
    under: PathBuf,
    upper: PathBuf,
    merged: PathBuf,
    /// Taken when closed; unmounted before `area` is removed.
    mount: Option<CowMount>,
    /// Taken when closed.
    area: Option<OwnedDir>,
}

impl RolloutWorkspace {
    /// Gives a new session its own writable view of `template` (a directory the operator named,
    /// only ever read), with its layers under `under` (an absolute directory of this user's,
    /// made 0700 if missing, outside the template). Sweeps the directories of gone processes
    /// there first. Ready when it returns: nothing of the template is copied.
    pub fn open(template: &Path, under: &Path) -> Result<RolloutWorkspace, RolloutError> {
        let template = checked_template(template)?;
        if !under.is_absolute() {
            return Err(area_error(under, io::Error::other("not an absolute path")));
        }
        // Attack stopped (and accident): layers made inside the template would be writes to it;
        // and a template inside the rollout directory named as spear names a session's could be
        // taken by a sweep for a gone session's and removed.
        let resolved = resolved_prefix(under);
        if template.starts_with(&resolved) {
            return Err(RolloutError::Template {
                path: template,
                reason: format!(
                    "it lies inside the rollout directory `{}`, whose entries spear sweeps; name \
                     a rollout directory outside the template and the template outside it",
                    under.display()
                ),
            });
        }
        if resolved.starts_with(&template) {
            return Err(RolloutError::Template {
                path: template,
                reason: format!(
                    "the rollout directory `{}` lies inside it, and making it would write the \
                     template; name a directory outside the template",
                    under.display()
                ),
            });
        }
        private_dir(under).map_err(|e| area_error(under, e))?;
        let under = std::fs::canonicalize(under).map_err(|e| area_error(under, e))?;
        sweep(&under);
        let area = OwnedDir::create(&under, new_name).map_err(|e| area_error(&under, e))?;
        let [upper, work, merged] = ["upper", "work", "merged"].map(|d| area.path().join(d));
        for dir in [&upper, &work, &merged] {
            std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
                .create(dir)
                .map_err(|e| area_error(dir, e))?;
        }
        let mount = CowMount::mount(&template, &upper, &work, &merged)?;
        Ok(RolloutWorkspace {
            template,
            under,
            upper,
            merged,
            mount: Some(mount),
            area: Some(area),
        })
    }

    /// The session's workspace: the mounted view, which reads as the template plus the
    /// session's writes.
    pub fn root(&self) -> &Path {
        &self.merged
    }

    /// The template (canonical path) this session's view shows.
    pub fn template(&self) -> &Path {
        &self.template
    }

    /// The mechanism that mounted the view.
    pub fn backend(&self) -> Option<CowBackend> {
        self.mount.as_ref().map(CowMount::backend)
    }

    /// The session's changes as a binary git patch (empty when there are none) that `git apply`
    /// takes against a fresh copy of the template to give the session's tree (see the module's
    /// doc for what git's patches carry). Costs what the session changed, not what the template
    /// holds. The view is read as it is now: a command writing meanwhile may or may not be in it.
    pub fn patch(&self) -> Result<Vec<u8>, RolloutError> {
        let area = self.area.as_ref().ok_or_else(|| closed(&self.merged))?;
        let changed = upper::changed_paths(&self.upper, &self.template).map_err(|e| {
            RolloutError::Changes {
                path: self.upper.clone(),
                source: e,
            }
        })?;
        let scratch = area.path().join(format!(
            "patch-{}",
            new_name().map_err(|e| area_error(area.path(), e))?
        ));
        let result = self.patch_in(&changed, &scratch);
        if let Err(e) = remove_all(&scratch) {
            tracing::warn!(
                "a patch's scratch directory could not be removed: {}: {e}",
                scratch.display()
            );
        }
        result
    }

    fn patch_in(&self, changed: &[PathBuf], scratch: &Path) -> Result<Vec<u8>, RolloutError> {
        let (old, new) = (scratch.join("old"), scratch.join("new"));
        for dir in [scratch, &old, &new] {
            std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
                .create(dir)
                .map_err(|e| area_error(dir, e))?;
        }
        for (from, to) in [(&self.template, &old), (&self.merged, &new)] {
            let reading = |e: io::Error| RolloutError::Changes {
                path: from.clone(),
                source: e,
            };
            let root = copy::open_root(from).map_err(reading)?;
            for rel in changed {
                let dst = to.join(rel);
                if let Some(parent) = dst.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| area_error(parent, e))?;
                }
                copy::copy_out(&root, rel, &dst, GitEntries::Skip).map_err(reading)?;
            }
        }
        patch::diff(&old, &new, scratch)
    }

    /// Ends the session: unmounts the view (checked) and removes its directory. With `keep`,
    /// first copies the session's tree to `UNDER/kept-PID-N-RAND` and returns that path (the
    /// operator's to remove; no sweep touches it).
    pub fn close(mut self, keep: bool) -> Result<Option<PathBuf>, RolloutError> {
        let kept = if keep { Some(self.keep()?) } else { None };
        self.shut()?;
        Ok(kept)
    }

    /// Copies the view to `UNDER/kept-NAME`; where that fails, keeps the upper layer there
    /// instead (unmounted) and says so.
    fn keep(&mut self) -> Result<PathBuf, RolloutError> {
        let area = self.area.as_ref().ok_or_else(|| closed(&self.merged))?;
        let name = area
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dest = self.under.join(format!("{KEPT_PREFIX}{name}"));
        let copied = std::fs::DirBuilder::new()
            .create(&dest)
            .and_then(|()| copy::open_root(&self.merged))
            .and_then(|root| copy::copy_children(&root, &dest, GitEntries::Copy));
        let Err(source) = copied else {
            return Ok(dest);
        };
        let _ = remove_all(&dest);
        let layers = self.under.join(format!("{KEPT_PREFIX}{name}-layer"));
        if let Some(mount) = self.mount.take()
            && let Err(e) = mount.unmount()
        {
            // Still mounted: the area must not be removed through it (a later sweep retries).
            std::mem::forget(self.area.take());
            return Err(e.into());
        }
        if let Err(e) = std::fs::rename(&self.upper, &layers) {
            tracing::warn!("the session's layer could not be kept: {e}");
            // Left in the area: removed with it by this close; say where it was.
            return Err(RolloutError::Keep {
                path: dest,
                source,
                layers: self.upper.clone(),
            });
        }
        self.shut()?;
        Err(RolloutError::Keep {
            path: dest,
            source,
            layers,
        })
    }

    /// Unmounts the view and removes the area; where the view stays mounted, the area is left
    /// (its lock given up with this process) for a later sweep, and the error says so.
    fn shut(&mut self) -> Result<(), RolloutError> {
        if let Some(mount) = self.mount.take()
            && let Err(e) = mount.unmount()
        {
            // Removing the area now would delete through the mount; a sweep retries once this
            // process (and its lock) is gone.
            std::mem::forget(self.area.take());
            return Err(e.into());
        }
        drop(self.area.take());
        Ok(())
    }
}

impl Drop for RolloutWorkspace {
    fn drop(&mut self) {
        if let Err(e) = self.shut() {
            tracing::warn!("a rollout workspace was not closed cleanly: {e}");
        }
    }
}

/// Removes the rollout directories under `under` whose process is gone (their lock is free):
/// unmounts what is mounted at each one's `merged` first, and leaves one whose view stays
/// mounted. Returns how many were removed. Touches nothing else (not `kept-` directories).
pub fn sweep(under: &Path) -> usize {
    crate::owned_dir::sweep_with(under, |path| match unmount_stale(&path.join("merged")) {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!("a gone session's rollout view stays: {e}");
            false
        }
    })
}

/// The template, canonical, checked to be a directory this process can read.
fn checked_template(template: &Path) -> Result<PathBuf, RolloutError> {
    let fail = |reason: String| RolloutError::Template {
        path: template.to_path_buf(),
        reason,
    };
    let canonical = std::fs::canonicalize(template)
        .map_err(|e| fail(format!("{e}; name an existing directory")))?;
    let meta = std::fs::metadata(&canonical).map_err(|e| fail(e.to_string()))?;
    if !meta.is_dir() {
        return Err(fail("not a directory; name a directory".to_owned()));
    }
    copy::open_root(&canonical).map_err(|e| fail(format!("it cannot be read ({e})")))?;
    Ok(canonical)
}

/// `path` with its longest existing ancestor resolved (links followed) and the rest as written.
fn resolved_prefix(path: &Path) -> PathBuf {
    for ancestor in path.ancestors() {
        if let Ok(real) = std::fs::canonicalize(ancestor) {
            let rest = path.strip_prefix(ancestor).unwrap_or(Path::new(""));
            return real.join(rest);
        }
    }
    path.to_path_buf()
}

fn area_error(path: &Path, source: io::Error) -> RolloutError {
    RolloutError::Area {
        path: path.to_path_buf(),
        source,
    }
}

fn closed(path: &Path) -> RolloutError {
    RolloutError::Changes {
        path: path.to_path_buf(),
        source: io::Error::other("the rollout workspace is closed"),
    }
}
