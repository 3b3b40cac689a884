//! Per-process resource limits (rlimits), set in the child before it execs.
//!
//! They are one contract and cgroups are another ([`crate::cgroup::CgroupLimits`]): rlimits bound
//! each process (open files, core dumps, file size, data), the cgroup bounds the whole tree
//! (memory, tasks, CPU). Neither replaces the other. `RLIMIT_NPROC` is deliberately not used: it
//! counts every process of the user on the host, not the sandbox's.
//!
//! A limit above the hard limit spear itself inherited (`ulimit -Hf 100000` in the operator's
//! shell) cannot be set by an unprivileged process: `setrlimit` fails with EPERM between fork and
//! exec, which used to surface as "bwrap cannot be executed". Such a limit is lowered to the
//! inherited hard limit ([`clamp`], pure), which is stricter than asked, never looser; `spear
//! doctor` reports it ([`ResourceLimits::lowered`]).

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

/// One limit lowered to the inherited hard limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lowered {
    /// The rlimit's name (`RLIMIT_FSIZE`).
    pub name: &'static str,
    /// What spear would set.
    pub wanted: u64,
    /// The hard limit spear inherited, which is set instead.
    pub hard: u64,
}

impl std::fmt::Display for Lowered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is {} (the hard limit spear inherited), below spear's {}",
            self.name, self.hard, self.wanted
        )
    }
}

/// The name of an rlimit spear sets.
fn name(resource: rustix::process::Resource) -> &'static str {
    use rustix::process::Resource;
    match resource {
        Resource::Nofile => "RLIMIT_NOFILE",
        Resource::Core => "RLIMIT_CORE",
        Resource::Fsize => "RLIMIT_FSIZE",
        Resource::Data => "RLIMIT_DATA",
        _ => "an rlimit",
    }
}

/// Lowers each wanted limit to the hard limit inherited for it (`hard` returns `None` for
/// unlimited). Pure. Attack stopped: none; this keeps a lowered hard limit (which only makes the
/// sandbox stricter) from making every command fail with a misleading error.
pub fn clamp(
    wanted: &[(rustix::process::Resource, u64)],
    hard: &dyn Fn(rustix::process::Resource) -> Option<u64>,
) -> (Vec<(rustix::process::Resource, u64)>, Vec<Lowered>) {
    let mut set = Vec::with_capacity(wanted.len());
    let mut lowered = Vec::new();
    for &(resource, value) in wanted {
        match hard(resource) {
            Some(h) if h < value => {
                set.push((resource, h));
                lowered.push(Lowered {
                    name: name(resource),
                    wanted: value,
                    hard: h,
                });
            }
            _ => set.push((resource, value)),
        }
    }
    (set, lowered)
}

/// This process's hard limit of `resource`; `None` for unlimited (or unreadable, where the set
/// will fail loudly as before).
fn inherited_hard(resource: rustix::process::Resource) -> Option<u64> {
    rustix::process::getrlimit(resource).maximum
}

impl ResourceLimits {
    /// The limits to set in a child of this process: [`ResourceLimits::pairs`] lowered to the
    /// hard limits this process inherited.
    pub fn effective_pairs(&self) -> Vec<(rustix::process::Resource, u64)> {
        clamp(&self.pairs(), &inherited_hard).0
    }

    /// Which limits [`ResourceLimits::effective_pairs`] lowers in this process, for `spear
    /// doctor`.
    pub fn lowered(&self) -> Vec<Lowered> {
        clamp(&self.pairs(), &inherited_hard).1
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::process::Resource;

    type Hard<'a> = &'a dyn Fn(Resource) -> Option<u64>;
    type Case<'a> = (&'a str, Hard<'a>, &'a [(&'a str, u64, u64)]);

    #[test]
    fn clamp_table() {
        let wanted = ResourceLimits::default().pairs();
        let cases: &[Case<'_>] = &[
            ("unlimited", &|_| None, &[]),
            ("all higher", &|_| Some(u64::MAX - 1), &[]),
            (
                "fsize lowered",
                &|r| (r == Resource::Fsize).then_some(100_000 * 1024),
                &[("RLIMIT_FSIZE", 8 << 30, 100_000 * 1024)],
            ),
            (
                "nofile lowered",
                &|r| (r == Resource::Nofile).then_some(1024),
                &[("RLIMIT_NOFILE", 4096, 1024)],
            ),
            (
                "equal is not lowered",
                &|r| (r == Resource::Nofile).then_some(4096),
                &[],
            ),
            (
                "core 0 stays 0",
                &|r| (r == Resource::Core).then_some(0),
                &[],
            ),
        ];
        for (what, hard, expect) in cases {
            let (set, lowered) = clamp(&wanted, hard);
            assert_eq!(set.len(), wanted.len(), "{what}");
            for ((r, v), (wr, wv)) in set.iter().zip(&wanted) {
                assert_eq!(r, wr);
                assert_eq!(*v, (*wv).min(hard(*r).unwrap_or(u64::MAX)), "{what}");
            }
            let got: Vec<(&str, u64, u64)> =
                lowered.iter().map(|l| (l.name, l.wanted, l.hard)).collect();
            assert_eq!(&got, expect, "{what}");
        }
    }

    #[test]
    fn the_message_names_the_limit_and_both_values() {
        let l = Lowered {
            name: "RLIMIT_FSIZE",
            wanted: 10,
            hard: 5,
        };
        assert_eq!(
            l.to_string(),
            "RLIMIT_FSIZE is 5 (the hard limit spear inherited), below spear's 10"
        );
    }
}
