//! Copies entries out of a tree (the template, or a session's view of it) into spear's own
//! directories, for the patch's two small trees and for a kept session's tree.
//!
//! Attack stopped: a session replacing a directory of its view with a link (`src -> /etc`) so
//! that copying `src/passwd` for its patch reads the host's file into the patch. The path to an
//! entry is resolved beneath the tree's root with openat2 `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS`, and below it every entry is opened relative to its directory's
//! descriptor with `O_NOFOLLOW`: a link is copied as a link, never followed, and an entry under a
//! link does not exist on that side.
//!
//! What is copied: directories, regular files (contents and permission bits, made readable by
//! the owner so that git can read them) and links; fifos, sockets and devices are not (git keeps
//! none of them). `.git` entries are left out where asked (a repository's own files are not in a
//! patch).

use std::ffi::{CStr, OsStr};
use std::fs::{File, Permissions};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};

/// Whether `.git` entries are copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GitEntries {
    /// Left out.
    Skip,
    /// Copied like any other.
    Copy,
}

/// The directory `path`, open for reading entries beneath it (no link followed).
pub(super) fn open_root(path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Copies the entry `rel` of the tree open at `root` to `dst` (its parent must exist; `dst`
/// must not). An entry that does not exist on this side (or lies beneath a link) copies nothing.
pub(super) fn copy_out(root: &OwnedFd, rel: &Path, dst: &Path, git: GitEntries) -> io::Result<()> {
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return Err(io::Error::other("not a relative path to an entry"));
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let dir = match rustix::fs::openat2(
        root,
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    ) {
        Ok(dir) => dir,
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP) => {
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let name = std::ffi::CString::new(name.as_bytes())
        .map_err(|_| io::Error::other("a name holds a NUL byte"))?;
    copy_at(&dir, &name, dst, git)
}

/// Copies every entry of the tree open at `root` into the directory `dst` (which must exist).
pub(super) fn copy_children(root: &OwnedFd, dst: &Path, git: GitEntries) -> io::Result<()> {
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(root)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == c"." || name == c".." || (git == GitEntries::Skip && name == c".git") {
            continue;
        }
        names.push(name.to_owned());
    }
    for name in names {
        copy_at(
            root,
            &name,
            &dst.join(OsStr::from_bytes(name.as_bytes())),
            git,
        )?;
    }
    Ok(())
}

/// Copies the entry `name` of the directory open at `dir` to `dst`, not following it.
fn copy_at(dir: &OwnedFd, name: &CStr, dst: &Path, git: GitEntries) -> io::Result<()> {
    let stat = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(rustix::io::Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let bits = stat.st_mode & 0o777;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::Directory => {
            std::fs::DirBuilder::new().mode(0o700).create(dst)?;
            let sub = rustix::fs::openat(
                dir,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            copy_children(&sub, dst, git)?;
            std::fs::set_permissions(dst, Permissions::from_mode(bits | 0o700))
        }
        FileType::RegularFile => {
            let from = rustix::fs::openat(
                dir,
                name,
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let mut from = File::from(from);
            let mut to = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(dst)?;
            io::copy(&mut from, &mut to)?;
            to.set_permissions(Permissions::from_mode(bits | 0o400))
        }
        FileType::Symlink => {
            let target = rustix::fs::readlinkat(dir, name, Vec::new())?;
            std::os::unix::fs::symlink(OsStr::from_bytes(target.as_bytes()), dst)
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link in the path to an entry is never followed: the entry does not exist on that side.
    #[test]
    fn nothing_is_read_through_a_link() {
        let t = tempfile::tempdir().unwrap();
        let (tree, out, secret) = (
            t.path().join("tree"),
            t.path().join("out"),
            t.path().join("secret"),
        );
        std::fs::create_dir_all(&secret).unwrap();
        std::fs::write(secret.join("key"), b"k").unwrap();
        std::fs::create_dir_all(tree.join("d")).unwrap();
        std::fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink(&secret, tree.join("d/link")).unwrap();
        std::fs::write(tree.join("d/f"), b"x").unwrap();
        let root = open_root(&tree).unwrap();
        copy_out(
            &root,
            Path::new("d/link/key"),
            &out.join("key"),
            GitEntries::Skip,
        )
        .unwrap();
        assert!(
            std::fs::symlink_metadata(out.join("key")).is_err(),
            "read through a link"
        );
        copy_out(&root, Path::new("d"), &out.join("d"), GitEntries::Skip).unwrap();
        assert_eq!(std::fs::read_link(out.join("d/link")).unwrap(), secret);
        assert_eq!(std::fs::read(out.join("d/f")).unwrap(), b"x");
    }
}
