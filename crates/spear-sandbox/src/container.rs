//! Why bubblewrap cannot make its sandbox here, when a container runtime is the reason, and the
//! setting that fixes it: what `spear doctor` says where user namespaces fail. The reading of the
//! host is [`HostFacts::read`]; the judgement, [`diagnose`], is pure.
//!
//! The conditions a container (Docker, Podman, a Kubernetes pod) imposes, each with its own fix:
//! - a seccomp filter on spear's own process refusing the namespace system calls (the runtimes'
//!   default profiles refuse `unshare` and `clone` with namespace flags without `CAP_SYS_ADMIN`);
//! - `AppArmor`'s restriction of unprivileged user namespaces (Ubuntu 23.10 and later:
//!   `kernel.apparmor_restrict_unprivileged_userns = 1`);
//! - a masked `/proc` (paths the runtime over-mounts, as `/proc/kcore`), under which the kernel
//!   refuses the sandbox's own proc mount;
//! - user namespaces turned off by sysctl (`user.max_user_namespaces = 0`, Debian's old
//!   `kernel.unprivileged_userns_clone = 0`);
//! - no `/dev/net/tun` (for networked commands): the kernel has the device, the container was not
//!   given it.

use std::path::Path;

/// What the host shows of the conditions above. Every field is what was read, or none where it
/// could not be.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFacts {
    /// `user.max_user_namespaces`.
    pub max_user_namespaces: Option<u64>,
    /// `kernel.unprivileged_userns_clone` (Debian's older kernels).
    pub unprivileged_userns_clone: Option<u64>,
    /// `kernel.apparmor_restrict_unprivileged_userns`.
    pub apparmor_restrict: Option<u64>,
    /// The `Seccomp:` mode of spear's own process (2: a filter applies).
    pub seccomp_mode: Option<u8>,
    /// The paths under `/proc` that another mount covers (a runtime's masks).
    pub proc_masks: Vec<String>,
    /// Whether spear runs as root (uid 0 in its own user namespace).
    pub root: bool,
}

impl HostFacts {
    /// Reads them from this host: sysctls, `/proc/self/status`, `/proc/self/mountinfo`.
    #[must_use]
    pub fn read() -> Self {
        let number = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .and_then(|s| s.trim().parse().ok())
        };
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        Self {
            max_user_namespaces: number("/proc/sys/user/max_user_namespaces"),
            unprivileged_userns_clone: number("/proc/sys/kernel/unprivileged_userns_clone"),
            apparmor_restrict: number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
            seccomp_mode: seccomp_mode(&status),
            proc_masks: proc_masks(&mountinfo),
            root: rustix::process::geteuid().is_root(),
        }
    }
}

/// The `Seccomp:` field of a `/proc/PID/status` text.
#[must_use]
pub fn seccomp_mode(status: &str) -> Option<u8> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Seccomp:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The mount points strictly below `/proc` in a `/proc/PID/mountinfo` text, but the kernel's own
/// (`binfmt_misc`, and the `proc` mounts of nested namespaces are not masks).
#[must_use]
pub fn proc_masks(mountinfo: &str) -> Vec<String> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let point = *fields.get(4)?;
            let fstype = fields
                .iter()
                .position(|f| *f == "-")
                .and_then(|i| fields.get(i + 1))
                .copied()
                .unwrap_or("");
            (point.starts_with("/proc/") && fstype != "binfmt_misc" && fstype != "proc")
                .then(|| point.to_owned())
        })
        .collect()
}

/// Why user namespaces fail here and the fix, given bwrap's own words (`bwrap_said`) and the
/// host's facts: the most specific cause first. Pure.
#[must_use]
pub fn diagnose(bwrap_said: &str, facts: &HostFacts) -> (String, String) {
    let trimmed = bwrap_said.trim();
    let said = trimmed.strip_prefix("bwrap: ").unwrap_or(trimmed);
    if said.contains("Can't mount proc") || (said.contains("proc") && !facts.proc_masks.is_empty())
    {
        let shown: Vec<&str> = facts
            .proc_masks
            .iter()
            .take(4)
            .map(String::as_str)
            .collect();
        return (
            format!(
                "/proc is masked ({} path(s) under it are covered by other mounts: {}): the \
                 kernel refuses the sandbox its own /proc mount (bwrap: {said})",
                facts.proc_masks.len(),
                shown.join(", ")
            ),
            "unmask /proc for spear's container: Kubernetes `securityContext.procMount: \
             Unmasked` (with `hostUsers: false`); Docker or Podman `--security-opt \
             systempaths=unconfined`"
                .to_owned(),
        );
    }
    if facts.apparmor_restrict == Some(1) {
        return (
            format!(
                "AppArmor restricts unprivileged user namespaces \
                 (kernel.apparmor_restrict_unprivileged_userns = 1; bwrap: {said})"
            ),
            "load an AppArmor profile that allows bwrap user namespaces (`userns,`: \
             deploy/kubernetes/apparmor/spear), or run spear's container unconfined \
             (Kubernetes `securityContext.appArmorProfile.type: Unconfined`; Docker \
             `--security-opt apparmor=unconfined`), or on the host `sysctl -w \
             kernel.apparmor_restrict_unprivileged_userns=0`"
                .to_owned(),
        );
    }
    if facts.max_user_namespaces == Some(0) {
        return (
            format!("user namespaces are turned off (user.max_user_namespaces = 0; bwrap: {said})"),
            "sysctl -w user.max_user_namespaces=15000 (on the host: a container shares the \
             kernel's setting)"
                .to_owned(),
        );
    }
    if facts.unprivileged_userns_clone == Some(0) && !facts.root {
        return (
            format!(
                "unprivileged user namespaces are turned off \
                 (kernel.unprivileged_userns_clone = 0; bwrap: {said})"
            ),
            "sysctl -w kernel.unprivileged_userns_clone=1".to_owned(),
        );
    }
    let refused = said.contains("Operation not permitted")
        || said.contains("No permissions to create")
        || said.contains("Permission denied");
    if facts.seccomp_mode == Some(2) && refused {
        return (
            format!(
                "a seccomp filter on spear's own process refuses the namespace system calls \
                 (Seccomp: 2 in /proc/self/status; a container runtime's default profile does \
                 this; bwrap: {said})"
            ),
            "give spear's container a seccomp profile that allows unshare, clone, setns, mount, \
             umount2 and pivot_root: Kubernetes `securityContext.seccompProfile: {type: \
             Localhost, localhostProfile: spear.json}` (deploy/kubernetes/seccomp/spear.json) or \
             `type: Unconfined`; Docker or Podman `--security-opt seccomp=unconfined`"
                .to_owned(),
        );
    }
    (
        format!("bwrap could not create a user namespace: {said}"),
        "allow unprivileged user namespaces: sysctl -w user.max_user_namespaces=15000".to_owned(),
    )
}

/// Why `/dev/net/tun` cannot be used, and the fix, from what was found: whether the node exists,
/// and whether the kernel has the device (`/sys/class/misc/tun`). Pure.
#[must_use]
pub fn tun_missing(kernel_has_tun: bool) -> (String, String) {
    if kernel_has_tun {
        (
            "/dev/net/tun is missing, though the kernel has the device: spear's container was \
             not given it, so networked commands fail"
                .to_owned(),
            "give the container the device: Docker or Podman `--device /dev/net/tun`; \
             Kubernetes a device plugin for it, or a `hostPath` volume of type CharDevice at \
             /dev/net/tun; or run spear with --no-network"
                .to_owned(),
        )
    } else {
        (
            "/dev/net/tun is missing and the kernel has no tun device".to_owned(),
            "load the tun module (modprobe tun) on the host".to_owned(),
        )
    }
}

/// Whether the kernel has a tun device, whether or not this namespace shows its node.
#[must_use]
pub fn kernel_has_tun() -> bool {
    Path::new("/sys/class/misc/tun").exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 0:21 / / rw,relatime - overlay overlay rw
23 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
24 23 0:5 /null /proc/kcore rw,nosuid - devtmpfs udev rw
25 23 0:30 / /proc/acpi ro,relatime - tmpfs tmpfs ro
26 23 0:31 / /proc/sys/fs/binfmt_misc rw,relatime - binfmt_misc binfmt_misc rw
27 22 0:32 / /proc-like rw - tmpfs tmpfs rw
";

    #[test]
    fn the_masks_under_proc_and_the_seccomp_mode_are_read() {
        assert_eq!(proc_masks(MOUNTINFO), ["/proc/kcore", "/proc/acpi"]);
        assert!(proc_masks("23 22 0:22 / /proc rw - proc proc rw\n").is_empty());
        assert_eq!(
            seccomp_mode("Name:\tspear\nSeccomp:\t2\nSeccomp_filters:\t1\n"),
            Some(2)
        );
        assert_eq!(seccomp_mode("Seccomp:\t0\n"), Some(0));
        assert_eq!(seccomp_mode("Name:\tx\n"), None);
    }

    #[test]
    fn each_container_condition_is_named_with_its_fix() {
        let plain = HostFacts {
            max_user_namespaces: Some(15_000),
            seccomp_mode: Some(0),
            ..HostFacts::default()
        };
        let masked = HostFacts {
            proc_masks: vec!["/proc/kcore".to_owned()],
            ..plain.clone()
        };
        let filtered = HostFacts {
            seccomp_mode: Some(2),
            ..plain.clone()
        };
        let apparmor = HostFacts {
            apparmor_restrict: Some(1),
            ..plain.clone()
        };
        let off = HostFacts {
            max_user_namespaces: Some(0),
            ..plain.clone()
        };
        let debian = HostFacts {
            unprivileged_userns_clone: Some(0),
            ..plain.clone()
        };
        let eperm = "bwrap: Creating new namespace failed: Operation not permitted";
        let cases: &[(&str, &HostFacts, &str, &str)] = &[
            (
                "bwrap: Can't mount proc on /newroot/proc: Operation not permitted",
                &masked,
                "/proc is masked (1 path(s) under it are covered by other mounts: /proc/kcore)",
                "procMount: Unmasked",
            ),
            (eperm, &filtered, "a seccomp filter", "seccompProfile"),
            (eperm, &apparmor, "AppArmor restricts", "appArmorProfile"),
            (
                eperm,
                &off,
                "user.max_user_namespaces = 0",
                "sysctl -w user.max_user_namespaces",
            ),
            (
                eperm,
                &debian,
                "unprivileged_userns_clone = 0",
                "unprivileged_userns_clone=1",
            ),
            // Nothing known explains it: bwrap's words and the general fix.
            (
                eperm,
                &plain,
                "bwrap could not create a user namespace",
                "max_user_namespaces",
            ),
        ];
        for (said, facts, detail, fix) in cases {
            let (got_detail, got_fix) = diagnose(said, facts);
            assert!(got_detail.contains(detail), "{got_detail}");
            assert!(got_fix.contains(fix), "{got_fix}");
            assert!(
                got_detail.contains(said.trim_start_matches("bwrap: ")),
                "{got_detail}"
            );
        }
        // A filter alone is not blamed for a failure that is no refusal.
        let (detail, _) = diagnose(
            "bwrap: execvp /bin/true: No such file or directory",
            &filtered,
        );
        assert!(!detail.contains("seccomp"), "{detail}");
    }

    #[test]
    fn a_missing_tun_says_whether_the_container_or_the_kernel_lacks_it() {
        let (detail, fix) = tun_missing(true);
        assert!(detail.contains("was not given it") && fix.contains("--device /dev/net/tun"));
        assert!(fix.contains("--no-network"));
        let (detail, fix) = tun_missing(false);
        assert!(detail.contains("kernel has no tun") && fix.contains("modprobe tun"));
    }
}
