//! Successful preflights remembered across processes.
//!
//! The CLI runs one command per process, so the per-instance preflight cache alone would run a
//! second sandbox for every `spear exec`. A success is therefore also recorded as an empty file in a
//! per-user directory, keyed by everything the probe depends on: the user, the bwrap binary (device,
//! inode, size, mtime), the boot, spear's version, the working directory and its writability.
//! Entries expire after a day. Only successes are stored, and skipping the probe grants nothing: a
//! sandbox that stopped working since still fails when the command itself runs.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long a recorded success is trusted.
const TTL: Duration = Duration::from_secs(24 * 3600);

/// `NAME` in spear's per-user directory, `$XDG_RUNTIME_DIR/spear`, else `/tmp/spear-UID`, both
/// created 0700. `None` when either cannot be made private to the user (another user created it,
/// it is a link, its mode is wider than 0700): a directory another user controls is never used.
pub fn user_private_dir(name: &str) -> Option<PathBuf> {
    let uid = rustix::process::geteuid().as_raw();
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .map_or_else(
            || PathBuf::from(format!("/tmp/spear-{uid}")),
            |run| run.join("spear"),
        );
    // "No bit of group or other" reads better as a mask than as trailing zeros.
    #[allow(clippy::verbose_bit_mask)]
    let private = |dir: &Path| {
        let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
        std::fs::symlink_metadata(dir).ok().is_some_and(|meta| {
            meta.is_dir() && meta.uid() == uid && meta.permissions().mode() & 0o077 == 0
        })
    };
    let dir = base.join(name);
    (private(&base) && private(&dir)).then_some(dir)
}

/// A per-user directory of recorded preflight successes.
#[derive(Debug, Clone)]
pub(crate) struct PreflightStore {
    dir: PathBuf,
}

impl PreflightStore {
    /// The store of the current user (see [`user_private_dir`]).
    pub(crate) fn for_user() -> Option<Self> {
        user_private_dir("preflight").map(|dir| PreflightStore { dir })
    }

    /// The key of a probe, or `None` when what it depends on cannot be read.
    pub(crate) fn key(bwrap: &Path, cwd: &Path, write: bool) -> Option<String> {
        let meta = std::fs::metadata(bwrap).ok()?;
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let mut h = DefaultHasher::new();
        (
            rustix::process::geteuid().as_raw(),
            meta.dev(),
            meta.ino(),
            meta.size(),
            meta.mtime(),
            meta.mtime_nsec(),
            boot.trim(),
            env!("CARGO_PKG_VERSION"),
            cwd,
            write,
        )
            .hash(&mut h);
        Some(format!("{:016x}", h.finish()))
    }

    /// Whether a fresh success is recorded under `key`.
    pub(crate) fn contains(&self, key: &str) -> bool {
        std::fs::symlink_metadata(self.dir.join(key))
            .ok()
            .filter(std::fs::Metadata::is_file)
            .and_then(|m| m.modified().ok())
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age < TTL)
    }

    /// Records a success under `key` (best effort).
    pub(crate) fn record(&self, key: &str) {
        let _ = std::fs::write(self.dir.join(key), b"");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_depend_on_every_input() {
        let bwrap = Path::new("/bin/sh");
        let a = PreflightStore::key(bwrap, Path::new("/w"), true).unwrap();
        assert_eq!(
            a,
            PreflightStore::key(bwrap, Path::new("/w"), true).unwrap()
        );
        assert_ne!(
            a,
            PreflightStore::key(bwrap, Path::new("/w"), false).unwrap()
        );
        assert_ne!(
            a,
            PreflightStore::key(bwrap, Path::new("/v"), true).unwrap()
        );
        assert_ne!(
            a,
            PreflightStore::key(Path::new("/bin/true"), Path::new("/w"), true).unwrap()
        );
        assert!(PreflightStore::key(Path::new("/nonexistent"), Path::new("/w"), true).is_none());
    }

    #[test]
    fn records_and_finds() {
        let dir = tempfile::tempdir().unwrap();
        let store = PreflightStore {
            dir: dir.path().to_path_buf(),
        };
        assert!(!store.contains("k"));
        store.record("k");
        assert!(store.contains("k"));
    }
}
