//! What makes a process's `spear exec` call run the same in a server as in its own process
//! ([`super::wire::Identity`]), read from this process.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;

use super::wire::{Identity, UNKNOWN};

/// The variables a server reads of its own environment once, rather than of each call's: the
/// cgroup backend's choice and what it looks for, and the per-user runtime directory (where
/// the `/etc` views, the git identity and the preflight records are kept). A call whose values
/// differ runs in its own process.
pub const PINNED_VARS: &[&str] = &[
    "SPEAR_RESOURCE_CONTROL",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
];

/// The lines of `/proc/self/status` that say how the process itself is confined: its
/// capability sets, no-new-privs, and its seccomp mode and filters. Attack stopped: a client
/// run under restrictions of its own (a seccomp filter, no-new-privs, a reduced bounding set,
/// as a service manager or an outer sandbox that shares the namespaces gives) having its
/// command run by a server without them.
const CONFINEMENT_LINES: &[&str] = &[
    "CapInh",
    "CapPrm",
    "CapEff",
    "CapBnd",
    "CapAmb",
    "NoNewPrivs",
    "Seccomp",
    "Seccomp_filters",
];

/// This process's identity: its binary (device, inode, size, modification time), its user and
/// groups, umask, how it is confined itself (capabilities, no-new-privs, seccomp, its LSM
/// label), resource limits, namespaces, its cgroups, and the [`PINNED_VARS`] of `env`.
pub fn of_process(env: &dyn Fn(&str) -> Option<Vec<u8>>) -> Identity {
    let known = |r: Option<Vec<u8>>| r.unwrap_or_else(|| UNKNOWN.to_vec());
    let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
    let mut put = |name: &str, value: Vec<u8>| entries.push((name.to_owned(), value));
    put(
        "binary",
        known(std::fs::metadata("/proc/self/exe").ok().map(|m| {
            format!(
                "{}:{}:{}:{}.{}",
                m.dev(),
                m.ino(),
                m.size(),
                m.mtime(),
                m.mtime_nsec()
            )
            .into_bytes()
        })),
    );
    let uid = (rustix::process::getuid(), rustix::process::geteuid());
    put(
        "uid",
        format!("{} {}", uid.0.as_raw(), uid.1.as_raw()).into_bytes(),
    );
    let groups = rustix::process::getgroups().ok().map(|groups| {
        let mut raw: Vec<u32> = groups.iter().map(|g| g.as_raw()).collect();
        raw.sort_unstable();
        let gid = (rustix::process::getgid(), rustix::process::getegid());
        format!("{} {} {raw:?}", gid.0.as_raw(), gid.1.as_raw()).into_bytes()
    });
    put("groups", known(groups));
    let status = std::fs::read_to_string("/proc/self/status").ok();
    let line = |name: &str| {
        status.as_deref().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .map(|v| v.trim().as_bytes().to_vec())
        })
    };
    put("umask", known(line("Umask")));
    for name in CONFINEMENT_LINES {
        put(name, known(line(name)));
    }
    // EINVAL: no LSM gives the process a label.
    let label = match std::fs::read("/proc/self/attr/current") {
        Ok(label) => Some(label),
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => {
            Some(b"none".to_vec())
        }
        Err(_) => None,
    };
    put("lsm label", known(label));
    put("rlimits", known(std::fs::read("/proc/self/limits").ok()));
    let ns: Option<Vec<u8>> = ["mnt", "pid", "user", "net", "ipc", "uts", "cgroup"]
        .iter()
        .map(|kind| {
            std::fs::read_link(format!("/proc/self/ns/{kind}"))
                .ok()
                .map(|l| [l.as_os_str().as_bytes(), b" "].concat())
        })
        .collect::<Option<Vec<_>>>()
        .map(|parts| parts.concat());
    put("namespaces", known(ns));
    // Compared apart (the server's must lie within it): `super::cgroups`.
    put("cgroup", known(own_cgroup().map(String::into_bytes)));
    for var in PINNED_VARS {
        let value = env(var).map_or_else(|| b"unset".to_vec(), |v| [b"set:", &v[..]].concat());
        put(&format!("${var}"), value);
    }
    Identity(entries)
}

/// This process's cgroup membership, as `/proc/self/cgroup` says it now.
pub fn own_cgroup() -> Option<String> {
    std::fs::read_to_string("/proc/self/cgroup").ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_process_has_the_same_identity_and_a_pinned_variable_tells_it_apart() {
        let none = |_: &str| None;
        let a = of_process(&none);
        assert_eq!(a.differs(&of_process(&none)), None);
        let set = |name: &str| (name == "XDG_RUNTIME_DIR").then(|| b"/run/user/1".to_vec());
        assert_eq!(
            a.differs(&of_process(&set)).as_deref(),
            Some("$XDG_RUNTIME_DIR")
        );
        for name in [
            "binary",
            "uid",
            "groups",
            "umask",
            "rlimits",
            "namespaces",
            "CapBnd",
            "NoNewPrivs",
            "Seccomp",
        ] {
            let (_, value) =
                a.0.iter()
                    .find(|(n, _)| n == name)
                    .unwrap_or_else(|| panic!("{name}"));
            assert!(!value.is_empty() && value != UNKNOWN, "{name} was not read");
        }
    }
}
