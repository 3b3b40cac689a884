//! Guarantee bits: what confined one command, as the sandbox really set it up.
//!
//! A [`Guarantee`] names one property a run can have (its own PID namespace killed as a tree, only
//! the writable roots persisting, ...). The sandbox computes the bits a run had from what it
//! built and saw ([`Guarantees`]); a profile, or the operator for every command, may require bits
//! ([`crate::ExecutionProfile::with_required`]), and a requirement the host cannot meet is refused
//! before anything is spawned.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One property that confined a command. The names ([`Guarantee::as_str`]) are stable: they are
/// JSON, configuration keys and refusal text.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Guarantee {
    /// Its own PID namespace, and the whole tree confirmed dead at its end.
    ProcessBoundary,
    /// Only the writable roots persist: the root filesystem is read-only, the roots are bound
    /// read-only or only through their staged layers, the rest is private.
    WriteBoundary,
    /// The curated view: a fresh root with the named binds only, `/etc` curated, credential
    /// stores masked.
    ReadBoundary,
    /// The environment cleared and rebuilt from an allowlist.
    EnvironmentScrubbed,
    /// Its own network namespace with loopback only.
    NetworkClosed,
    /// Its own network namespace reaching out only through slirp4netns with the egress policy
    /// loaded, confirmed, and torn down after. A closed network meets a requirement of it
    /// ([`GuaranteeSet::unmet`]): it is strictly narrower.
    NetworkFiltered,
    /// Per-process rlimits, and memory, task and CPU limits on the whole tree enforced by a cgroup
    /// backend of spear's own (not `delegated`, where spear creates no cgroup).
    ResourceLimits,
    /// Every change the command made was judged by the target policy before it reached the
    /// workspace (or none could reach it: the roots were read-only).
    TargetPolicy,
}

impl Guarantee {
    /// Every guarantee, in a stable order (the order of [`GuaranteeSet`]'s JSON).
    pub const ALL: [Guarantee; 8] = [
        Guarantee::ProcessBoundary,
        Guarantee::WriteBoundary,
        Guarantee::ReadBoundary,
        Guarantee::EnvironmentScrubbed,
        Guarantee::NetworkClosed,
        Guarantee::NetworkFiltered,
        Guarantee::ResourceLimits,
        Guarantee::TargetPolicy,
    ];

    /// The stable snake-case name (`process_boundary`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Guarantee::ProcessBoundary => "process_boundary",
            Guarantee::WriteBoundary => "write_boundary",
            Guarantee::ReadBoundary => "read_boundary",
            Guarantee::EnvironmentScrubbed => "environment_scrubbed",
            Guarantee::NetworkClosed => "network_closed",
            Guarantee::NetworkFiltered => "network_filtered",
            Guarantee::ResourceLimits => "resource_limits",
            Guarantee::TargetPolicy => "target_policy",
        }
    }

    /// One line saying what it means, for `spear doctor` and refusals.
    pub const fn description(self) -> &'static str {
        match self {
            Guarantee::ProcessBoundary => {
                "its own PID namespace, the whole process tree killed and confirmed dead"
            }
            Guarantee::WriteBoundary => "only the writable roots persist, through staged layers",
            Guarantee::ReadBoundary => "the curated view of the host: named binds only",
            Guarantee::EnvironmentScrubbed => {
                "the environment cleared and rebuilt from an allowlist"
            }
            Guarantee::NetworkClosed => "no network: loopback only",
            Guarantee::NetworkFiltered => {
                "network through slirp4netns with the egress policy enforced"
            }
            Guarantee::ResourceLimits => {
                "rlimits, and memory, task and CPU limits on the tree by a cgroup"
            }
            Guarantee::TargetPolicy => {
                "every change judged by the target policy before it reaches the workspace"
            }
        }
    }

    const fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Guarantee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A guarantee name spear does not know; the message lists the ones it does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown guarantee {0:?}: the guarantees are {names}", names = all_names())]
pub struct UnknownGuarantee(pub String);

fn all_names() -> String {
    Guarantee::ALL
        .iter()
        .map(|g| g.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for Guarantee {
    type Err = UnknownGuarantee;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Guarantee::ALL
            .into_iter()
            .find(|g| g.as_str() == s)
            .ok_or_else(|| UnknownGuarantee(s.to_owned()))
    }
}

/// A set of guarantees. Serialises as a list of names in [`Guarantee::ALL`] order; an unknown name
/// does not deserialise.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GuaranteeSet(u8);

impl GuaranteeSet {
    /// The empty set.
    pub const EMPTY: GuaranteeSet = GuaranteeSet(0);

    /// The empty set.
    pub const fn empty() -> Self {
        GuaranteeSet::EMPTY
    }

    /// A set holding exactly `guarantees`.
    pub fn of(guarantees: &[Guarantee]) -> Self {
        guarantees.iter().copied().collect()
    }

    /// Whether `g` is in the set.
    pub const fn contains(self, g: Guarantee) -> bool {
        self.0 & g.bit() != 0
    }

    /// Adds `g`.
    pub fn insert(&mut self, g: Guarantee) {
        self.0 |= g.bit();
    }

    /// Removes `g`.
    pub fn remove(&mut self, g: Guarantee) {
        self.0 &= !g.bit();
    }

    /// Every guarantee in either set.
    #[must_use]
    pub const fn union(self, other: GuaranteeSet) -> GuaranteeSet {
        GuaranteeSet(self.0 | other.0)
    }

    /// The guarantees of `self` that `other` lacks.
    #[must_use]
    pub const fn difference(self, other: GuaranteeSet) -> GuaranteeSet {
        GuaranteeSet(self.0 & !other.0)
    }

    /// What of `self`, read as requirements, a run that enforced `enforced` did not meet: the
    /// difference, except that `network_closed` meets a requirement of `network_filtered` (no
    /// network at all is narrower than a filtered one).
    #[must_use]
    pub fn unmet(self, enforced: GuaranteeSet) -> GuaranteeSet {
        let mut missing = self.difference(enforced);
        if enforced.contains(Guarantee::NetworkClosed) {
            missing.remove(Guarantee::NetworkFiltered);
        }
        missing
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The guarantees in [`Guarantee::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Guarantee> {
        Guarantee::ALL
            .into_iter()
            .filter(move |g| self.contains(*g))
    }

    /// The names, comma-separated, in [`Guarantee::ALL`] order (`process_boundary, read_boundary`).
    pub fn names(self) -> String {
        self.iter()
            .map(Guarantee::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl FromIterator<Guarantee> for GuaranteeSet {
    fn from_iter<I: IntoIterator<Item = Guarantee>>(iter: I) -> Self {
        let mut set = GuaranteeSet::EMPTY;
        for g in iter {
            set.insert(g);
        }
        set
    }
}

impl fmt::Debug for GuaranteeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.iter().map(Guarantee::as_str))
            .finish()
    }
}

impl Serialize for GuaranteeSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for GuaranteeSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<String>::deserialize(deserializer)?
            .iter()
            .map(|name| name.parse::<Guarantee>().map_err(serde::de::Error::custom))
            .collect()
    }
}

impl JsonSchema for GuaranteeSet {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "GuaranteeSet".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Vec<Guarantee>>::json_schema(generator)
    }
}

/// The cgroup backend a command's tree was put under, by its stable name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LimitsBackend {
    /// A transient systemd scope (`systemd-scope`).
    SystemdScope,
    /// A delegated cgroup v2 subtree (`cgroup-v2`).
    CgroupV2,
    /// The cgroup v1 controllers (`cgroup-v1`).
    CgroupV1,
    /// An outer container runtime limits spear as a whole; spear made no cgroup (`delegated`):
    /// no `resource_limits`.
    Delegated,
}

impl LimitsBackend {
    /// The stable name (`cgroup-v1`, ...), as in JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            LimitsBackend::SystemdScope => "systemd-scope",
            LimitsBackend::CgroupV2 => "cgroup-v2",
            LimitsBackend::CgroupV1 => "cgroup-v1",
            LimitsBackend::Delegated => "delegated",
        }
    }

    /// Whether it limits the command's own tree (every backend but `delegated`).
    pub const fn limits_the_tree(self) -> bool {
        !matches!(self, LimitsBackend::Delegated)
    }
}

impl fmt::Display for LimitsBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What confined one command that the sandbox ran, as it really set it up: the JSON of
/// [`crate::ToolResult::guarantees`], `{"enforced": [...], "limits": "cgroup-v1"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Guarantees {
    /// The guarantees enforced, in [`Guarantee::ALL`] order.
    pub enforced: GuaranteeSet,
    /// The cgroup backend of the command's tree (`systemd-scope`, `cgroup-v2`, `cgroup-v1`, or
    /// `delegated`, which limits spear as a whole and gives no `resource_limits`); `null` when no
    /// cgroup limited it (rlimits only).
    pub limits: Option<LimitsBackend>,
    /// `"gpu": true` when GPUs the operator granted (`--gpu`, `[sandbox] gpu`) were bound into
    /// the sandbox, their device nodes and the driver's files visible to the command: a widening
    /// the operator made, reported so that no one reads a run as GPU-free that was not. Absent
    /// (`false`): no GPU device was in the sandbox.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gpu: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use Guarantee as G;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for g in Guarantee::ALL {
            assert_eq!(g.as_str().parse::<Guarantee>(), Ok(g));
            assert_eq!(serde_json::to_value(g).unwrap(), g.as_str());
            assert!(seen.insert(g.as_str()));
            assert!(!g.description().is_empty());
        }
        let e = "process".parse::<Guarantee>().unwrap_err();
        assert!(
            e.to_string().contains("resource_limits, target_policy"),
            "{e}"
        );
    }

    #[test]
    fn set_operations() {
        let mut s = GuaranteeSet::of(&[G::TargetPolicy, G::ProcessBoundary]);
        assert!(s.contains(G::ProcessBoundary) && !s.contains(G::ReadBoundary));
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            vec![G::ProcessBoundary, G::TargetPolicy]
        );
        s.insert(G::ReadBoundary);
        s.remove(G::TargetPolicy);
        assert_eq!(s.names(), "process_boundary, read_boundary");
        assert_eq!(
            s.difference(GuaranteeSet::of(&[G::ReadBoundary])),
            GuaranteeSet::of(&[G::ProcessBoundary])
        );
        assert!(GuaranteeSet::empty().is_empty() && !s.is_empty());
        let all: GuaranteeSet = Guarantee::ALL.into_iter().collect();
        assert_eq!(all.iter().count(), 8);
    }

    #[test]
    fn unmet_requirements() {
        let set = GuaranteeSet::of;
        // (required, enforced, unmet)
        let cases = [
            (set(&[]), set(&[G::ProcessBoundary]), set(&[])),
            (
                set(&[G::ResourceLimits]),
                set(&[G::ProcessBoundary]),
                set(&[G::ResourceLimits]),
            ),
            (
                set(&[G::NetworkFiltered]),
                set(&[G::NetworkClosed]),
                set(&[]),
            ),
            (
                set(&[G::NetworkFiltered]),
                set(&[G::NetworkFiltered]),
                set(&[]),
            ),
            (
                set(&[G::NetworkFiltered]),
                set(&[G::ReadBoundary]),
                set(&[G::NetworkFiltered]),
            ),
            (
                set(&[G::NetworkClosed]),
                set(&[G::NetworkFiltered]),
                set(&[G::NetworkClosed]),
            ),
            (
                set(&[G::NetworkClosed, G::TargetPolicy]),
                set(&[G::NetworkClosed]),
                set(&[G::TargetPolicy]),
            ),
        ];
        for (required, enforced, unmet) in cases {
            assert_eq!(
                required.unmet(enforced),
                unmet,
                "{required:?} by {enforced:?}"
            );
        }
    }

    #[test]
    fn json_is_a_list_of_names() {
        let s = GuaranteeSet::of(&[G::ResourceLimits, G::WriteBoundary]);
        let json = serde_json::to_value(s).unwrap();
        assert_eq!(
            json,
            serde_json::json!(["write_boundary", "resource_limits"])
        );
        assert_eq!(serde_json::from_value::<GuaranteeSet>(json).unwrap(), s);
        assert!(serde_json::from_value::<GuaranteeSet>(serde_json::json!(["everything"])).is_err());
        let mut g = Guarantees {
            enforced: s,
            limits: Some(LimitsBackend::CgroupV1),
            gpu: false,
        };
        for b in [
            LimitsBackend::SystemdScope,
            LimitsBackend::CgroupV2,
            LimitsBackend::CgroupV1,
            LimitsBackend::Delegated,
        ] {
            assert_eq!(serde_json::to_value(b).unwrap(), b.as_str());
            assert_eq!(b.limits_the_tree(), b != LimitsBackend::Delegated);
        }
        assert_eq!(
            serde_json::to_value(g).unwrap(),
            serde_json::json!({"enforced": ["write_boundary", "resource_limits"], "limits": "cgroup-v1"})
        );
        // A GPU in the sandbox is named; none is the absence of the key.
        g.gpu = true;
        let json = serde_json::to_value(g).unwrap();
        assert_eq!(json["gpu"], true);
        assert_eq!(serde_json::from_value::<Guarantees>(json).unwrap(), g);
    }
}
