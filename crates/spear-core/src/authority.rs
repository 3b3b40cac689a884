//! Authority: what the policy gives each kind of access, and why a grant that should have allowed
//! a command did not.
//!
//! A command is prepared before it runs (`spear_runtime::PreparedProcess`). For each kind of
//! access its profile uses, the policy says [`Access::Allow`] (runs), [`Access::Gated`] (runs only
//! with a grant that an approval produced and that is bound to exactly this command) or
//! [`Access::Deny`] (never runs, whatever grant comes with it). The prepared process reports what
//! it was really given ([`EffectiveAccess`]).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Capability, CapabilitySet};

/// A kind of access a command may use, each tied to the capability that gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessKind {
    /// Running code whose effects cannot be known before it runs (`shell:complex`).
    CommandExecution,
    /// Changing the workspace (`workspace:write`).
    WorkspaceWrite,
    /// Reaching the network (`network`).
    Network,
    /// Reading named host paths outside the workspace (`host:read`).
    HostRead,
}

impl AccessKind {
    /// Every kind, in a stable order.
    pub const ALL: [AccessKind; 4] = [
        AccessKind::CommandExecution,
        AccessKind::WorkspaceWrite,
        AccessKind::Network,
        AccessKind::HostRead,
    ];

    /// The capability that gives this kind of access.
    pub const fn capability(self) -> Capability {
        match self {
            AccessKind::CommandExecution => Capability::ShellComplex,
            AccessKind::WorkspaceWrite => Capability::WorkspaceWrite,
            AccessKind::Network => Capability::Network,
            AccessKind::HostRead => Capability::HostRead,
        }
    }

    /// The stable name (`command_execution`, `workspace_write`, `network`, `host_read`).
    pub const fn as_str(self) -> &'static str {
        match self {
            AccessKind::CommandExecution => "command_execution",
            AccessKind::WorkspaceWrite => "workspace_write",
            AccessKind::Network => "network",
            AccessKind::HostRead => "host_read",
        }
    }

    /// The kinds `caps` uses. `filesystem:read` is no kind of its own: the curated view is every
    /// command's.
    pub fn used_by(caps: CapabilitySet) -> impl Iterator<Item = AccessKind> {
        AccessKind::ALL
            .into_iter()
            .filter(move |k| caps.contains(k.capability()))
    }
}

impl fmt::Display for AccessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the policy gives one kind of access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Never, whatever grant is presented.
    Deny,
    /// Only with a valid grant bound to the command.
    Gated,
    /// Without asking.
    Allow,
}

/// What the policy gives each [`AccessKind`]. Built by the decision layer from the session's mode;
/// enforced by the runtime, which spawns nothing that uses a denied kind, or a gated kind without
/// a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessPolicy {
    /// Running arbitrary code.
    pub command_execution: Access,
    /// Changing the workspace.
    pub workspace_write: Access,
    /// The network.
    pub network: Access,
    /// Named host paths.
    pub host_read: Access,
}

impl AccessPolicy {
    /// Every kind gated: nothing but plain reads runs without a grant.
    pub const fn all_gated() -> Self {
        AccessPolicy {
            command_execution: Access::Gated,
            workspace_write: Access::Gated,
            network: Access::Gated,
            host_read: Access::Gated,
        }
    }

    /// What the policy gives `kind`.
    pub const fn get(&self, kind: AccessKind) -> Access {
        match kind {
            AccessKind::CommandExecution => self.command_execution,
            AccessKind::WorkspaceWrite => self.workspace_write,
            AccessKind::Network => self.network,
            AccessKind::HostRead => self.host_read,
        }
    }

    /// The same policy with `kind` set to `access`.
    #[must_use]
    pub const fn with(mut self, kind: AccessKind, access: Access) -> Self {
        match kind {
            AccessKind::CommandExecution => self.command_execution = access,
            AccessKind::WorkspaceWrite => self.workspace_write = access,
            AccessKind::Network => self.network = access,
            AccessKind::HostRead => self.host_read = access,
        }
        self
    }
}

/// How a prepared command came to have one kind of access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effective {
    /// The profile does not use it: the sandbox withholds it.
    Withheld,
    /// The policy allows it without asking.
    Allowed,
    /// The policy gates it, and a verified grant bound to this command gave it.
    Granted,
}

/// What a prepared command was really given, per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectiveAccess {
    /// Running arbitrary code.
    pub command_execution: Effective,
    /// Changing the workspace.
    pub workspace_write: Effective,
    /// The network.
    pub network: Effective,
    /// Named host paths.
    pub host_read: Effective,
}

impl EffectiveAccess {
    /// Nothing given.
    pub const fn none() -> Self {
        EffectiveAccess {
            command_execution: Effective::Withheld,
            workspace_write: Effective::Withheld,
            network: Effective::Withheld,
            host_read: Effective::Withheld,
        }
    }

    /// How `kind` was given.
    pub const fn get(&self, kind: AccessKind) -> Effective {
        match kind {
            AccessKind::CommandExecution => self.command_execution,
            AccessKind::WorkspaceWrite => self.workspace_write,
            AccessKind::Network => self.network,
            AccessKind::HostRead => self.host_read,
        }
    }

    /// The same with `kind` given as `how`.
    #[must_use]
    pub const fn with(mut self, kind: AccessKind, how: Effective) -> Self {
        match kind {
            AccessKind::CommandExecution => self.command_execution = how,
            AccessKind::WorkspaceWrite => self.workspace_write = how,
            AccessKind::Network => self.network = how,
            AccessKind::HostRead => self.host_read = how,
        }
        self
    }

    /// Whether any kind came from a grant.
    pub fn used_grant(&self) -> bool {
        AccessKind::ALL
            .into_iter()
            .any(|k| self.get(k) == Effective::Granted)
    }
}

/// Why a grant did not let a command run. Each is its own failure with its own message; in every
/// case nothing was spawned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    /// A gated kind of access was asked for without a grant.
    #[error(
        "it needs {kind} access, which this session gives only with an approval, and none was given"
    )]
    Required {
        /// The kind.
        kind: AccessKind,
    },
    /// The policy denies a kind of access; no grant can give it.
    #[error("it needs {kind} access, which this session never gives (no approval can change that)")]
    Denied {
        /// The kind.
        kind: AccessKind,
    },
    /// The token is not a grant (cut, re-encoded, another program's).
    #[error("the grant is malformed ({why})")]
    Malformed {
        /// What is wrong with it.
        why: String,
    },
    /// The MAC does not verify: forged, altered, or sealed under another (or a rotated) key.
    #[error(
        "the grant does not verify (forged, altered, or sealed with a key that was rotated since)"
    )]
    BadMac,
    /// Past its expiry.
    #[error("the grant expired {ago_secs} s ago; ask for a new approval")]
    Expired {
        /// How long ago.
        ago_secs: u64,
    },
    /// Used once already (here or in another process).
    #[error("the grant was already used; every grant runs its command once")]
    Replayed,
    /// Approved for another command.
    #[error("the grant was approved for another command (not a byte of it may differ)")]
    OtherCommand,
    /// Approved for another execution (another call of the session, another session).
    #[error("the grant was approved for another execution")]
    OtherExecution,
    /// Approved for another working directory, or the directory is not the one approved (replaced,
    /// or swapped for a link).
    #[error("the grant was approved for another working directory ({why})")]
    OtherDirectory {
        /// What differs.
        why: String,
    },
    /// A write target changed (or appeared, or was swapped for a link) since the approval.
    #[error("`{target}` changed since the approval; approve it again")]
    TargetChanged {
        /// The target, as the workspace labels it.
        target: String,
    },
    /// Approved with another profile (other capabilities, other host paths, another network
    /// route, other required guarantees) or another class.
    #[error("the grant was approved for another sandbox ({why})")]
    OtherProfile {
        /// What differs.
        why: String,
    },
    /// A guarantee the grant requires cannot be given by this host.
    #[error("the grant requires the `{guarantee}` guarantee, which this host cannot give: {why}")]
    GuaranteeUnavailable {
        /// The guarantee's name.
        guarantee: String,
        /// Why.
        why: String,
    },
    /// The record of used grants could not be read or written: a grant that cannot be marked
    /// used is not used (fail closed).
    #[error("the record of used grants cannot be updated ({why})")]
    Ledger {
        /// Why.
        why: String,
    },
}

impl GrantError {
    /// The failure's stable name (`required`, `denied`, `malformed`, `bad_mac`, `expired`,
    /// `replayed`, `other_command`, `other_execution`, `other_directory`, `target_changed`,
    /// `other_profile`, `guarantee_unavailable`, `ledger`).
    pub const fn as_str(&self) -> &'static str {
        match self {
            GrantError::Required { .. } => "required",
            GrantError::Denied { .. } => "denied",
            GrantError::Malformed { .. } => "malformed",
            GrantError::BadMac => "bad_mac",
            GrantError::Expired { .. } => "expired",
            GrantError::Replayed => "replayed",
            GrantError::OtherCommand => "other_command",
            GrantError::OtherExecution => "other_execution",
            GrantError::OtherDirectory { .. } => "other_directory",
            GrantError::TargetChanged { .. } => "target_changed",
            GrantError::OtherProfile { .. } => "other_profile",
            GrantError::GuaranteeUnavailable { .. } => "guarantee_unavailable",
            GrantError::Ledger { .. } => "ledger",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_their_capabilities() {
        let caps = CapabilitySet::of(&[
            Capability::FilesystemRead,
            Capability::WorkspaceWrite,
            Capability::Network,
        ]);
        let kinds: Vec<AccessKind> = AccessKind::used_by(caps).collect();
        assert_eq!(kinds, [AccessKind::WorkspaceWrite, AccessKind::Network]);
        assert_eq!(
            AccessKind::used_by(CapabilitySet::of(&[Capability::FilesystemRead])).count(),
            0
        );
        for kind in AccessKind::ALL {
            let one: Vec<_> =
                AccessKind::used_by(CapabilitySet::of(&[kind.capability()])).collect();
            assert_eq!(one, [kind]);
        }
    }

    #[test]
    fn policy_and_effective_set_one_kind_each() {
        let p = AccessPolicy::all_gated().with(AccessKind::Network, Access::Deny);
        assert_eq!(p.get(AccessKind::Network), Access::Deny);
        assert_eq!(p.get(AccessKind::WorkspaceWrite), Access::Gated);
        let e = EffectiveAccess::none().with(AccessKind::HostRead, Effective::Granted);
        assert!(e.used_grant());
        assert_eq!(e.get(AccessKind::Network), Effective::Withheld);
        assert!(!EffectiveAccess::none().used_grant());
    }

    #[test]
    fn every_failure_has_its_own_name_and_message() {
        let all = [
            GrantError::Required {
                kind: AccessKind::Network,
            },
            GrantError::Denied {
                kind: AccessKind::Network,
            },
            GrantError::Malformed { why: "x".into() },
            GrantError::BadMac,
            GrantError::Expired { ago_secs: 3 },
            GrantError::Replayed,
            GrantError::OtherCommand,
            GrantError::OtherExecution,
            GrantError::OtherDirectory { why: "x".into() },
            GrantError::TargetChanged { target: "a".into() },
            GrantError::OtherProfile { why: "x".into() },
            GrantError::GuaranteeUnavailable {
                guarantee: "resource_limits".into(),
                why: "x".into(),
            },
            GrantError::Ledger { why: "x".into() },
        ];
        let names: std::collections::HashSet<_> = all.iter().map(GrantError::as_str).collect();
        let texts: std::collections::HashSet<_> = all.iter().map(ToString::to_string).collect();
        assert_eq!(names.len(), all.len());
        assert_eq!(texts.len(), all.len());
    }
}
