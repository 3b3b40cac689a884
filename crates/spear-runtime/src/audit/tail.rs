//! The last lines of an audit log (`spear audit --tail N`), read backwards in chunks so that
//! memory stays bounded by the lines returned, whatever the size of the log.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};

use super::logger::{AuditError, AuditLogger};

/// How many bytes are read at a time, from the end.
const CHUNK: u64 = 64 * 1024;

impl AuditLogger {
    /// The last `n` lines of the log at `path`, oldest first, without their newlines (bytes that
    /// are not UTF-8 are replaced); when the log holds fewer, the rest come from the rotated
    /// older log (`<path>.1`), if there is one. Logs are opened without following a link.
    pub fn tail(path: &Path, n: usize) -> Result<Vec<String>, AuditError> {
        let newest = tail_of(path, n)?;
        if newest.len() >= n {
            return Ok(newest);
        }
        let older = AuditLogger::rotated_path(path);
        let mut lines = match tail_of(&older, n - newest.len()) {
            Ok(lines) => lines,
            Err(AuditError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Vec::new()
            }
            Err(e) => return Err(e),
        };
        lines.extend(newest);
        Ok(lines)
    }
}

/// The last `n` lines of the one file at `path`.
fn tail_of(path: &Path, n: usize) -> Result<Vec<String>, AuditError> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let io = |action| {
        move |e: rustix::io::Errno| AuditError::Io {
            action,
            path: path.to_owned(),
            source: e.into(),
        }
    };
    // Attack: a symlink at the log path shows another file's last lines as audit records.
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| {
        if e == rustix::io::Errno::LOOP {
            AuditError::Symlink {
                path: path.to_owned(),
            }
        } else {
            io("open")(e)
        }
    })?;
    let meta = rustix::fs::fstat(&fd).map_err(io("inspect"))?;
    if FileType::from_raw_mode(meta.st_mode) != FileType::RegularFile {
        return Err(AuditError::WrongType {
            path: path.to_owned(),
            expected: "regular file",
        });
    }
    let file = File::from(fd);
    let len = u64::try_from(meta.st_size).unwrap_or(0);
    let read = |e: std::io::Error| AuditError::Io {
        action: "read",
        path: path.to_owned(),
        source: e,
    };
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut pos = len;
    let mut newlines = 0usize;
    // Newlines needed: one before each of the n lines, not counting the one ending the file.
    while pos > 0 && newlines < n {
        let start = pos.saturating_sub(CHUNK);
        let size = usize::try_from(pos - start).unwrap_or(0);
        let mut chunk = vec![0u8; size];
        file.read_exact_at(&mut chunk, start).map_err(read)?;
        let ending = if pos == len && chunk.last() == Some(&b'\n') {
            chunk.len() - 1
        } else {
            chunk.len()
        };
        newlines += chunk[..ending].split(|&c| c == b'\n').count() - 1;
        chunks.push(chunk);
        pos = start;
    }
    let bytes: Vec<u8> = chunks.into_iter().rev().flatten().collect();
    let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    if body.is_empty() && len == 0 {
        return Ok(Vec::new());
    }
    let lines: Vec<&[u8]> = body.split(|&c| c == b'\n').collect();
    let skip = lines.len().saturating_sub(n);
    Ok(lines[skip..]
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect())
}
