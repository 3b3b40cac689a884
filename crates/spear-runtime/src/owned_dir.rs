//! Directories of spear's that belong to one live process (a command's staging layers, a
//! session's `/tmp` and home), and the sweep that removes those whose process is gone.
//!
//! Liveness is the directory's lock ([`spear_sandbox::hold_made_dir`], the mechanism spear's
//! cgroups share), never a pid: a spear in another PID namespace never removes a live one's
//! directory, and a dead owner's is removed even when its pid was reused. A filesystem that refuses
//! `flock` (a home on NFS) leaves the owner's directory unlocked and every sweep's attempt failing:
//! nothing is ever swept there.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use spear_sandbox::{HeldDir, hold_made_dir, take_free_dir};

/// How many names [`OwnedDir::create`] tries before it gives up (each lost only to a sweep
/// between the directory's making and its lock).
const ATTEMPTS: usize = 8;

/// A directory of spear's held by this process: locked while it lives, removed (then unlocked)
/// when dropped.
#[derive(Debug)]
pub struct OwnedDir {
    path: PathBuf,
    /// The directory, open and locked for as long as this value lives (`None` where the
    /// filesystem refuses locks).
    lock: Option<OwnedFd>,
}

impl OwnedDir {
    /// Makes a directory (mode 0700) under `base` with a name from `name` (asked again if a sweep
    /// took the first), and locks it.
    pub fn create(
        base: &Path,
        mut name: impl FnMut() -> io::Result<String>,
    ) -> io::Result<OwnedDir> {
        for _ in 0..ATTEMPTS {
            let path = base.join(name()?);
            std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
                .create(&path)?;
            let lock = match hold_made_dir(&path)? {
                HeldDir::Locked(dir) => Some(dir),
                HeldDir::Gone => continue,
                HeldDir::NoLock(_, e) => {
                    tracing::debug!(path = %path.display(), "no lock on a directory of spear's: {e}");
                    None
                }
            };
            return Ok(OwnedDir { path, lock });
        }
        Err(io::Error::other(format!(
            "a directory of spear's under {} was removed as it was made, {ATTEMPTS} times",
            base.display()
        )))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for OwnedDir {
    fn drop(&mut self) {
        if let Err(e) = remove_all(&self.path) {
            tracing::warn!(
                "a directory of spear's could not be removed: {}: {e}",
                self.path.display()
            );
        }
        // Unlocked only once it is gone.
        drop(self.lock.take());
    }
}

/// Removes the directories under `base` that [`OwnedDir`] made for processes that are gone:
/// each whose lock it can take ([`take_free_dir`]; named as spear names them,
/// `PID-N-RAND`; nothing else there is touched). Returns how many.
pub fn sweep(base: &Path) -> usize {
    sweep_with(base, |_| true)
}

/// [`sweep`], with `ready` asked of each gone process's directory, under its lock, before it is
/// removed: a directory it answers `false` for is left (a mount in it that would not go).
pub fn sweep_with(base: &Path, ready: impl Fn(&Path) -> bool) -> usize {
    let Ok(entries) = std::fs::read_dir(base) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if !entry.file_name().to_str().is_some_and(is_owned_name) {
            continue;
        }
        let path = entry.path();
        // Held while it is removed.
        let Some(_free) = take_free_dir(&path) else {
            continue;
        };
        if ready(&path) && remove_all(&path).is_ok() {
            tracing::debug!(path = %path.display(), "a gone process's directory removed");
            removed += 1;
        }
    }
    removed
}

/// Whether `name` is one [`OwnedDir`]'s callers give: `PID-N-RAND` (decimal, decimal, hex).
pub fn is_owned_name(name: &str) -> bool {
    let mut parts = name.split('-');
    let decimal =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let hex = |p: Option<&str>| {
        p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    decimal(parts.next()) && decimal(parts.next()) && hex(parts.next()) && parts.next().is_none()
}

/// Removes `dir` and everything below it, giving directories owner permissions first (a command
/// may have taken them away, and overlayfs leaves a `work` directory with none). No link is
/// followed.
pub(crate) fn remove_all(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
        Ok(m) if !m.is_dir() => return std::fs::remove_file(dir),
        Ok(_) => {}
    }
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            remove_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    std::fs::remove_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_spear_gives_and_no_other() {
        for (name, ours) in [
            ("12-1-00ab09ff", true),
            ("999999999-1-00000000", true),
            ("12-1", false),
            ("12-1-00ab09ff-x", false),
            ("x-1-00ab09ff", false),
            ("12--00ab09ff", false),
            ("12-1-zz", false),
            ("conflicts", false),
            ("", false),
        ] {
            assert_eq!(is_owned_name(name), ours, "{name}");
        }
    }

    /// The lock, not the pid: a directory locked by a live owner stays whatever its name says
    /// (a pid no namespace here has); one nobody holds (what the kernel leaves of a dead
    /// owner's) is removed, even under this live process's own pid; what spear did not name is
    /// left.
    #[test]
    fn a_sweep_removes_what_no_owner_holds() {
        let base = tempfile::tempdir().unwrap();
        let live = OwnedDir::create(base.path(), || Ok("999999999-1-0000abcd".to_owned())).unwrap();
        std::fs::write(live.path().join("f"), b"x").unwrap();
        let dead = base
            .path()
            .join(format!("{}-7-0000abcd", std::process::id()));
        std::fs::create_dir_all(dead.join("tmp/deep")).unwrap();
        let other = base.path().join("not-spears");
        std::fs::create_dir(&other).unwrap();
        assert_eq!(sweep(base.path()), 1);
        assert!(!dead.exists(), "a gone owner's directory was left");
        assert!(
            live.path().join("f").exists(),
            "a live owner's directory was swept"
        );
        assert!(other.exists());
        let live_path = live.path().to_path_buf();
        drop(live);
        assert!(!live_path.exists(), "the owner removes its own");
        assert_eq!(sweep(base.path()), 0);
    }
}
