//! The execution profile: what a sandbox is built to allow, derived from granted capabilities.

use std::path::PathBuf;

use serde::Serialize;

use crate::{Capability, CapabilitySet};

/// What the sandbox of one call may do. Built only from the capabilities `authorize` granted, so a
/// sandbox can never be wider than the decision that allowed it.
///
/// `gpu`, `ssh`, `container_runtime` and `secrets` are declared but not implemented: a sandbox
/// spec builder must refuse a profile that sets any of them.
// The fields mirror the capability names one to one; an enum set would hide that.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ExecutionProfile {
    /// The workspace roots are visible.
    pub workspace_read: bool,
    /// The workspace roots are writable (protected entries stay read-only).
    pub workspace_write: bool,
    /// Arbitrary programs may run.
    pub shell_complex: bool,
    /// The sandbox gets its own network stack.
    pub network: bool,
    /// Host paths bound read-only (only when `host:read` was granted).
    pub host_read_paths: Vec<PathBuf>,
    /// Declared, not implemented.
    pub gpu: bool,
    /// Declared, not implemented.
    pub ssh: bool,
    /// Declared, not implemented.
    pub container_runtime: bool,
    /// Declared, not implemented.
    pub secrets: bool,
}

impl ExecutionProfile {
    /// The profile for `granted`. `host_read_paths` are kept only if `host:read` was granted.
    pub fn from_granted(granted: CapabilitySet, host_read_paths: Vec<PathBuf>) -> Self {
        let has = |c| granted.contains(c);
        ExecutionProfile {
            workspace_read: has(Capability::FilesystemRead),
            workspace_write: has(Capability::WorkspaceWrite),
            shell_complex: has(Capability::ShellComplex),
            network: has(Capability::Network),
            host_read_paths: if has(Capability::HostRead) {
                host_read_paths
            } else {
                Vec::new()
            },
            gpu: has(Capability::Gpu),
            ssh: has(Capability::Ssh),
            container_runtime: has(Capability::ContainerRuntime),
            secrets: has(Capability::Secrets),
        }
    }

    /// The declared-but-unimplemented capabilities this profile asks for, by name.
    pub fn unimplemented(&self) -> Vec<&'static str> {
        [
            (self.gpu, Capability::Gpu),
            (self.ssh, Capability::Ssh),
            (self.container_runtime, Capability::ContainerRuntime),
            (self.secrets, Capability::Secrets),
        ]
        .into_iter()
        .filter(|(set, _)| *set)
        .map(|(_, c)| c.as_str())
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
        assert!(p.workspace_read && p.workspace_write);
        assert!(!p.network && !p.shell_complex);
        assert!(p.host_read_paths.is_empty(), "host paths need host:read");
        assert!(p.unimplemented().is_empty());

        let p = ExecutionProfile::from_granted(
            CapabilitySet::of(&[C::HostRead, C::Gpu, C::Secrets]),
            vec![PathBuf::from("/opt/data")],
        );
        assert_eq!(p.host_read_paths, vec![PathBuf::from("/opt/data")]);
        assert_eq!(p.unimplemented(), vec!["gpu", "secrets"]);
    }
}
