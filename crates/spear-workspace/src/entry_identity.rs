//! The identity of an entry (device, inode, kind), read without following any link: what an
//! approval binds, so that a directory or file swapped after the approval is seen.
//!
//! Attack: a command approved in `sub/` while `sub` is a directory, then `sub` replaced by a link
//! to another directory (or another checkout) before it runs. Every component is opened with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)` from the root's fd,
//! and the leaf is read with `statat(AT_SYMLINK_NOFOLLOW)`: a link anywhere on the way is an
//! [`FsError::Escape`], a link at the leaf is [`EntryKind::Symlink`] with the link's own inode.

use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, openat2, statat};
use rustix::io::Errno;

use crate::beneath::{fs_error, normal, split_leaf};
use crate::fs::kind_of;
use crate::{EntryKind, FsError, Location, WorkspaceFs};

/// What identifies an entry at one moment: it is the same entry later only if all three agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EntryIdentity {
    /// The device it is on.
    pub dev: u64,
    /// Its inode.
    pub ino: u64,
    /// What it is (a link is a link: never followed).
    pub kind: EntryKind,
}

/// No link is followed: not in a parent, not at the leaf.
const NO_LINKS: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

impl WorkspaceFs {
    /// The identity of the entry at `loc` (the root itself when `loc.rel` is empty), reached from
    /// its root's fd without following any link; `None` when it does not exist. A link on the
    /// way is [`FsError::Escape`].
    pub fn identity(&self, loc: &Location) -> Result<Option<EntryIdentity>, FsError> {
        let err = |e: Errno| fs_error(e, self.label_of(loc));
        let root = self.root_fd_of(loc)?;
        let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let (parent_rel, leaf) = match split_leaf(&loc.rel).map_err(err)? {
            Some((parent, leaf)) => (parent, Some(leaf)),
            None => (Path::new(""), None),
        };
        let mut dir = openat2(root, ".", dir_flags, Mode::empty(), NO_LINKS).map_err(err)?;
        for component in parent_rel.components() {
            let name = normal(component).map_err(err)?;
            dir = match openat2(&dir, name, dir_flags, Mode::empty(), NO_LINKS) {
                Ok(fd) => fd,
                Err(Errno::NOENT) => return Ok(None),
                Err(e) => return Err(err(e)),
            };
        }
        let st = match leaf {
            Some(name) => match statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => st,
                Err(Errno::NOENT) => return Ok(None),
                Err(e) => return Err(err(e)),
            },
            None => rustix::fs::fstat(&dir).map_err(err)?,
        };
        Ok(Some(EntryIdentity {
            dev: st.st_dev,
            ino: st.st_ino,
            kind: kind_of(FileType::from_raw_mode(st.st_mode)),
        }))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::path::PathBuf;

    use crate::{Workspace, WorkspaceConfig};

    use super::*;

    fn loc(rel: &str) -> Location {
        Location {
            root: 0,
            rel: PathBuf::from(rel),
        }
    }

    #[test]
    fn identity_sees_a_directory_swapped_for_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("ws");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(root.join("other")).unwrap();
        std::fs::write(root.join("sub/f"), "x").unwrap();
        let ws = Workspace::open(&WorkspaceConfig::new(&root)).unwrap();
        let fs = ws.fs().unwrap();
        let before = fs.identity(&loc("sub")).unwrap().unwrap();
        assert_eq!(before.kind, EntryKind::Dir);
        assert_eq!(fs.identity(&loc("sub")).unwrap(), Some(before));
        assert_eq!(
            fs.identity(&loc("sub/f")).unwrap().unwrap().kind,
            EntryKind::File
        );
        assert_eq!(fs.identity(&loc("missing")).unwrap(), None);
        assert_eq!(fs.identity(&loc("missing/x")).unwrap(), None);
        assert_eq!(fs.identity(&loc("")).unwrap().unwrap().kind, EntryKind::Dir);
        // Swapped for a link to a directory beside it: the leaf is a link, not followed.
        std::fs::rename(root.join("sub"), root.join("sub.old")).unwrap();
        std::os::unix::fs::symlink("other", root.join("sub")).unwrap();
        let after = fs.identity(&loc("sub")).unwrap().unwrap();
        assert_eq!(after.kind, EntryKind::Symlink);
        assert_ne!(after, before);
        // A link on the way is an escape, not followed.
        assert!(matches!(
            fs.identity(&loc("sub/f")),
            Err(FsError::Escape { .. })
        ));
        // Replaced by a new directory of the same name: another inode.
        std::fs::remove_file(root.join("sub")).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        assert_ne!(fs.identity(&loc("sub")).unwrap(), Some(before));
    }
}
