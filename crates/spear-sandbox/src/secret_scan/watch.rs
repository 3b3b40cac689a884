//! The inotify watch of a tree's directories, for a long-lived process: what changed since the
//! last look, without a stat of every directory.
//!
//! A directory's watch reports an entry created, deleted, moved in or out, and a file in it
//! written, closed after writing or changed in its attributes: everything that can make a new
//! credential file appear there or a configuration file hold a token. A lost event (the queue
//! overflowed) or a watch that could not be added (the user's limit of watches) is never
//! guessed around: the look falls back to every directory's stamp, and a broken watcher is
//! dropped.
//!
//! Watches are the user's to share with every program (editors watch their projects): a process
//! takes at most a quarter of the user's limit (`/proc/sys/fs/inotify/max_user_watches`), and a
//! tree that would take more is not watched (its looks check stamps instead).

use std::collections::{HashMap, HashSet};
use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustix::fd::OwnedFd;
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

/// The directories of one tree, each watched.
#[derive(Debug)]
pub(super) struct Watcher {
    fd: OwnedFd,
    dirs: HashMap<i32, PathBuf>,
    by_path: HashMap<PathBuf, i32>,
    broken: bool,
}

/// Watches this process holds, all trees together.
static HELD: AtomicUsize = AtomicUsize::new(0);

/// The most watches this process takes: a quarter of the user's limit.
fn budget() -> usize {
    static BUDGET: OnceLock<usize> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .map_or(2048, |max| max / 4)
    })
}

/// Takes one watch from the process's budget; `false` when it is spent.
fn take_one() -> bool {
    HELD.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
        (held < budget()).then_some(held + 1)
    })
    .is_ok()
}

/// Gives `n` watches back to the process's budget.
fn give_back(n: usize) {
    let _ = HELD.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
        Some(held.saturating_sub(n))
    });
}

/// What a directory's watch reports.
fn flags() -> WatchFlags {
    WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::MODIFY
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::ATTRIB
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
        | WatchFlags::DONT_FOLLOW
        | WatchFlags::EXCL_UNLINK
}

impl Watcher {
    /// A new watcher with nothing watched; `None` when inotify is not available.
    pub(super) fn new() -> Option<Self> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
        Some(Watcher {
            fd,
            dirs: HashMap::new(),
            by_path: HashMap::new(),
            broken: false,
        })
    }

    /// Watches `dir` (again: the same directory keeps its watch), following it when it is a link
    /// only when it is the tree's root (`root`). A failure breaks the watcher.
    pub(super) fn add(&mut self, dir: &Path, root: bool) {
        if self.broken {
            return;
        }
        let flags = if root {
            flags() - WatchFlags::DONT_FOLLOW
        } else {
            flags()
        };
        if self.by_path.contains_key(dir) {
            // Watched already: the kernel keeps its watch (and its number).
            let _ = inotify::add_watch(&self.fd, dir, flags);
            return;
        }
        if !take_one() {
            self.broken = true;
            return;
        }
        match inotify::add_watch(&self.fd, dir, flags) {
            Ok(wd) => {
                // The same directory under a new name (renamed): one watch still.
                if let Some(old) = self.dirs.insert(wd, dir.to_path_buf()) {
                    self.by_path.remove(&old);
                    give_back(1);
                }
                self.by_path.insert(dir.to_path_buf(), wd);
            }
            // Gone since it was listed: its parent's events say so.
            Err(Errno::NOENT | Errno::NOTDIR) => give_back(1),
            Err(_) => {
                give_back(1);
                self.broken = true;
            }
        }
    }

    /// Stops watching `dir`, forgotten by the scan (gone, or replaced).
    pub(super) fn forget(&mut self, dir: &Path) {
        if let Some(wd) = self.by_path.remove(dir) {
            self.dirs.remove(&wd);
            let _ = inotify::remove_watch(&self.fd, wd);
            give_back(1);
        }
    }

    /// Whether a watch could not be added: some directory may be unwatched.
    pub(super) fn broken(&self) -> bool {
        self.broken
    }

    /// The directories of the tree at `root` that had events since the last call. `None` when
    /// events were lost, the root itself went, or the watcher is broken: every stamp must be
    /// checked.
    pub(super) fn drain(&mut self, root: &Path) -> Option<HashSet<PathBuf>> {
        if self.broken {
            return None;
        }
        let mut changed = HashSet::new();
        let mut buf = vec![MaybeUninit::<u8>::uninit(); 64 << 10];
        let mut reader = inotify::Reader::new(&self.fd, &mut buf);
        let mut lost = false;
        loop {
            let event = match reader.next() {
                Ok(e) => e,
                Err(Errno::WOULDBLOCK) => break,
                Err(_) => return None,
            };
            let what = event.events();
            if what.contains(ReadFlags::QUEUE_OVERFLOW) {
                lost = true;
                continue;
            }
            let Some(dir) = self.dirs.get(&event.wd()).cloned() else {
                continue;
            };
            if what.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF | ReadFlags::IGNORED) {
                if dir == root {
                    lost = true;
                }
                if what.contains(ReadFlags::IGNORED) {
                    self.dirs.remove(&event.wd());
                    self.by_path.remove(&dir);
                    give_back(1);
                }
                // Its parent has an event of its own (the entry deleted or moved).
                if let Some(parent) = dir.parent() {
                    changed.insert(parent.to_path_buf());
                }
                continue;
            }
            changed.insert(dir);
        }
        (!lost).then_some(changed)
    }
}

impl Drop for Watcher {
    /// Its watches go with its descriptor: they are the budget's again.
    fn drop(&mut self) {
        give_back(self.dirs.len());
    }
}
