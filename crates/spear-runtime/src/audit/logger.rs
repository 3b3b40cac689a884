//! `AuditLogger`: appends one JSON line per record to a private file, safely under concurrency.
//!
//! Opening checks, in order, each through file descriptors (never a path checked and then
//! opened by name):
//! 1. The path is absolute and names a file.
//! 2. The directory is created with mode 0700 when missing, then opened with `O_NOFOLLOW`: it must
//!    be a real directory (not a link), owned by this user; a wider mode is tightened to 0700.
//! 3. The file is opened beneath that directory with
//!    `O_APPEND|O_CREAT|O_CLOEXEC|O_NOFOLLOW|O_NONBLOCK`, mode 0600: it must be a regular file,
//!    owned by this user, with one link; a wider mode is tightened to 0600.
//!
//! Writing: the whole line is serialized first (serde escapes newlines and C0 controls; DEL, the
//! C1 controls and U+2028/U+2029 are escaped after it, so a record is exactly one line for any
//! reader), then written with one `write(2)` (looping only on a short
//! write) while holding an in-process mutex and an exclusive `flock` that other processes honour.
//! A line that a killed writer left unterminated is ended before the next record.
//!
//! Rotation ([`AuditLogger::with_rotation`]): once the log reaches its size, the writer holding
//! the lock renames it to `<name>.1` (replacing the older one) and starts a new log, so the log
//! takes at most about twice that size and the newest records are never the ones dropped.
//! Every writer checks under the lock that its file is still the one at the path, and reopens
//! it when another process rotated it.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rustix::fs::{FileType, FlockOperation, Mode, OFlags, Stat};

use super::record::AuditRecord;

/// The mode of the audit directory.
const DIR_MODE: u32 = 0o700;

/// The mode of the audit log.
const FILE_MODE: u32 = 0o600;

/// Why the audit log cannot be opened, written or read. Every message says what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The path is relative.
    #[error("the audit log path {path} is relative; give an absolute path outside the workspace")]
    NotAbsolute {
        /// The path as given.
        path: PathBuf,
    },
    /// The path names no file (`/`, `..`).
    #[error(
        "the audit log path {path} names no file; give a file path such as ~/.local/state/spear/audit.jsonl"
    )]
    NoFileName {
        /// The path as given.
        path: PathBuf,
    },
    /// The path (the log or its directory) is a symbolic link.
    #[error(
        "{path} is a symbolic link, and spear does not follow links to its audit log; remove the link or choose another audit log path"
    )]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// The directory is not a directory, or the log is not a regular file.
    #[error("{path} is not a {expected}; remove it or choose another audit log path")]
    WrongType {
        /// The entry.
        path: PathBuf,
        /// What it should be: "directory" or "regular file".
        expected: &'static str,
    },
    /// The entry belongs to another user.
    #[error(
        "{path} belongs to uid {owner}, not to this user (uid {me}), so another user could read or replace the audit log; choose another audit log path"
    )]
    NotOwned {
        /// The entry.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// This process's effective uid.
        me: u32,
    },
    /// The log has more than one hard link.
    #[error(
        "{path} has {links} hard links, so appending to it could write into another file; remove it or choose another audit log path"
    )]
    HardLinked {
        /// The log.
        path: PathBuf,
        /// Its link count.
        links: u64,
    },
    /// A system call failed.
    #[error(
        "cannot {action} {path}: {source}; check the path and its permissions, or choose another audit log path"
    )]
    Io {
        /// What was being done ("create the directory", "open", "write to", ...).
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// Why it failed.
        source: io::Error,
    },
    /// The record could not be serialized (it cannot happen with the record's field types).
    #[error("cannot serialize the audit record: {0}")]
    Serialize(#[from] serde_json::Error),
}

/// What to do with an existing entry, given its owner and mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Permissions {
    /// Owned by us with exactly the wanted mode.
    Keep,
    /// Owned by us with another mode: set the wanted one.
    Fix,
    /// Owned by someone else: refuse, whatever its mode.
    NotOwned,
}

/// The verdict on an entry owned by `owner` with `mode` (permission bits, setuid/setgid/sticky
/// included) when this process runs as `me` and wants `wanted`.
///
/// Attack: a directory or file another user owns (a shared `/tmp`, a planted `~/.local/state`
/// entry) lets that user read the log or swap it; spear never writes there.
pub(crate) fn permissions(owner: u32, me: u32, mode: u32, wanted: u32) -> Permissions {
    if owner != me {
        Permissions::NotOwned
    } else if mode & 0o7777 != wanted {
        Permissions::Fix
    } else {
        Permissions::Keep
    }
}

/// Appends audit records to one file. `Send + Sync`: share it between threads by reference or
/// `Arc`; records from concurrent calls (and other processes) never interleave.
#[derive(Debug)]
pub struct AuditLogger {
    path: PathBuf,
    file: Mutex<File>,
    /// The log's directory, opened without following a link: rotation and reopening act in it.
    dir: rustix::fd::OwnedFd,
    /// Size at which the log is rotated; `None`: never.
    rotate_at: Option<u64>,
    /// Who every record is for, where the record does not say ([`AuditLogger::for_principal`]).
    principal: Option<String>,
}

impl AuditLogger {
    /// Opens (creating if missing) the audit log at `path`, an absolute path outside the
    /// workspace; see the module documentation for the checks.
    pub fn open(path: &Path) -> Result<AuditLogger, AuditError> {
        if !path.is_absolute() {
            return Err(AuditError::NotAbsolute {
                path: path.to_owned(),
            });
        }
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(AuditError::NoFileName {
                path: path.to_owned(),
            });
        };
        let dir_fd = open_dir(dir)?;
        let file = open_log(&dir_fd, name, path)?;
        Ok(AuditLogger {
            path: path.to_owned(),
            file: Mutex::new(file),
            dir: dir_fd,
            rotate_at: None,
            principal: None,
        })
    }

    /// The same logger, rotating the log once it reaches `bytes` (one older file kept as
    /// `<name>.1`).
    #[must_use]
    pub fn with_rotation(mut self, bytes: u64) -> AuditLogger {
        self.rotate_at = Some(bytes);
        self
    }

    /// The same logger, naming `principal` (`token:NAME`) in every record that names none: the
    /// sessions a listening server opens for a credential.
    #[must_use]
    pub fn for_principal(mut self, principal: impl Into<String>) -> AuditLogger {
        self.principal = Some(principal.into());
        self
    }

    /// The rotated, older log next to `path`: `<path>.1`.
    pub fn rotated_path(path: &Path) -> PathBuf {
        let mut name = path.as_os_str().to_owned();
        name.push(".1");
        PathBuf::from(name)
    }

    /// The path the log was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record`, redacted, as exactly one line. Returns once the line is written in full.
    pub fn log(&self, record: &AuditRecord) -> Result<(), AuditError> {
        let mut redacted = record.redacted();
        if redacted.principal.is_none() {
            redacted.principal.clone_from(&self.principal);
        }
        let mut line = escape_line_breakers(&serde_json::to_string(&redacted)?).into_bytes();
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        retry(|| rustix::fs::flock(&*file, FlockOperation::LockExclusive))
            .map_err(|e| io_error("lock", &self.path, e))?;
        if self.rotate_at.is_some() && !self.is_current(&file) {
            // Another writer rotated the log: write to the new one, under its lock.
            let fresh = self.reopen_locked(&file)?;
            *file = fresh;
        }
        let written = append_line(&file, &line).map_err(|e| AuditError::Io {
            action: "write to",
            path: self.path.clone(),
            source: e,
        });
        let rotated = match (&written, self.rotate_at) {
            (Ok(()), Some(max)) if file.metadata().is_ok_and(|m| m.len() >= max) => {
                self.rotate(&mut file)
            }
            _ => Ok(()),
        };
        let unlocked = retry(|| rustix::fs::flock(&*file, FlockOperation::Unlock))
            .map_err(|e| io_error("unlock", &self.path, e));
        written.and(rotated).and(unlocked)
    }

    /// Whether `file` is still the log at the path (not rotated away by another writer).
    fn is_current(&self, file: &File) -> bool {
        let Some(name) = self.path.file_name() else {
            return false;
        };
        let (Ok(mine), Ok(there)) = (
            rustix::fs::fstat(file),
            rustix::fs::statat(&self.dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW),
        ) else {
            return false;
        };
        mine.st_dev == there.st_dev && mine.st_ino == there.st_ino
    }

    /// Opens the log at the path again and locks it, then releases `old`'s lock.
    ///
    /// Another writer may rotate the file between the open and the lock: the lock is then held
    /// on the rotated file, and a record written there, or a rotation of the path, would go to
    /// the wrong file (or find none). So the file locked must still be the one at the path;
    /// otherwise it is released and the path opened again.
    fn reopen_locked(&self, old: &File) -> Result<File, AuditError> {
        /// Rotations in a row that a writer waits out before it gives up.
        const ATTEMPTS: usize = 64;
        let name = self.path.file_name().unwrap_or_default();
        for _ in 0..ATTEMPTS {
            let fresh = open_log(&self.dir, name, &self.path)?;
            retry(|| rustix::fs::flock(&fresh, FlockOperation::LockExclusive))
                .map_err(|e| io_error("lock", &self.path, e))?;
            if self.is_current(&fresh) {
                let _ = retry(|| rustix::fs::flock(old, FlockOperation::Unlock));
                return Ok(fresh);
            }
            let _ = retry(|| rustix::fs::flock(&fresh, FlockOperation::Unlock));
        }
        Err(io_error("lock", &self.path, rustix::io::Errno::AGAIN))
    }

    /// Renames the full log (whose lock `file` holds) to `<name>.1` and starts a new one, held
    /// locked in its place. Attack: none beyond the log's own; a link planted at `<name>.1` is
    /// replaced by the rename, never followed.
    fn rotate(&self, file: &mut File) -> Result<(), AuditError> {
        let Some(name) = self.path.file_name() else {
            return Ok(());
        };
        let mut older = name.to_owned();
        older.push(".1");
        rustix::fs::renameat(&self.dir, name, &self.dir, older.as_os_str())
            .map_err(|e| io_error("rotate", &self.path, e))?;
        let fresh = self.reopen_locked(file)?;
        *file = fresh;
        Ok(())
    }
}

/// Opens (creating if missing) the log `name` in `dir_fd`; see the module documentation for the
/// checks.
fn open_log(
    dir_fd: &rustix::fd::OwnedFd,
    name: &std::ffi::OsStr,
    path: &Path,
) -> Result<File, AuditError> {
    // Attack: a symlink planted at the log path (to ~/.bashrc, say) would make every record
    // an append to the file it points at. O_NOFOLLOW refuses it; O_NONBLOCK keeps a FIFO
    // planted there from blocking the open.
    let fd = rustix::fs::openat(
        dir_fd,
        name,
        OFlags::RDWR
            | OFlags::APPEND
            | OFlags::CREATE
            | OFlags::CLOEXEC
            | OFlags::NOFOLLOW
            | OFlags::NONBLOCK
            | OFlags::NOCTTY,
        Mode::from_raw_mode(FILE_MODE),
    )
    .map_err(|e| {
        if e == rustix::io::Errno::LOOP {
            AuditError::Symlink {
                path: path.to_owned(),
            }
        } else {
            io_error("open", path, e)
        }
    })?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| io_error("inspect", path, e))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(AuditError::WrongType {
            path: path.to_owned(),
            expected: "regular file",
        });
    }
    // Attack: a hard link at the log path to another file of this user's would receive
    // every record.
    // `st_nlink` is narrower than u64 on some architectures.
    #[allow(clippy::useless_conversion)]
    let links = u64::from(stat.st_nlink);
    if links != 1 {
        return Err(AuditError::HardLinked {
            path: path.to_owned(),
            links,
        });
    }
    check_permissions(&fd, &stat, path, FILE_MODE)?;
    Ok(File::from(fd))
}

/// `json` with the characters serde leaves raw but some readers take for a line break or a
/// terminal control written as `\uXXXX`: DEL and the C1 controls (NEL, CSI, ...), and the line
/// and paragraph separators. They occur only inside strings, so the value is unchanged.
///
/// Attack: a value holding U+2028 or NEL splits the record in two for a reader that breaks lines
/// there (JavaScript, Python's `splitlines`), and a C1 CSI rewrites the terminal of whoever
/// reads the log with `spear audit --tail`.
fn escape_line_breakers(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if matches!(c, '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}') {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// Creates the directory (mode 0700) if missing, and opens it without following a link.
fn open_dir(dir: &Path) -> Result<rustix::fd::OwnedFd, AuditError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|e| AuditError::Io {
            action: "create the directory",
            path: dir.to_owned(),
            source: e,
        })?;
    // Attack: the log directory replaced by a link to a directory someone else controls.
    let fd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        let is_link = std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
        if is_link {
            AuditError::Symlink {
                path: dir.to_owned(),
            }
        } else if e == rustix::io::Errno::NOTDIR {
            AuditError::WrongType {
                path: dir.to_owned(),
                expected: "directory",
            }
        } else {
            io_error("open the directory", dir, e)
        }
    })?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| io_error("inspect", dir, e))?;
    check_permissions(&fd, &stat, dir, DIR_MODE)?;
    Ok(fd)
}

/// Refuses an entry owned by another user; sets `wanted` on one of ours with another mode.
fn check_permissions(
    fd: &rustix::fd::OwnedFd,
    stat: &Stat,
    path: &Path,
    wanted: u32,
) -> Result<(), AuditError> {
    let me = rustix::process::geteuid().as_raw();
    match permissions(stat.st_uid, me, stat.st_mode, wanted) {
        Permissions::Keep => Ok(()),
        Permissions::Fix => rustix::fs::fchmod(fd, Mode::from_raw_mode(wanted))
            .map_err(|e| io_error("restrict the permissions of", path, e)),
        Permissions::NotOwned => Err(AuditError::NotOwned {
            path: path.to_owned(),
            owner: stat.st_uid,
            me,
        }),
    }
}

/// Writes `line` at the end of `file` (held under the lock): a newline first when the file's
/// last line is unterminated, then the line in one `write(2)`, looping on a short write. A write
/// that fails part-way ends what it wrote with a newline, so the next record starts on its own
/// line.
fn append_line(file: &File, line: &[u8]) -> io::Result<()> {
    let len = file.metadata()?.len();
    if len > 0 {
        let mut last = [0u8; 1];
        file.read_exact_at(&mut last, len - 1)?;
        if last[0] != b'\n' {
            write_all(file, b"\n")?;
        }
    }
    let mut rest = line;
    while !rest.is_empty() {
        match (&*file).write(rest) {
            Ok(0) => {
                let e = io::Error::new(io::ErrorKind::WriteZero, "the file accepted no bytes");
                return Err(end_partial(file, line, rest, e));
            }
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(end_partial(file, line, rest, e)),
        }
    }
    Ok(())
}

/// After a failed write: ends a partly written line with a newline (best effort) and returns
/// the error.
fn end_partial(file: &File, line: &[u8], rest: &[u8], e: io::Error) -> io::Error {
    if rest.len() < line.len() {
        let _ = write_all(file, b"\n");
    }
    e
}

fn write_all(mut file: &File, bytes: &[u8]) -> io::Result<()> {
    file.write_all(bytes)
}

/// Retries a system call interrupted by a signal.
fn retry(mut f: impl FnMut() -> rustix::io::Result<()>) -> rustix::io::Result<()> {
    loop {
        match f() {
            Err(rustix::io::Errno::INTR) => {}
            other => return other,
        }
    }
}

fn io_error(action: &'static str, path: &Path, e: rustix::io::Errno) -> AuditError {
    AuditError::Io {
        action,
        path: path.to_owned(),
        source: e.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breakers_are_escaped() {
        let json = serde_json::to_string("a\u{2028}b\u{85}c\u{9b}d\u{7f}e\u{2029}é\n").unwrap();
        let escaped = escape_line_breakers(&json);
        assert_eq!(escaped, r#""a\u2028b\u0085c\u009bd\u007fe\u2029é\n""#);
        let back: String = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, "a\u{2028}b\u{85}c\u{9b}d\u{7f}e\u{2029}é\n");
    }

    #[test]
    fn permissions_table() {
        let cases = [
            (1000, 1000, 0o700, 0o700, Permissions::Keep),
            (1000, 1000, 0o755, 0o700, Permissions::Fix),
            (1000, 1000, 0o1700, 0o700, Permissions::Fix),
            (1000, 1000, 0o500, 0o700, Permissions::Fix),
            (1000, 1000, 0o600, 0o600, Permissions::Keep),
            (1000, 1000, 0o644, 0o600, Permissions::Fix),
            (1000, 1000, 0o40_700, 0o700, Permissions::Keep),
            (0, 1000, 0o755, 0o700, Permissions::NotOwned),
            (0, 1000, 0o700, 0o700, Permissions::NotOwned),
            (1001, 1000, 0o600, 0o600, Permissions::NotOwned),
            (1000, 0, 0o600, 0o600, Permissions::NotOwned),
        ];
        for (owner, me, mode, wanted, want) in cases {
            assert_eq!(
                permissions(owner, me, mode, wanted),
                want,
                "{owner} {me} {mode:o}"
            );
        }
    }
}
