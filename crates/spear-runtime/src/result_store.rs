//! The result store: large tool output kept outside the workspace, read back in chunks.
//!
//! What it guarantees:
//! - Output is stored content-addressed: `base/<session>/<sha256>` (the directories 0700 and
//!   owned by this user, the files 0600, written whole: temporary file, then rename).
//! - A read re-hashes the whole stored content every time and refuses it when it no longer
//!   matches its reference: what is shown is what was stored, or nothing.
//! - A reference is 64 lowercase hex digits and nothing else, and it is only looked up in the
//!   store's own session directory: another session's output cannot be read through it.
//! - With a budget ([`ResultStore::with_budget`]), a session's outputs together stay within it:
//!   storing one evicts the oldest first, and an evicted output's reference then answers
//!   [`StoreError::Expired`] (a `<hash>.expired` marker, empty, at most [`MAX_MARKERS`] kept).
//!   Attack: a command printing 50 MB, called again and again, kept 1 MiB a call with no bound.
//!
//! ```no_run
//! use spear_runtime::{ResultStore, results_base};
//!
//! let base = results_base(None, Some("/home/me".as_ref())).unwrap();
//! let store = ResultStore::open(&base, "session-1")?;
//! let r = store.put(b"a lot of output")?;
//! let chunk = store.read(&r, 0, 4096)?;
//! assert_eq!(chunk.text, "a lot of output");
//! # Ok::<(), spear_runtime::StoreError>(())
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::checkpoint::names::{Hasher, is_sha256_hex, is_valid_id, sha256_hex};
use crate::checkpoint::private_dir::{ensure_private_dir, open_regular, write_atomic};

/// How much a read takes from the file at a time while it hashes it.
const READ_BUF: usize = 64 * 1024;

/// Longest UTF-8 encoding of one character, minus one: how far a chunk's edges may move to land
/// on a character boundary.
const MAX_CHAR_TAIL: u64 = 3;

/// The default base directory: `$XDG_STATE_HOME/spear/results`, else
/// `$HOME/.local/state/spear/results`. A relative `XDG_STATE_HOME` is ignored, as the XDG spec
/// says; `None` when neither gives an absolute path. Pure.
pub fn default_base(xdg_state_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    crate::checkpoint::state_base(xdg_state_home, home).map(|b| b.join("spear").join("results"))
}

/// Expiry markers a session keeps (empty files; the oldest go first).
pub const MAX_MARKERS: usize = 4096;

/// The suffix of an expiry marker.
const EXPIRED: &str = ".expired";

/// The outputs in `dir` (name, size, modified) and its expiry markers (name, modified).
type Listing = (
    Vec<(String, u64, std::time::SystemTime)>,
    Vec<(String, std::time::SystemTime)>,
);

fn listing(dir: &Path) -> std::io::Result<Listing> {
    let mut outputs = Vec::new();
    let mut markers = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let meta = entry.metadata()?;
        if !meta.is_file() {
            continue;
        }
        let at = meta.modified()?;
        if is_sha256_hex(name) {
            outputs.push((name.to_owned(), meta.len(), at));
        } else if name.strip_suffix(EXPIRED).is_some_and(is_sha256_hex) {
            markers.push((name.to_owned(), at));
        }
    }
    Ok((outputs, markers))
}

/// A session whose directory has not changed for this long is removed by the next process that
/// stores an output ([`sweep_idle_sessions`]); `spear gc` removes them too.
pub const SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// Whether this process has swept idle sessions already.
static SWEPT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Removes every session directory under `base` but `keep` that has not changed for `idle` (its
/// own modification time, which every output stored or evicted changes), not following links.
/// Attack: none; bounds what one-shot calls, each a session of its own, leave over months.
/// Returns how many were removed.
pub fn sweep_idle_sessions(base: &Path, keep: &Path, idle: std::time::Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(base) else {
        return 0;
    };
    let now = std::time::SystemTime::now();
    let mut removed = 0;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let old = entry.file_type().is_ok_and(|t| t.is_dir())
            && entry.file_name().to_str().is_some_and(is_valid_id)
            && path != keep
            && entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|at| now.duration_since(at).is_ok_and(|d| d >= idle));
        if old && std::fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// What the session directory `dir` holds.
pub fn usage_of(dir: &Path) -> std::io::Result<ResultUsage> {
    let (outputs, _) = listing(dir)?;
    Ok(ResultUsage {
        outputs: outputs.len() as u64,
        bytes: outputs.iter().map(|(_, size, _)| size).sum(),
    })
}

/// A stored output: its content hash (the reference to read it by) and its size.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OutputRef {
    /// SHA-256 of the content, 64 lowercase hex digits.
    pub hash: String,
    /// Size of the content in bytes.
    pub size: u64,
}

impl AsRef<str> for OutputRef {
    fn as_ref(&self) -> &str {
        &self.hash
    }
}

impl std::fmt::Display for OutputRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.hash)
    }
}

/// One piece of a stored output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// The bytes `offset..next_offset` (or to the end), as UTF-8 with invalid sequences replaced.
    pub text: String,
    /// Where the piece starts: the offset asked for, moved back to the start of the character it
    /// falls inside, if any.
    pub offset: u64,
    /// Where the next piece starts; `None` when this one reaches the end. Reading on from here
    /// covers the content exactly once.
    pub next_offset: Option<u64>,
    /// Size of the whole content.
    pub total: u64,
}

/// Why the store could not be opened, written or read. Messages say what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The session id is not usable as a directory name.
    #[error("session id {session:?} cannot be used: use 1 to 64 letters, digits, '-' or '_'")]
    InvalidSession {
        /// The id as given.
        session: String,
    },
    /// The reference is not a content hash.
    #[error(
        "{reference:?} is not an output reference: use the 64 lowercase hex digits a result gave"
    )]
    InvalidRef {
        /// The reference as given.
        reference: String,
    },
    /// Nothing stored under this reference in this session.
    #[error(
        "no output {reference} is stored for this session (output of other sessions cannot be \
         read); run the command again to see its output"
    )]
    NotFound {
        /// The reference.
        reference: String,
    },
    /// The output was stored, then removed to keep the session within its budget.
    #[error(
        "the output {reference} has expired: this session keeps at most {budget} of stored \
         output and removes the oldest first; run the command again, with less output (`| head`, \
         `| tail`, or into a file in the workspace) to see it"
    )]
    Expired {
        /// The reference.
        reference: String,
        /// The session's budget, for people.
        budget: String,
    },
    /// An output larger than the session's whole budget is not stored.
    #[error("an output of {size} bytes is larger than this session's budget of {budget}")]
    OverBudget {
        /// Its size.
        size: u64,
        /// The budget, for people.
        budget: String,
    },
    /// The stored content no longer matches its reference (edited or swapped on disk).
    #[error(
        "the stored output {reference} was changed on disk ({why}) and is not shown; run the \
         command again to see its output"
    )]
    Tampered {
        /// The reference.
        reference: String,
        /// What was found.
        why: String,
    },
    /// The offset lies beyond the end of the content.
    #[error("offset {offset} is past the end of the output ({total} bytes); use a smaller offset")]
    OffsetPastEnd {
        /// The offset asked for.
        offset: u64,
        /// Size of the content.
        total: u64,
    },
    /// A store directory is not safe to use.
    #[error("the result store directory {path} cannot be used: {why}; remove it or choose another")]
    UnsafeDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// Any other I/O error.
    #[error("the result store at {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Large tool output of one session, kept outside the workspace.
#[derive(Debug, Clone)]
pub struct ResultStore {
    dir: PathBuf,
    budget: Option<u64>,
}

/// What a session's store holds, as `spear gc` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResultUsage {
    /// Stored outputs.
    pub outputs: u64,
    /// Their bytes.
    pub bytes: u64,
}

impl ResultStore {
    /// Opens (creating if needed) the store of `session` under `base_dir`: `base_dir` and
    /// `base_dir/<session>` must be directories owned by this user, not links; they are given
    /// mode 0700. The session id is 1 to 64 of `A-Z a-z 0-9 - _`.
    pub fn open(base_dir: &Path, session: &str) -> Result<ResultStore, StoreError> {
        // Attack: a session id such as `../other` naming another session's directory.
        if !is_valid_id(session) {
            return Err(StoreError::InvalidSession {
                session: session.to_owned(),
            });
        }
        let dir = base_dir.join(session);
        for d in [base_dir, dir.as_path()] {
            ensure_private_dir(d).map_err(|why| StoreError::UnsafeDir {
                path: d.to_path_buf(),
                why,
            })?;
        }
        Ok(ResultStore { dir, budget: None })
    }

    /// The same store, keeping at most `bytes` of output for its session (the oldest evicted).
    #[must_use]
    pub fn with_budget(mut self, bytes: u64) -> ResultStore {
        self.budget = Some(bytes);
        self
    }

    /// The session's budget.
    pub fn budget(&self) -> Option<u64> {
        self.budget
    }

    /// What the session's directory holds now.
    pub fn usage(&self) -> Result<ResultUsage, StoreError> {
        usage_of(&self.dir).map_err(|source| StoreError::Io {
            path: self.dir.clone(),
            source,
        })
    }

    /// Removes the oldest outputs until `need` more bytes fit in the budget, leaving an expiry
    /// marker for each; `Err` when `need` alone is over the budget.
    fn make_room(&self, hash: &str, need: u64) -> Result<(), StoreError> {
        let Some(budget) = self.budget else {
            return Ok(());
        };
        let io = |source| StoreError::Io {
            path: self.dir.clone(),
            source,
        };
        if need > budget {
            return Err(StoreError::OverBudget {
                size: need,
                budget: crate::checkpoint::quota::bytes_text(budget),
            });
        }
        // Once a process: the sessions that ended long ago go (each one-shot call is a session).
        if !SWEPT.swap(true, std::sync::atomic::Ordering::Relaxed)
            && let Some(base) = self.dir.parent()
        {
            sweep_idle_sessions(base, &self.dir, SESSION_IDLE);
        }
        let (mut outputs, mut markers) = listing(&self.dir).map_err(io)?;
        // The same content stored again replaces itself.
        outputs.retain(|(name, _, _)| name != hash);
        let mut held: u64 = outputs.iter().map(|(_, size, _)| size).sum();
        outputs.sort_by_key(|(name, _, at)| (*at, name.clone()));
        for (name, size, _) in outputs {
            if held.saturating_add(need) <= budget {
                break;
            }
            match std::fs::remove_file(self.dir.join(&name)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(e)),
            }
            held = held.saturating_sub(size);
            // Best effort: without its marker, the reference answers "not found".
            if write_atomic(&self.dir, &format!("{name}{EXPIRED}"), b"", false).is_ok() {
                markers.push((format!("{name}{EXPIRED}"), std::time::SystemTime::now()));
            }
        }
        if markers.len() > MAX_MARKERS {
            markers.sort_by_key(|(name, at)| (*at, name.clone()));
            for (name, _) in &markers[..markers.len() - MAX_MARKERS] {
                let _ = std::fs::remove_file(self.dir.join(name));
            }
        }
        Ok(())
    }

    /// The session's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stores `bytes` (mode 0600, written whole) and returns its reference. Storing the same
    /// content twice gives the same reference.
    pub fn put(&self, bytes: &[u8]) -> Result<OutputRef, StoreError> {
        let hash = sha256_hex(bytes);
        self.make_room(&hash, bytes.len() as u64)?;
        // Stored again: no longer expired.
        let _ = std::fs::remove_file(self.dir.join(format!("{hash}{EXPIRED}")));
        write_atomic(&self.dir, &hash, bytes, false).map_err(|source| StoreError::Io {
            path: self.dir.join(&hash),
            source,
        })?;
        Ok(OutputRef {
            hash,
            size: bytes.len() as u64,
        })
    }

    /// Reads about `limit` bytes (at least one character) of the output `reference` from
    /// `offset`, with both edges on character boundaries. The whole stored content is re-hashed
    /// first; one that no longer matches its reference is [`StoreError::Tampered`].
    pub fn read<R: AsRef<str> + ?Sized>(
        &self,
        reference: &R,
        offset: u64,
        limit: u64,
    ) -> Result<Chunk, StoreError> {
        let reference = reference.as_ref();
        // Attack: a reference such as `../../.ssh/id_rsa` or `../<other session>/<hash>`.
        if !is_sha256_hex(reference) {
            return Err(StoreError::InvalidRef {
                reference: reference.to_owned(),
            });
        }
        let path = self.dir.join(reference);
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let (mut file, _) = match open_regular(&path) {
            Ok(Some(found)) => found,
            Ok(None) => {
                let marker = self.dir.join(format!("{reference}{EXPIRED}"));
                if std::fs::symlink_metadata(marker).is_ok_and(|m| m.is_file()) {
                    return Err(StoreError::Expired {
                        reference: reference.to_owned(),
                        budget: self.budget.map_or_else(
                            || "its budget".to_owned(),
                            crate::checkpoint::quota::bytes_text,
                        ),
                    });
                }
                return Err(StoreError::NotFound {
                    reference: reference.to_owned(),
                });
            }
            // Attack: the stored file swapped for a link or a fifo.
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(StoreError::Tampered {
                    reference: reference.to_owned(),
                    why: e.to_string(),
                });
            }
            Err(e) => return Err(io(e)),
        };

        let limit = limit.max(1);
        let window_start = offset.saturating_sub(MAX_CHAR_TAIL);
        let window_end = offset.saturating_add(limit).saturating_add(MAX_CHAR_TAIL);
        let mut window = Vec::new();
        let mut hasher = Hasher::default();
        let mut total = 0u64;
        let mut buf = vec![0u8; READ_BUF];
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io(e)),
            };
            let piece = &buf[..n];
            hasher.update(piece);
            let (lo, hi) = (total, total + n as u64);
            let from = window_start.clamp(lo, hi);
            let to = window_end.clamp(lo, hi);
            if from < to {
                let (a, b) = (
                    usize::try_from(from - lo).unwrap_or(n),
                    usize::try_from(to - lo).unwrap_or(n),
                );
                window.extend_from_slice(&piece[a..b]);
            }
            total = hi;
        }
        // Attack: the stored file edited or replaced under the store since it was written.
        if hasher.finish() != reference {
            return Err(StoreError::Tampered {
                reference: reference.to_owned(),
                why: "its content no longer matches its hash".to_owned(),
            });
        }
        if offset > total {
            return Err(StoreError::OffsetPastEnd { offset, total });
        }
        let (start, end) =
            chunk_bounds(&window, offset - window_start, limit, total - window_start);
        let text = String::from_utf8_lossy(&window[start..end]).into_owned();
        let end = window_start + end as u64;
        Ok(Chunk {
            text,
            offset: window_start + start as u64,
            next_offset: (end < total).then_some(end),
            total,
        })
    }
}

/// The part of `window` a chunk covers, for a read of `limit` (at least 1) bytes from `offset`,
/// both relative to the window; `rest` is how many bytes of content follow the window's start.
/// The start moves back to the start of the character `offset` falls inside; the end moves back
/// to a character boundary, or forward to the end of the first character if that would leave
/// nothing. Bytes that are not valid UTF-8 are taken one at a time. Pure.
fn chunk_bounds(window: &[u8], offset: u64, limit: u64, rest: u64) -> (usize, usize) {
    let len = window.len();
    let at = |v: u64| usize::try_from(v).unwrap_or(len).min(len);
    let start = char_start(window, at(offset));
    let wanted = offset.saturating_add(limit);
    if wanted >= rest {
        return (start, len);
    }
    let mut end = char_start(window, at(wanted));
    if end <= start {
        end = (start + char_width(window.get(start).copied())).min(len);
    }
    (start, end)
}

/// The start of the character `pos` falls inside: `pos` itself unless `window[pos]` continues a
/// well-formed sequence that began at most three bytes before. Pure.
fn char_start(window: &[u8], pos: usize) -> usize {
    if window.get(pos).is_none_or(|b| !is_continuation(*b)) {
        return pos;
    }
    for back in 1..=3 {
        let Some(i) = pos.checked_sub(back) else {
            break;
        };
        if is_continuation(window[i]) {
            continue;
        }
        let width = char_width(Some(window[i]));
        return if width > back { i } else { pos };
    }
    pos
}

/// How many bytes the character led by `lead` takes; 1 for anything but a lead byte.
fn char_width(lead: Option<u8>) -> usize {
    match lead {
        Some(0xc0..=0xdf) => 2,
        Some(0xe0..=0xef) => 3,
        Some(0xf0..=0xf7) => 4,
        _ => 1,
    }
}

/// Whether `b` is a UTF-8 continuation byte.
fn is_continuation(b: u8) -> bool {
    b & 0xc0 == 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_base_table() {
        let cases: &[(Option<&str>, Option<&str>, Option<&str>)] = &[
            (
                Some("/x/state"),
                Some("/home/me"),
                Some("/x/state/spear/results"),
            ),
            (
                None,
                Some("/home/me"),
                Some("/home/me/.local/state/spear/results"),
            ),
            // A relative XDG_STATE_HOME is ignored, as the XDG spec says.
            (
                Some("rel"),
                Some("/home/me"),
                Some("/home/me/.local/state/spear/results"),
            ),
            (
                Some(""),
                Some("/home/me"),
                Some("/home/me/.local/state/spear/results"),
            ),
            (None, Some("relhome"), None),
            (None, None, None),
        ];
        for (xdg, home, want) in cases {
            let got = default_base(xdg.map(Path::new), home.map(Path::new));
            assert_eq!(got, want.map(PathBuf::from), "{xdg:?} {home:?}");
        }
    }

    type BoundsCase<'a> = (&'a [u8], u64, u64, (usize, usize));

    /// (content, offset, limit) -> (start, end) over the whole content as the window.
    #[test]
    fn chunk_bounds_table() {
        // "é" is c3 a9; "€" is e2 82 ac; "😀" is f0 9f 98 80.
        let text = "aé€😀b".as_bytes(); // a c3 a9 e2 82 ac f0 9f 98 80 62
        let cases: &[BoundsCase<'_>] = &[
            (b"hello", 0, 2, (0, 2)),
            (b"hello", 2, 10, (2, 5)),
            (b"hello", 5, 3, (5, 5)),
            (text, 0, 2, (0, 1)),             // would split "é": stops before it
            (text, 0, 3, (0, 3)),             // "aé"
            (text, 2, 3, (1, 3)),             // inside "é": starts at it
            (text, 1, 1, (1, 3)),             // one byte asked: the whole "é"
            (text, 6, 1, (6, 10)),            // the whole "😀"
            (text, 8, 4, (6, 11)),            // inside "😀" to the end
            (text, 3, 4, (3, 6)),             // "€", stopping before "😀"
            (b"\x80\x80\x80x", 1, 1, (1, 2)), // stray continuation bytes: one at a time
            (b"\xffab", 0, 1, (0, 1)),
        ];
        for (content, offset, limit, want) in cases {
            let got = chunk_bounds(content, *offset, *limit, content.len() as u64);
            assert_eq!(got, *want, "{content:?} {offset} {limit}");
        }
    }
}
