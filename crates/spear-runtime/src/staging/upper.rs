//! Reading an overlay's upper layer: what a command wrote, as a tree.
//!
//! The layer is spear's own directory, but every name and link in it was chosen by the command:
//! it is read like untrusted input. Each directory is opened beneath the one before with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, no link is followed, and the walk is bounded
//! in depth and entries (a bound reached fails the commit closed: nothing is committed).
//!
//! What overlayfs leaves there, and what it means (redirects, the index and metacopy are off, so
//! nothing else can appear):
//! - a character device 0:0 is a whiteout: the entry below was removed;
//! - a directory with the mount's own `overlay.opaque` attribute replaces the one below (what it
//!   does not hold was removed); one without it is merged with the one below. Only the namespace
//!   the mount uses counts ([`spear_sandbox::opaque_xattr`]): the other one is an ordinary
//!   attribute the command may have set, and the command's view ignored it;
//! - a file, a link or a directory is what the command left at that path.

use std::collections::BTreeMap;
use std::ffi::{CStr, OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, ResolveFlags, openat2, statat};
use rustix::io::Errno;

/// How deep the walk of a layer goes.
const MAX_DEPTH: usize = 512;

/// Beneath, and no link at all.
const NO_LINKS: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// One entry of an upper layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Staged {
    /// The entry below was removed.
    Whiteout,
    /// A directory.
    Dir {
        /// Permission bits (`0o7777`).
        mode: u32,
        /// Whether it replaces the directory below rather than merging with it.
        opaque: bool,
        /// What the command left in it.
        children: BTreeMap<OsString, Staged>,
    },
    /// A regular file.
    File {
        /// Permission bits (`0o7777`).
        mode: u32,
        /// Size in bytes.
        size: u64,
        /// Modification time (seconds, nanoseconds).
        mtime: (i64, i64),
    },
    /// A symbolic link, with its target as written.
    Symlink {
        /// The target.
        target: OsString,
    },
    /// A fifo, socket or device: never committed.
    Special,
}

/// Why a layer could not be read.
#[derive(Debug, thiserror::Error)]
pub enum UpperError {
    /// The kernel refused at `rel`.
    #[error("the staged writes could not be read at `{}`: {source}", .rel.display())]
    Os {
        /// Where.
        rel: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A bound was reached.
    #[error("the staged writes are more than {0}; nothing of them was committed")]
    Limit(String),
}

/// Reads the layer open at `upper` (its root directory), a directory being opaque when it carries
/// `opaque_xattr` with the value `y` (the mount's own name, [`spear_sandbox::opaque_xattr`]). At
/// most `max_entries` entries.
pub fn read_layer(
    upper: BorrowedFd<'_>,
    max_entries: usize,
    opaque_xattr: &CStr,
) -> Result<Staged, UpperError> {
    let mut walk = Walk {
        seen: 0,
        max: max_entries,
        opaque_xattr,
    };
    let top = openat2(
        upper,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        NO_LINKS,
    )
    .map_err(os(Path::new("")))?;
    let st = rustix::fs::fstat(&top).map_err(os(Path::new("")))?;
    walk.dir(&top, Path::new(""), st.st_mode & 0o7777, 0)
}

/// One walk of a layer: its bound and what marks a directory opaque.
struct Walk<'a> {
    seen: usize,
    max: usize,
    opaque_xattr: &'a CStr,
}

fn os(rel: &Path) -> impl Fn(Errno) -> UpperError + '_ {
    move |e| UpperError::Os {
        rel: rel.to_path_buf(),
        source: e.into(),
    }
}

impl Walk<'_> {
    fn dir(
        &mut self,
        fd: &OwnedFd,
        rel: &Path,
        mode: u32,
        depth: usize,
    ) -> Result<Staged, UpperError> {
        if depth > MAX_DEPTH {
            return Err(UpperError::Limit(format!("{MAX_DEPTH} directories deep")));
        }
        let opaque = is_opaque(fd, self.opaque_xattr);
        let mut names = Vec::new();
        {
            let mut dir = Dir::read_from(fd).map_err(os(rel))?;
            while let Some(entry) = dir.read() {
                let entry = entry.map_err(os(rel))?;
                let name = entry.file_name().to_bytes();
                if name != b"." && name != b".." {
                    names.push(OsStr::from_bytes(name).to_os_string());
                }
            }
        }
        let mut children = BTreeMap::new();
        for name in names {
            self.seen += 1;
            if self.seen > self.max {
                return Err(UpperError::Limit(format!("{} entries", self.max)));
            }
            let child_rel = rel.join(&name);
            let st = match statat(fd, &*name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => st,
                Err(Errno::NOENT) => continue,
                Err(e) => return Err(os(&child_rel)(e)),
            };
            let staged = match FileType::from_raw_mode(st.st_mode) {
                FileType::CharacterDevice if st.st_rdev == 0 => Staged::Whiteout,
                FileType::RegularFile => Staged::File {
                    mode: st.st_mode & 0o7777,
                    size: u64::try_from(st.st_size).unwrap_or(0),
                    mtime: (st.st_mtime, i64::try_from(st.st_mtime_nsec).unwrap_or(0)),
                },
                FileType::Symlink => {
                    let target =
                        rustix::fs::readlinkat(fd, &*name, Vec::new()).map_err(os(&child_rel))?;
                    Staged::Symlink {
                        target: OsStr::from_bytes(target.as_bytes()).to_os_string(),
                    }
                }
                FileType::Directory => {
                    let child = openat2(
                        fd,
                        Path::new(&name),
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                        Mode::empty(),
                        NO_LINKS,
                    )
                    .map_err(os(&child_rel))?;
                    self.dir(&child, &child_rel, st.st_mode & 0o7777, depth + 1)?
                }
                _ => Staged::Special,
            };
            children.insert(name, staged);
        }
        Ok(Staged::Dir {
            mode,
            opaque,
            children,
        })
    }
}

/// Whether overlayfs marked the directory opaque: `name` (the mount's own attribute) is `y`.
/// Any other value (overlayfs's `x`, a directory merely holding such markers) or any other name
/// is not.
fn is_opaque(fd: &OwnedFd, name: &CStr) -> bool {
    let mut value = [0u8; 4];
    matches!(rustix::fs::fgetxattr(fd, name, &mut value), Ok(1) if value[0] == b'y')
}

/// Opens the directory `rel` of the layer open at `upper` (as `O_PATH`), without following links.
pub fn open_layer_dir(upper: BorrowedFd<'_>, rel: &Path) -> Result<OwnedFd, Errno> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    openat2(
        upper.as_fd(),
        rel,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        NO_LINKS,
    )
}
