//! Operator tokens: who may use a listening spear (`spear mcp --listen`), and with what scope.
//!
//! The operator issues a token with `spear token add NAME`; its value (`spear_` and 43 characters
//! of base64url, 32 bytes from the kernel) is printed once and never stored: the store keeps its
//! SHA-256 and what it grants (workspaces, templates, mode, the network taken away, a number of
//! sessions, an expiry). A server checks each request's token with [`TokenStore::verify`], which
//! reads the file again every time, so `spear token revoke` holds from the next request on.
//!
//! Attacks stopped:
//! - a sandboxed command or a file tool reading the store: it is `tokens.json` in spear's state
//!   directory, which no sandbox mounts and every tool refuses to name (as the grant key);
//! - the store leaking a token: it holds hashes only; a copy of it lets no one in;
//! - another user reading or planting the store: the directory is 0700 and the file 0600, opened
//!   without following a link, and refused when it is not this user's or others may read it;
//! - a lost `add` or a torn file: every change is made under an exclusive lock (`tokens.lock`),
//!   written beside the store and renamed over it, so a reader sees the old store or the new one;
//! - a timing oracle on the comparison: hashes are compared in constant time, every stored one.

use std::io::{Read as _, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use spear_core::ExecutionMode;
use subtle::ConstantTimeEq as _;

use crate::audit::rfc3339_seconds;
use crate::grant::{hex_digest, make_state_dir};

/// The store's file name in spear's state directory.
pub const TOKENS_FILE: &str = "tokens.json";
/// The lock every change to the store is made under, beside it.
const LOCK_FILE: &str = "tokens.lock";
/// What every token value starts with.
pub const TOKEN_PREFIX: &str = "spear_";
/// The random bytes of a token.
const TOKEN_BYTES: usize = 32;
/// The length of a token name, at most.
const NAME_MAX: usize = 64;
/// The store's format.
const VERSION: u32 = 1;
/// The largest store spear reads (about a hundred thousand tokens).
const FILE_MAX: u64 = 64 << 20;

/// A token to issue: its name and what it grants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenSpec {
    /// Its name: 1 to 64 of `A-Z a-z 0-9 _ . -` (not `.` or `..`), unique in the store.
    pub name: String,
    /// The workspaces its sessions may open (none: those the server serves).
    pub workspaces: Vec<PathBuf>,
    /// The templates its sessions may take a copy of.
    pub templates: Vec<PathBuf>,
    /// The most its sessions may run in (none: the server's own mode).
    pub mode: Option<ExecutionMode>,
    /// Its sessions have no network.
    pub no_network: bool,
    /// How many sessions it may hold open at once (none: the server's limit).
    pub sessions: Option<u32>,
    /// How many of its calls may be in flight at once (none: the server's limit).
    pub calls: Option<u32>,
    /// How long it is valid from its issue (none: until revoked).
    pub expires_in: Option<Duration>,
}

/// An issued token as the store describes it: never its value nor its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    /// Its name.
    pub name: String,
    /// The workspaces its sessions may open, canonical (none: those the server serves).
    pub workspaces: Vec<PathBuf>,
    /// The templates its sessions may take a copy of, canonical.
    pub templates: Vec<PathBuf>,
    /// The most its sessions may run in (none: the server's own mode).
    pub mode: Option<ExecutionMode>,
    /// Its sessions have no network.
    pub no_network: bool,
    /// How many sessions it may hold open at once (none: the server's limit).
    pub sessions: Option<u32>,
    /// How many of its calls may be in flight at once (none: the server's limit).
    pub calls: Option<u32>,
    /// When it was issued (to the second).
    pub created: SystemTime,
    /// When it stops being accepted (to the second; none: never).
    pub expires: Option<SystemTime>,
}

impl TokenInfo {
    /// Whether it has expired at `now`.
    pub fn expired_at(&self, now: SystemTime) -> bool {
        self.expires.is_some_and(|at| now >= at)
    }
}

/// Why the store could not be read or changed (`add`, `list`, `revoke`).
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The name is not one a token may have.
    #[error(
        "{name:?} cannot name a token: {why}; a name is 1 to {NAME_MAX} of the letters, digits, \
         `_`, `.` and `-`"
    )]
    InvalidName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A token of that name exists.
    #[error(
        "a token named {0} already exists; choose another name, or revoke it first (`spear token \
         revoke {0}`)"
    )]
    Duplicate(String),
    /// No token has that name.
    #[error("no token is named {0}; `spear token list` shows the tokens there are")]
    UnknownName(String),
    /// A workspace or template cannot be used.
    #[error("the {what} {} cannot be used: {why}; name a directory that exists and this user can read", path.display())]
    BadDirectory {
        /// `workspace` or `template`.
        what: &'static str,
        /// The path as given.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// A workspace or template is spear's state directory, inside it, or holds it.
    #[error(
        "the {what} {} {relation} spear's own state directory {}, which no session may see; \
         name another directory",
        path.display(),
        state.display()
    )]
    HoldsState {
        /// `workspace` or `template`.
        what: &'static str,
        /// The path, canonical.
        path: PathBuf,
        /// `lies inside` or `holds`.
        relation: &'static str,
        /// The state directory.
        state: PathBuf,
    },
    /// A limit of the spec is out of range.
    #[error("{0}")]
    InvalidSpec(String),
    /// Reading, creating, locking or replacing the store failed.
    #[error("the token store {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The store is not this user's, or others may read it.
    #[error(
        "the token store {} is {why}; it must be this user's alone (`chmod 600` it, or remove it \
         and issue the tokens again)",
        path.display()
    )]
    Unsafe {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The store is not a token store spear wrote.
    #[error(
        "the token store {} cannot be read: {why}; move it aside and issue the tokens again",
        path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The kernel gave no randomness.
    #[error("no randomness for a token: {0}")]
    Random(String),
}

/// Why a presented token is not accepted. Every variant but [`TokenRefusal::Store`] is the
/// client's to fix (HTTP 401); `Store` is the operator's (the server fails closed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenRefusal {
    /// It is not the shape of a spear token.
    #[error(
        "the credential is not a spear token (`{TOKEN_PREFIX}` and 43 characters of base64url); \
         send the value `spear token add` printed, as `Authorization: Bearer TOKEN`"
    )]
    Malformed,
    /// No token of this store has it: never issued here, issued by another spear, or revoked.
    #[error(
        "the token is not one of this server's (it was revoked, or never issued here); ask the \
         operator for one (`spear token add`)"
    )]
    Unknown,
    /// It expired.
    #[error(
        "the token {name} expired at {}; ask the operator for a new one (`spear token add`)",
        rfc3339_seconds(*at)
    )]
    Expired {
        /// Its name.
        name: String,
        /// When it expired.
        at: SystemTime,
    },
    /// The store cannot be read: no token is accepted until the operator fixes it.
    #[error("the server cannot read its token store, so it accepts no token: {why}")]
    Store {
        /// What is wrong ([`TokenError`]'s message).
        why: String,
    },
}

/// The operator's token store: `tokens.json` in spear's state directory.
#[derive(Debug, Clone)]
pub struct TokenStore {
    dir: PathBuf,
    path: PathBuf,
}

impl TokenStore {
    /// The store in spear's state directory (`<state_dir>/tokens.json`, the directory 0700, the
    /// file 0600, written atomically: a temporary file renamed over it, under a lock so that
    /// concurrent `add`s lose none). Nothing is read or made until it is used.
    pub fn at(state_dir: &Path) -> TokenStore {
        TokenStore {
            dir: state_dir.to_path_buf(),
            path: state_dir.join(TOKENS_FILE),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Adds a token issued at `now`; returns its value, which is shown once and never stored
    /// (only its SHA-256 is). A name already present is an error; workspaces and templates are
    /// stored canonical, and one that cannot be resolved, is not a directory, or holds or lies in
    /// the state directory is an error.
    pub fn add(&self, spec: &TokenSpec, now: SystemTime) -> Result<String, TokenError> {
        check_name(&spec.name)?;
        if spec.sessions == Some(0) {
            return Err(TokenError::InvalidSpec(
                "a token for 0 sessions could open none; give --sessions 1 or more".into(),
            ));
        }
        if spec.calls == Some(0) {
            return Err(TokenError::InvalidSpec(
                "a token for 0 calls in flight could make none; give --calls 1 or more".into(),
            ));
        }
        let expires = match spec.expires_in {
            None => None,
            Some(d) if d.is_zero() => {
                return Err(TokenError::InvalidSpec(
                    "a token that expires at once is never valid; give a longer --expires".into(),
                ));
            }
            Some(d) => Some(
                seconds(now)
                    .checked_add(d.as_secs().max(1))
                    .filter(|s| UNIX_EPOCH.checked_add(Duration::from_secs(*s)).is_some())
                    .ok_or_else(|| {
                        TokenError::InvalidSpec(format!(
                            "--expires {}s is further than this system's clock reaches",
                            d.as_secs()
                        ))
                    })?,
            ),
        };
        make_state_dir(&self.dir).map_err(|source| io_error(&self.dir, source))?;
        let state =
            std::fs::canonicalize(&self.dir).map_err(|source| io_error(&self.dir, source))?;
        let workspaces = canonical_dirs("workspace", &spec.workspaces, &state)?;
        let templates = canonical_dirs("template", &spec.templates, &state)?;
        let (value, sha256) = new_value()?;
        let entry = Stored {
            name: spec.name.clone(),
            sha256,
            workspaces,
            templates,
            mode: spec.mode,
            no_network: spec.no_network,
            sessions: spec.sessions,
            calls: spec.calls,
            created: seconds(now),
            expires,
        };
        self.change(|file| {
            if file.tokens.iter().any(|t| t.name == entry.name) {
                return Err(TokenError::Duplicate(entry.name.clone()));
            }
            file.tokens.push(entry);
            Ok(())
        })?;
        Ok(value)
    }

    /// Every token, in the order they were issued, without values or hashes.
    pub fn list(&self) -> Result<Vec<TokenInfo>, TokenError> {
        Ok(self.read()?.tokens.iter().map(Stored::info).collect())
    }

    /// Removes the token named `name` (an unknown name is an error). It is refused from the next
    /// [`TokenStore::verify`] on.
    pub fn revoke(&self, name: &str) -> Result<(), TokenError> {
        self.change(|file| {
            let before = file.tokens.len();
            file.tokens.retain(|t| t.name != name);
            if file.tokens.len() == before {
                return Err(TokenError::UnknownName(name.to_owned()));
            }
            Ok(())
        })
    }

    /// Which token `presented` is, or why it is not accepted at `now`: malformed, unknown (never
    /// issued here, or revoked), expired (and when). The store is read at each call, so a
    /// revocation holds from the next request; its hashes are compared in constant time, every
    /// one of them. A store that cannot be read accepts nothing ([`TokenRefusal::Store`]).
    pub fn verify(&self, presented: &str, now: SystemTime) -> Result<TokenInfo, TokenRefusal> {
        if !well_formed(presented) {
            return Err(TokenRefusal::Malformed);
        }
        let file = self
            .read()
            .map_err(|e| TokenRefusal::Store { why: e.to_string() })?;
        let hash = hex_digest(&sha2::Sha256::digest(presented.as_bytes()));
        let mut found = None;
        for stored in &file.tokens {
            if bool::from(stored.sha256.as_bytes().ct_eq(hash.as_bytes())) {
                found = Some(stored);
            }
        }
        let info = found.ok_or(TokenRefusal::Unknown)?.info();
        match info.expires {
            Some(at) if now >= at => Err(TokenRefusal::Expired {
                name: info.name,
                at,
            }),
            _ => Ok(info),
        }
    }

    /// Reads the store: empty when there is none.
    fn read(&self) -> Result<StoreFile, TokenError> {
        let mut file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nofollow())
            .open(&self.path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StoreFile::default()),
            Err(e) => return Err(io_error(&self.path, e)),
        };
        let meta = file.metadata().map_err(|e| io_error(&self.path, e))?;
        let me = rustix::process::geteuid().as_raw();
        let why = if !meta.is_file() {
            Some("not a regular file".to_owned())
        } else if meta.uid() != me {
            Some(format!("owned by uid {}, not {me}", meta.uid()))
        } else if meta.mode() & 0o077 != 0 {
            Some(format!("open to others (mode {:o})", meta.mode() & 0o777))
        } else {
            None
        };
        if let Some(why) = why {
            return Err(TokenError::Unsafe {
                path: self.path.clone(),
                why,
            });
        }
        let mut text = Vec::new();
        (&mut file)
            .take(FILE_MAX + 1)
            .read_to_end(&mut text)
            .map_err(|e| io_error(&self.path, e))?;
        if text.len() as u64 > FILE_MAX {
            return Err(self.corrupt(format!("larger than {FILE_MAX} bytes")));
        }
        let store: StoreFile =
            serde_json::from_slice(&text).map_err(|e| self.corrupt(e.to_string()))?;
        if store.version != VERSION {
            return Err(self.corrupt(format!(
                "format {} (this spear reads format {VERSION})",
                store.version
            )));
        }
        Ok(store)
    }

    /// Reads the store, changes it with `edit` and writes it back, all under the store's lock: a
    /// new file beside it (0600), synced, renamed over it. `edit`'s error leaves it unchanged.
    fn change(
        &self,
        edit: impl FnOnce(&mut StoreFile) -> Result<(), TokenError>,
    ) -> Result<(), TokenError> {
        make_state_dir(&self.dir).map_err(|source| io_error(&self.dir, source))?;
        let lock_path = self.dir.join(LOCK_FILE);
        let lock = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(nofollow())
            .open(&lock_path)
            .map_err(|e| io_error(&lock_path, e))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| io_error(&lock_path, e.into()))?;
        let mut store = self.read()?;
        store.version = VERSION;
        edit(&mut store)?;
        let mut text =
            serde_json::to_vec_pretty(&store).map_err(|e| self.corrupt(e.to_string()))?;
        text.push(b'\n');
        // Only the lock's holder writes this name; one a writer that died left is removed first.
        let tmp = self.dir.join(format!("{TOKENS_FILE}.new"));
        let _ = std::fs::remove_file(&tmp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nofollow())
            .open(&tmp)
            .map_err(|e| io_error(&tmp, e))?;
        let written = file
            .write_all(&text)
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(io_error(&self.path, e));
        }
        // The rename made durable; a failure here loses nothing already renamed.
        if let Ok(dir) = std::fs::File::open(&self.dir) {
            let _ = dir.sync_all();
        }
        drop(lock);
        Ok(())
    }

    fn corrupt(&self, why: String) -> TokenError {
        TokenError::Corrupt {
            path: self.path.clone(),
            why,
        }
    }
}

/// The file's contents.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    version: u32,
    tokens: Vec<Stored>,
}

/// One token in the file: its hash and what it grants; times in seconds since the epoch.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    name: String,
    /// The SHA-256 of the whole value, lower-case hex.
    sha256: String,
    workspaces: Vec<PathBuf>,
    templates: Vec<PathBuf>,
    mode: Option<ExecutionMode>,
    no_network: bool,
    sessions: Option<u32>,
    /// Absent in stores written before tokens had it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    calls: Option<u32>,
    created: u64,
    expires: Option<u64>,
}

impl Stored {
    fn info(&self) -> TokenInfo {
        let at = |s: u64| UNIX_EPOCH + Duration::from_secs(s);
        TokenInfo {
            name: self.name.clone(),
            workspaces: self.workspaces.clone(),
            templates: self.templates.clone(),
            mode: self.mode,
            no_network: self.no_network,
            sessions: self.sessions,
            calls: self.calls,
            created: at(self.created),
            expires: self.expires.map(at),
        }
    }
}

/// Whether `name` may name a token; why not otherwise.
pub(crate) fn check_name(name: &str) -> Result<(), TokenError> {
    let why = if name.is_empty() {
        Some("it is empty")
    } else if name.len() > NAME_MAX {
        Some("it is too long")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    {
        Some("it holds a character other than these")
    } else if name == "." || name == ".." {
        Some("`.` and `..` name directories")
    } else {
        None
    };
    why.map_or(Ok(()), |why| {
        Err(TokenError::InvalidName {
            name: name.to_owned(),
            why,
        })
    })
}

/// Whether `presented` has a token's shape: the prefix and 32 bytes in canonical base64url
/// (no padding, no stray trailing bits).
pub(crate) fn well_formed(presented: &str) -> bool {
    presented.strip_prefix(TOKEN_PREFIX).is_some_and(|body| {
        body.len() == 43
            && URL_SAFE_NO_PAD
                .decode(body)
                .is_ok_and(|bytes| bytes.len() == TOKEN_BYTES)
    })
}

/// A fresh token value and its hash.
fn new_value() -> Result<(String, String), TokenError> {
    let mut bytes = [0u8; TOKEN_BYTES];
    let mut filled = 0;
    while filled < bytes.len() {
        filled +=
            rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty())
                .map_err(|e| TokenError::Random(e.to_string()))?;
    }
    let value = format!("{TOKEN_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes));
    let hash = hex_digest(&sha2::Sha256::digest(value.as_bytes()));
    Ok((value, hash))
}

/// `paths` canonical, each a directory this user can list, none holding or inside `state`.
fn canonical_dirs(
    what: &'static str,
    paths: &[PathBuf],
    state: &Path,
) -> Result<Vec<PathBuf>, TokenError> {
    let mut out: Vec<PathBuf> = Vec::with_capacity(paths.len());
    for path in paths {
        let bad = |why: String| TokenError::BadDirectory {
            what,
            path: path.clone(),
            why,
        };
        let canonical = std::fs::canonicalize(path).map_err(|e| bad(e.to_string()))?;
        if !canonical.is_dir() {
            return Err(bad("not a directory".into()));
        }
        std::fs::read_dir(&canonical).map_err(|e| bad(e.to_string()))?;
        if canonical.to_str().is_none() {
            return Err(bad("its path is not UTF-8".into()));
        }
        let relation = if canonical.starts_with(state) {
            Some("lies inside")
        } else if state.starts_with(&canonical) {
            Some("holds")
        } else {
            None
        };
        if let Some(relation) = relation {
            return Err(TokenError::HoldsState {
                what,
                path: canonical,
                relation,
                state: state.to_path_buf(),
            });
        }
        if !out.contains(&canonical) {
            out.push(canonical);
        }
    }
    Ok(out)
}

/// `source`, failing on `path`.
fn io_error(path: &Path, source: std::io::Error) -> TokenError {
    TokenError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Seconds since the epoch (0 before it).
fn seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs()
}

/// `O_NOFOLLOW`: the store and its lock are never opened through a link planted to make spear
/// use another file.
fn nofollow() -> i32 {
    i32::try_from(rustix::fs::OFlags::NOFOLLOW.bits()).unwrap_or(0)
}

#[cfg(test)]
mod tests;
