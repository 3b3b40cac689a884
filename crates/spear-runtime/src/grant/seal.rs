//! The token: the claims as JSON, and an HMAC-SHA256 over them.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use spear_core::authority::GrantError;

use super::binding::{Binding, Issuer, hex};

/// The version of the claims' shape (2: the sandbox's environment, roots, limits, egress and
/// rules are bound).
pub(crate) const VERSION: u8 = 2;

/// What every token starts with.
const PREFIX: &str = "spear-grant-1.";

/// What the MAC covers besides the claims: a domain of its own, so that no other message spear
/// authenticates (a request state) can pass for a grant.
const DOMAIN: &[u8] = b"spear grant v1";

/// What a grant says, once its MAC verifies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantClaims {
    /// The claims' shape ([`VERSION`]).
    pub version: u8,
    /// Who minted it.
    pub issuer: Issuer,
    /// What it is for.
    pub binding: Binding,
    /// When it was minted (seconds since the epoch).
    pub issued_at: u64,
    /// When it stops being valid.
    pub expires_at: u64,
    /// Makes it single-use: a random 128-bit value, hex.
    pub nonce: String,
}

/// A 256-bit HMAC key.
#[derive(Clone)]
pub struct GrantKey([u8; 32]);

impl std::fmt::Debug for GrantKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GrantKey(..)")
    }
}

/// Fills `buf` from the kernel's random source. Fails closed: without randomness there is no key
/// and no nonce (Attack: a key guessed from the clock would let anyone seal an approval).
fn random(buf: &mut [u8]) -> Result<(), GrantError> {
    let mut filled = 0;
    while filled < buf.len() {
        filled +=
            rustix::rand::getrandom(&mut buf[filled..], rustix::rand::GetRandomFlags::empty())
                .map_err(|e| GrantError::Ledger {
                    why: format!("no randomness for a grant: {e}"),
                })?;
    }
    Ok(())
}

/// A fresh random 128-bit nonce, hex.
pub fn nonce() -> Result<String, GrantError> {
    let mut n = [0u8; 16];
    random(&mut n)?;
    Ok(hex(&n))
}

impl GrantKey {
    /// A key from the kernel's random source.
    pub fn random() -> Result<Self, GrantError> {
        let mut key = [0u8; 32];
        random(&mut key)?;
        Ok(GrantKey(key))
    }

    /// A key of these bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        GrantKey(bytes)
    }

    /// The bytes (written to the key file only).
    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A short public name of the key (not secret: a digest), for messages.
    pub fn id(&self) -> String {
        hex(&Sha256::digest(self.0)[..6])
    }

    fn mac(&self, domain: &[u8]) -> Hmac<Sha256> {
        // HMAC pads a key shorter than the hash's block with zeros: the 32-byte key, padded to
        // SHA-256's 64-byte block, is the same key.
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&self.0);
        let mut mac = <Hmac<Sha256> as KeyInit>::new(&block.into());
        mac.update(&(domain.len() as u64).to_le_bytes());
        mac.update(domain);
        mac
    }

    /// `payload` and its HMAC under this key, for `domain`, as `BODY.MAC` (base64url). The one
    /// sealing of spear's approvals: grants, and the request states of input-required rounds,
    /// each in a domain of its own so that neither can pass for the other.
    pub fn seal_payload(&self, domain: &[u8], payload: &[u8]) -> String {
        let mut mac = self.mac(domain);
        mac.update(payload);
        let tag = mac.finalize().into_bytes();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The payload of `sealed`, if its HMAC for `domain` verifies under this key (compared in
    /// constant time).
    pub fn open_payload(&self, domain: &[u8], sealed: &str) -> Result<Vec<u8>, GrantError> {
        let malformed = |why: &str| GrantError::Malformed { why: why.into() };
        let (body, tag) = sealed
            .split_once('.')
            .ok_or_else(|| malformed("it has no MAC"))?;
        let body = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| malformed("its claims are not base64url"))?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| malformed("its MAC is not base64url"))?;
        let mut mac = self.mac(domain);
        mac.update(&body);
        mac.verify_slice(&tag).map_err(|_| GrantError::BadMac)?;
        Ok(body)
    }

    /// `digest` keyed with this key (HMAC-SHA256, hex, a domain of its own): what a grant keeps
    /// of values that must not be guessable from the grant (a weak password passed exactly could
    /// be found from its plain SHA-256 by trying candidates).
    pub fn keyed(&self, digest: &str) -> String {
        let mut mac = self.mac(b"spear grant digest v1");
        mac.update(digest.as_bytes());
        hex(&mac.finalize().into_bytes())
    }

    /// The token for `claims`.
    pub fn seal(&self, claims: &GrantClaims) -> String {
        let body = serde_json::to_vec(claims).unwrap_or_default();
        format!("{PREFIX}{}", self.seal_payload(DOMAIN, &body))
    }

    /// The claims of `token`, if its MAC verifies under this key.
    pub fn open(&self, token: &str) -> Result<GrantClaims, GrantError> {
        let malformed = |why: &str| GrantError::Malformed { why: why.into() };
        let rest = token
            .trim()
            .strip_prefix(PREFIX)
            .ok_or_else(|| malformed("it does not start with `spear-grant-1.`"))?;
        let body = self.open_payload(DOMAIN, rest)?;
        // The version first: a grant of another shape says so, not which field it lacks.
        let version = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("version").and_then(serde_json::Value::as_u64));
        if version != Some(u64::from(VERSION)) {
            return Err(malformed(
                "another version of grants (issued by another spear: issue it again)",
            ));
        }
        let claims: GrantClaims =
            serde_json::from_slice(&body).map_err(|e| malformed(&format!("its claims: {e}")))?;
        Ok(claims)
    }
}
