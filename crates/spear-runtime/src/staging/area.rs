//! Where a writable command's writes land: one pair of overlay layers (upper, work) per root, in
//! a directory of spear's own that is private to the user and outside every root.
//!
//! A root's layers go under the first staging base on the root's own filesystem, so that a
//! commit renames files into place instead of copying them (a build's gigabytes cost one rename
//! a file); with none there, under the first base that can be made at all (a commit then copies).
//! The directory is locked by its process while it lives and removed when the [`Staging`] is
//! dropped; one left behind by a process that died (its lock gone with it) is removed by the next
//! runner on the same base ([`sweep_stale`]), whatever PID namespace either runs in.

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{Mode, OFlags};
use spear_sandbox::Overlay;
use spear_workspace::Workspace;

use crate::owned_dir::OwnedDir;

/// Per-process counter of staging directories.
static NEXT: AtomicU64 = AtomicU64::new(1);

/// One root's layers.
#[derive(Debug)]
pub(crate) struct Layer {
    /// The root (index in the workspace).
    pub(crate) root: usize,
    /// The root's host path.
    pub(crate) lower: PathBuf,
    /// Where the command's writes land.
    pub(crate) upper: PathBuf,
    /// overlayfs's work directory.
    pub(crate) work: PathBuf,
    /// Whether `upper` is on the root's filesystem (a commit renames instead of copying).
    pub(crate) same_fs: bool,
}

/// The staging of one writable command: its layers, and when it started, in the clock file
/// timestamps come from (so that a change made on the host while it ran is recognised).
#[derive(Debug)]
pub struct Staging {
    /// Its directories, one per base used: held (locked) while it lives, removed when dropped.
    dirs: Vec<OwnedDir>,
    pub(crate) layers: Vec<Layer>,
    pub(crate) started: (i64, i64),
    /// Set by the first commit: a staging is committed at most once.
    pub(crate) committed: std::sync::atomic::AtomicBool,
    /// The most changes its commit takes (see [`super::limits::MAX_COMMITTED_CHANGES`]).
    pub(crate) max_changes: usize,
    /// The attribute by which the overlays of this process mark a directory opaque
    /// ([`spear_sandbox::opaque_xattr`]): the only one the commit honours.
    pub(crate) opaque_xattr: &'static std::ffi::CStr,
}

impl Staging {
    /// Makes fresh, empty layers for every root of `ws` under `bases` (see the module's doc).
    pub fn create(bases: &[PathBuf], ws: &Workspace) -> io::Result<Staging> {
        let roots: Vec<PathBuf> = ws
            .roots()
            .iter()
            .map(|r| r.host_path().to_path_buf())
            .collect();
        let mut usable: Vec<(PathBuf, u64)> = Vec::new();
        let mut why: Vec<String> = Vec::new();
        for b in bases {
            if roots.iter().any(|r| b.starts_with(r) || r.starts_with(b)) {
                why.push(format!("{}: it overlaps the workspace", b.display()));
                continue;
            }
            match private_dir(b) {
                Ok(dev) => usable.push((b.clone(), dev)),
                Err(e) => why.push(format!("{}: {e}", b.display())),
            }
        }
        if usable.is_empty() {
            return Err(io::Error::other(format!(
                "no staging directory can be used ({})",
                why.join("; ")
            )));
        }
        let mut staging = Staging {
            dirs: Vec::new(),
            layers: Vec::new(),
            started: clock_now(),
            committed: std::sync::atomic::AtomicBool::new(false),
            max_changes: super::limits::MAX_COMMITTED_CHANGES,
            opaque_xattr: spear_sandbox::opaque_xattr(),
        };
        for (index, root) in roots.iter().enumerate() {
            let root_dev = std::fs::metadata(root)?.dev();
            let (base, same_fs) = usable
                .iter()
                .find(|(_, dev)| *dev == root_dev)
                .map_or((&usable[0].0, false), |(b, _)| (b, true));
            let made = staging
                .dirs
                .iter()
                .find(|d| d.path().parent() == Some(base.as_path()))
                .map(|d| d.path().to_path_buf());
            let dir = if let Some(dir) = made {
                dir
            } else {
                let made = OwnedDir::create(base, new_name)?;
                let path = made.path().to_path_buf();
                staging.dirs.push(made);
                path
            };
            let (upper, work) = (
                dir.join(format!("{index}.upper")),
                dir.join(format!("{index}.work")),
            );
            for d in [&upper, &work] {
                std::fs::DirBuilder::new().mode(0o700).create(d)?;
            }
            staging.layers.push(Layer {
                root: index,
                lower: root.clone(),
                upper,
                work,
                same_fs,
            });
        }
        // The time is taken last: a host change after it is one the command may not have seen.
        staging.started = clock_now();
        Ok(staging)
    }

    /// This staging, its commit taking at most `max` changes: past them it commits none (see
    /// [`Staging::commit`]).
    #[must_use]
    pub fn limit_changes(mut self, max: usize) -> Staging {
        self.max_changes = max;
        self
    }

    /// The overlays the sandbox mounts, one per root.
    pub fn overlays(&self) -> Vec<Overlay> {
        self.layers
            .iter()
            .map(|l| Overlay {
                lower: l.lower.clone(),
                upper: l.upper.clone(),
                work: l.work.clone(),
            })
            .collect()
    }

    /// Whether some root's writes are staged on another filesystem than the root's, so that its
    /// commit copies files instead of renaming them.
    pub fn copies(&self) -> bool {
        self.layers.iter().any(|l| !l.same_fs)
    }

    /// The upper layer of root `root`, opened as a directory fd.
    pub(crate) fn open_upper(&self, root: usize) -> io::Result<OwnedFd> {
        let layer = self
            .layers
            .iter()
            .find(|l| l.root == root)
            .ok_or_else(|| io::Error::other("no layer for this root"))?;
        Ok(rustix::fs::open(
            &layer.upper,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?)
    }
}

/// A fresh name for a directory of this process's: `PID-N-RAND` (the pid says who made it, for
/// a person reading the directory; liveness is the directory's lock, [`OwnedDir`]).
pub(crate) fn new_name() -> io::Result<String> {
    Ok(format!(
        "{}-{}-{:08x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        random_u32()?
    ))
}

/// Removes the staging directories under `base` whose process is gone: those whose lock
/// nobody holds ([`crate::owned_dir::sweep`]), in whatever PID namespace their owner runs.
pub fn sweep_stale(base: &Path) {
    crate::owned_dir::sweep(base);
}

/// Makes `dir` (and its parents) if needed and checks that it is a directory of this user's, not
/// a link, with no permission for group or other. Returns its device.
pub(crate) fn private_dir(dir: &Path) -> io::Result<u64> {
    if !dir.is_absolute() {
        return Err(io::Error::other("not an absolute path"));
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    let uid = rustix::process::geteuid().as_raw();
    // "No bit of group or other" reads better as a mask than as trailing zeros.
    #[allow(clippy::verbose_bit_mask)]
    let private = meta.is_dir() && meta.uid() == uid && meta.permissions().mode() & 0o077 == 0;
    if private {
        Ok(meta.dev())
    } else {
        Err(io::Error::other(
            "it is not a private directory of this user (owner, mode 0700, not a link)",
        ))
    }
}

/// Now, in the real-time clock file timestamps come from. The fine-grained clock, not the coarse
/// one the kernel often stamps files with: a file stamped finely (multigrain timestamps) just
/// before the command would otherwise look changed after its start. A change in the same coarse
/// tick right after the start can be missed; that window is a few milliseconds.
pub(crate) fn clock_now() -> (i64, i64) {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    (t.tv_sec, t.tv_nsec)
}

fn random_u32() -> io::Result<u32> {
    let mut b = [0u8; 4];
    rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::empty())?;
    Ok(u32::from_le_bytes(b))
}

/// The staging bases of this process, in order of preference: `$XDG_STATE_HOME/spear/staging`
/// (or `~/.local/state/spear/staging`), usually on the filesystem of the user's projects, then
/// the per-user runtime directory.
pub fn default_bases(xdg_state: Option<&Path>, home: Option<&Path>) -> Vec<PathBuf> {
    let mut bases = Vec::new();
    if let Some(state) = xdg_state
        .map(Path::to_path_buf)
        .or_else(|| home.map(|h| h.join(".local/state")))
        .filter(|p| p.is_absolute())
    {
        bases.push(state.join("spear").join("staging"));
    }
    if let Some(dir) = spear_sandbox::user_private_dir("staging") {
        bases.push(dir);
    }
    bases
}
