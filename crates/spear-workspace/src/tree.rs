//! Whole trees beneath a root: walking, snapshotting, removing and restoring them.
//!
//! Every open here is `openat2(dir, name, ..., RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS)` relative to the directory fd of the step before (`O_NOFOLLOW` too
//! where it applies; the temporary file of a restore is created as `write` creates its own, by one
//! plain name with `O_CREAT | O_EXCL | O_NOFOLLOW`, which no link can redirect), and every name is acted on with an `*at` call relative to its directory's fd
//! (`unlinkat`, `mkdirat`, `symlinkat`, `renameat`, `readlinkat`, `fstatat(AT_SYMLINK_NOFOLLOW)`),
//! none of which follows a link at the name itself. No symlink is followed anywhere, not even one
//! that stays inside the root:
//!
//! Attack stopped: a directory swapped for a symlink half-way through a walk, a removal or a
//! restore. The next open beneath it fails (`ELOOP`) instead of reading, deleting or creating
//! somewhere else; a symlink met inside a tree being removed is unlinked, never entered.
//!
//! Work is bounded: [`WorkspaceFs::walk`] by a caller's entry count, snapshots by a [`Budget`], and
//! everything by a depth of [`MAX_TREE_DEPTH`] directories (one fd is held per level). A bound
//! reached is [`FsError::LimitExceeded`]; callers fail closed.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use rustix::fs::{
    AtFlags, CWD, Dir, FileType, Mode, OFlags, ResolveFlags, chmodat, fchmod, fstat, mkdirat,
    openat2, readlinkat, renameat, statat, symlinkat, unlinkat,
};
use rustix::io::Errno;

use crate::beneath::{fs_error, normal, split_leaf};
use crate::fs::{KEPT_MODE_BITS, create_temp, fill_temp, kind_of};
use crate::label::format_label;
use crate::{EntryKind, FsError, Location, WorkspaceFs};

/// How many directories deep a walk, snapshot, removal or restore may go below a root (or below
/// the entry it acts on). One directory fd is held per level.
pub const MAX_TREE_DEPTH: usize = 512;

/// The resolve flags of every open here: beneath the directory fd, and no symlink at all.
const NO_LINKS: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// Mode of the missing parent directories a restore creates (less the umask).
const PARENT_MODE: u32 = 0o755;

/// Owner read, write and search: what a directory about to be removed is given, so that its
/// entries can be listed and unlinked.
const REMOVAL_MODE: u32 = 0o700;

/// Names listed per pass while a directory is emptied.
const REMOVAL_BATCH: usize = 1024;

/// Attack: a process that keeps creating entries in a directory being removed must not keep the
/// removal going forever.
const MAX_REMOVALS: u64 = 10_000_000;

/// What a [`WorkspaceFs::walk`] visitor wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    /// Go on; a directory is descended into.
    Continue,
    /// Do not descend into this entry (no effect on a non-directory).
    Skip,
}

/// An entry's metadata as [`WorkspaceFs::walk_meta`] reads it (never following a link). Enough to
/// tell whether an entry changed: a change of content moves `ctime`, which no unprivileged call
/// can set back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryMeta {
    /// Its kind.
    pub kind: EntryKind,
    /// Permission bits (`0o7777`).
    pub mode: u32,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i128,
    /// Status change time, nanoseconds since the epoch.
    pub ctime_ns: i128,
    /// Inode number.
    pub ino: u64,
    /// Device number.
    pub dev: u64,
}

impl EntryMeta {
    pub(crate) fn of(st: &rustix::fs::Stat) -> Self {
        let ns = |s: i64, n: u64| i128::from(s) * 1_000_000_000 + i128::from(n);
        EntryMeta {
            kind: kind_of(FileType::from_raw_mode(st.st_mode)),
            mode: st.st_mode & 0o7777,
            size: u64::try_from(st.st_size).unwrap_or(0),
            mtime_ns: ns(st.st_mtime, st.st_mtime_nsec),
            ctime_ns: ns(st.st_ctime, st.st_ctime_nsec),
            ino: st.st_ino,
            dev: st.st_dev,
        }
    }

    fn kind_only(kind: EntryKind) -> Self {
        EntryMeta {
            kind,
            mode: 0,
            size: 0,
            mtime_ns: 0,
            ctime_ns: 0,
            ino: 0,
            dev: 0,
        }
    }
}

/// The content of an entry and everything below it, as [`WorkspaceFs::read_entry`] found it.
/// Modes hold the permission bits only (`0o777`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A regular file.
    File {
        /// Permission bits.
        mode: u32,
        /// The whole content.
        bytes: Vec<u8>,
    },
    /// A directory.
    Dir {
        /// Permission bits.
        mode: u32,
        /// Its entries by name.
        children: BTreeMap<OsString, Node>,
    },
    /// A symbolic link (never followed).
    Symlink {
        /// The target as stored.
        target: OsString,
    },
    /// A fifo, socket or device: its kind and mode are kept, it cannot be restored.
    Other {
        /// Permission bits.
        mode: u32,
    },
}

impl Node {
    /// The kind of this entry.
    pub fn kind(&self) -> EntryKind {
        match self {
            Node::File { .. } => EntryKind::File,
            Node::Dir { .. } => EntryKind::Dir,
            Node::Symlink { .. } => EntryKind::Symlink,
            Node::Other { .. } => EntryKind::Other,
        }
    }

    /// How many entries this node holds, itself included.
    pub fn entries(&self) -> usize {
        match self {
            Node::Dir { children, .. } => 1 + children.values().map(Node::entries).sum::<usize>(),
            _ => 1,
        }
    }

    /// How many bytes of content (file data and link targets) this node holds.
    pub fn bytes(&self) -> u64 {
        match self {
            Node::File { bytes, .. } => bytes.len() as u64,
            Node::Symlink { target } => target.len() as u64,
            Node::Dir { children, .. } => children.values().map(Node::bytes).sum(),
            Node::Other { .. } => 0,
        }
    }
}

/// What snapshots may still hold; [`WorkspaceFs::read_entry`] takes from it and fails with
/// [`FsError::LimitExceeded`] when it would go below zero. One budget can be shared by many reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Bytes of file content and link targets.
    pub bytes: u64,
    /// Entries (files, directories, links, others).
    pub entries: usize,
}

/// Why a tree operation stopped, before it is given a label.
enum Fail {
    /// The kernel's answer at `rel`.
    Os(Errno, PathBuf),
    /// A bound was reached at `rel`.
    Limit(PathBuf, String),
    /// Something the operation cannot do at `rel`.
    Other(PathBuf, &'static str),
}

/// `?` on an errno at `rel`.
fn at(rel: &Path) -> impl Fn(Errno) -> Fail + '_ {
    move |e| Fail::Os(e, rel.to_path_buf())
}

impl WorkspaceFs {
    /// Walks the tree of root `root` depth-first, calling `visit` with each entry's path relative
    /// to the root and its kind (links are reported as [`EntryKind::Symlink`] and never followed).
    /// A directory is descended into unless `visit` answers [`Walk::Skip`]. Other filesystems
    /// mounted inside the root are walked too. The order within a directory is the kernel's.
    ///
    /// Fails closed with [`FsError::LimitExceeded`] when more than `max_entries` entries were seen
    /// or a directory lies more than [`MAX_TREE_DEPTH`] levels down; a directory that cannot be
    /// listed is an error, never skipped. A directory swapped for a link while the walk runs is
    /// [`FsError::Escape`]; one that vanished is skipped.
    pub fn walk(
        &self,
        root: usize,
        max_entries: usize,
        visit: &mut dyn FnMut(&Path, EntryKind) -> Walk,
    ) -> Result<(), FsError> {
        self.walk_inner(root, Path::new(""), max_entries, false, &mut |rel, meta| {
            visit(rel, meta.kind)
        })
        .map_err(|f| self.fail(root, f))
    }

    /// Walks as [`WorkspaceFs::walk`] does, and gives the visitor each entry's metadata, read
    /// with `fstatat(dir_fd, name, AT_SYMLINK_NOFOLLOW)` relative to its directory's fd (so it is
    /// the entry's own, never a link target's). An entry gone between listing and stat is
    /// skipped.
    pub fn walk_meta(
        &self,
        root: usize,
        max_entries: usize,
        visit: &mut dyn FnMut(&Path, &EntryMeta) -> Walk,
    ) -> Result<(), FsError> {
        self.walk_inner(root, Path::new(""), max_entries, true, visit)
            .map_err(|f| self.fail(root, f))
    }

    /// Walks as [`WorkspaceFs::walk_meta`] does, below the directory `loc` instead of the whole
    /// root (paths given to `visit` are still relative to the root). `loc` itself is not
    /// visited; a link or non-directory there (or on the way) is [`FsError::Escape`] or
    /// [`FsError::NotDirectory`].
    pub fn walk_from(
        &self,
        loc: &Location,
        max_entries: usize,
        visit: &mut dyn FnMut(&Path, &EntryMeta) -> Walk,
    ) -> Result<(), FsError> {
        self.walk_inner(loc.root, &loc.rel, max_entries, true, visit)
            .map_err(|f| self.fail(loc.root, f))
    }

    fn walk_inner(
        &self,
        root: usize,
        start: &Path,
        max_entries: usize,
        with_meta: bool,
        visit: &mut dyn FnMut(&Path, &EntryMeta) -> Walk,
    ) -> Result<(), Fail> {
        let top_rel = start.to_path_buf();
        for c in start.components() {
            normal(c).map_err(at(start))?;
        }
        let root_fd = self.tree_root(root, &top_rel)?;
        let top = open_nofollow(root_fd, start, OFlags::RDONLY | OFlags::DIRECTORY)
            .map_err(at(&top_rel))?;
        let mut stack = vec![(Dir::new(top).map_err(at(&top_rel))?, top_rel)];
        let mut seen = 0usize;
        loop {
            let depth = stack.len();
            let Some((dir, rel)) = stack.last_mut() else {
                return Ok(());
            };
            let Some(entry) = dir.read() else {
                stack.pop();
                continue;
            };
            let entry = entry.map_err(at(rel))?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let name = OsStr::from_bytes(name).to_os_string();
            seen += 1;
            if seen > max_entries {
                return Err(Fail::Limit(
                    rel.clone(),
                    format!("more than {max_entries} entries"),
                ));
            }
            let dir_fd = dir.fd().map_err(at(rel))?;
            let meta = match entry.file_type() {
                t if with_meta || t == FileType::Unknown => {
                    match statat(dir_fd, &*name, AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(st) => EntryMeta::of(&st),
                        Err(Errno::NOENT) => continue,
                        Err(e) => return Err(Fail::Os(e, rel.join(&name))),
                    }
                }
                t => EntryMeta::kind_only(kind_of(t)),
            };
            let kind = meta.kind;
            let child_rel = rel.join(&name);
            if visit(&child_rel, &meta) == Walk::Skip || kind != EntryKind::Dir {
                continue;
            }
            if depth > MAX_TREE_DEPTH {
                return Err(depth_limit(child_rel));
            }
            let fd =
                match open_nofollow(dir_fd, Path::new(&name), OFlags::RDONLY | OFlags::DIRECTORY) {
                    Ok(fd) => fd,
                    // Gone since it was listed: nothing left to see.
                    Err(Errno::NOENT) => continue,
                    Err(e) => return Err(Fail::Os(e, child_rel)),
                };
            let child = Dir::new(fd).map_err(at(&child_rel))?;
            stack.push((child, child_rel));
        }
    }

    /// Snapshots the entry at `loc` and everything below it, without following any link (a link
    /// is kept as its target; one on the way to `loc` means there is no entry there: `None`).
    /// `None` when nothing is there. Takes what it holds from `budget`; fails with
    /// [`FsError::LimitExceeded`] when that would run out. The root itself cannot be read.
    pub fn read_entry(&self, loc: &Location, budget: &mut Budget) -> Result<Option<Node>, FsError> {
        self.read_entry_inner(loc, budget)
            .map_err(|f| self.fail(loc.root, f))
    }

    fn read_entry_inner(&self, loc: &Location, budget: &mut Budget) -> Result<Option<Node>, Fail> {
        let (parent, leaf) = match self.parent_of(loc, false) {
            Ok(found) => found,
            // A missing parent, or a non-directory or link where a parent should be: without
            // following links, there is no entry at `loc`.
            Err(Fail::Os(Errno::NOENT | Errno::NOTDIR | Errno::LOOP, _)) => return Ok(None),
            Err(f) => return Err(f),
        };
        snapshot_at(parent.as_fd(), leaf, &loc.rel, budget, 0)
    }

    /// Removes the entry at `loc` and everything below it. A link is removed, never followed; each
    /// directory is opened beneath the one before, so a directory swapped for a link half-way
    /// stops the removal ([`FsError::Escape`]) instead of deleting elsewhere. A directory being
    /// removed is given owner read, write and search first, so a command cannot keep what it
    /// created by taking its permissions away; if the entry's parent refuses the unlink, it is given
    /// owner write and search for that unlink and then put back. Nothing there is
    /// [`FsError::NotFound`]; the root itself cannot be removed.
    pub fn remove_tree(&self, loc: &Location) -> Result<(), FsError> {
        self.remove_tree_inner(loc)
            .map_err(|f| self.fail(loc.root, f))
    }

    fn remove_tree_inner(&self, loc: &Location) -> Result<(), Fail> {
        let (parent, leaf) = self.parent_of(loc, false)?;
        statat(&parent, leaf, AtFlags::SYMLINK_NOFOLLOW).map_err(at(&loc.rel))?;
        let mut removals = 0u64;
        remove_at(parent.as_fd(), leaf, &loc.rel, 0, &mut removals)
    }

    /// The kind and permission bits (`0o777`) of the entry at `loc`, without following any link:
    /// a link is [`EntryKind::Symlink`], and a link (or a non-directory, or nothing) on the way to
    /// `loc` means there is no entry there (`None`), as for [`WorkspaceFs::read_entry`]. Nothing is
    /// opened but the directories on the way. The root itself has no entry.
    pub fn entry_kind(&self, loc: &Location) -> Result<Option<(EntryKind, u32)>, FsError> {
        self.entry_kind_inner(loc)
            .map_err(|f| self.fail(loc.root, f))
    }

    fn entry_kind_inner(&self, loc: &Location) -> Result<Option<(EntryKind, u32)>, Fail> {
        let (parent, leaf) = match self.parent_of(loc, false) {
            Ok(found) => found,
            // Attack: a parent swapped for a link to a directory outside: without following
            // links there is no entry at `loc`, so nothing outside is ever described.
            Err(Fail::Os(Errno::NOENT | Errno::NOTDIR | Errno::LOOP, _)) => return Ok(None),
            Err(f) => return Err(f),
        };
        match statat(&parent, leaf, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some((
                kind_of(FileType::from_raw_mode(st.st_mode)),
                st.st_mode & KEPT_MODE_BITS,
            ))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(Fail::Os(e, loc.rel.clone())),
        }
    }

    /// The directories on the way to `loc` (below its root) that do not exist, nearest first: what
    /// a write to `loc` would create. Looked at as [`WorkspaceFs::entry_kind`] does, no link
    /// followed.
    pub fn missing_parents(&self, loc: &Location) -> Result<Vec<Location>, FsError> {
        let mut missing = Vec::new();
        for parent in loc.rel.ancestors().skip(1) {
            if parent.as_os_str().is_empty() {
                break;
            }
            let parent = Location {
                root: loc.root,
                rel: parent.to_path_buf(),
            };
            if self.entry_kind(&parent)?.is_some() {
                break;
            }
            missing.push(parent);
        }
        Ok(missing)
    }

    /// Removes the directory at `loc` only if it is empty (one `unlinkat(AT_REMOVEDIR)`, so
    /// nothing created in it meanwhile is ever removed): `Ok(true)` when removed, `Ok(false)` when
    /// it is not empty and was left in place. Nothing there is [`FsError::NotFound`]; a
    /// non-directory is [`FsError::NotDirectory`]. No link is followed on the way; the root
    /// itself cannot be removed.
    pub fn remove_empty_dir(&self, loc: &Location) -> Result<bool, FsError> {
        self.remove_empty_dir_inner(loc)
            .map_err(|f| self.fail(loc.root, f))
    }

    fn remove_empty_dir_inner(&self, loc: &Location) -> Result<bool, Fail> {
        let (parent, leaf) = self.parent_of(loc, false)?;
        match unlink_name(parent.as_fd(), leaf, AtFlags::REMOVEDIR) {
            Ok(()) => Ok(true),
            Err(Errno::NOTEMPTY | Errno::EXIST) => Ok(false),
            Err(e) => Err(Fail::Os(e, loc.rel.clone())),
        }
    }

    /// Puts `node` at `loc`: missing parent directories are created (0755 less the umask, each
    /// beneath the one before, never through a link); whatever is at `loc` is removed first as by
    /// [`WorkspaceFs::remove_tree`], except that a file is renamed over a non-directory. Files are
    /// written to a new temporary file (`O_EXCL`) in the same directory, given their mode, synced
    /// and renamed into place, so a hard link or link there is replaced, never written through;
    /// directories are made and filled, then given their mode; links are created with their
    /// target as stored. A [`Node::Other`] cannot be restored (an I/O error, after its parents
    /// were made).
    pub fn restore(&self, loc: &Location, node: &Node) -> Result<(), FsError> {
        self.restore_inner(loc, node)
            .map_err(|f| self.fail(loc.root, f))
    }

    fn restore_inner(&self, loc: &Location, node: &Node) -> Result<(), Fail> {
        let (parent, leaf) = self.parent_of(loc, true)?;
        let existing = match statat(&parent, leaf, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Some(FileType::from_raw_mode(st.st_mode)),
            Err(Errno::NOENT) => None,
            Err(e) => return Err(Fail::Os(e, loc.rel.clone())),
        };
        let renamed_over =
            matches!(node, Node::File { .. }) && existing.is_some_and(|t| t != FileType::Directory);
        if existing.is_some() && !renamed_over {
            let mut removals = 0u64;
            remove_at(parent.as_fd(), leaf, &loc.rel, 0, &mut removals)?;
        }
        create_at(parent.as_fd(), leaf, &loc.rel, node, 0)
    }

    /// The directory holding `loc` (opened step by step beneath its root without following a
    /// link; missing ones made when `create`) and the entry's name in it.
    fn parent_of<'l>(&self, loc: &'l Location, create: bool) -> Result<(OwnedFd, &'l OsStr), Fail> {
        let root = self.tree_root(loc.root, &loc.rel)?;
        let Some((parent_rel, leaf)) = split_leaf(&loc.rel).map_err(at(&loc.rel))? else {
            return Err(Fail::Other(
                loc.rel.clone(),
                "the root itself is not an entry that can be read, removed or restored",
            ));
        };
        let parent = dir_chain(root, parent_rel, create).map_err(at(parent_rel))?;
        Ok((parent, leaf))
    }

    /// The fd of root `root`.
    fn tree_root(&self, root: usize, rel: &Path) -> Result<BorrowedFd<'_>, Fail> {
        self.root_fds
            .get(root)
            .map(AsFd::as_fd)
            .ok_or_else(|| Fail::Other(rel.to_path_buf(), "no such root"))
    }

    /// The error a failure at a path of root `root` is reported as.
    fn fail(&self, root: usize, fail: Fail) -> FsError {
        let label = |rel: &Path| {
            let name = if root == 0 {
                None
            } else {
                Some(self.labels.get(root).map_or("?", String::as_str))
            };
            format_label(name, rel)
        };
        match fail {
            Fail::Os(errno, rel) => fs_error(errno, label(&rel)),
            Fail::Limit(rel, what) => FsError::LimitExceeded {
                label: label(&rel),
                what,
            },
            Fail::Other(rel, why) => FsError::Io {
                label: label(&rel),
                source: std::io::Error::other(why),
            },
        }
    }
}

/// The depth bound reached at `rel`.
fn depth_limit(rel: PathBuf) -> Fail {
    Fail::Limit(rel, format!("more than {MAX_TREE_DEPTH} directories deep"))
}

/// Opens `rel` beneath `dir` without following any link; the empty path opens `dir` itself.
/// `O_CLOEXEC` is always added, and `O_NOFOLLOW` unless `O_PATH` is asked for (with `O_PATH`,
/// `O_NOFOLLOW` would open a trailing link itself; without it `RESOLVE_NO_SYMLINKS` refuses it).
fn open_nofollow(dir: BorrowedFd<'_>, rel: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let flags = if flags.contains(OFlags::PATH) {
        flags
    } else {
        flags | OFlags::NOFOLLOW
    };
    openat2(dir, rel, flags | OFlags::CLOEXEC, Mode::empty(), NO_LINKS)
}

/// Opens the directory `rel` under `root` as an `O_PATH` fd one component at a time, each
/// beneath the one before and never through a link; with `create`, a missing component is made
/// with `mkdirat` (which never follows a link at the name) and then opened the same way.
fn dir_chain(root: BorrowedFd<'_>, rel: &Path, create: bool) -> Result<OwnedFd, Errno> {
    let flags = OFlags::PATH | OFlags::DIRECTORY;
    let mut current = open_nofollow(root, Path::new(""), flags)?;
    for component in rel.components() {
        let name = normal(component)?;
        let next = match open_nofollow(current.as_fd(), Path::new(name), flags) {
            Err(Errno::NOENT) if create => {
                match mkdirat(&current, name, Mode::from_raw_mode(PARENT_MODE)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(e),
                }
                open_nofollow(current.as_fd(), Path::new(name), flags)?
            }
            other => other?,
        };
        current = next;
    }
    Ok(current)
}

/// The names in the directory open at `fd`, at most `max` of them (and `..`/`.` left out).
fn list_names(fd: &OwnedFd, max: usize) -> Result<Vec<OsString>, Errno> {
    let mut dir = Dir::read_from(fd)?;
    let mut names = Vec::new();
    while names.len() < max {
        let Some(entry) = dir.read() else {
            break;
        };
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            names.push(OsString::from_vec(name));
        }
    }
    Ok(names)
}

/// Snapshots `name` in `dir` (at `rel`, for messages); `None` when it is not there.
fn snapshot_at(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    rel: &Path,
    budget: &mut Budget,
    depth: usize,
) -> Result<Option<Node>, Fail> {
    let st = match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(Fail::Os(e, rel.to_path_buf())),
    };
    let Some(left) = budget.entries.checked_sub(1) else {
        return Err(Fail::Limit(
            rel.to_path_buf(),
            "more entries than the snapshot budget allows".into(),
        ));
    };
    budget.entries = left;
    let node = match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => snapshot_file(dir, name, rel, budget)?,
        FileType::Directory => {
            if depth >= MAX_TREE_DEPTH {
                return Err(depth_limit(rel.to_path_buf()));
            }
            let fd = open_nofollow(dir, Path::new(name), OFlags::RDONLY | OFlags::DIRECTORY)
                .map_err(at(rel))?;
            let mode = fstat(&fd).map_err(at(rel))?.st_mode & KEPT_MODE_BITS;
            // Each child costs at least one entry: listing one more than the budget is enough to
            // know it will not fit, and bounds the memory of a huge directory.
            let names = list_names(&fd, budget.entries.saturating_add(1)).map_err(at(rel))?;
            let mut children = BTreeMap::new();
            for child in names {
                let child_rel = rel.join(&child);
                if let Some(node) = snapshot_at(fd.as_fd(), &child, &child_rel, budget, depth + 1)?
                {
                    children.insert(child, node);
                }
            }
            Node::Dir { mode, children }
        }
        FileType::Symlink => {
            let target = match readlinkat(dir, name, Vec::new()) {
                Ok(t) => t,
                Err(Errno::NOENT) => return Ok(None),
                Err(e) => return Err(Fail::Os(e, rel.to_path_buf())),
            };
            let target = OsString::from_vec(target.into_bytes());
            take_bytes(budget, target.len() as u64, rel)?;
            Node::Symlink { target }
        }
        _ => Node::Other {
            mode: st.st_mode & KEPT_MODE_BITS,
        },
    };
    Ok(Some(node))
}

/// Reads the regular file `name` in `dir` within the budget.
fn snapshot_file(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    rel: &Path,
    budget: &mut Budget,
) -> Result<Node, Fail> {
    // O_NONBLOCK: attack: a fifo swapped in since the stat would block the open forever.
    // O_NOCTTY: a terminal must not become the harness's controlling terminal.
    let fd = open_nofollow(
        dir,
        Path::new(name),
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
    )
    .map_err(at(rel))?;
    let st = fstat(&fd).map_err(at(rel))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(Fail::Other(
            rel.to_path_buf(),
            "it changed from a file to something else while it was read",
        ));
    }
    let mut bytes = Vec::new();
    // Attack: a huge or growing file must not exhaust the harness's memory: at most one byte
    // more than the budget is read.
    File::from(fd)
        .take(budget.bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Fail::Os(Errno::from_io_error(&e).unwrap_or(Errno::IO), rel.into()))?;
    take_bytes(budget, bytes.len() as u64, rel)?;
    Ok(Node::File {
        mode: st.st_mode & KEPT_MODE_BITS,
        bytes,
    })
}

/// Takes `n` bytes from the budget, or fails.
fn take_bytes(budget: &mut Budget, n: u64, rel: &Path) -> Result<(), Fail> {
    match budget.bytes.checked_sub(n) {
        Some(left) => {
            budget.bytes = left;
            Ok(())
        }
        None => Err(Fail::Limit(
            rel.to_path_buf(),
            "more bytes than the snapshot budget allows".into(),
        )),
    }
}

/// Removes `name` in `dir` and everything below it. Not there is fine (it went meanwhile).
fn remove_at(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    rel: &Path,
    depth: usize,
    removals: &mut u64,
) -> Result<(), Fail> {
    *removals += 1;
    if *removals > MAX_REMOVALS {
        return Err(Fail::Limit(
            rel.to_path_buf(),
            format!("more than {MAX_REMOVALS} entries to remove"),
        ));
    }
    let st = match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(Fail::Os(e, rel.to_path_buf())),
    };
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        // unlinkat removes the name; a link there is removed, not what it points at.
        return unlink_name(dir, name, AtFlags::empty()).map_err(at(rel));
    }
    if depth >= MAX_TREE_DEPTH {
        return Err(depth_limit(rel.to_path_buf()));
    }
    let fd = open_for_removal(dir, name).map_err(at(rel))?;
    loop {
        let names = list_names(&fd, REMOVAL_BATCH).map_err(at(rel))?;
        if names.is_empty() {
            break;
        }
        for child in names {
            let child_rel = rel.join(&child);
            remove_at(fd.as_fd(), &child, &child_rel, depth + 1, removals)?;
        }
    }
    drop(fd);
    match unlink_name(dir, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(Fail::Os(e, rel.to_path_buf())),
    }
}

/// Opens the directory `name` in `dir` for listing and gives it owner read, write and search.
///
/// A directory without read permission cannot be opened for listing: it is opened `O_PATH`
/// (beneath `dir`, no link followed), changed through that fd, and opened again through it, so
/// the change reaches exactly the directory that was opened.
fn open_for_removal(dir: BorrowedFd<'_>, name: &OsStr) -> Result<OwnedFd, Errno> {
    let listing = OFlags::RDONLY | OFlags::DIRECTORY;
    let fd = match open_nofollow(dir, Path::new(name), listing) {
        Err(Errno::ACCESS) => {
            let path_fd = open_nofollow(dir, Path::new(name), OFlags::PATH | OFlags::DIRECTORY)?;
            chmod_fd(path_fd.as_fd(), REMOVAL_MODE)?;
            open_nofollow(path_fd.as_fd(), Path::new(""), listing)?
        }
        other => other?,
    };
    let mode = fstat(&fd)?.st_mode;
    if mode & REMOVAL_MODE != REMOVAL_MODE {
        // Best effort: someone else's directory cannot be changed; the unlinks then say why.
        let _ = fchmod(&fd, Mode::from_raw_mode(REMOVAL_MODE));
    }
    Ok(fd)
}

/// `unlinkat(dir, name, flags)`; if `dir` refuses it (`EACCES`), `dir` is given owner write and
/// search for one more try and then has its mode put back.
fn unlink_name(dir: BorrowedFd<'_>, name: &OsStr, flags: AtFlags) -> Result<(), Errno> {
    match unlinkat(dir, name, flags) {
        Err(Errno::ACCESS) => {
            let old = fstat(dir)?.st_mode & 0o7777;
            chmod_fd(dir, old | 0o300)?;
            let result = unlinkat(dir, name, flags);
            let _ = chmod_fd(dir, old);
            result
        }
        other => other,
    }
}

/// Changes the mode of the file open at `fd`. An `O_PATH` fd cannot be given to `fchmod`; it is
/// changed through `/proc/self/fd/N` instead, which names the open file itself (not a path that
/// could have been swapped), as the C library does for `fchmodat(AT_SYMLINK_NOFOLLOW)`.
fn chmod_fd(fd: BorrowedFd<'_>, mode: u32) -> Result<(), Errno> {
    let mode = Mode::from_raw_mode(mode);
    match fchmod(fd, mode) {
        Err(Errno::BADF) => chmodat(
            CWD,
            format!("/proc/self/fd/{}", fd.as_raw_fd()),
            mode,
            AtFlags::empty(),
        ),
        other => other,
    }
}

/// Creates `node` as `name` in `dir`; a file is renamed over whatever non-directory is there,
/// anything else needs the name to be free.
fn create_at(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    rel: &Path,
    node: &Node,
    depth: usize,
) -> Result<(), Fail> {
    match node {
        Node::File { mode, bytes } => write_replacing(dir, name, bytes, *mode).map_err(at(rel)),
        Node::Dir { mode, children } => {
            if depth >= MAX_TREE_DEPTH {
                return Err(depth_limit(rel.to_path_buf()));
            }
            // Owner-only while it is filled; its own mode at the end (a read-only directory can
            // then still be filled).
            mkdirat(dir, name, Mode::from_raw_mode(REMOVAL_MODE)).map_err(at(rel))?;
            let fd = open_nofollow(dir, Path::new(name), OFlags::RDONLY | OFlags::DIRECTORY)
                .map_err(at(rel))?;
            for (child, node) in children {
                create_at(fd.as_fd(), child, &rel.join(child), node, depth + 1)?;
            }
            fchmod(&fd, Mode::from_raw_mode(mode & KEPT_MODE_BITS)).map_err(at(rel))
        }
        Node::Symlink { target } => symlinkat(target.as_os_str(), dir, name).map_err(at(rel)),
        Node::Other { .. } => Err(Fail::Other(
            rel.to_path_buf(),
            "a fifo, socket or device cannot be restored",
        )),
    }
}

/// Writes `bytes` with `mode` to a new temporary file in `dir`, syncs it and renames it to `name`.
fn write_replacing(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    bytes: &[u8],
    mode: u32,
) -> Result<(), Errno> {
    let (temp_name, fd) = create_temp(dir, false)?;
    let filled = fill_temp(fd, bytes, Some(mode & KEPT_MODE_BITS))
        .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))
        .and_then(|()| renameat(dir, &temp_name, dir, name));
    if filled.is_err() {
        // Best effort: leave no temporary file behind; the original error is what matters.
        let _ = unlinkat(dir, &temp_name, AtFlags::empty());
    }
    filled
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod shallow_tests {
    //! `entry_kind` and `remove_empty_dir`: no link followed, nothing but an empty directory
    //! removed. Each refusal has a positive control.

    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    use crate::tests::Tree;
    use crate::{EntryKind, FsError, Location};

    fn loc(rel: &str) -> Location {
        Location {
            root: 0,
            rel: PathBuf::from(rel),
        }
    }

    #[test]
    fn entry_kind_describes_without_following_links() {
        let t = Tree::standard();
        std::fs::set_permissions(t.path("ws/f.txt"), std::fs::Permissions::from_mode(0o640))
            .unwrap();
        t.link(t.path("outside"), "ws/out");
        t.link("f.txt", "ws/to-f");
        let ws = t.ws();
        let fs = ws.fs().unwrap();
        let cases: &[(&str, Option<EntryKind>)] = &[
            ("f.txt", Some(EntryKind::File)),
            ("a", Some(EntryKind::Dir)),
            ("to-f", Some(EntryKind::Symlink)),
            ("out", Some(EntryKind::Symlink)),
            // Attack: a parent that is a link to outside: no entry, never the outside file.
            ("out/secret.txt", None),
            ("missing", None),
            ("f.txt/below", None),
        ];
        for (rel, want) in cases {
            let got = fs.entry_kind(&loc(rel)).unwrap().map(|(k, _)| k);
            assert_eq!(got, *want, "{rel}");
        }
        assert_eq!(
            fs.entry_kind(&loc("f.txt")).unwrap(),
            Some((EntryKind::File, 0o640))
        );
        // Positive control: the outside file is there through the link.
        assert!(t.path("ws/out/secret.txt").is_file());
    }

    #[test]
    fn remove_empty_dir_removes_only_an_empty_directory() {
        let t = Tree::standard();
        t.dir("ws/empty");
        t.link(t.path("outside"), "ws/out");
        t.dir("outside/inner");
        let ws = t.ws();
        let fs = ws.fs().unwrap();
        // Not empty: left in place with its content.
        assert!(!fs.remove_empty_dir(&loc("a")).unwrap());
        assert_eq!(t.read("ws/a/b.txt"), "a/b in workspace");
        // A file is not a directory.
        assert!(matches!(
            fs.remove_empty_dir(&loc("f.txt")),
            Err(FsError::NotDirectory { .. })
        ));
        assert!(t.path("ws/f.txt").is_file());
        // Attack: a parent that is a link to outside; the directory there stays.
        assert!(matches!(
            fs.remove_empty_dir(&loc("out/inner")),
            Err(FsError::Escape { .. })
        ));
        assert!(t.path("outside/inner").is_dir());
        // Positive control: an empty directory is removed.
        assert!(fs.remove_empty_dir(&loc("empty")).unwrap());
        assert!(!t.path("ws/empty").exists());
        assert!(matches!(
            fs.remove_empty_dir(&loc("empty")),
            Err(FsError::NotFound { .. })
        ));
    }
}
