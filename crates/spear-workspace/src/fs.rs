//! File operations that cannot leave a root.
//!
//! Every operation starts from the root's `O_PATH` directory fd and opens with `openat2` beneath it
//! (see `beneath.rs`); nothing is opened by an absolute name. Writes never write into an existing
//! file: they create a new file next to it and rename it over the entry, so whatever the entry was
//! (a hard link to a file outside, a symlink) is replaced, and its old target is left as it was.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, fchmod, fstat, renameat, statat, unlinkat};
use rustix::io::Errno;

use crate::beneath::{fs_error, open_beneath, open_dir_chain, open_root, split_leaf};
use crate::{FsError, Location, ResolvedPath, Workspace};

/// Mode of a file `write` creates (less the umask).
const NEW_FILE_MODE: u32 = 0o644;

/// Permission bits kept from a replaced or restored file. Set-user-ID, set-group-ID and sticky are
/// dropped: a file rewritten by the harness must not inherit privileges granted to the old content.
pub(crate) const KEPT_MODE_BITS: u32 = 0o777;

/// How many temporary names `write` and a restore try before giving up.
const TEMP_ATTEMPTS: usize = 16;

/// Initial buffer for a read, so a huge `limit` on a huge file does not allocate up front.
const READ_CHUNK: u64 = 1 << 20;

/// The kind of a directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (not followed).
    Symlink,
    /// Anything else (fifo, socket, device).
    Other,
}

/// One entry of [`WorkspaceFs::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's name.
    pub name: String,
    /// Its kind, without following links.
    pub kind: EntryKind,
}

/// What [`WorkspaceFs::read`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOutcome {
    /// At most `limit` bytes from the start of the file.
    pub bytes: Vec<u8>,
    /// The file's size when it was opened.
    pub size: u64,
    /// Whether `bytes` is shorter than the file.
    pub truncated: bool,
}

/// What [`WorkspaceFs::write`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOutcome {
    /// The entry did not exist before.
    pub created: bool,
}

/// File operations relative to a directory fd per root, through
/// `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`. Nothing here opens a path by name from `/`.
#[derive(Debug)]
pub struct WorkspaceFs {
    pub(crate) root_fds: Vec<OwnedFd>,
    pub(crate) labels: Vec<String>,
}

impl WorkspaceFs {
    /// Opens a directory fd on every root of `ws`.
    pub(crate) fn open(ws: &Workspace) -> Result<WorkspaceFs, FsError> {
        let mut root_fds = Vec::with_capacity(ws.roots.len());
        let mut labels = Vec::with_capacity(ws.roots.len());
        for (index, root) in ws.roots.iter().enumerate() {
            let fd = open_root(&root.host_path).map_err(|e| {
                fs_error(
                    e,
                    ws.label(&Location {
                        root: index,
                        rel: std::path::PathBuf::new(),
                    }),
                )
            })?;
            root_fds.push(fd);
            labels.push(root.name.clone());
        }
        Ok(WorkspaceFs { root_fds, labels })
    }

    /// Reads at most `limit` bytes of the file at `path.target`. A directory is
    /// [`FsError::IsDirectory`]; a link swapped in since resolution is [`FsError::Escape`].
    pub fn read(&self, path: &ResolvedPath, limit: u64) -> Result<ReadOutcome, FsError> {
        let loc = &path.target;
        let (file, size) = self.open_regular(loc)?;
        let mut file = file;
        let mut bytes =
            Vec::with_capacity(usize::try_from(limit.min(size).min(READ_CHUNK)).unwrap_or(0));
        // Attack: a 20 GiB file (or one that keeps growing) must not exhaust the harness's memory.
        (&mut file)
            .take(limit)
            .read_to_end(&mut bytes)
            .map_err(|source| self.io(loc, source))?;
        let truncated = if (bytes.len() as u64) < limit {
            false
        } else {
            let mut probe = [0u8; 1];
            file.read(&mut probe)
                .map_err(|source| self.io(loc, source))?
                > 0
        };
        Ok(ReadOutcome {
            bytes,
            size,
            truncated,
        })
    }

    /// Reads at most `limit` bytes from the start of the regular file at `loc` (for header checks
    /// such as "DO NOT EDIT"). Not found is [`FsError::NotFound`].
    pub fn read_head(&self, loc: &Location, limit: usize) -> Result<Vec<u8>, FsError> {
        let (file, size) = self.open_regular(loc)?;
        let limit = limit as u64;
        let mut bytes =
            Vec::with_capacity(usize::try_from(limit.min(size).min(READ_CHUNK)).unwrap_or(0));
        file.take(limit)
            .read_to_end(&mut bytes)
            .map_err(|source| self.io(loc, source))?;
        Ok(bytes)
    }

    /// Opens the regular file at `loc` for reading, beneath its root, and returns it with its size
    /// when it was opened (for callers that stream a file, such as a search). A link leading
    /// outside the root is [`FsError::Escape`]; a directory is [`FsError::IsDirectory`]; a fifo,
    /// socket or device is refused without blocking ([`FsError::Io`]). Callers bound their reads.
    pub fn open_file(&self, loc: &Location) -> Result<(File, u64), FsError> {
        self.open_regular(loc)
    }

    /// Writes `contents` to `path.entry`: missing parent directories are created (0755 less the
    /// umask), the data goes to a new temporary file in the same directory (`O_EXCL`, mode of the
    /// replaced file or 0644), is synced, and is renamed over the entry. A hard link or symlink at
    /// the entry is replaced, never written through.
    pub fn write(&self, path: &ResolvedPath, contents: &[u8]) -> Result<WriteOutcome, FsError> {
        let loc = &path.entry;
        let err = |e: Errno| fs_error(e, self.label(loc));
        let (parent, leaf) = self.entry_parent(loc, true)?;

        // What is there now decides the mode and whether this creates the entry. It is only
        // looked at (never followed, never opened): the rename below replaces it whatever it is.
        let (created, kept_mode) = match statat(&parent, leaf, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => {
                    return Err(FsError::IsDirectory {
                        label: self.label(loc),
                    });
                }
                FileType::RegularFile => (false, Some(st.st_mode & KEPT_MODE_BITS)),
                _ => (false, None),
            },
            Err(Errno::NOENT) => (true, None),
            Err(e) => return Err(err(e)),
        };

        let (temp_name, temp) = create_temp(parent.as_fd(), kept_mode.is_none()).map_err(err)?;
        let written = fill_temp(temp, contents, kept_mode)
            .map_err(|source| self.io(loc, source))
            // Attack: a link or hard link at the entry; renaming replaces the directory entry
            // and leaves whatever it pointed at untouched.
            .and_then(|()| renameat(&parent, &temp_name, &parent, leaf).map_err(err));
        if let Err(e) = written {
            // Best effort: leave no temporary file behind; the original error is what matters.
            let _ = unlinkat(&parent, &temp_name, AtFlags::empty());
            return Err(e);
        }
        // Best effort durability of the rename itself; the data is already synced and in place,
        // so a failure here must not report the write as not done.
        if let Ok(dir) = open_beneath(
            parent.as_fd(),
            Path::new(""),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        ) {
            let _ = rustix::fs::fsync(&dir);
        }
        Ok(WriteOutcome { created })
    }

    /// Removes the entry at `path.entry` (a link is removed, not what it points at). A directory is
    /// [`FsError::IsDirectory`].
    pub fn delete(&self, path: &ResolvedPath) -> Result<(), FsError> {
        let loc = &path.entry;
        let err = |e: Errno| fs_error(e, self.label(loc));
        let (parent, leaf) = self.entry_parent(loc, false)?;
        // unlinkat removes the name in `parent`, never what a link there points at; on a
        // directory Linux answers EISDIR.
        unlinkat(&parent, leaf, AtFlags::empty()).map_err(err)
    }

    /// The directory holding the entry at `loc`, opened step by step beneath its root (creating
    /// missing directories when `create`), and the entry's name in it. The root itself has no
    /// parent: [`FsError::IsDirectory`].
    ///
    /// Attack stopped: a parent swapped for a symlink to a directory outside. Each step opens
    /// beneath the one before, so the swap is EXDEV instead of a write or delete elsewhere.
    fn entry_parent<'l>(
        &self,
        loc: &'l Location,
        create: bool,
    ) -> Result<(OwnedFd, &'l OsStr), FsError> {
        let err = |e: Errno| fs_error(e, self.label(loc));
        let root = self.root_fd(loc)?;
        let Some((parent_rel, leaf)) = split_leaf(&loc.rel).map_err(err)? else {
            return Err(FsError::IsDirectory {
                label: self.label(loc),
            });
        };
        let parent = open_dir_chain(root, parent_rel, create).map_err(err)?;
        Ok((parent, leaf))
    }

    /// Lists the directory at `path.target`, sorted by name, without following entries' links.
    pub fn list(&self, path: &ResolvedPath) -> Result<Vec<DirEntry>, FsError> {
        let loc = &path.target;
        let err = |e: Errno| fs_error(e, self.label(loc));
        let root = self.root_fd(loc)?;
        let fd = open_beneath(
            root,
            &loc.rel,
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .map_err(err)?;
        let mut dir = Dir::new(fd).map_err(err)?;
        let mut entries = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry.map_err(err)?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let name = OsStr::from_bytes(name);
            let kind = match entry.file_type() {
                FileType::Unknown => {
                    let fd = dir.fd().map_err(err)?;
                    statat(fd, name, AtFlags::SYMLINK_NOFOLLOW).map_or(EntryKind::Other, |st| {
                        kind_of(FileType::from_raw_mode(st.st_mode))
                    })
                }
                t => kind_of(t),
            };
            entries.push(DirEntry {
                name: name.to_string_lossy().into_owned(),
                kind,
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    /// Opens the regular file at `loc` for reading; returns it and its size.
    fn open_regular(&self, loc: &Location) -> Result<(File, u64), FsError> {
        let root = self.root_fd(loc)?;
        // O_NONBLOCK: attack: a fifo planted in the workspace would block the open forever.
        // O_NOCTTY: a terminal device must not become the harness's controlling terminal.
        let fd = open_beneath(
            root,
            &loc.rel,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
        )
        .map_err(|e| fs_error(e, self.label(loc)))?;
        let st = fstat(&fd).map_err(|e| fs_error(e, self.label(loc)))?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => {}
            FileType::Directory => {
                return Err(FsError::IsDirectory {
                    label: self.label(loc),
                });
            }
            _ => {
                return Err(self.io(
                    loc,
                    std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"),
                ));
            }
        }
        Ok((File::from(fd), u64::try_from(st.st_size).unwrap_or(0)))
    }

    /// The fd of the root `loc` is in.
    pub(crate) fn root_fd_of(&self, loc: &Location) -> Result<BorrowedFd<'_>, FsError> {
        self.root_fd(loc)
    }

    fn root_fd(&self, loc: &Location) -> Result<BorrowedFd<'_>, FsError> {
        self.root_fds.get(loc.root).map(AsFd::as_fd).ok_or_else(|| {
            self.io(
                loc,
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "no such root"),
            )
        })
    }

    /// The audit label of `loc` (root 0 is the primary).
    fn label(&self, loc: &Location) -> String {
        self.label_of(loc)
    }

    fn io(&self, loc: &Location, source: std::io::Error) -> FsError {
        FsError::Io {
            label: self.label(loc),
            source,
        }
    }
}

/// The kind of a directory entry from its file type.
pub(crate) fn kind_of(t: FileType) -> EntryKind {
    match t {
        FileType::RegularFile => EntryKind::File,
        FileType::Directory => EntryKind::Dir,
        FileType::Symlink => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}

/// Creates a new temporary file in `dir` with a random name: `O_CREAT | O_EXCL | O_NOFOLLOW`, so
/// an existing name (a planted symlink or hard link included) is never opened. With
/// `default_mode`, it gets 0644 less the umask; otherwise 0600 until [`fill_temp`] sets the kept
/// mode.
pub(crate) fn create_temp(
    dir: BorrowedFd<'_>,
    default_mode: bool,
) -> Result<(String, OwnedFd), Errno> {
    let mode = Mode::from_raw_mode(if default_mode { NEW_FILE_MODE } else { 0o600 });
    let mut last = Errno::EXIST;
    for _ in 0..TEMP_ATTEMPTS {
        let mut random = [0u8; 8];
        rustix::rand::getrandom(&mut random, rustix::rand::GetRandomFlags::empty())?;
        let name = format!(".spear-tmp-{:016x}", u64::from_le_bytes(random));
        match open_beneath(
            dir,
            Path::new(&name),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW,
            mode,
        ) {
            Ok(fd) => return Ok((name, fd)),
            Err(Errno::EXIST) => last = Errno::EXIST,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Writes `contents` to the temporary file, gives it `mode` if one is kept, and syncs it.
pub(crate) fn fill_temp(fd: OwnedFd, contents: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    if let Some(mode) = mode {
        fchmod(&fd, Mode::from_raw_mode(mode))?;
    }
    let mut file = File::from(fd);
    file.write_all(contents)?;
    file.sync_all()
}
