//! Which mechanism enforces the limits ([`BackendKind`]).

/// Which mechanism enforces the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// A transient systemd scope in the user's manager (`systemd-run --user --scope`).
    SystemdScope,
    /// A delegated cgroup v2 subtree, written directly.
    CgroupV2,
    /// The cgroup v1 controllers memory, pids, cpu and freezer, written directly.
    CgroupV1,
    /// An outer container runtime owns the cgroup; spear creates none.
    Delegated,
}

impl BackendKind {
    /// A stable name for logs, `spear doctor` and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SystemdScope => "systemd-scope",
            Self::CgroupV2 => "cgroup-v2",
            Self::CgroupV1 => "cgroup-v1",
            Self::Delegated => "delegated",
        }
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
