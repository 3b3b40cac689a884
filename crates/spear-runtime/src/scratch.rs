//! A session's `/tmp`, `/var/tmp` and home: host directories private to one session, bound
//! read-write into each of its commands in place of fresh tmpfs mounts, so that what one command
//! leaves there (a script in `/tmp`, a tool's cache in `~`) is there for the next.
//!
//! Where it lives: `BASE/PID-N-RAND/{tmp,var-tmp,home}`, with `BASE` spear's per-user directory
//! `sessions` (`$XDG_RUNTIME_DIR/spear/sessions`, else `/tmp/spear-UID/sessions`, see
//! [`spear_sandbox::user_private_dir`]); every level is a directory of the user's, mode 0700, so
//! no other user sees into it, and no other session's commands do: each sandbox binds only its
//! own session's directories. It lies outside every root, staging layer and toolchain (the spec
//! builder refuses anything else, [`spear_sandbox::ScratchDirs`]).
//!
//! What removes it: dropping the [`SessionScratch`] (the runner that owns it, when the session's
//! process ends); a directory left by a process that died (a crash, a kill) is removed by the next
//! session that starts on the same base ([`sweep_stale`]: the lock its process held while it
//! lived is free, [`crate::owned_dir`]). A live session's area is never removed by another, in
//! whatever PID namespace either runs.
//!
//! The cap, and its limits: an unprivileged process cannot mount a size-capped filesystem on the
//! host, so the cap is enforced by measuring. After every command of the session the area is
//! measured (blocks allocated, links not followed); over the cap, it is emptied and the result
//! says so ([`SessionScratch::enforce_cap`]). What this does not stop: a single command can write
//! more than the cap before it ends; then it is bounded by its memory cgroup when the base is a
//! tmpfs (`$XDG_RUNTIME_DIR`: pages written there are charged to the writer's cgroup), else only
//! by the file size rlimit per file and the free space of the base. Emptying the area also
//! removes files a background job of the same session is still using.
//!
//! What the host never does with it: spear follows no link inside the area (measuring and removal
//! use `lstat`, and never descend a link), so a link a command planted there, such as `/tmp/x ->
//! the workspace's .git/hooks`, points only within the sandbox's view when a later command uses
//! it, where a write through it lands in that command's staging and is judged at commit.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use spear_sandbox::ScratchDirs;

use crate::owned_dir::{OwnedDir, remove_all};
use crate::staging::area::{new_name, private_dir};

/// Entries measured at most; an area with more counts as over its cap.
const MAX_ENTRIES: u64 = 1_000_000;

/// The default cap of a session area: 1.5 GiB (what the per-command tmpfs mounts of `/tmp` and
/// home allow together).
pub const DEFAULT_SESSION_CAP: u64 = (1 << 30) + (512 << 20);

/// One session's private directories (see the module's doc). Removed when dropped.
#[derive(Debug)]
pub struct SessionScratch {
    /// The area, held (locked) while the session lives; removed when dropped.
    area: OwnedDir,
    dirs: ScratchDirs,
    cap: u64,
}

impl SessionScratch {
    /// Makes a fresh area under `base` (created 0700 if needed, and checked to be a private
    /// directory of this user's), after removing the areas of dead processes there.
    pub fn create(base: &Path, cap: u64) -> io::Result<SessionScratch> {
        private_dir(base)?;
        sweep_stale(base);
        let area = OwnedDir::create(base, new_name)?;
        let dirs = ScratchDirs {
            tmp: area.path().join("tmp"),
            var_tmp: area.path().join("var-tmp"),
            home: area.path().join("home"),
        };
        let scratch = SessionScratch { area, dirs, cap };
        for d in [&scratch.dirs.tmp, &scratch.dirs.var_tmp, &scratch.dirs.home] {
            std::fs::DirBuilder::new().mode(0o700).create(d)?;
        }
        Ok(scratch)
    }

    /// The area's directory.
    pub fn area(&self) -> &Path {
        self.area.path()
    }

    /// The directories the sandbox binds.
    pub fn dirs(&self) -> &ScratchDirs {
        &self.dirs
    }

    /// The cap, in bytes.
    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// Bytes allocated in the area now (directories included, links not followed); `None` when it
    /// holds more than a million entries or cannot be read.
    pub fn usage(&self) -> Option<u64> {
        let mut entries = 0;
        usage(self.area.path(), &mut entries)
    }

    /// Measures the area; over the cap, empties its three directories and says so, for the
    /// command's result.
    pub fn enforce_cap(&self) -> Option<String> {
        let used = self.usage();
        if used.is_some_and(|u| u <= self.cap) {
            return None;
        }
        for dir in [&self.dirs.tmp, &self.dirs.var_tmp, &self.dirs.home] {
            empty(dir);
        }
        let held = used.map_or_else(
            || "more than a million entries".to_owned(),
            |u| format!("{} MiB", u >> 20),
        );
        Some(format!(
            "the session's /tmp, /var/tmp and home held {held}, more than their cap of {} MiB, and were emptied",
            self.cap >> 20
        ))
    }

    /// Makes the area's three directories again (0700) if something removed them, so that a
    /// session goes on with empty ones rather than failing to set its sandboxes up.
    pub fn ensure_dirs(&self) {
        for d in [&self.dirs.tmp, &self.dirs.var_tmp, &self.dirs.home] {
            if std::fs::symlink_metadata(d).is_err() {
                let _ = std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(d);
            }
        }
    }

    /// Attack stopped: a link a command left in the area redirecting where a later sandbox mounts
    /// something (bwrap follows links in a mount point's path). For each mount point `inside`
    /// (a path as the sandbox sees it) under `/tmp`, `/var/tmp` or `home`, removes the links among
    /// the existing components of its path in the area, so that the mount lands where it should.
    pub fn clear_links_to(&self, inside: &Path, home: &Path) {
        let Some(host) = self.host_path(inside, home) else {
            return;
        };
        let Ok(rest) = host.strip_prefix(self.area.path()) else {
            return;
        };
        let mut at = self.area.path().to_path_buf();
        for part in rest.components() {
            let Component::Normal(part) = part else {
                return;
            };
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => {
                    let _ = std::fs::remove_file(&at);
                    return;
                }
                Ok(m) if m.is_dir() => {}
                _ => return,
            }
        }
    }

    /// Where `inside` (as the sandbox sees it) lies in the area, if it lies in one of its
    /// directories.
    fn host_path(&self, inside: &Path, home: &Path) -> Option<PathBuf> {
        // Home first: it is mounted last, so a home under /tmp is seen through its own bind.
        for (mount, dir) in [
            (home, &self.dirs.home),
            (Path::new("/var/tmp"), &self.dirs.var_tmp),
            (Path::new("/tmp"), &self.dirs.tmp),
        ] {
            if let Ok(rest) = inside.strip_prefix(mount) {
                return Some(dir.join(rest));
            }
        }
        None
    }
}

/// The base of session areas: spear's per-user directory `sessions`, when it can be made private.
pub fn default_base() -> Option<PathBuf> {
    spear_sandbox::user_private_dir("sessions")
}

/// Removes the session areas under `base` of processes that are gone (no process holds their
/// lock, [`crate::owned_dir`]).
pub fn sweep_stale(base: &Path) {
    crate::staging::sweep_stale(base);
}

fn usage(path: &Path, entries: &mut u64) -> Option<u64> {
    *entries += 1;
    if *entries > MAX_ENTRIES {
        return None;
    }
    let meta = std::fs::symlink_metadata(path).ok()?;
    let mut total = meta.blocks() * 512;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).ok()? {
            total += usage(&entry.ok()?.path(), entries)?;
        }
    }
    Some(total)
}

/// Removes everything inside `dir`, keeping `dir` (mode 0700).
fn empty(dir: &Path) {
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let _ = remove_all(&entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_area_is_private_measured_capped_and_removed() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().join("sessions");
        let s = SessionScratch::create(&base, 1 << 20).unwrap();
        for d in [
            &s.dirs().tmp,
            &s.dirs().var_tmp,
            &s.dirs().home,
            &s.area().to_path_buf(),
        ] {
            let m = std::fs::symlink_metadata(d).unwrap();
            assert!(m.is_dir());
            assert_eq!(m.permissions().mode() & 0o777, 0o700, "{}", d.display());
        }
        std::fs::write(s.dirs().tmp.join("small"), b"x").unwrap();
        assert_eq!(s.enforce_cap(), None);
        assert!(s.dirs().tmp.join("small").exists());
        std::fs::write(s.dirs().home.join("big"), vec![1u8; 2 << 20]).unwrap();
        let msg = s.enforce_cap().unwrap();
        assert!(
            msg.contains("cap of 1 MiB") && msg.contains("emptied"),
            "{msg}"
        );
        assert!(!s.dirs().home.join("big").exists());
        assert!(!s.dirs().tmp.join("small").exists());
        assert!(s.dirs().home.is_dir());
        std::fs::remove_dir(&s.dirs().var_tmp).unwrap();
        s.ensure_dirs();
        let m = std::fs::symlink_metadata(&s.dirs().var_tmp).unwrap();
        assert!(m.is_dir() && m.permissions().mode() & 0o777 == 0o700);
        let area = s.area().to_path_buf();
        drop(s);
        assert!(!area.exists());
    }

    #[test]
    fn measuring_and_emptying_never_follow_a_link() {
        let base = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let canary = outside.path().join("canary");
        std::fs::write(&canary, vec![1u8; 4 << 20]).unwrap();
        let s = SessionScratch::create(&base.path().join("s"), 1 << 20).unwrap();
        std::os::unix::fs::symlink(outside.path(), s.dirs().tmp.join("link")).unwrap();
        assert!(
            s.usage().unwrap() < 1 << 20,
            "the link's target was counted"
        );
        std::fs::write(s.dirs().tmp.join("big"), vec![1u8; 2 << 20]).unwrap();
        assert!(s.enforce_cap().is_some());
        assert!(canary.exists(), "emptying followed the link");
        assert!(std::fs::symlink_metadata(s.dirs().tmp.join("link")).is_err());
    }

    #[test]
    fn stale_areas_are_swept_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("s");
        let dead = base.join("999999999-1-00000000");
        std::fs::create_dir_all(dead.join("tmp")).unwrap();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o700)).unwrap();
        let live = SessionScratch::create(&base, 1 << 20).unwrap();
        assert!(!dead.exists(), "a dead process's area was left");
        let other = SessionScratch::create(&base, 1 << 20).unwrap();
        assert!(live.area().exists(), "a live session's area was swept");
        drop(other);
    }

    #[test]
    fn links_on_a_mount_point_path_are_cleared() {
        let base = tempfile::tempdir().unwrap();
        let s = SessionScratch::create(&base.path().join("s"), 1 << 20).unwrap();
        let home = Path::new("/home/u");
        std::os::unix::fs::symlink("/etc", s.dirs().home.join(".cargo")).unwrap();
        std::fs::create_dir(s.dirs().tmp.join("w")).unwrap();
        s.clear_links_to(Path::new("/home/u/.cargo/registry"), home);
        s.clear_links_to(Path::new("/tmp/w/proj"), home);
        s.clear_links_to(Path::new("/opt/x"), home);
        // A home under /tmp is seen through its own bind.
        std::os::unix::fs::symlink("/etc", s.dirs().home.join(".rustup")).unwrap();
        s.clear_links_to(Path::new("/tmp/h/.rustup"), Path::new("/tmp/h"));
        assert!(std::fs::symlink_metadata(s.dirs().home.join(".rustup")).is_err());
        assert!(std::fs::symlink_metadata(s.dirs().home.join(".cargo")).is_err());
        assert!(s.dirs().tmp.join("w").is_dir());
    }
}
