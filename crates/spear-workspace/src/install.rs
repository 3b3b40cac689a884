//! Putting staged entries into a root: the last step of a writable command, once its changes were
//! judged.
//!
//! The source of an install is a directory fd outside every root (a staging layer, spear's own)
//! and a name in it; the destination is a [`Location`], reached as everything else here is:
//! parents opened one by one beneath the root, no link followed, names acted on with `*at` calls.
//!
//! A file is moved with `renameat` when the layer is on the root's filesystem (the cost of a
//! gigabyte build output is one rename), and otherwise copied into a temporary file beside the
//! destination, synced and renamed into place, so a reader never sees half a file. Either way
//! the entry at the destination is replaced, never written through.
//!
//! Attack stopped: privileges planted on the host. A set-user-ID or set-group-ID bit set inside
//! the sandbox (where `nosuid` makes it inert) would make the file run with its owner's
//! privileges on the host; when spear runs as root, a root-owned set-user-ID program. Every
//! installed entry loses both bits (and overlayfs's own bookkeeping attributes).

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{
    AtFlags, FileType, Mode, OFlags, ResolveFlags, Timespec, Timestamps, fchmod, fstat, openat2,
    renameat, statat, symlinkat, unlinkat, utimensat,
};
use rustix::io::Errno;

use crate::beneath::{fs_error, normal, split_leaf};
use crate::fs::{create_temp, kind_of};
use crate::tree::EntryMeta;
use crate::{EntryKind, FsError, Location, WorkspaceFs};

/// Permission bits an installed entry may keep: everything but set-user-ID and set-group-ID.
pub const INSTALL_MODE_BITS: u32 = 0o1777;

/// Beneath the directory fd, no link at all.
const NO_LINKS: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// How [`WorkspaceFs::install_file`] put a file in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installed {
    /// Renamed from the layer (same filesystem).
    Moved,
    /// Copied (the layer is on another filesystem).
    Copied,
}

impl WorkspaceFs {
    /// What is at `loc`, without following any link (as [`WorkspaceFs::entry_kind`] looks).
    pub fn entry_meta(&self, loc: &Location) -> Result<Option<EntryMeta>, FsError> {
        let err = |e: Errno| fs_error(e, self.label_of(loc));
        let Some((parent, leaf)) = self.parent_nofollow(loc).map_err(err)? else {
            return Ok(None);
        };
        match statat(&parent, leaf, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(EntryMeta::of(&st))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(err(e)),
        }
    }

    /// Puts the regular file `name` of `from` at `loc`, replacing a non-directory there. `loc`'s
    /// parent must exist. The file keeps its content, its mode less set-user-ID and set-group-ID,
    /// and its modification time. A directory at `loc` is [`FsError::IsDirectory`]: the caller
    /// removes it first.
    pub fn install_file(
        &self,
        loc: &Location,
        from: BorrowedFd<'_>,
        name: &OsStr,
    ) -> Result<Installed, FsError> {
        let err = |e: Errno| fs_error(e, self.label_of(loc));
        let (parent, leaf) = self.existing_parent(loc).map_err(err)?;
        self.refuse_dir(&parent, leaf, loc)?;
        let src = openat2(
            from,
            Path::new(name),
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            NO_LINKS,
        )
        .map_err(err)?;
        let st = fstat(&src).map_err(err)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(FsError::Io {
                label: self.label_of(loc),
                source: std::io::Error::other("the staged entry is not a regular file"),
            });
        }
        let mode = st.st_mode & INSTALL_MODE_BITS;
        strip_overlay_attrs(&src);
        match renameat(from, name, &parent, leaf) {
            Ok(()) => {
                if st.st_mode & 0o6000 != 0 {
                    fchmod(&src, Mode::from_raw_mode(mode)).map_err(err)?;
                }
                Ok(Installed::Moved)
            }
            Err(Errno::XDEV) => {
                let times = Timestamps {
                    last_access: Timespec {
                        tv_sec: st.st_atime,
                        tv_nsec: st.st_atime_nsec.try_into().unwrap_or(0),
                    },
                    last_modification: Timespec {
                        tv_sec: st.st_mtime,
                        tv_nsec: st.st_mtime_nsec.try_into().unwrap_or(0),
                    },
                };
                copy_into(&parent, leaf, src, mode, &times).map_err(|e| match e {
                    CopyError::Os(e) => err(e),
                    CopyError::Io(source) => FsError::Io {
                        label: self.label_of(loc),
                        source,
                    },
                })?;
                Ok(Installed::Copied)
            }
            Err(e) => Err(err(e)),
        }
    }

    /// Moves the directory `name` of `from` (a staging layer) to `loc`, where nothing may be:
    /// one rename for a whole new tree. `Ok(false)` when the layer is on another filesystem (the
    /// caller installs entry by entry instead). The caller has judged everything in it.
    pub fn install_tree(
        &self,
        loc: &Location,
        from: BorrowedFd<'_>,
        name: &OsStr,
    ) -> Result<bool, FsError> {
        let err = |e: Errno| fs_error(e, self.label_of(loc));
        let (parent, leaf) = self.existing_parent(loc).map_err(err)?;
        match statat(&parent, leaf, AtFlags::SYMLINK_NOFOLLOW) {
            Err(Errno::NOENT) => {}
            Ok(_) => return Err(err(Errno::EXIST)),
            Err(e) => return Err(err(e)),
        }
        // RENAME_NOREPLACE: something that appeared there meanwhile is never replaced.
        match rustix::fs::renameat_with(
            from,
            name,
            &parent,
            leaf,
            rustix::fs::RenameFlags::NOREPLACE,
        ) {
            Ok(()) => Ok(true),
            Err(Errno::XDEV) => Ok(false),
            Err(e) => Err(err(e)),
        }
    }

    /// Removes overlayfs's attributes from the directory at `loc` (a directory moved in whole
    /// from a layer carries the layer's `overlay.opaque`). Best effort.
    pub fn strip_layer_attrs(&self, loc: &Location) {
        let Some(root) = self.root_fds.get(loc.root) else {
            return;
        };
        let rel = if loc.rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &loc.rel
        };
        if let Ok(fd) = openat2(
            root,
            rel,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            NO_LINKS,
        ) {
            strip_overlay_attrs(&fd);
        }
    }

    /// Puts a symbolic link to `target` at `loc` (made under a temporary name and renamed over a
    /// non-directory there). `loc`'s parent must exist.
    pub fn install_symlink(&self, loc: &Location, target: &OsStr) -> Result<(), FsError> {
        let err = |e: Errno| fs_error(e, self.label_of(loc));
        let (parent, leaf) = self.existing_parent(loc).map_err(err)?;
        self.refuse_dir(&parent, leaf, loc)?;
        let mut last = Errno::EXIST;
        for _ in 0..16 {
            let mut random = [0u8; 8];
            rustix::rand::getrandom(&mut random, rustix::rand::GetRandomFlags::empty())
                .map_err(err)?;
            let temp = format!(".spear-link-{:016x}", u64::from_le_bytes(random));
            match symlinkat(target, &parent, temp.as_str()) {
                Ok(()) => {
                    return renameat(&parent, temp.as_str(), &parent, leaf).map_err(|e| {
                        let _ = unlinkat(&parent, temp.as_str(), AtFlags::empty());
                        err(e)
                    });
                }
                Err(Errno::EXIST) => last = Errno::EXIST,
                Err(e) => return Err(err(e)),
            }
        }
        Err(err(last))
    }

    /// Makes the directory `loc` (its parent must exist) with `mode` less set-user-ID and
    /// set-group-ID, or gives an existing one that mode. A non-directory there is
    /// [`FsError::NotDirectory`]: the caller removes it first.
    pub fn install_dir(&self, loc: &Location, mode: u32) -> Result<(), FsError> {
        let err = |e: Errno| fs_error(e, self.label_of(loc));
        let (parent, leaf) = self.existing_parent(loc).map_err(err)?;
        let mode = Mode::from_raw_mode(mode & INSTALL_MODE_BITS);
        match rustix::fs::mkdirat(&parent, leaf, mode) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(err(e)),
        }
        let dir = openat2(
            &parent,
            Path::new(leaf),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            NO_LINKS,
        )
        .map_err(err)?;
        // mkdirat applied the umask; the staged mode is what the command asked for.
        fchmod(&dir, mode).map_err(err)
    }

    /// Gives the file or directory at `loc` `mode` (less set-user-ID and set-group-ID); a link is
    /// left as it is.
    pub fn set_mode(&self, loc: &Location, mode: u32) -> Result<(), FsError> {
        let err = |e: Errno| fs_error(e, self.label_of(loc));
        let (parent, leaf) = self.existing_parent(loc).map_err(err)?;
        let fd = openat2(
            &parent,
            Path::new(leaf),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            NO_LINKS,
        )
        .map_err(err)?;
        if kind_of(FileType::from_raw_mode(fstat(&fd).map_err(err)?.st_mode)) == EntryKind::Symlink
        {
            return Ok(());
        }
        rustix::fs::chmodat(
            &parent,
            leaf,
            Mode::from_raw_mode(mode & INSTALL_MODE_BITS),
            AtFlags::empty(),
        )
        .map_err(err)
    }

    /// Flushes the file or directory at `loc` to the disk (`fsync`), a link's parent instead.
    pub fn sync(&self, loc: &Location) -> Result<(), FsError> {
        let err = |e: Errno| fs_error(e, self.label_of(loc));
        let root = self
            .root_fds
            .get(loc.root)
            .map(AsFd::as_fd)
            .ok_or_else(|| err(Errno::INVAL))?;
        let rel = if loc.rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &loc.rel
        };
        let fd = match openat2(
            root,
            rel,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            NO_LINKS,
        ) {
            Ok(fd) => fd,
            // A link (or something that is not a file): nothing of its own to flush.
            Err(Errno::LOOP | Errno::NXIO) => return Ok(()),
            Err(e) => return Err(err(e)),
        };
        rustix::fs::fsync(&fd).map_err(err)
    }

    /// Sets the modification time of the entry at `loc` (a link's own, never its target's).
    pub fn set_mtime(&self, loc: &Location, sec: i64, nsec: i64) -> Result<(), FsError> {
        let err = |e: Errno| fs_error(e, self.label_of(loc));
        let (parent, leaf) = self.existing_parent(loc).map_err(err)?;
        let omit = Timespec {
            tv_sec: 0,
            tv_nsec: rustix::fs::UTIME_OMIT,
        };
        let times = Timestamps {
            last_access: omit,
            last_modification: Timespec {
                tv_sec: sec,
                tv_nsec: nsec,
            },
        };
        utimensat(&parent, leaf, &times, AtFlags::SYMLINK_NOFOLLOW).map_err(err)
    }

    /// Errs with [`FsError::IsDirectory`] when a directory is at `leaf`.
    fn refuse_dir(&self, parent: &OwnedFd, leaf: &OsStr, loc: &Location) -> Result<(), FsError> {
        match statat(parent, leaf, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
                Err(FsError::IsDirectory {
                    label: self.label_of(loc),
                })
            }
            Ok(_) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(fs_error(e, self.label_of(loc))),
        }
    }

    /// The parent of `loc`, which must exist, opened without following any link, and the leaf.
    fn existing_parent<'l>(&self, loc: &'l Location) -> Result<(OwnedFd, &'l OsStr), Errno> {
        match self.parent_nofollow(loc)? {
            Some(found) => Ok(found),
            None => Err(Errno::NOENT),
        }
    }

    /// The parent of `loc` opened without following any link; `None` when a component on the
    /// way is missing, not a directory, or a link. The root itself has no parent (`EISDIR`).
    fn parent_nofollow<'l>(
        &self,
        loc: &'l Location,
    ) -> Result<Option<(OwnedFd, &'l OsStr)>, Errno> {
        let root = self
            .root_fds
            .get(loc.root)
            .map(AsFd::as_fd)
            .ok_or(Errno::INVAL)?;
        let Some((parent_rel, leaf)) = split_leaf(&loc.rel)? else {
            return Err(Errno::ISDIR);
        };
        let mut current = openat2(
            root,
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            NO_LINKS,
        )?;
        for component in parent_rel.components() {
            let name = normal(component)?;
            match openat2(
                &current,
                Path::new(name),
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
                NO_LINKS,
            ) {
                Ok(next) => current = next,
                Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Ok(Some((current, leaf)))
    }

    /// The audit label of `loc`.
    pub(crate) fn label_of(&self, loc: &Location) -> String {
        let name = if loc.root == 0 {
            None
        } else {
            Some(self.labels.get(loc.root).map_or("?", String::as_str))
        };
        crate::label::format_label(name, &loc.rel)
    }
}

/// Copies the open file `src` to a temporary file in `parent`, gives it `mode` and `times`,
/// syncs it and renames it over `leaf`.
fn copy_into(
    parent: &OwnedFd,
    leaf: &OsStr,
    src: OwnedFd,
    mode: u32,
    times: &Timestamps,
) -> Result<(), CopyError> {
    let (temp_name, temp) = create_temp(parent.as_fd(), false).map_err(CopyError::Os)?;
    let filled = (|| {
        fchmod(&temp, Mode::from_raw_mode(mode)).map_err(CopyError::Os)?;
        let mut out = File::from(temp);
        std::io::copy(&mut File::from(src), &mut out).map_err(CopyError::Io)?;
        rustix::fs::futimens(&out, times).map_err(CopyError::Os)?;
        out.sync_all().map_err(CopyError::Io)?;
        renameat(parent, temp_name.as_str(), parent, leaf).map_err(CopyError::Os)
    })();
    if filled.is_err() {
        let _ = unlinkat(parent, temp_name.as_str(), AtFlags::empty());
    }
    filled
}

/// Why a copy failed.
enum CopyError {
    Os(Errno),
    Io(std::io::Error),
}

/// Removes overlayfs's attributes (`trusted.overlay.*`, `user.overlay.*`) from a file about to
/// leave its layer: they describe the layer, not the file. Best effort: they are inert outside an
/// overlay.
fn strip_overlay_attrs(fd: &OwnedFd) {
    let mut names = vec![0u8; 4096];
    let Ok(n) = rustix::fs::flistxattr(fd, &mut names) else {
        return;
    };
    for name in names[..n.min(names.len())].split(|b| *b == 0) {
        let ours = name.starts_with(b"trusted.overlay.") || name.starts_with(b"user.overlay.");
        if ours && let Ok(name) = std::ffi::CStr::from_bytes_with_nul(&[name, b"\0"].concat()) {
            let _ = rustix::fs::fremovexattr(fd, name);
        }
    }
}
