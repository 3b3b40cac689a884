//! Grants: an approval turned into a token bound to exactly what will run.
//!
//! An approval (a terminal prompt, an MCP elicitation or input-required answer, `spear approve`,
//! or an operator's `spear grant`) produces a grant: the [`Binding`] of the prepared command (its
//! exact bytes, its execution, its working directory and that directory's identity, the
//! profile's fingerprint, the network route, the guarantees required, the class, the write
//! targets and their identities, and everything of the sandbox that widens what it may see or do:
//! the environment, the roots, the limits, the egress allowances, the rules its writes are judged
//! by) with an expiry and a nonce, authenticated with HMAC-SHA256.
//!
//! Attacks stopped:
//! - a model granting itself: only a person's answer or an operator mints a grant, and the key
//!   never reaches the sandbox or the model (a session's key lives only in the server's memory;
//!   the operator's is a 0600 file in spear's state directory, which no sandbox sees);
//! - an approval stretched over more than was approved (rule over-generalisation, APR-04): a grant
//!   binds the digest of the whole command, not a prefix, and the profile it runs with;
//! - a grant run in a wider sandbox than it was issued for (issue 31): `--env` or `[env] pass`
//!   adding a variable, `--config` adding a root, a host path, higher limits or an egress
//!   allowance, rules that protect less ([`SandboxBinding`]);
//! - an approval carried to another place (APR-07): the working directory's path and identity are
//!   bound, and re-read without following links before the command starts;
//! - a target or directory swapped for a link between the approval and the start: identities are
//!   compared when the command is prepared;
//! - replay: every grant runs once, across processes too ([`FileLedger`]).

mod authority;
mod binding;
mod keyfile;
mod ledger;
mod nofollow;
mod seal;

pub use authority::{GrantAuthority, OPERATOR_GRANT_TTL, SESSION_GRANT_TTL};
pub(crate) use binding::hex as hex_digest;
pub use binding::{
    Binding, Identity, Issuer, NetworkRoute, SandboxBinding, TargetBinding, command_digest,
};
pub(crate) use keyfile::make_dir as make_state_dir;
pub use keyfile::rotate_user_key;
pub use ledger::MemoryLedger;
pub use seal::{GrantClaims, GrantKey, nonce};

#[cfg(test)]
mod tests;
