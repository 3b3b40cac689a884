//! The execution profile: what a sandbox is built to allow, derived from granted capabilities.

use std::path::PathBuf;

use serde::Serialize;

use crate::{Capability, CapabilitySet, GuaranteeSet};

/// What the sandbox of one call may do: the capabilities `authorize` granted, and the host paths
/// the command reads. The fields are private and the only constructor is
/// [`ExecutionProfile::from_granted`], so a profile can never be wider than the decision that
/// allowed it, and every granted capability reaches the sandbox: none is dropped on the way.
///
/// A sandbox spec builder must refuse a profile that holds a capability the sandbox does not
/// implement ([`ExecutionProfile::unimplemented`], [`Capability::is_implemented_by_sandbox`]).
///
/// A profile may also require guarantees ([`ExecutionProfile::with_required`]): the sandbox refuses
/// it before spawning anything when the host cannot give one. Requirements only narrow: they never
/// grant a capability, and no method removes one.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ExecutionProfile {
    granted: CapabilitySet,
    host_read_paths: Vec<PathBuf>,
    required: GuaranteeSet,
}

impl ExecutionProfile {
    /// The profile for `granted`. `host_read_paths` are kept only if `host:read` was granted.
    pub fn from_granted(granted: CapabilitySet, host_read_paths: Vec<PathBuf>) -> Self {
        ExecutionProfile {
            granted,
            host_read_paths: if granted.contains(Capability::HostRead) {
                host_read_paths
            } else {
                Vec::new()
            },
            required: GuaranteeSet::EMPTY,
        }
    }

    /// The same profile also requiring `required` (on top of what it required already): a command
    /// of it runs only where every one of them can be given. Adds requirements, never removes one,
    /// and grants nothing.
    #[must_use]
    pub fn with_required(mut self, required: GuaranteeSet) -> Self {
        self.required = self.required.union(required);
        self
    }

    /// The guarantees a command of this profile requires.
    pub const fn required(&self) -> GuaranteeSet {
        self.required
    }

    /// The same profile without `cap` (and without host paths when `cap` is `host:read`), its
    /// requirements kept: a profile can only be narrowed, never widened.
    #[must_use]
    pub fn without(&self, cap: Capability) -> Self {
        let mut granted = self.granted;
        granted.remove(cap);
        ExecutionProfile::from_granted(granted, self.host_read_paths.clone())
            .with_required(self.required)
    }

    /// Every capability granted.
    pub const fn granted(&self) -> CapabilitySet {
        self.granted
    }

    /// Whether `cap` was granted.
    pub const fn has(&self, cap: Capability) -> bool {
        self.granted.contains(cap)
    }

    /// The workspace roots are visible (`filesystem:read`).
    pub const fn workspace_read(&self) -> bool {
        self.has(Capability::FilesystemRead)
    }

    /// The workspace roots are writable, protected entries staying read-only (`workspace:write`).
    pub const fn workspace_write(&self) -> bool {
        self.has(Capability::WorkspaceWrite)
    }

    /// Arbitrary programs may run (`shell:complex`).
    pub const fn shell_complex(&self) -> bool {
        self.has(Capability::ShellComplex)
    }

    /// The sandbox gets its own network stack (`network`).
    pub const fn network(&self) -> bool {
        self.has(Capability::Network)
    }

    /// Host paths bound read-only; empty unless `host:read` was granted.
    pub fn host_read_paths(&self) -> &[PathBuf] {
        &self.host_read_paths
    }

    /// The granted capabilities the sandbox does not implement, in [`Capability::ALL`] order. A
    /// capability added to [`Capability`] later is here until the sandbox implements it.
    pub fn unimplemented(&self) -> Vec<Capability> {
        self.granted
            .iter()
            .filter(|c| !c.is_implemented_by_sandbox())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Capability as C;

    #[test]
    fn derives_from_granted() {
        let p = ExecutionProfile::from_granted(
            CapabilitySet::of(&[C::FilesystemRead, C::WorkspaceWrite]),
            vec![PathBuf::from("/opt/data")],
        );
        assert!(p.workspace_read() && p.workspace_write());
        assert!(!p.network() && !p.shell_complex());
        assert!(p.host_read_paths().is_empty(), "host paths need host:read");
        assert!(p.unimplemented().is_empty());

        let p = ExecutionProfile::from_granted(
            CapabilitySet::of(&[C::HostRead, C::Gpu, C::Secrets]),
            vec![PathBuf::from("/opt/data")],
        );
        assert_eq!(p.host_read_paths(), [PathBuf::from("/opt/data")]);
        assert_eq!(p.unimplemented(), vec![C::Gpu, C::Secrets]);
    }

    #[test]
    fn every_granted_capability_is_kept() {
        for cap in Capability::ALL {
            let p = ExecutionProfile::from_granted(CapabilitySet::of(&[cap]), Vec::new());
            assert_eq!(p.granted(), CapabilitySet::of(&[cap]), "{cap}");
            assert_eq!(
                p.unimplemented().is_empty(),
                cap.is_implemented_by_sandbox(),
                "{cap}: a capability the sandbox does not implement is named, never dropped"
            );
        }
        let all: CapabilitySet = Capability::ALL.into_iter().collect();
        let p = ExecutionProfile::from_granted(all, Vec::new());
        assert_eq!(
            p.unimplemented(),
            vec![
                C::Gpu,
                C::Ssh,
                C::RemoteWrite,
                C::ContainerRuntime,
                C::Secrets
            ]
        );
    }

    #[test]
    fn without_only_narrows() {
        let p = ExecutionProfile::from_granted(
            CapabilitySet::of(&[C::FilesystemRead, C::Network, C::HostRead]),
            vec![PathBuf::from("/opt/data")],
        );
        let closed = p.without(C::Network);
        assert!(!closed.network() && closed.workspace_read());
        assert_eq!(closed.host_read_paths(), p.host_read_paths());
        let no_host = p.without(C::HostRead);
        assert!(no_host.host_read_paths().is_empty());
        assert!(no_host.network());
        assert_eq!(
            p.without(C::WorkspaceWrite),
            p,
            "removing what is not there"
        );
    }

    #[test]
    fn requirements_only_add_and_survive_narrowing() {
        use crate::Guarantee as G;
        let p = ExecutionProfile::from_granted(CapabilitySet::of(&[C::FilesystemRead]), Vec::new());
        assert!(p.required().is_empty());
        let p = p
            .with_required(GuaranteeSet::of(&[G::ResourceLimits]))
            .with_required(GuaranteeSet::of(&[G::NetworkFiltered]));
        assert_eq!(
            p.required(),
            GuaranteeSet::of(&[G::ResourceLimits, G::NetworkFiltered])
        );
        assert_eq!(
            p.granted(),
            CapabilitySet::of(&[C::FilesystemRead]),
            "grants nothing"
        );
        assert_eq!(
            p.clone().with_required(GuaranteeSet::EMPTY).required(),
            p.required(),
            "requiring nothing removes nothing"
        );
        assert_eq!(p.without(C::FilesystemRead).required(), p.required());
    }
}
