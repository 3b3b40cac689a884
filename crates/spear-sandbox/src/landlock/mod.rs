//! The landlock backend: spear's sandbox on hosts where bubblewrap cannot make a user namespace
//! (a container whose seccomp profile refuses `unshare`, Ubuntu's `AppArmor` restriction of
//! unprivileged user namespaces, a hardened kernel).
//!
//! The command runs directly, without bwrap, from the same [`BwrapSpec`] the bubblewrap path
//! gets. Between clone and exec the child joins its own cgroup, takes spear's rlimits, keeps only
//! stdio, starts a new session, drops every capability, sets no-new-privs, restricts itself with a
//! Landlock ruleset built for the best ABI the kernel offers ([`ruleset`], planned by [`plan`]),
//! and loads spear's seccomp program and this backend's own ([`child`]).
//!
//! # What the ruleset grants
//!
//! - read, list, execute: the system directories, the toolchains, the operator's host-read
//!   paths, the workspace roots (read-only; credential files inside them masked by granting
//!   around them, see [`plan`]);
//! - read and list: each curated `/etc` entry, one by one (bubblewrap binds a curated copy at
//!   `/etc`; without a mount namespace the real entries are granted individually), `/proc`,
//!   spear's git configuration;
//! - read and write: `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`, `/dev/urandom`;
//! - everything but device nodes: the command's private directories, and nothing else. Without
//!   a mount namespace these cannot be seen at `/tmp` and the home path: they are directories of
//!   spear's (the session's scratch directories, or a fresh `spear-landlock-*` directory under the
//!   host's temporary directory made for the command and removed after it), and `HOME` and
//!   `TMPDIR` name them.
//! - ABI 4 and later: TCP bind and connect handled with no port granted. ABI 6 and later: signals
//!   and abstract unix sockets scoped to the command's own domain (attack stopped: `kill` of a
//!   host process by its pid).
//!
//! # What it does not bound
//!
//! The private directories are host directories, not size-capped tmpfs mounts: what a command
//! writes there is bounded per file by `RLIMIT_FSIZE` (8 GiB) and, in a session, by the scratch
//! area's cap checked after each command, but not in total while it runs, and it is not charged
//! to the command's memory cgroup. Under bubblewrap `/tmp` and the home directory are tmpfs mounts
//! of 1 GiB and 512 MiB.
//!
//! # What it refuses before anything runs ([`LandlockError`])
//!
//! A writable profile (its writes cannot be staged without a mount namespace), a networked one
//! (slirp4netns needs a network namespace), a GPU grant, a root seen at another path than its
//! own, a host without Landlock, and a command without a cgroup of spear's own that spear joins
//! itself (without a PID namespace the cgroup is the only way to kill the whole tree).
//!
//! # What it guarantees ([`crate::guarantees::from_landlock`])
//!
//! - `write_boundary`, from ABI 3 (where truncation is governed): contents and entries change
//!   only in the private directories; modes, owners, extended attributes and times cannot change
//!   anywhere (seccomp, since Landlock governs no metadata); the roots are read-only.
//! - `environment_scrubbed`: the same allowlisted environment as bubblewrap's.
//! - `network_closed`: no socket can be made at all (seccomp), TCP refused again by Landlock from
//!   ABI 4. Stronger than bubblewrap's loopback: there is none.
//! - `resource_limits`: the same rlimits and cgroup.
//! - never `process_boundary`: there is no PID namespace (host processes are visible in
//!   `/proc`, though signals to them are refused from ABI 6 and ptrace always); the tree is
//!   still killed through its cgroup, and the run says whether that was confirmed.
//! - never `read_boundary`: Landlock governs opening files, not looking them up, so every host
//!   path's existence and metadata (`stat`) is visible, and so are host processes' public `/proc`
//!   entries (`cmdline`, `status`); reads of what is not granted (the home directory, credential
//!   stores, masked files) are refused.

mod child;
mod plan;
mod ruleset;

use std::ffi::OsString;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub use child::ChildConfinement;
#[cfg(test)]
pub(crate) use child::extra_program;
pub use plan::PlanError;
#[cfg(test)]
pub(crate) use plan::Rights as plan_rights;
pub(crate) use ruleset::Applied;
pub use ruleset::RulesetError;

use crate::spec::{BwrapSpec, Etc, Mask, SystemDir};

/// Device nodes granted read and write.
pub(crate) const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Numbers the private directories of this process.
static PRIVATE: AtomicU64 = AtomicU64::new(0);

/// The Landlock ABI the running kernel offers (0: none).
pub fn kernel_abi() -> u32 {
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
    u32::try_from(abi).unwrap_or(0)
}

/// Why the landlock backend does not run a command. Nothing ran, nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    /// A writable profile.
    #[error(
        "the landlock backend cannot stage writes: without a mount namespace there is no overlay to catch them for judging, and spear never lets a command write the workspace directly; run it read-only, or give the host user namespaces so that spear uses bubblewrap"
    )]
    Writable,
    /// A networked profile.
    #[error(
        "the landlock backend has no network path: slirp4netns needs a network namespace of the command's own; run it without network access, or give the host user namespaces so that spear uses bubblewrap"
    )]
    Networked,
    /// A GPU grant.
    #[error(
        "the landlock backend does not grant GPUs: it cannot show a device node without a mount namespace to show it in; run without --gpu, or give the host user namespaces so that spear uses bubblewrap"
    )]
    Gpu,
    /// A root the sandbox would show at another path.
    #[error(
        "the workspace root `{}` is seen at `{}`, and the landlock backend shows every path at its host path (it has no mount namespace); start spear without SPEAR_SANDBOX_IDENTITY_MOUNT, or give the host user namespaces",
        host.display(), mount.display()
    )]
    Remapped {
        /// The host path.
        host: PathBuf,
        /// Where the spec shows it.
        mount: PathBuf,
    },
    /// The kernel has no Landlock.
    #[error(
        "this kernel has no Landlock, so the landlock backend cannot run anything; boot with lsm=...,landlock, or give the host user namespaces so that spear uses bubblewrap"
    )]
    Unavailable,
    /// No cgroup of spear's own that spear joins itself.
    #[error(
        "the landlock backend needs a cgroup of spear's own for each command ({0}): without a PID namespace it is the only way to kill the whole tree; delegate a cgroup to spear (`spear doctor` says how), or give the host user namespaces"
    )]
    NoCgroup(String),
    /// The plan could not be made.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The ruleset could not be made.
    #[error(transparent)]
    Ruleset(#[from] RulesetError),
    /// The seccomp programs could not be made.
    #[error("the landlock backend's seccomp filter: {0}")]
    Seccomp(String),
    /// A private directory would lie inside, or hold, something the ruleset grants for reading.
    #[error(
        "the landlock sandbox's private directory `{}` would overlap `{}`, which it only reads (the host's temporary directory, TMPDIR, lies there); spear refuses to let a command write a tree it should only read. Point TMPDIR elsewhere",
        path.display(), other.display()
    )]
    PrivateOverlap {
        /// The private directory.
        path: PathBuf,
        /// What it overlaps.
        other: PathBuf,
    },
    /// The private directories could not be made.
    #[error("cannot make the command's private directories under `{}`: {source}; nothing ran", path.display())]
    Private {
        /// Where.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

impl LandlockError {
    /// Whether this failure means the backend cannot run any command here (Landlock or the
    /// cgroup missing, a ruleset or filter the kernel refused), as opposed to one command's
    /// profile it cannot hold, after which other commands still run confined.
    pub fn means_backend_down(&self) -> bool {
        !matches!(
            self,
            LandlockError::Writable
                | LandlockError::Networked
                | LandlockError::Gpu
                | LandlockError::Remapped { .. }
                | LandlockError::Plan(_)
                | LandlockError::PrivateOverlap { .. }
        )
    }
}

/// What a spec asks for that the landlock backend cannot hold, if anything. Pure.
pub(crate) fn refusal(spec: &BwrapSpec) -> Option<LandlockError> {
    if spec.profile.workspace_write() || !spec.staged.is_empty() {
        return Some(LandlockError::Writable);
    }
    if spec.profile.network() {
        return Some(LandlockError::Networked);
    }
    if spec.gpu.is_some() {
        return Some(LandlockError::Gpu);
    }
    spec.roots
        .iter()
        .find(|r| r.host != r.mount)
        .map(|r| LandlockError::Remapped {
            host: r.host.clone(),
            mount: r.mount.clone(),
        })
}

/// The command's private directories: the session's scratch directories, or ones made for it
/// (removed when this is dropped).
#[derive(Debug)]
pub(crate) struct PrivateDirs {
    /// `TMPDIR`.
    pub tmp: PathBuf,
    /// `HOME`.
    pub home: PathBuf,
    /// Every directory granted for writing.
    pub all: Vec<PathBuf>,
    /// The directory made for this command, removed on drop.
    made: Option<PathBuf>,
}

impl PrivateDirs {
    /// The session's directories when the spec has them, else a fresh `0700` directory under
    /// `base` (made with `mkdir`, which fails rather than follow anything already there).
    pub(crate) fn for_spec(spec: &BwrapSpec, base: &Path) -> Result<Self, LandlockError> {
        if let Some(s) = &spec.scratch {
            return Ok(PrivateDirs {
                tmp: s.tmp.clone(),
                home: s.home.clone(),
                all: vec![s.tmp.clone(), s.var_tmp.clone(), s.home.clone()],
                made: None,
            });
        }
        let n = PRIVATE.fetch_add(1, Ordering::Relaxed);
        let mut random = [0u8; 8];
        rustix::rand::getrandom(&mut random, rustix::rand::GetRandomFlags::empty()).map_err(
            |e| LandlockError::Private {
                path: base.to_path_buf(),
                source: e.into(),
            },
        )?;
        let dir = base.join(format!(
            "spear-landlock-{}-{n}-{:016x}",
            std::process::id(),
            u64::from_ne_bytes(random)
        ));
        let fail = |source| LandlockError::Private {
            path: dir.clone(),
            source,
        };
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(fail)?;
        let made = PrivateDirs {
            tmp: dir.join("tmp"),
            home: dir.join("home"),
            all: vec![dir.join("tmp"), dir.join("home")],
            made: Some(dir.clone()),
        };
        for d in &made.all {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(d)
                .map_err(fail)?;
        }
        Ok(made)
    }
}

impl Drop for PrivateDirs {
    fn drop(&mut self) {
        if let Some(dir) = &self.made
            && let Err(e) = std::fs::remove_dir_all(dir)
        {
            tracing::error!(
                "cannot remove the landlock sandbox's directory {}: {e}",
                dir.display()
            );
        }
    }
}

/// What the ruleset grants for `spec`, before masks are planned around. Pure.
pub(crate) fn grants(spec: &BwrapSpec, private: &PrivateDirs, etc: &[PathBuf]) -> plan::Grants {
    let mut read_exec: Vec<PathBuf> = spec
        .system
        .iter()
        .filter_map(|d| match d {
            SystemDir::Bind(p) => Some(p.clone()),
            SystemDir::Symlink { .. } => None,
        })
        .collect();
    read_exec.extend(spec.toolchains.iter().cloned());
    read_exec.extend(spec.profile.host_read_paths().iter().cloned());
    let mut read: Vec<PathBuf> = etc.to_vec();
    read.push(PathBuf::from("/proc"));
    read.extend(spec.git_config.iter().cloned());
    plan::Grants {
        read_exec,
        read,
        roots: spec.roots.iter().map(|r| r.host.clone()).collect(),
        masks: spec
            .masks
            .iter()
            .map(Mask::path)
            .map(Path::to_path_buf)
            .collect(),
        devices: DEVICES.iter().map(PathBuf::from).collect(),
        private: private.all.clone(),
    }
}

/// The `/etc` entries to grant one by one: the spec's entries, or, for a prepared view, the
/// curated entries it was made from ([`crate::etc_entries`]) and its directories; in both cases
/// only what every user may read (a directory: read and search), as the view holds. Attack
/// stopped: a sandbox of root reading `/etc/ssl/private` through a grant of `/etc/ssl` (a grant
/// covers everything beneath it, so no directory holding more than the curated entries is
/// granted).
pub(crate) fn etc_entries(etc: &Etc) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let listed = match etc {
        Etc::Entries(list) => list.clone(),
        Etc::View { dirs, .. } => {
            let mut all = crate::layout::etc_entries(Path::new("/etc"));
            all.extend(dirs.iter().cloned());
            all
        }
    };
    listed
        .into_iter()
        .filter(|p| {
            std::fs::metadata(p).is_ok_and(|m| {
                let mode = m.permissions().mode();
                mode & 0o004 != 0 && (!m.is_dir() || mode & 0o001 != 0)
            })
        })
        .collect()
}

/// The environment of the command: the spec's, with `HOME` and `TMPDIR` naming the private
/// directories and `GIT_CONFIG_SYSTEM` spear's git configuration where it lies on the host.
pub(crate) fn environment(spec: &BwrapSpec, private: &PrivateDirs) -> Vec<(OsString, OsString)> {
    spec.env
        .iter()
        .map(|(k, v)| {
            let v = match k.to_str() {
                Some("HOME") => private.home.clone().into_os_string(),
                Some("TMPDIR") => private.tmp.clone().into_os_string(),
                Some("GIT_CONFIG_SYSTEM") => spec
                    .git_config
                    .clone()
                    .map_or_else(|| v.clone(), PathBuf::into_os_string),
                _ => v.clone(),
            };
            (k.clone(), v)
        })
        .collect()
}

/// Everything a landlock run needs, made before the spawn.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// What the child applies.
    pub confinement: Arc<ChildConfinement>,
    /// What the ruleset holds.
    pub applied: Applied,
    /// The command's environment.
    pub env: Vec<(OsString, OsString)>,
    /// The private directories (removed when dropped).
    pub private: PrivateDirs,
}

/// Makes what a run of `spec` needs at `abi`: the private directories (under `base`), the plan,
/// the ruleset, the seccomp programs. Nothing is spawned.
pub(crate) fn prepare(spec: &BwrapSpec, abi: u32, base: &Path) -> Result<Prepared, LandlockError> {
    if abi == 0 {
        return Err(LandlockError::Unavailable);
    }
    if let Some(refused) = refusal(spec) {
        return Err(refused);
    }
    let etc = etc_entries(&spec.etc);
    // Checked before anything is made too: a directory made inside a root would be a write to it.
    let planned = PrivateDirs {
        tmp: PathBuf::new(),
        home: PathBuf::new(),
        all: vec![base.join("spear-landlock-")],
        made: None,
    };
    if spec.scratch.is_none()
        && let Some((path, other)) = overlap(&grants(spec, &planned, &etc))
    {
        return Err(LandlockError::PrivateOverlap { path, other });
    }
    let private = PrivateDirs::for_spec(spec, base)?;
    let grants = grants(spec, &private, &etc);
    if let Some((path, other)) = overlap(&grants) {
        return Err(LandlockError::PrivateOverlap { path, other });
    }
    let rules = plan::plan(&grants, &list_dir)?;
    let optional =
        |p: &Path| !grants.roots.iter().any(|r| r == p) && !private.all.iter().any(|d| d == p);
    let (ruleset, applied) = ruleset::create(abi, &rules, &optional)?;
    let main =
        crate::seccomp::program_bytes().map_err(|e| LandlockError::Seccomp(e.to_string()))?;
    let extra = child::extra_program().map_err(|e| LandlockError::Seccomp(e.to_string()))?;
    let env = environment(spec, &private);
    Ok(Prepared {
        confinement: Arc::new(ChildConfinement {
            ruleset,
            main: child::from_bytes(&main),
            extra: child::to_kernel(&extra),
        }),
        applied,
        env,
        private,
    })
}

/// A private directory inside, or holding, a tree granted for reading (a root, a toolchain, a
/// host-read path), if one is. Pure. Attack stopped: a command writing into the workspace
/// unstaged because the host's temporary directory lies inside it (`TMPDIR=/ws/tmp`).
pub(crate) fn overlap(grants: &plan::Grants) -> Option<(PathBuf, PathBuf)> {
    grants.private.iter().find_map(|p| {
        grants
            .roots
            .iter()
            .chain(&grants.read_exec)
            .chain(&grants.read)
            .find(|g| p.starts_with(g) || g.starts_with(p))
            .map(|g| (p.clone(), g.clone()))
    })
}

/// The entries of `dir`, by name and kind (a symlink is a symlink, never followed).
fn list_dir(dir: &Path) -> io::Result<Vec<(OsString, plan::Kind)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let t = entry.file_type()?;
        let kind = if t.is_symlink() {
            plan::Kind::Symlink
        } else if t.is_dir() {
            plan::Kind::Dir
        } else {
            plan::Kind::Other
        };
        out.push((entry.file_name(), kind));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Bind;
    use spear_core::{Capability as C, CapabilitySet, ExecutionProfile};

    fn spec(caps: &[C], mount: &str, gpu: bool) -> Result<BwrapSpec, crate::SpecError> {
        let profile = ExecutionProfile::from_granted(CapabilitySet::of(caps), Vec::new());
        let mut b = BwrapSpec::builder(
            profile.clone(),
            vec!["/bin/true".into()],
            mount.into(),
            "/home/u".into(),
        )
        .etc(Etc::Entries(vec!["/etc/passwd".into()]))
        .roots(vec![Bind {
            host: "/ws".into(),
            mount: mount.into(),
        }])
        .resolver(Some("/run/r/resolv.conf".into()));
        if profile.workspace_write() {
            b = b.staged(vec![crate::Overlay {
                lower: "/ws".into(),
                upper: "/st/u".into(),
                work: "/st/w".into(),
            }]);
        }
        if gpu {
            b = b.gpu(Some(crate::GpuBinds {
                devices: vec!["/dev/nvidia0".into()],
                driver: vec![],
            }));
        }
        b.build()
    }

    #[test]
    fn what_the_backend_cannot_hold_is_named_and_a_closed_read_only_spec_is_not_refused() {
        let read = [C::FilesystemRead];
        assert!(refusal(&spec(&read, "/ws", false).unwrap()).is_none());
        let refused = |caps: &[C], mount: &str, gpu: bool| {
            refusal(&spec(caps, mount, gpu).unwrap()).map(|e| e.to_string())
        };
        let writable = refused(&[C::FilesystemRead, C::WorkspaceWrite], "/ws", false).unwrap();
        assert!(writable.contains("cannot stage writes"), "{writable}");
        let networked = refused(&[C::FilesystemRead, C::Network], "/ws", false).unwrap();
        assert!(networked.contains("no network path"), "{networked}");
        let remapped = refused(&read, "/workspace", false).unwrap();
        assert!(
            remapped.contains("`/ws` is seen at `/workspace`"),
            "{remapped}"
        );
        let gpu = refused(&read, "/ws", true).unwrap();
        assert!(gpu.contains("does not grant GPUs"), "{gpu}");
        // Each names both ways out or what to do.
        for msg in [writable, networked, remapped, gpu] {
            assert!(msg.contains("user namespaces"), "{msg}");
        }
    }

    #[test]
    fn a_private_directory_inside_or_around_a_read_tree_is_an_overlap() {
        let g = |private: &str| plan::Grants {
            roots: vec![PathBuf::from("/ws")],
            read_exec: vec![PathBuf::from("/usr")],
            read: vec![PathBuf::from("/proc")],
            private: vec![PathBuf::from(private)],
            ..plan::Grants::default()
        };
        assert_eq!(
            overlap(&g("/ws/tmp/spear-landlock-1/tmp")),
            Some((
                PathBuf::from("/ws/tmp/spear-landlock-1/tmp"),
                PathBuf::from("/ws")
            ))
        );
        assert!(overlap(&g("/")).is_some(), "holding a root");
        assert!(overlap(&g("/usr/local/tmp")).is_some());
        assert_eq!(overlap(&g("/tmp/spear-landlock-1/tmp")), None);
        // A sibling whose name starts the same is not inside.
        assert_eq!(overlap(&g("/wsx/tmp")), None);
    }
}
