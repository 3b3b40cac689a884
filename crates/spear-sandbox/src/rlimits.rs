//! Per-process resource limits (rlimits), set in the child before it execs.
//!
//! They are one contract and cgroups are another ([`crate::cgroup::CgroupLimits`]): rlimits bound
//! each process (open files, core dumps, file size, data), the cgroup bounds the whole tree
//! (memory, tasks, CPU). Neither replaces the other. `RLIMIT_NPROC` is deliberately not used: it
//! counts every process of the user on the host, not the sandbox's.

/// The rlimits of a sandboxed command. Each is set as both soft and hard limit, so the command
/// cannot raise it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceLimits {
    /// `RLIMIT_NOFILE`: open file descriptors.
    pub open_files: u64,
    /// `RLIMIT_CORE`: core dump size (0: no core files in the workspace).
    pub core_bytes: u64,
    /// `RLIMIT_FSIZE`: the largest file a process may write.
    pub file_size_bytes: u64,
    /// `RLIMIT_DATA`: private writable memory of one process. An address-space cap
    /// (`RLIMIT_AS`) would break the JVM, Go and V8, which reserve large regions without using
    /// them; the data cap does not count such reservations. `None` leaves it unset (`AddressSanitizer`
    /// builds need that).
    pub data_bytes: Option<u64>,
}

impl Default for ResourceLimits {
    /// 4096 files, no core dumps, 8 GiB files, 16 GiB data.
    fn default() -> Self {
        ResourceLimits {
            open_files: 4096,
            core_bytes: 0,
            file_size_bytes: 8 << 30,
            data_bytes: Some(16 << 30),
        }
    }
}

impl ResourceLimits {
    /// The limits to set, as (resource, value) pairs.
    pub fn pairs(&self) -> Vec<(rustix::process::Resource, u64)> {
        use rustix::process::Resource;
        let mut v = vec![
            (Resource::Nofile, self.open_files),
            (Resource::Core, self.core_bytes),
            (Resource::Fsize, self.file_size_bytes),
        ];
        if let Some(data) = self.data_bytes {
            v.push((Resource::Data, data));
        }
        v
    }
}
