//! What makes a process's `spear exec` call run the same in a server as in its own process
//! ([`super::wire::Identity`]), read from this process.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;

use super::wire::Identity;

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
/// label), resource limits, namespaces, and the [`PINNED_VARS`] of `env`.
pub fn of_process(env: &dyn Fn(&str) -> Option<Vec<u8>>) -> Identity {
    let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
    let mut put = |name: &str, value: Vec<u8>| entries.push((name.to_owned(), value));
    put(
        "binary",
        std::fs::metadata("/proc/self/exe").map_or_else(
            |e| format!("unreadable: {e}").into_bytes(),
            |m| {
                format!(
                    "{}:{}:{}:{}.{}",
                    m.dev(),
                    m.ino(),
                    m.size(),
                    m.mtime(),
                    m.mtime_nsec()
                )
                .into_bytes()
            },
        ),
    );
    put(
        "uid",
        format!(
            "{} {}",
            rustix::process::getuid().as_raw(),
            rustix::process::geteuid().as_raw()
        )
        .into_bytes(),
    );
    let mut groups: Vec<u32> = rustix::process::getgroups()
        .unwrap_or_default()
        .iter()
        .map(|g| g.as_raw())
        .collect();
    groups.sort_unstable();
    put(
        "groups",
        format!(
            "{} {} {groups:?}",
            rustix::process::getgid().as_raw(),
            rustix::process::getegid().as_raw()
        )
        .into_bytes(),
    );
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    put(
        "umask",
        status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .unwrap_or("unknown")
            .trim()
            .as_bytes()
            .to_vec(),
    );
    for name in CONFINEMENT_LINES {
        let value = status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .unwrap_or("unknown")
            .trim();
        put(name, value.as_bytes().to_vec());
    }
    put(
        "lsm label",
        std::fs::read("/proc/self/attr/current").unwrap_or_default(),
    );
    put(
        "rlimits",
        std::fs::read("/proc/self/limits").unwrap_or_default(),
    );
    let mut ns = Vec::new();
    for kind in ["mnt", "pid", "user", "net", "ipc", "uts", "cgroup"] {
        let link = std::fs::read_link(format!("/proc/self/ns/{kind}")).unwrap_or_default();
        ns.extend_from_slice(link.as_os_str().as_bytes());
        ns.push(b' ');
    }
    put("namespaces", ns);
    for var in PINNED_VARS {
        let mut value = b"set:".to_vec();
        match env(var) {
            Some(v) => value.extend(v),
            None => value = b"unset".to_vec(),
        }
        put(&format!("${var}"), value);
    }
    Identity(entries)
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
            assert!(!value.is_empty(), "{name}");
        }
    }
}
