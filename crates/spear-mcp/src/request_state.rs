//! The request state of an input-required exchange (protocol 2026-07-28): sealed by the server,
//! echoed by the client, and trusted only after it opens.
//!
//! Attack: a client (or a model steering one) forging or replaying the state to run something the
//! user never approved. The state is sealed the way grants are ([`spear_runtime::GrantKey`]: one
//! HMAC-SHA256 sealing for every approval spear hands out, here in a domain of its own so that a
//! state never passes for a grant), under a key that never leaves this process; it is bound to
//! the session, the tool and the exact arguments (a state minted for one call does not open for
//! another); it expires; and each one opens once. What the approval then lets run is a grant the
//! router mints for exactly the prepared command, which the runner verifies before it spawns.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use spear_runtime::GrantKey;

/// How long the user has to answer.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(15 * 60);

/// The sealing domain of request states (grants have their own).
const DOMAIN: &[u8] = b"spear-mcp confirm v2";

/// What a state opens to.
const PREFIX: &str = "rs2.";

/// What the state carries: which question was asked, what call it is bound to, until when, and
/// a nonce that makes it single-use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Sealed {
    nonce: String,
    question: String,
    bound: String,
    expires_at: u64,
}

/// Why a sealer could not be made, or an echoed state was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StateError {
    /// Forged, altered, expired, or minted for another call.
    #[error(
        "the requestState does not verify for this call (altered, expired, or minted for other arguments)"
    )]
    Invalid,
    /// No key could be made (the kernel gave no randomness).
    #[error("cannot make a request-state key")]
    Key,
    /// Already used once, or kept past its time.
    #[error("the requestState was already used, or is too old; call the tool again without it")]
    Replayed,
}

/// Seals and opens request states for one server process.
pub struct StateSealer {
    key: GrantKey,
    /// The nonces of states sealed and not yet opened, with when. A state opens only if its
    /// nonce is here, and opening takes it out: so each opens once, and one whose nonce is gone
    /// (opened, or older than twice [`ANSWER_WITHIN`] on the monotonic clock) never opens, even
    /// if the wall clock the expiry reads steps back.
    issued: Mutex<HashMap<String, Instant>>,
}

impl std::fmt::Debug for StateSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSealer").finish_non_exhaustive()
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl StateSealer {
    /// A sealer with a fresh 256-bit key from the kernel's random source. Fails closed: without
    /// randomness there is no key, and no server (Attack: a key guessed from the clock would let
    /// anyone seal an approval).
    pub fn new() -> Result<Self, StateError> {
        Ok(StateSealer {
            key: GrantKey::random().map_err(|_| StateError::Key)?,
            issued: Mutex::new(HashMap::new()),
        })
    }

    /// A state for the question with `digest`, asked of `tool` called with `args` in `session`.
    pub fn seal(
        &self,
        session: &str,
        tool: &str,
        args: &serde_json::Value,
        digest: &[u8; 32],
    ) -> String {
        let Ok(nonce) = spear_runtime::grant_nonce() else {
            // No randomness: a state that can never open (its nonce was never issued).
            return String::new();
        };
        let sealed = Sealed {
            nonce,
            question: hex(digest),
            bound: hex(&binding(session, tool, args)),
            expires_at: now_secs().saturating_add(ANSWER_WITHIN.as_secs()),
        };
        {
            let now = Instant::now();
            let mut issued = self.issued.lock().unwrap_or_else(PoisonError::into_inner);
            issued.retain(|_, at| now.duration_since(*at) <= ANSWER_WITHIN * 2);
            issued.insert(sealed.nonce.clone(), now);
        }
        let payload = serde_json::to_vec(&sealed).unwrap_or_default();
        format!("{PREFIX}{}", self.key.seal_payload(DOMAIN, &payload))
    }

    /// The digest of the question `state` was sealed for, if it opens for this very call and was
    /// never opened before.
    pub fn open(
        &self,
        state: &str,
        session: &str,
        tool: &str,
        args: &serde_json::Value,
    ) -> Result<[u8; 32], StateError> {
        let body = state.strip_prefix(PREFIX).ok_or(StateError::Invalid)?;
        let payload = self
            .key
            .open_payload(DOMAIN, body)
            .map_err(|_| StateError::Invalid)?;
        let sealed: Sealed = serde_json::from_slice(&payload).map_err(|_| StateError::Invalid)?;
        if sealed.bound != hex(&binding(session, tool, args)) || now_secs() >= sealed.expires_at {
            return Err(StateError::Invalid);
        }
        let digest = unhex(&sealed.question).ok_or(StateError::Invalid)?;
        let mut issued = self.issued.lock().unwrap_or_else(PoisonError::into_inner);
        if issued.remove(&sealed.nonce).is_none() {
            return Err(StateError::Replayed);
        }
        Ok(digest)
    }
}

/// What a state is bound to: the session, the tool and a digest of the arguments.
fn binding(session: &str, tool: &str, args: &serde_json::Value) -> [u8; 32] {
    let args = serde_json::to_vec(args).unwrap_or_default();
    let mut h = Sha256::new();
    for part in [session.as_bytes(), tool.as_bytes(), &Sha256::digest(&args)] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn a_state_opens_once_for_its_own_call() {
        let s = StateSealer::new().unwrap();
        let args = json!({"command": "rm -f a"});
        let state = s.seal("s1", "terminal", &args, &[7; 32]);
        assert_eq!(s.open(&state, "s1", "terminal", &args), Ok([7; 32]));
        assert_eq!(
            s.open(&state, "s1", "terminal", &args),
            Err(StateError::Replayed)
        );
    }

    #[test]
    fn a_state_does_not_open_for_another_call() {
        let s = StateSealer::new().unwrap();
        let args = json!({"command": "rm -f a"});
        let state = s.seal("s1", "terminal", &args, &[7; 32]);
        for (session, tool, other) in [
            ("s2", "terminal", args.clone()),
            ("s1", "write_file", args.clone()),
            ("s1", "terminal", json!({"command": "rm -f b"})),
            (
                "s1",
                "terminal",
                json!({"command": "rm -f a", "timeout_secs": 5}),
            ),
        ] {
            assert_eq!(
                s.open(&state, session, tool, &other),
                Err(StateError::Invalid),
                "{session} {tool} {other}"
            );
        }
        // It still opens for its own call: the refusals above used nothing up.
        assert_eq!(s.open(&state, "s1", "terminal", &args), Ok([7; 32]));
    }

    #[test]
    fn forged_altered_or_foreign_states_do_not_open() {
        let s = StateSealer::new().unwrap();
        let other = StateSealer::new().unwrap();
        let args = json!({});
        let state = s.seal("s1", "terminal", &args, &[7; 32]);
        let mut altered = state.clone().into_bytes();
        let mid = altered.len() / 2;
        altered[mid] = if altered[mid] == b'A' { b'B' } else { b'A' };
        for bad in [
            String::new(),
            "rs1.".to_owned(),
            String::from_utf8(altered).unwrap(),
            other.seal("s1", "terminal", &args, &[7; 32]),
        ] {
            assert_eq!(
                s.open(&bad, "s1", "terminal", &args),
                Err(StateError::Invalid),
                "{bad}"
            );
        }
    }

    #[test]
    fn hex_round_trips() {
        let d: [u8; 32] = core::array::from_fn(|i| u8::try_from(i * 7).unwrap());
        assert_eq!(unhex(&hex(&d)), Some(d));
        assert_eq!(unhex("zz"), None);
    }
}
