//! Capabilities and the matrix that says which mode grants which.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ExecutionMode;

/// Something a command or tool call may need beyond running at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    /// Read the workspace roots.
    FilesystemRead,
    /// Read named paths outside the workspace roots (bound read-only into the sandbox).
    HostRead,
    /// Create, change or delete files inside the workspace roots.
    WorkspaceWrite,
    /// Run code whose effects cannot be determined before it runs (confined by the sandbox).
    ShellComplex,
    /// Reach the network through the sandbox's own network stack.
    Network,
    /// Use a GPU device. Declared, not implemented: no mode grants it.
    Gpu,
    /// Use SSH keys or agents. Declared, not implemented: no mode grants it.
    Ssh,
    /// Change state on a remote system (push, deploy, publish). Not implemented: no mode grants it.
    RemoteWrite,
    /// Talk to a container runtime (docker, podman, kubectl). Not implemented: no mode grants it.
    ContainerRuntime,
    /// See credentials. Not implemented: no mode grants it.
    Secrets,
}

impl Capability {
    /// Every capability, in a stable order.
    pub const ALL: [Capability; 10] = [
        Capability::FilesystemRead,
        Capability::HostRead,
        Capability::WorkspaceWrite,
        Capability::ShellComplex,
        Capability::Network,
        Capability::Gpu,
        Capability::Ssh,
        Capability::RemoteWrite,
        Capability::ContainerRuntime,
        Capability::Secrets,
    ];

    /// The name used in JSON, the audit log and refusals (`filesystem:read`, `workspace:write`...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Capability::FilesystemRead => "filesystem:read",
            Capability::HostRead => "host:read",
            Capability::WorkspaceWrite => "workspace:write",
            Capability::ShellComplex => "shell:complex",
            Capability::Network => "network",
            Capability::Gpu => "gpu",
            Capability::Ssh => "ssh",
            Capability::RemoteWrite => "remote:write",
            Capability::ContainerRuntime => "container-runtime",
            Capability::Secrets => "secrets",
        }
    }

    /// Whether spear's sandbox implements this capability: a profile that holds one it does not
    /// implement is refused before anything runs, rather than run without it. Exhaustive, with no
    /// wildcard arm: a capability added to the enum does not compile until it is placed here, and
    /// placing it as `false` keeps it refused until someone implements it.
    pub const fn is_implemented_by_sandbox(self) -> bool {
        match self {
            // The roots bound read-only, or read-write through staging; host paths bound
            // read-only; any program confined by the sandbox; slirp4netns with an egress policy.
            Capability::FilesystemRead
            | Capability::HostRead
            | Capability::WorkspaceWrite
            | Capability::ShellComplex
            | Capability::Network => true,
            Capability::Gpu
            | Capability::Ssh
            | Capability::RemoteWrite
            | Capability::ContainerRuntime
            | Capability::Secrets => false,
        }
    }

    const fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A capability name that spear does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown capability {0:?}")]
pub struct UnknownCapability(pub String);

impl FromStr for Capability {
    type Err = UnknownCapability;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Capability::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownCapability(s.to_owned()))
    }
}

impl Serialize for Capability {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Capability {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A set of capabilities. Serialises as a list of names in [`Capability::ALL`] order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CapabilitySet(u16);

impl CapabilitySet {
    /// The empty set.
    pub const EMPTY: CapabilitySet = CapabilitySet(0);

    /// A set holding exactly `caps`.
    pub fn of(caps: &[Capability]) -> Self {
        caps.iter().copied().collect()
    }

    /// Whether `cap` is in the set.
    pub const fn contains(self, cap: Capability) -> bool {
        self.0 & cap.bit() != 0
    }

    /// Adds `cap`.
    pub fn insert(&mut self, cap: Capability) {
        self.0 |= cap.bit();
    }

    /// Removes `cap`.
    pub fn remove(&mut self, cap: Capability) {
        self.0 &= !cap.bit();
    }

    /// Every capability in either set.
    #[must_use]
    pub const fn union(self, other: CapabilitySet) -> CapabilitySet {
        CapabilitySet(self.0 | other.0)
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The capabilities in [`Capability::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Capability> {
        Capability::ALL
            .into_iter()
            .filter(move |c| self.contains(*c))
    }
}

impl FromIterator<Capability> for CapabilitySet {
    fn from_iter<I: IntoIterator<Item = Capability>>(iter: I) -> Self {
        let mut set = CapabilitySet::EMPTY;
        for cap in iter {
            set.insert(cap);
        }
        set
    }
}

impl fmt::Debug for CapabilitySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.iter().map(Capability::as_str))
            .finish()
    }
}

impl Serialize for CapabilitySet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for CapabilitySet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Vec::<Capability>::deserialize(deserializer)?
            .into_iter()
            .collect())
    }
}

/// What a mode answers when a capability is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Grant {
    /// Granted without asking.
    Yes,
    /// Granted after a person confirms the call.
    Confirm,
    /// Never granted in this mode.
    Never,
}

/// What one execution mode grants. Immutable once built; it can only be narrowed.
///
/// The default matrix:
///
/// | capability        | SAFE  | ASK     | AUTO |
/// |-------------------|-------|---------|------|
/// | filesystem:read   | yes   | yes     | yes  |
/// | shell:complex     | yes   | yes     | yes  |
/// | host:read         | yes   | confirm | yes  |
/// | workspace:write   | never | yes     | yes  |
/// | network           | never | confirm | yes  |
/// | gpu, ssh, remote:write, container-runtime, secrets | never | never | never |
///
/// ASK also confirms every call that mutates or whose effects are unknown (see
/// [`ExecutionMode::Ask`]); the matrix says what such a call may be given once confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapabilityPolicy {
    mode: ExecutionMode,
    network_removed: bool,
}

impl CapabilityPolicy {
    /// The policy of `mode` under the default matrix.
    pub const fn for_mode(mode: ExecutionMode) -> Self {
        CapabilityPolicy {
            mode,
            network_removed: false,
        }
    }

    /// The same policy with the network taken away (`--no-network`).
    #[must_use]
    pub const fn without_network(self) -> Self {
        CapabilityPolicy {
            mode: self.mode,
            network_removed: true,
        }
    }

    /// The mode this policy belongs to.
    pub const fn mode(self) -> ExecutionMode {
        self.mode
    }

    /// Whether `--no-network` removed the network from this policy.
    pub const fn network_removed(self) -> bool {
        self.network_removed
    }

    /// What this policy answers for `cap`.
    pub const fn grant(self, cap: Capability) -> Grant {
        use ExecutionMode::{Ask, Auto, Safe};
        match (cap, self.mode) {
            (Capability::Network, _) if self.network_removed => Grant::Never,
            (Capability::FilesystemRead | Capability::ShellComplex, _)
            | (Capability::HostRead | Capability::Network, Auto)
            | (Capability::HostRead, Safe)
            | (Capability::WorkspaceWrite, Ask | Auto) => Grant::Yes,
            (Capability::HostRead | Capability::Network, Ask) => Grant::Confirm,
            (Capability::WorkspaceWrite | Capability::Network, Safe)
            | (
                Capability::Gpu
                | Capability::Ssh
                | Capability::RemoteWrite
                | Capability::ContainerRuntime
                | Capability::Secrets,
                _,
            ) => Grant::Never,
        }
    }

    /// The modes whose default matrix grants `cap` (with or without confirmation), least
    /// permissive first. Empty when no mode grants it.
    pub fn modes_granting(cap: Capability) -> Vec<ExecutionMode> {
        ExecutionMode::ALL
            .into_iter()
            .filter(|m| CapabilityPolicy::for_mode(*m).grant(cap) != Grant::Never)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Capability as C;
    use ExecutionMode::{Ask, Auto, Safe};
    use Grant::{Confirm, Never, Yes};

    /// The whole matrix, row by row, as the design states it.
    const MATRIX: [(Capability, [Grant; 3]); 10] = [
        (C::FilesystemRead, [Yes, Yes, Yes]),
        (C::HostRead, [Yes, Confirm, Yes]),
        (C::WorkspaceWrite, [Never, Yes, Yes]),
        (C::ShellComplex, [Yes, Yes, Yes]),
        (C::Network, [Never, Confirm, Yes]),
        (C::Gpu, [Never, Never, Never]),
        (C::Ssh, [Never, Never, Never]),
        (C::RemoteWrite, [Never, Never, Never]),
        (C::ContainerRuntime, [Never, Never, Never]),
        (C::Secrets, [Never, Never, Never]),
    ];

    #[test]
    fn default_matrix() {
        for (cap, row) in MATRIX {
            for (mode, expected) in [Safe, Ask, Auto].into_iter().zip(row) {
                assert_eq!(
                    CapabilityPolicy::for_mode(mode).grant(cap),
                    expected,
                    "{cap} in {mode}"
                );
            }
        }
    }

    #[test]
    fn without_network_removes_only_network() {
        for mode in ExecutionMode::ALL {
            let full = CapabilityPolicy::for_mode(mode);
            let narrowed = full.without_network();
            assert!(narrowed.network_removed());
            for cap in Capability::ALL {
                let expected = if cap == C::Network {
                    Never
                } else {
                    full.grant(cap)
                };
                assert_eq!(narrowed.grant(cap), expected, "{cap} in {mode}");
            }
        }
    }

    #[test]
    fn modes_granting() {
        assert_eq!(
            CapabilityPolicy::modes_granting(C::WorkspaceWrite),
            vec![Ask, Auto]
        );
        assert_eq!(
            CapabilityPolicy::modes_granting(C::FilesystemRead),
            vec![Safe, Ask, Auto]
        );
        assert!(CapabilityPolicy::modes_granting(C::Ssh).is_empty());
    }

    #[test]
    fn names_round_trip_and_serialise() {
        for cap in Capability::ALL {
            assert_eq!(cap.as_str().parse::<Capability>(), Ok(cap));
        }
        let set = CapabilitySet::of(&[C::Network, C::FilesystemRead]);
        let json = serde_json::to_string(&set).unwrap();
        assert_eq!(json, r#"["filesystem:read","network"]"#);
        assert_eq!(serde_json::from_str::<CapabilitySet>(&json).unwrap(), set);
        assert!(serde_json::from_str::<CapabilitySet>(r#"["root"]"#).is_err());
    }

    #[test]
    fn what_the_sandbox_implements() {
        let implemented: Vec<Capability> = Capability::ALL
            .into_iter()
            .filter(|c| c.is_implemented_by_sandbox())
            .collect();
        assert_eq!(
            implemented,
            vec![
                C::FilesystemRead,
                C::HostRead,
                C::WorkspaceWrite,
                C::ShellComplex,
                C::Network
            ]
        );
        // Every capability some mode grants is implemented: a grant never ends in a refusal.
        for cap in Capability::ALL {
            if !CapabilityPolicy::modes_granting(cap).is_empty() {
                assert!(cap.is_implemented_by_sandbox(), "{cap}");
            }
        }
    }

    #[test]
    fn set_operations() {
        let mut set = CapabilitySet::EMPTY;
        assert!(set.is_empty());
        set.insert(C::Gpu);
        set.insert(C::Gpu);
        assert!(set.contains(C::Gpu));
        assert_eq!(set.iter().count(), 1);
        set.remove(C::Gpu);
        assert!(set.is_empty());
        let both = CapabilitySet::of(&[C::Ssh]).union(CapabilitySet::of(&[C::Secrets]));
        assert_eq!(both.iter().collect::<Vec<_>>(), vec![C::Ssh, C::Secrets]);
    }
}
