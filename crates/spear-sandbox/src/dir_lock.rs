//! A directory's liveness as a lock: the one mechanism behind every directory spear keeps for a
//! live process and sweeps once that process is gone (a session's area and a command's staging
//! layers in spear-runtime, every cgroup spear makes here).
//!
//! The owner holds an exclusive `flock` on the directory itself from just after making it until
//! it has removed it; a sweep removes a directory only while it holds that lock itself. A lock
//! lives on the open file, so it holds across PID namespaces, user namespaces and containers
//! sharing the directory, and the kernel drops it when the owner dies, however it dies.
//!
//! Attack stopped (and accident): a spear in another PID namespace (a container, `unshare
//! --pid`), which cannot see the owner's pid in its `/proc`, removing a live session's `/tmp`, a
//! running command's staging layer or an empty session cgroup between two commands. A pid was
//! the wrong witness inside one namespace too: reused by another process, it kept a dead owner's
//! directory forever.
//!
//! The order that makes the check sound: the owner makes the directory, opens it, locks it, and
//! then checks that the path still names the directory it locked ([`hold_made`]). A sweep that
//! took the lock in between (and removed the directory) is seen there; a sweep that comes later
//! finds it locked ([`take_free`]).

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};

/// What locking a directory one has just made found.
#[derive(Debug)]
pub enum Held {
    /// Locked, and the path still names it: it is the caller's until the descriptor closes.
    Locked(OwnedFd),
    /// A sweep removed it between its making and its locking: make another.
    Gone,
    /// The filesystem refused the lock (a directory on NFS, some FUSE filesystems): no sweep can
    /// take one either, so none removes it.
    NoLock(OwnedFd, io::Error),
}

/// Opens and locks the directory the caller has just made at `path` (waiting for a sweep that
/// holds it to finish), and checks that the path still names it.
pub fn hold_made(path: &Path) -> io::Result<Held> {
    let dir = match open_dir(path) {
        Ok(dir) => dir,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Held::Gone),
        Err(e) => return Err(e),
    };
    let locked = rustix::fs::flock(&dir, FlockOperation::LockExclusive);
    if !still_names(path, &dir) {
        return Ok(Held::Gone);
    }
    Ok(match locked {
        Ok(()) => Held::Locked(dir),
        Err(e) => Held::NoLock(dir, e.into()),
    })
}

/// For a sweep: the directory at `path`, locked by the caller, when no process holds it (its
/// owner is gone); `None` when one does (its owner lives, in whatever namespace) or when it
/// cannot be told. Keep the descriptor while removing the directory.
pub fn take_free(path: &Path) -> Option<OwnedFd> {
    let dir = open_dir(path).ok()?;
    rustix::fs::flock(&dir, FlockOperation::NonBlockingLockExclusive).ok()?;
    still_names(path, &dir).then_some(dir)
}

/// Whether `path` (no link followed) is the directory open at `dir`.
fn still_names(path: &Path, dir: &OwnedFd) -> bool {
    match (
        rustix::fs::statat(rustix::fs::CWD, path, AtFlags::SYMLINK_NOFOLLOW),
        rustix::fs::fstat(dir),
    ) {
        (Ok(now), Ok(held)) => now.st_dev == held.st_dev && now.st_ino == held.st_ino,
        _ => false,
    }
}

/// The directory `path`, open (no link followed).
fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A held directory is not free; once its holder closes it, it is (and the sweep's lock
    /// then keeps another sweep out).
    #[test]
    fn a_held_directory_is_never_free() {
        let base = tempfile::tempdir().unwrap();
        let path = base.path().join("d");
        std::fs::create_dir(&path).unwrap();
        let Held::Locked(held) = hold_made(&path).unwrap() else {
            panic!("not locked")
        };
        assert!(take_free(&path).is_none(), "a held directory was free");
        drop(held);
        let sweep = take_free(&path).expect("free once its holder is gone");
        assert!(take_free(&path).is_none(), "two sweeps at once");
        drop(sweep);
    }

    /// A directory removed and made again under the same name (what a sweep between the
    /// owner's making and locking would leave) is not the one the owner holds: `Gone`.
    #[test]
    fn the_owner_sees_a_directory_swept_before_its_lock() {
        let base = tempfile::tempdir().unwrap();
        let path = base.path().join("d");
        std::fs::create_dir(&path).unwrap();
        let dir = open_dir(&path).unwrap();
        assert!(still_names(&path, &dir));
        std::fs::remove_dir(&path).unwrap();
        assert!(!still_names(&path, &dir));
        assert!(matches!(hold_made(&path).unwrap(), Held::Gone));
        std::fs::create_dir(&path).unwrap();
        assert!(!still_names(&path, &dir));
    }
}
