//! Opening beneath a directory fd with `openat2`, and what the kernel's answers mean.
//!
//! Every open here is `openat2(dirfd, rel, ..., RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`:
//! - `RESOLVE_BENEATH` stops a symlink or `..` swapped in after [`crate::Workspace::resolve`] from
//!   leading above the directory fd (the kernel answers `EXDEV`);
//! - `RESOLVE_NO_MAGICLINKS` stops `/proc/<pid>/fd/N`-style links, which jump anywhere regardless
//!   of the path (the kernel answers `ELOOP`).
//!
//! There is no fallback to plain `openat`: a kernel without `openat2` (`ENOSYS`) is an error.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};

use rustix::fs::{CWD, Mode, OFlags, ResolveFlags, mkdirat, openat2};
use rustix::io::Errno;

use crate::FsError;

/// The resolve flags of every open under a root.
const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

/// Mode of the directories `write` creates (less the umask).
const DIR_MODE: u32 = 0o755;

/// Opens `rel` beneath `dir`; the empty path opens `dir` itself. `O_CLOEXEC` is always added.
pub(crate) fn open_beneath(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Errno> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    openat2(dir, rel, flags | OFlags::CLOEXEC, mode, BENEATH)
}

/// Opens a root's canonical host path as an `O_PATH` directory fd.
///
/// Attack: an ancestor of the root replaced by a symlink after the workspace was opened would
/// move the root elsewhere; the canonical path has no symlinks, so any symlink met, the root's own
/// name included, is refused (`RESOLVE_NO_SYMLINKS`: `ELOOP`, which reads as an escape).
pub(crate) fn open_root(host_path: &Path) -> Result<OwnedFd, Errno> {
    openat2(
        CWD,
        host_path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )
}

/// Opens the directory `rel` under `root` as an `O_PATH` fd, one component at a time, each beneath
/// the one before; with `create`, a missing component is made with `mkdirat` and then opened the
/// same way. Only normal components are accepted.
pub(crate) fn open_dir_chain(
    root: BorrowedFd<'_>,
    rel: &Path,
    create: bool,
) -> Result<OwnedFd, Errno> {
    let dir_flags = OFlags::PATH | OFlags::DIRECTORY;
    let mut current = open_beneath(root, Path::new(""), dir_flags, Mode::empty())?;
    for component in rel.components() {
        let name = normal(component)?;
        let next = match open_beneath(current.as_fd(), Path::new(name), dir_flags, Mode::empty()) {
            Err(Errno::NOENT) if create => {
                // mkdirat never follows a link at `name`; if something appeared there meanwhile
                // (EEXIST), the open below decides, still beneath `current`.
                match mkdirat(&current, name, Mode::from_raw_mode(DIR_MODE)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(e),
                }
                open_beneath(current.as_fd(), Path::new(name), dir_flags, Mode::empty())?
            }
            other => other?,
        };
        current = next;
    }
    Ok(current)
}

/// The name of a normal component. Attack: a hand-built [`crate::Location`] holding `..` or an
/// absolute path; the kernel would refuse it too (`EXDEV`), this refuses it first.
pub(crate) fn normal(component: Component<'_>) -> Result<&OsStr, Errno> {
    match component {
        Component::Normal(name) => Ok(name),
        _ => Err(Errno::XDEV),
    }
}

/// Splits a location's relative path into its parent and its leaf name. `None` for the root itself.
pub(crate) fn split_leaf(rel: &Path) -> Result<Option<(&Path, &OsStr)>, Errno> {
    for component in rel.components() {
        normal(component)?;
    }
    Ok(match (rel.parent(), rel.file_name()) {
        (Some(parent), Some(leaf)) => Some((parent, leaf)),
        _ => None,
    })
}

/// What an errno from an operation on `label` means.
pub(crate) fn fs_error(errno: Errno, label: String) -> FsError {
    match errno {
        // Fail closed: never fall back to an open that does not stay beneath the root.
        Errno::NOSYS => FsError::Openat2Unavailable,
        // EXDEV: the path left the root (a link or `..` swapped in); ELOOP: a magic link, or a
        // symlink where none may be.
        Errno::XDEV | Errno::LOOP => FsError::Escape { label },
        Errno::NOENT => FsError::NotFound { label },
        Errno::ISDIR => FsError::IsDirectory { label },
        Errno::NOTDIR => FsError::NotDirectory { label },
        other => FsError::Io {
            label,
            source: other.into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn fs_error_table() {
        let l = || "a/b".to_owned();
        assert!(matches!(
            fs_error(Errno::NOSYS, l()),
            FsError::Openat2Unavailable
        ));
        assert!(matches!(fs_error(Errno::XDEV, l()), FsError::Escape { label } if label == "a/b"));
        assert!(matches!(fs_error(Errno::LOOP, l()), FsError::Escape { .. }));
        assert!(matches!(
            fs_error(Errno::NOENT, l()),
            FsError::NotFound { .. }
        ));
        assert!(matches!(
            fs_error(Errno::ISDIR, l()),
            FsError::IsDirectory { .. }
        ));
        assert!(matches!(
            fs_error(Errno::NOTDIR, l()),
            FsError::NotDirectory { .. }
        ));
        assert!(matches!(fs_error(Errno::ACCESS, l()), FsError::Io { .. }));
    }

    #[test]
    fn split_leaf_table() {
        type Split<'a> = Option<Option<(&'a str, &'a str)>>;
        let cases: &[(&str, Split<'_>)] = &[
            ("", Some(None)),
            ("a", Some(Some(("", "a")))),
            ("a/b/c", Some(Some(("a/b", "c")))),
            ("../x", None),
            ("a/../x", None),
            ("/etc/passwd", None),
            ("./a", None),
        ];
        for (rel, want) in cases {
            let got = split_leaf(Path::new(rel))
                .ok()
                .map(|o| o.map(|(p, l)| (p.to_path_buf(), l.to_os_string())));
            let want = want.map(|o| o.map(|(p, l)| (PathBuf::from(p), l.into())));
            assert_eq!(got, want, "{rel}");
        }
    }
}
