//! The one way to make a [`BwrapSpec`] outside this crate: from what the sandbox is meant to show
//! and allow, checked when it is built.

use std::ffi::OsString;
use std::path::PathBuf;

use spear_core::ExecutionProfile;

use crate::argv::validate;
use crate::spawn::SECCOMP_CHILD_FD;
use crate::spec::{
    Bind, BwrapSpec, Etc, Mask, NetworkSpec, Overlay, ScratchDirs, SpecError, SystemDir, TmpfsSizes,
};

/// A [`BwrapSpec`] under construction. The caller says what the sandbox is for: the profile (what
/// was granted: root access, host reads, network or not), the command, its working directory,
/// the home directory, the roots, what the host shows, the environment, the limits. How the
/// sandbox implements it (the fd numbers of the seccomp program and the network path, the hold in
/// front of a networked command) is this crate's own and is not set here.
///
/// Everything not named is closed: no system directories, toolchains or roots, an empty `/etc`,
/// no masks, no environment, the default tmpfs sizes, fresh private places, no git
/// configuration and no network path (a networked profile is then refused).
#[derive(Debug, Clone)]
#[must_use]
pub struct SpecBuilder {
    spec: BwrapSpec,
}

impl BwrapSpec {
    /// Starts the spec of a sandbox that runs `command` in `cwd` (as the sandbox sees it) under
    /// `profile`, with its private home directory at `home`.
    pub fn builder(
        profile: ExecutionProfile,
        command: Vec<OsString>,
        cwd: PathBuf,
        home: PathBuf,
    ) -> SpecBuilder {
        SpecBuilder {
            spec: BwrapSpec {
                profile,
                command,
                cwd,
                home,
                system: Vec::new(),
                etc: Etc::Entries(Vec::new()),
                toolchains: Vec::new(),
                roots: Vec::new(),
                staged: Vec::new(),
                masks: Vec::new(),
                empty_file: None,
                env: Vec::new(),
                tmpfs: TmpfsSizes::default(),
                scratch: None,
                git_config: None,
                env_named: Vec::new(),
                seccomp_fd: SECCOMP_CHILD_FD,
                network: None,
                gpu: None,
            },
        }
    }
}

impl SpecBuilder {
    /// The GPUs an operator granted: exactly these device nodes and driver files are bound.
    pub fn gpu(mut self, binds: Option<crate::GpuBinds>) -> Self {
        self.spec.gpu = binds;
        self
    }

    /// How the host lays out its system directories ([`crate::system_dirs`]).
    pub fn system(mut self, dirs: Vec<SystemDir>) -> Self {
        self.spec.system = dirs;
        self
    }

    /// The sandbox's `/etc`.
    pub fn etc(mut self, etc: Etc) -> Self {
        self.spec.etc = etc;
        self
    }

    /// Toolchain directories, bound read-only.
    pub fn toolchains(mut self, dirs: Vec<PathBuf>) -> Self {
        self.spec.toolchains = dirs;
        self
    }

    /// The workspace roots: read-only, or, when the profile writes, read-write only as their
    /// staged views (see [`SpecBuilder::staged`]).
    pub fn roots(mut self, roots: Vec<Bind>) -> Self {
        self.spec.roots = roots;
        self
    }

    /// How each root is staged when the profile writes: one overlay per root, its layers outside
    /// every root. None in a read-only profile.
    pub fn staged(mut self, overlays: Vec<Overlay>) -> Self {
        self.spec.staged = overlays;
        self
    }

    /// Credential stores inside bound directories, each hidden.
    pub fn masks(mut self, masks: Vec<Mask>) -> Self {
        self.spec.masks = masks;
        self
    }

    /// The empty regular file each masked file is bound from ([`crate::prepare_empty_file`]);
    /// `None`: `/dev/null`, which reads as an error in the sandbox rather than as empty.
    pub fn empty_file(mut self, file: Option<PathBuf>) -> Self {
        self.spec.empty_file = file;
        self
    }

    /// The command's whole environment, and the variables of it the operator named exactly
    /// (passed even when they look like secrets; every other secret-looking one is refused).
    pub fn env(mut self, vars: Vec<(OsString, OsString)>, named: Vec<OsString>) -> Self {
        self.spec.env = vars;
        self.spec.env_named = named;
        self
    }

    /// The size caps of the private tmpfs mounts.
    pub fn tmpfs(mut self, sizes: TmpfsSizes) -> Self {
        self.spec.tmpfs = sizes;
        self
    }

    /// The session's own directories for `/tmp`, `/var/tmp` and the home directory; `None`:
    /// fresh tmpfs mounts, gone with the command.
    pub fn scratch(mut self, dirs: Option<ScratchDirs>) -> Self {
        self.spec.scratch = dirs;
        self
    }

    /// spear's git configuration file, bound read-only at [`crate::GIT_CONFIG_PATH`].
    pub fn git_config(mut self, file: Option<PathBuf>) -> Self {
        self.spec.git_config = file;
        self
    }

    /// The network path of a networked profile: the resolver file naming slirp4netns's
    /// forwarder. `None` refuses a networked profile; a closed profile ignores it.
    pub fn resolver(mut self, resolv_conf: Option<PathBuf>) -> Self {
        self.spec.network = resolv_conf.map(|resolv_conf| NetworkSpec { resolv_conf });
        self
    }

    /// The spec as built so far, unchecked: what a grant binds is read from it before any layer
    /// is staged ([`BwrapSpec::reach`]).
    pub fn unchecked(&self) -> &BwrapSpec {
        &self.spec
    }

    /// The spec, or why the sandbox would refuse it (every check of [`crate::build_argv`]).
    pub fn build(self) -> Result<BwrapSpec, SpecError> {
        validate(&self.spec)?;
        Ok(self.spec)
    }
}

impl BwrapSpec {
    /// Every part of this sandbox that decides what its command can see or do, beyond its
    /// command: the profile, the working directory, the home directory, the toolchain directories
    /// bound, the workspace roots, the whole environment (each name and value) and the names
    /// passed exactly, the tmpfs sizes, and whether it gets a network path. Canonical bytes
    /// (each part tagged and length-prefixed), for a grant to bind: two sandboxes with the same
    /// reach show and allow the same.
    ///
    /// Left out, each for its reason: the command (a grant binds its digest itself); the system
    /// directories and `/etc` (spear's own curated list of the host's fixed layout, which no
    /// setting widens); the staged layers and the session's private directories (fresh per call
    /// or per session, holding only the command's own files); the credential masks (they follow
    /// from the home directory, the binds and spear's state directory, and only narrow); spear's
    /// git configuration file, the empty file masks are bound from, and the seccomp fd (spear's
    /// own). Every field is named, so that a
    /// new one cannot be forgotten here.
    pub fn reach(&self) -> Vec<u8> {
        use std::os::unix::ffi::OsStrExt as _;
        let BwrapSpec {
            profile,
            command: _,
            cwd,
            home,
            system: _,
            etc: _,
            toolchains,
            roots,
            staged: _,
            masks: _,
            empty_file: _,
            env,
            tmpfs,
            scratch: _,
            git_config: _,
            env_named,
            seccomp_fd: _,
            network,
            gpu,
        } = self;
        let mut out = Vec::new();
        let mut part = |tag: &str, bytes: &[u8]| {
            out.extend_from_slice(tag.as_bytes());
            out.push(0);
            out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            out.extend_from_slice(bytes);
        };
        part("profile", format!("{profile:?}").as_bytes());
        part("cwd", cwd.as_os_str().as_bytes());
        part("home", home.as_os_str().as_bytes());
        for dir in toolchains {
            part("toolchain", dir.as_os_str().as_bytes());
        }
        for root in roots {
            part("root", root.host.as_os_str().as_bytes());
            part("root-mount", root.mount.as_os_str().as_bytes());
        }
        for (name, value) in env {
            part("env", name.as_bytes());
            part("env-value", value.as_bytes());
        }
        for name in env_named {
            part("env-named", name.as_bytes());
        }
        part(
            "tmpfs",
            format!("{} {} {}", tmpfs.tmp, tmpfs.home, tmpfs.shm).as_bytes(),
        );
        part("network", if network.is_some() { b"1" } else { b"0" });
        // A GPU grant reaches its device nodes (nothing is added without one, so what a grant
        // bound before GPUs existed in the spec still matches).
        for node in gpu.iter().flat_map(|g| &g.devices) {
            part("gpu", node.as_os_str().as_bytes());
        }
        out
    }

    /// What the decision layer granted.
    pub fn profile(&self) -> &ExecutionProfile {
        &self.profile
    }

    /// The program and its arguments, run inside the sandbox.
    pub fn command(&self) -> &[OsString] {
        &self.command
    }

    /// The working directory, as the sandbox sees it.
    pub fn cwd(&self) -> &std::path::Path {
        &self.cwd
    }

    /// The private home directory's path.
    pub fn home(&self) -> &std::path::Path {
        &self.home
    }

    /// The system directories reproduced in the sandbox.
    pub fn system(&self) -> &[SystemDir] {
        &self.system
    }

    /// The sandbox's `/etc`.
    pub fn etc(&self) -> &Etc {
        &self.etc
    }

    /// The toolchain directories bound read-only.
    pub fn toolchains(&self) -> &[PathBuf] {
        &self.toolchains
    }

    /// The workspace roots.
    pub fn roots(&self) -> &[Bind] {
        &self.roots
    }

    /// How the writable roots are staged.
    pub fn staged(&self) -> &[Overlay] {
        &self.staged
    }

    /// The credential stores hidden.
    pub fn masks(&self) -> &[Mask] {
        &self.masks
    }

    /// The command's whole environment.
    pub fn env(&self) -> &[(OsString, OsString)] {
        &self.env
    }

    /// The session's own directories standing for `/tmp`, `/var/tmp` and home, if any.
    pub fn scratch(&self) -> Option<&ScratchDirs> {
        self.scratch.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use spear_core::{Capability, CapabilitySet};

    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    fn builder(caps: &[Capability]) -> SpecBuilder {
        BwrapSpec::builder(
            ExecutionProfile::from_granted(CapabilitySet::of(caps), Vec::new()),
            vec!["/bin/true".into()],
            p("/work/proj"),
            p("/home/u"),
        )
        .system(vec![SystemDir::Bind(p("/usr"))])
        .roots(vec![Bind {
            host: p("/work/proj"),
            mount: p("/work/proj"),
        }])
    }

    /// Each row changes one part of a spec: the reach changes exactly when the part decides what
    /// the command sees or does (the control rows change a part it leaves out).
    #[test]
    fn the_reach_holds_every_part_that_widens() {
        type Edit = fn(SpecBuilder) -> SpecBuilder;
        let base = || builder(&[Capability::FilesystemRead]);
        let rows: Vec<(&str, Edit, bool)> = vec![
            (
                "a root added",
                |b| {
                    b.roots(vec![
                        Bind {
                            host: p("/work/proj"),
                            mount: p("/work/proj"),
                        },
                        Bind {
                            host: p("/srv/other"),
                            mount: p("/srv/other"),
                        },
                    ])
                },
                true,
            ),
            (
                "a toolchain bound",
                |b| b.toolchains(vec![p("/opt/tool")]),
                true,
            ),
            (
                "a variable",
                |b| b.env(vec![("APP_MODE".into(), "x".into())], Vec::new()),
                true,
            ),
            (
                "a variable's value",
                |b| b.env(vec![("APP_MODE".into(), "y".into())], Vec::new()),
                true,
            ),
            (
                "a name passed exactly",
                |b| b.env(Vec::new(), vec!["HF_TOKEN".into()]),
                true,
            ),
            (
                "a larger /tmp",
                |b| {
                    b.tmpfs(TmpfsSizes {
                        tmp: 2 << 30,
                        ..TmpfsSizes::default()
                    })
                },
                true,
            ),
            (
                "a network path",
                |b| b.resolver(Some(p("/run/spear/net/resolv.conf"))),
                true,
            ),
            (
                "a mask (control)",
                |b| b.masks(vec![Mask::Dir(p("/work/proj/.ssh"))]),
                false,
            ),
            (
                "the system directories (control)",
                |b| b.system(vec![SystemDir::Bind(p("/opt"))]),
                false,
            ),
            (
                "spear's git configuration (control)",
                |b| b.git_config(Some(p("/run/g"))),
                false,
            ),
        ];
        let reference = base().unchecked().reach();
        assert_eq!(
            base().unchecked().reach(),
            reference,
            "the same spec, the same reach"
        );
        for (what, edit, widens) in rows {
            assert_eq!(
                edit(base()).unchecked().reach() != reference,
                widens,
                "{what}"
            );
        }
        let other = builder(&[Capability::FilesystemRead, Capability::Network]);
        assert_ne!(other.unchecked().reach(), reference, "another profile");
    }

    #[test]
    fn builds_what_it_was_told_and_fills_in_the_mechanism() {
        let spec = builder(&[Capability::FilesystemRead]).build().unwrap();
        assert_eq!(spec.seccomp_fd, SECCOMP_CHILD_FD);
        assert_eq!(spec.cwd(), Path::new("/work/proj"));
        assert_eq!(spec.roots().len(), 1);
        assert!(spec.staged().is_empty() && spec.scratch().is_none());
        assert!(crate::build_argv(&spec).is_ok());
    }

    #[test]
    fn refuses_what_the_sandbox_refuses() {
        let write = [Capability::FilesystemRead, Capability::WorkspaceWrite];
        assert!(matches!(
            builder(&write).build(),
            Err(SpecError::Staging(_))
        ));
        let staged = builder(&write).staged(vec![Overlay {
            lower: p("/work/proj"),
            upper: p("/state/0.upper"),
            work: p("/state/0.work"),
        }]);
        assert!(staged.build().is_ok(), "positive control");
        let networked = [Capability::FilesystemRead, Capability::Network];
        assert_eq!(
            builder(&networked).build().unwrap_err(),
            SpecError::NetworkUnavailable
        );
        assert!(
            builder(&networked)
                .resolver(Some(p("/run/spear/net/resolv.conf")))
                .build()
                .is_ok()
        );
        assert_eq!(
            builder(&[Capability::RemoteWrite]).build().unwrap_err(),
            SpecError::Unimplemented(vec![Capability::RemoteWrite])
        );
        let secret = builder(&[Capability::FilesystemRead])
            .env(vec![("HF_TOKEN".into(), "hf_abc".into())], Vec::new());
        assert!(matches!(
            secret.clone().build(),
            Err(SpecError::SecretInEnvironment(_))
        ));
        let named = builder(&[Capability::FilesystemRead]).env(
            vec![("HF_TOKEN".into(), "hf_abc".into())],
            vec!["HF_TOKEN".into()],
        );
        assert!(named.build().is_ok(), "named exactly by the operator");
    }
}
