//! What a look at a tree records, in this process and on disk: the change stamps of directories
//! and files, what each directory holds that a sandbox masks, and the bounds they are judged by.

use std::ffi::{OsStr, OsString};
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Bytes of a configuration file that are judged; a larger file is masked unread.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// A change stamp this close to the moment it was taken is looked at again next time.
pub const RACY: Duration = Duration::from_secs(2);

/// What identifies a directory's or a file's state: a change of content, entries, owner or mode
/// moves its ctime, a replacement its inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    pub(super) dev: u64,
    pub(super) ino: u64,
    pub(super) ctime: i64,
    pub(super) ctime_ns: i64,
    pub(super) size: u64,
    /// Taken within [`RACY`] of its ctime: not trusted.
    pub(super) racy: bool,
}

impl Stamp {
    pub(super) fn of(meta: &Metadata, now: SystemTime) -> Self {
        let changed = UNIX_EPOCH
            + Duration::new(
                u64::try_from(meta.ctime()).unwrap_or(0),
                u32::try_from(meta.ctime_nsec()).unwrap_or(0),
            );
        let racy = now.duration_since(changed).map_or(true, |age| age < RACY);
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            ctime: meta.ctime(),
            ctime_ns: meta.ctime_nsec(),
            size: meta.size(),
            racy,
        }
    }

    /// Whether `now` (a fresh stamp) says nothing changed since `self` was taken.
    pub(super) fn holds(&self, now: &Stamp) -> bool {
        !self.racy
            && (self.dev, self.ino, self.ctime, self.ctime_ns, self.size)
                == (now.dev, now.ino, now.ctime, now.ctime_ns, now.size)
    }

    /// Whether `now` is the same directory or file (not one put in its place).
    pub(super) fn same_inode(&self, now: &Stamp) -> bool {
        (self.dev, self.ino) == (now.dev, now.ino)
    }
}

/// An entry of a directory that the sandbox masks, or may mask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Found {
    /// A credential store: a file, or a directory (not looked into).
    Store { name: OsString, dir: bool },
    /// A configuration file, with the stamp it was judged at and the verdict.
    Config {
        name: OsString,
        stamp: Stamp,
        secret: bool,
    },
    /// A link with a credential name, followed whenever masks are made.
    Link { name: OsString },
}

impl Found {
    pub(super) fn name(&self) -> &OsStr {
        match self {
            Found::Store { name, .. } | Found::Config { name, .. } | Found::Link { name } => name,
        }
    }
}

/// One directory of a tree as it was looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DirScan {
    pub(super) path: PathBuf,
    pub(super) stamp: Stamp,
    pub(super) found: Vec<Found>,
}

/// Every directory of one bound tree, with what each holds that the sandbox masks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TreeScan {
    pub(super) root: PathBuf,
    /// The workspace roots inside the tree, left out of it (the project is not the tree's).
    pub(super) skipped: Vec<PathBuf>,
    pub(super) dirs: Vec<DirScan>,
}
