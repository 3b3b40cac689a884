//! The authority that mints and verifies grants ([`GrantAuthority`]): one key, one ledger of
//! used grants, one issuer, and how long the grants it mints stay valid.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use spear_core::authority::GrantError;

use super::binding::{Binding, Issuer};
use super::keyfile::{KeyFileError, user_key};
use super::ledger::{FileLedger, LEDGER_FILE, MemoryLedger, NonceLedger};
use super::seal::{self, GrantClaims, GrantKey};

/// How long a grant minted for an approval in a running server stays valid: long enough to
/// start the command, never a standing permission.
pub const SESSION_GRANT_TTL: Duration = Duration::from_secs(15 * 60);

/// How long an operator's grant stays valid unless `spear grant --expires` says otherwise.
pub const OPERATOR_GRANT_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Mints and verifies grants under one key, and remembers which ones were used.
pub struct GrantAuthority {
    pub(super) key: GrantKey,
    ledger: Box<dyn NonceLedger>,
    issuer: Issuer,
}

impl std::fmt::Debug for GrantAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantAuthority")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl GrantAuthority {
    /// The authority of one running server: a key random for this process, never written
    /// anywhere, and a ledger in memory (no other process can verify its grants). Fails when the
    /// kernel gives no randomness.
    pub fn for_session() -> Result<Self, GrantError> {
        Ok(GrantAuthority {
            key: GrantKey::random()?,
            ledger: Box::new(MemoryLedger::default()),
            issuer: Issuer::Session,
        })
    }

    /// The operator's authority: the per-user key in `state_dir` (created on first use) and the
    /// ledger of used grants beside it, so that a grant issued by one process is verified, once,
    /// by another.
    pub fn for_operator(state_dir: &std::path::Path) -> Result<Self, KeyFileError> {
        Ok(GrantAuthority {
            key: user_key(state_dir)?,
            ledger: Box::new(FileLedger::new(state_dir.join(LEDGER_FILE))),
            issuer: Issuer::Operator,
        })
    }

    /// An authority over a given key and ledger (tests).
    pub fn with_parts(key: GrantKey, ledger: Box<dyn NonceLedger>, issuer: Issuer) -> Self {
        GrantAuthority {
            key,
            ledger,
            issuer,
        }
    }

    /// Who mints this authority's grants.
    pub fn issuer(&self) -> Issuer {
        self.issuer
    }

    /// A grant for exactly `binding`, valid for `ttl` from `now`.
    pub fn issue(
        &self,
        binding: &Binding,
        ttl: Duration,
        now: SystemTime,
    ) -> Result<String, GrantError> {
        let issued_at = secs(now);
        let claims = GrantClaims {
            version: seal::VERSION,
            issuer: self.issuer,
            binding: self.keyed(binding),
            issued_at,
            expires_at: issued_at.saturating_add(ttl.as_secs().max(1)),
            nonce: seal::nonce()?,
        };
        Ok(self.key.seal(&claims))
    }

    /// `binding` as a grant of this authority holds it: the sandbox's digest keyed.
    fn keyed(&self, binding: &Binding) -> Binding {
        let mut keyed = binding.clone();
        keyed.sandbox.digest = self.key.keyed(&binding.sandbox.digest);
        keyed
    }

    /// Checks `token` against `binding` (what is about to run) at `now`, and marks it used. Every
    /// check comes before the grant is used up, so a grant shown for the wrong command stays
    /// good for its own; a grant that verifies is used here, whether or not the command then
    /// starts.
    pub fn verify(
        &self,
        token: &str,
        binding: &Binding,
        now: SystemTime,
    ) -> Result<GrantClaims, GrantError> {
        let claims = self.key.open(token)?;
        let now = secs(now);
        if now >= claims.expires_at {
            return Err(GrantError::Expired {
                ago_secs: now - claims.expires_at,
            });
        }
        claims.binding.check(&self.keyed(binding))?;
        self.ledger.consume(&claims.nonce, claims.expires_at, now)?;
        Ok(claims)
    }
}

/// Seconds since the epoch (0 before it).
fn secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
