//! What `spear doctor` reports: each mechanism the sandbox uses, whether it is usable, why, and
//! the fix. Probes look and try; they never change the host.

use std::path::Path;
use std::process::Command;

use crate::Sandbox;

/// One mechanism and its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mechanism {
    /// Its name (`bwrap`, `user namespaces`, ...).
    pub name: &'static str,
    /// Whether spear can use it.
    pub usable: bool,
    /// Whether a command can run without it.
    pub required: bool,
    /// What was found.
    pub detail: String,
    /// How to make it usable, when it is not.
    pub fix: Option<String>,
}

impl Mechanism {
    fn new(name: &'static str, required: bool, result: Result<String, (String, String)>) -> Self {
        match result {
            Ok(detail) => Mechanism {
                name,
                usable: true,
                required,
                detail,
                fix: None,
            },
            Err((detail, fix)) => Mechanism {
                name,
                usable: false,
                required,
                detail,
                fix: Some(fix),
            },
        }
    }
}

/// Probes every mechanism `sandbox` relies on, and the ones later layers will (slirp4netns).
pub fn probe(sandbox: &Sandbox) -> Vec<Mechanism> {
    let bwrap = &sandbox.config().bwrap;
    let limits_active = sandbox.config().cgroup.is_some();
    vec![
        Mechanism::new("bwrap", true, probe_bwrap(bwrap)),
        Mechanism::new("user namespaces", true, crate::userns::probe(bwrap)),
        Mechanism::new("seccomp", true, probe_seccomp()),
        Mechanism::new("pidfd", true, probe_pidfd()),
        Mechanism::new("cgroup backend", limits_active, probe_cgroup(sandbox)),
        Mechanism::new("landlock", false, probe_landlock()),
        Mechanism::new(
            "network path",
            false,
            probe_slirp(&sandbox.config().network),
        ),
    ]
}

fn probe_bwrap(bwrap: &Path) -> Result<String, (String, String)> {
    let out = Command::new(bwrap).arg("--version").output().map_err(|e| {
        (
            format!("{} cannot be run: {e}", bwrap.display()),
            "install bubblewrap (Debian: apt-get install bubblewrap)".to_owned(),
        )
    })?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() {
        Ok(format!("{version} at {}", bwrap.display()))
    } else {
        Err((
            format!("{} --version failed", bwrap.display()),
            "reinstall bubblewrap".to_owned(),
        ))
    }
}

fn probe_seccomp() -> Result<String, (String, String)> {
    crate::seccomp::kernel_supports_seccomp()
        .and_then(|()| crate::seccomp::program_bytes())
        .map(|bytes| {
            format!(
                "filter of {} instructions refusing {} system calls",
                bytes.len() / 8,
                crate::seccomp::DENIED.len()
            )
        })
        .map_err(|e| {
            (
                e.to_string(),
                "use a kernel built with CONFIG_SECCOMP_FILTER".to_owned(),
            )
        })
}

fn probe_pidfd() -> Result<String, (String, String)> {
    rustix::process::pidfd_open(
        rustix::process::getpid(),
        rustix::process::PidfdFlags::empty(),
    )
    .map(|_| "pidfd_open works".to_owned())
    .map_err(|e| {
        (
            format!("pidfd_open failed: {e}"),
            "use Linux 5.3 or later".to_owned(),
        )
    })
}

fn probe_cgroup(sandbox: &Sandbox) -> Result<String, (String, String)> {
    match sandbox.backend() {
        Ok(backend) => Ok(format!("{}: {}", backend.kind().as_str(), backend.describe())),
        Err(why) => Err((why.to_owned(), "see the message: delegate a cgroup to your user, run under systemd with a user bus, or set SPEAR_RESOURCE_CONTROL=delegated when a container runtime limits spear".to_owned())),
    }
}

/// Landlock's ABI version, asked of the kernel (`landlock_create_ruleset` with the version flag).
fn probe_landlock() -> Result<String, (String, String)> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the version flag, the kernel only returns
    // the ABI version (or an error); nothing is read or written.
    #[allow(unsafe_code)]
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if abi > 0 {
        Ok(format!(
            "ABI version {abi} (the landlock backend's; bubblewrap does not need it)"
        ))
    } else {
        Err((
            format!("not available ({})", std::io::Error::last_os_error()),
            "boot with lsm=...,landlock to enable it (needed by the landlock backend only)"
                .to_owned(),
        ))
    }
}

fn probe_slirp(net: &crate::NetworkConfig) -> Result<String, (String, String)> {
    let out = Command::new(&net.slirp4netns).arg("--version").output();
    let version = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_owned(),
        _ => {
            return Err((
                format!("{} is not installed", net.slirp4netns.display()),
                "apt-get install slirp4netns (needed for networked commands)".to_owned(),
            ));
        }
    };
    for (tool, package) in [(&net.nft, "nftables"), (&net.nsenter, "util-linux")] {
        if !tool.exists() {
            return Err((
                format!(
                    "{} is missing: the egress policy cannot be enforced, so networked commands are refused",
                    tool.display()
                ),
                format!("apt-get install {package}"),
            ));
        }
    }
    let tun = std::fs::metadata("/dev/net/tun");
    let root = rustix::process::geteuid().is_root();
    match tun {
        Ok(m)
            if root
                || std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o006 == 0o006 =>
        {
            Ok(format!(
                "{version}; /dev/net/tun usable; egress policy by nftables; allowed beyond the defaults: {}",
                if net.allow.is_empty() {
                    "nothing".to_owned()
                } else {
                    format!("{:?}", net.allow)
                }
            ))
        }
        Ok(_) => Err((
            format!(
                "{version}, but /dev/net/tun is not accessible to users, so networked commands fail when spear runs as a user"
            ),
            "chmod 0666 /dev/net/tun (distributions ship it so; a udev rule keeps it)".to_owned(),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(crate::container::tun_missing(
            crate::container::kernel_has_tun(),
        )),
        Err(e) => Err((
            format!("/dev/net/tun: {e}"),
            "load the tun module (modprobe tun)".to_owned(),
        )),
    }
}
