//! Which grants were used: a grant runs its command once.

use std::collections::HashMap;
use std::io::{Read as _, Seek as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use spear_core::authority::GrantError;

/// The file beside the operator's key that records used grants.
pub const LEDGER_FILE: &str = "grants-used";

/// Records the nonces of used grants until they expire.
pub trait NonceLedger: Send + Sync {
    /// Marks `nonce` (valid until `expires_at`) used at `now`; [`GrantError::Replayed`] when it
    /// was used before. Forgets nonces whose grants have expired (they no longer verify anyway).
    fn consume(&self, nonce: &str, expires_at: u64, now: u64) -> Result<(), GrantError>;
}

/// The ledger of one process (grants sealed with a key only this process has).
#[derive(Debug, Default)]
pub struct MemoryLedger {
    used: Mutex<HashMap<String, u64>>,
}

impl NonceLedger for MemoryLedger {
    fn consume(&self, nonce: &str, expires_at: u64, now: u64) -> Result<(), GrantError> {
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        used.retain(|_, until| *until > now);
        if used.contains_key(nonce) {
            return Err(GrantError::Replayed);
        }
        used.insert(nonce.to_owned(), expires_at);
        Ok(())
    }
}

/// The ledger shared by every process of a user: a 0600 file, read and rewritten under an
/// exclusive `flock`, so two processes presenting the same grant at once cannot both use it.
/// Fails closed: a ledger that cannot be read or written refuses the grant.
#[derive(Debug)]
pub struct FileLedger {
    path: PathBuf,
}

impl FileLedger {
    /// The ledger at `path` (created on first use).
    pub fn new(path: PathBuf) -> Self {
        FileLedger { path }
    }
}

impl NonceLedger for FileLedger {
    fn consume(&self, nonce: &str, expires_at: u64, now: u64) -> Result<(), GrantError> {
        let fail = |e: std::io::Error| GrantError::Ledger {
            why: format!("{}: {e}", self.path.display()),
        };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(super::nofollow::nofollow())
            .open(&self.path)
            .map_err(fail)?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| fail(e.into()))?;
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(fail)?;
        let mut kept = String::with_capacity(text.len() + 64);
        let mut seen = false;
        for line in text.lines() {
            let Some((n, until)) = line.split_once(' ') else {
                continue;
            };
            let Ok(until) = until.parse::<u64>() else {
                continue;
            };
            if until <= now {
                continue;
            }
            seen |= n == nonce;
            kept.push_str(line);
            kept.push('\n');
        }
        if seen {
            return Err(GrantError::Replayed);
        }
        kept.push_str(nonce);
        kept.push(' ');
        kept.push_str(&expires_at.to_string());
        kept.push('\n');
        file.set_len(0).map_err(fail)?;
        file.rewind().map_err(fail)?;
        file.write_all(kept.as_bytes()).map_err(fail)?;
        file.sync_data().map_err(fail)?;
        Ok(())
    }
}
