//! What a sandbox is made of: the structured input of [`crate::build_argv`].

use std::ffi::OsString;
use std::path::PathBuf;

use spear_core::{Capability, ExecutionProfile};

/// One sandbox, fully described. Made outside this crate only through [`BwrapSpec::builder`],
/// whose [`crate::SpecBuilder::build`] refuses what [`crate::build_argv`] would refuse, so every
/// spec a caller holds is one the sandbox accepts; its parts are read through accessors and cannot
/// be changed after. [`crate::build_argv`] turns it into the bubblewrap argv without any I/O (and
/// checks it again).
///
/// The spec cannot be wider than its profile: root writability and host-read paths come from
/// `profile`, not from separate fields, and a profile that holds a capability the sandbox does not
/// implement is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BwrapSpec {
    /// What the decision layer granted.
    pub(crate) profile: ExecutionProfile,
    /// The program and its arguments, run inside the sandbox.
    pub(crate) command: Vec<OsString>,
    /// The working directory, as seen inside the sandbox.
    pub(crate) cwd: PathBuf,
    /// The home directory: private to the sandbox (a tmpfs, or the session's own directory, see
    /// `scratch`) at the user's real home path, so that toolchains under it keep their paths.
    /// Credential stores under it are never bound.
    pub(crate) home: PathBuf,
    /// How the host lays out its system directories.
    pub(crate) system: Vec<SystemDir>,
    /// The sandbox's `/etc`.
    pub(crate) etc: Etc,
    /// Toolchain directories (the operator's `PATH`, `CARGO_HOME`, `/opt`, ...), bound read-only.
    pub(crate) toolchains: Vec<PathBuf>,
    /// The workspace roots.
    pub(crate) roots: Vec<Bind>,
    /// How each writable root is staged: in a writable profile every root is seen through an
    /// overlay whose upper layer receives every write, so that nothing the command writes reaches
    /// the host before the caller has judged it. Empty in a read-only profile.
    pub(crate) staged: Vec<Overlay>,
    /// Credential stores that exist inside a bound directory; each is hidden.
    pub(crate) masks: Vec<Mask>,
    /// An empty regular file of spear's that each [`Mask::File`] is bound from, so that a masked
    /// file reads as empty (a program that reads its configuration finds none) rather than
    /// failing: `/dev/null` when `None`, which the sandbox's `nodev` binds make unreadable.
    pub(crate) empty_file: Option<PathBuf>,
    /// The whole environment of the command (the builder adds nothing but what is here).
    pub(crate) env: Vec<(OsString, OsString)>,
    /// Size caps of the private tmpfs mounts.
    pub(crate) tmpfs: TmpfsSizes,
    /// Host directories that stand for `/tmp`, `/var/tmp` and the home directory instead of fresh
    /// tmpfs mounts, so that what a command leaves there is there for the next command of the
    /// same session. `None`: fresh tmpfs mounts, gone with the command.
    pub(crate) scratch: Option<ScratchDirs>,
    /// A git configuration file of spear's (the host's `user.name` and `user.email`, nothing
    /// else), bound read-only at [`GIT_CONFIG_PATH`] and named by `GIT_CONFIG_SYSTEM`, so that a
    /// repository's or the sandbox's own `user.*` still win over it.
    pub(crate) git_config: Option<PathBuf>,
    /// Variables of `env` that the operator named exactly: these are passed even when their name
    /// or value looks like a secret. Every other secret-looking variable is refused.
    pub(crate) env_named: Vec<OsString>,
    /// The fd number (in the bwrap process) that holds the seccomp program.
    pub(crate) seccomp_fd: i32,
    /// How a networked profile gets its network; `None` refuses a networked profile.
    pub(crate) network: Option<NetworkSpec>,
    /// The GPUs an operator granted ([`crate::gpu_binds`]): their device nodes and the driver's
    /// files, bound at the same paths; `None` binds nothing of the host's `/dev`.
    pub(crate) gpu: Option<crate::GpuBinds>,
}

impl BwrapSpec {
    /// Whether `other` is the same sandbox but for its command: what a warm sandbox made for one
    /// can run the other. Every field is named, so that a new one cannot be forgotten here.
    pub(crate) fn same_sandbox(&self, other: &BwrapSpec) -> bool {
        let BwrapSpec {
            profile,
            command: _,
            cwd,
            home,
            system,
            etc,
            toolchains,
            roots,
            staged,
            masks,
            empty_file,
            env,
            tmpfs,
            scratch,
            git_config,
            env_named,
            seccomp_fd,
            network,
            gpu,
        } = self;
        *profile == other.profile
            && *cwd == other.cwd
            && *home == other.home
            && *system == other.system
            && *etc == other.etc
            && *toolchains == other.toolchains
            && *roots == other.roots
            && *staged == other.staged
            && *masks == other.masks
            && *empty_file == other.empty_file
            && *env == other.env
            && *tmpfs == other.tmpfs
            && *scratch == other.scratch
            && *git_config == other.git_config
            && *env_named == other.env_named
            && *seccomp_fd == other.seccomp_fd
            && *network == other.network
            && *gpu == other.gpu
    }
}

/// What a networked sandbox needs beyond the closed one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkSpec {
    /// A file naming slirp4netns's resolver, bound as `/etc/resolv.conf`.
    pub resolv_conf: PathBuf,
}

/// The fd at which bwrap reads its options (`--args`, NUL-separated): no number of mounts or
/// environment variables can make its argv too long to start. The seccomp program is at 3.
pub(crate) const ARGS_CHILD_FD: i32 = 4;
/// The fd at which bwrap reports its child (`--info-fd`).
pub(crate) const INFO_CHILD_FD: i32 = 5;
/// The fd the hold reads "go" from before it execs the command.
pub(crate) const GO_CHILD_FD: i32 = 6;
/// The fd the hold writes "r" to once bwrap has set the sandbox up.
pub(crate) const READY_CHILD_FD: i32 = 7;

/// The hold in front of a networked command, run by `/bin/sh` inside the sandbox: it says the
/// sandbox is set up (bwrap has written its user namespace maps and configured loopback, which
/// `--block-fd` would not wait for), then waits for "go", closes both fds and execs the command.
/// EOF or anything but "go" (spear died, or gave up) exits 125 without running it.
pub(crate) const NETWORK_HOLD: &str = "printf r >&7 && exec 7>&- && IFS= read -r go <&6 && [ \"$go\" = go ] || exit 125; exec 6<&-; exec \"$@\"";

/// Where the sandbox sees the git configuration of [`BwrapSpec`] (`BwrapSpec::git_config`).
pub const GIT_CONFIG_PATH: &str = "/run/spear/gitconfig";

/// The session's private directories on the host (see [`BwrapSpec::scratch`]). Each is bound
/// read-write; none may lie inside, or hold, anything else the sandbox binds: they are the only
/// host directories a command writes without staging, and they hold nothing but its own files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScratchDirs {
    /// Seen as `/tmp`.
    pub tmp: PathBuf,
    /// Seen as `/var/tmp`.
    pub var_tmp: PathBuf,
    /// Seen as the home directory.
    pub home: PathBuf,
}

/// A host path and where the sandbox sees it (a workspace root, or an entry inside one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind {
    /// The path on the host.
    pub host: PathBuf,
    /// Where the sandbox sees it.
    pub mount: PathBuf,
}

/// One writable root staged through overlayfs: `lower` (the root on the host) is mounted over
/// itself, in a mount namespace private to the command, as an overlay whose writes land in
/// `upper`. bwrap then binds that view like any root. `upper` and `work` are empty directories on
/// one filesystem, outside every root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlay {
    /// The root's host path.
    pub lower: PathBuf,
    /// Where the command's writes land.
    pub upper: PathBuf,
    /// Where overlayfs's work directories go (a fresh one inside it for every mount).
    pub work: PathBuf,
}

/// How the sandbox gets its curated `/etc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Etc {
    /// A prepared copy of the curated files (see [`crate::prepare_etc_view`]), bound read-only as
    /// `/etc` with one mount, and the curated directories bound read-only on top.
    View {
        /// The copy.
        files: PathBuf,
        /// Curated directories (`/etc/ssl/certs`, ...), each bound if it exists.
        dirs: Vec<PathBuf>,
    },
    /// The curated entries themselves, each bound read-only if it exists.
    Entries(Vec<PathBuf>),
}

/// A system directory of the host's root, reproduced in the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SystemDir {
    /// A real directory, bound read-only (`/usr`, or `/bin` on a host without merged /usr).
    Bind(PathBuf),
    /// A symlink such as `/bin -> usr/bin` on a merged-/usr host.
    Symlink {
        /// The link's path.
        path: PathBuf,
        /// What it points to, as the host's link says.
        target: PathBuf,
    },
}

/// A credential store inside a bound directory, hidden from the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mask {
    /// A file, covered by an empty file (the spec's empty file, else `/dev/null`).
    File(PathBuf),
    /// A directory, covered by an empty read-only tmpfs.
    Dir(PathBuf),
}

impl BwrapSpec {
    /// What each [`Mask::File`] is bound from: the empty file, else `/dev/null`.
    pub(crate) fn mask_source(&self) -> &std::path::Path {
        self.empty_file
            .as_deref()
            .unwrap_or(std::path::Path::new("/dev/null"))
    }
}

impl Mask {
    /// The path it hides.
    pub fn path(&self) -> &std::path::Path {
        match self {
            Mask::File(p) | Mask::Dir(p) => p,
        }
    }
}

/// Size caps of the private tmpfs mounts, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TmpfsSizes {
    /// `/tmp` (and `/var/tmp`, each).
    pub tmp: u64,
    /// The home directory.
    pub home: u64,
    /// `/dev/shm`.
    pub shm: u64,
}

impl Default for TmpfsSizes {
    /// 1 GiB for `/tmp`, 512 MiB for home, 256 MiB for `/dev/shm`. Pages written there are also
    /// charged to the command's memory cgroup.
    fn default() -> Self {
        TmpfsSizes {
            tmp: 1 << 30,
            home: 512 << 20,
            shm: 256 << 20,
        }
    }
}

/// Why a spec cannot become a sandbox. Nothing runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// The profile holds granted capabilities the sandbox does not implement
    /// ([`spear_core::Capability::is_implemented_by_sandbox`]), in [`spear_core::Capability::ALL`]
    /// order.
    #[error(
        "the sandbox does not implement {}: spear refuses to run the command rather than run it without them",
        names(.0)
    )]
    Unimplemented(Vec<Capability>),
    /// The profile asks for the network and the spec has no network path.
    #[error(
        "the command needs the network, and this sandbox has no network path configured; run it without network access"
    )]
    NetworkUnavailable,
    /// No program to run.
    #[error("no command to run")]
    EmptyCommand,
    /// A path that must be absolute and normal is not.
    #[error("{what} `{}` must be an absolute path without `.` or `..`", path.display())]
    NotAbsolute {
        /// Which part of the spec.
        what: &'static str,
        /// The path.
        path: PathBuf,
    },
    /// A bind would expose a credential store.
    #[error("`{}` is or holds a credential store and is never bound into a sandbox", .0.display())]
    CredentialStore(PathBuf),
    /// A bind would cover one of the sandbox's own mount points, or the whole host.
    #[error("`{}` would cover the sandbox's own {} and is never bound", path.display(), covers.display())]
    Reserved {
        /// The path.
        path: PathBuf,
        /// What it would cover.
        covers: PathBuf,
    },
    /// A workspace root is the home directory or holds it.
    #[error(
        "the workspace root `{}` holds the home directory, which holds credential stores; start spear in a project directory instead",
        .0.display()
    )]
    RootCoversHome(PathBuf),
    /// A protected entry or mask lies under no bound directory.
    #[error("`{}` lies under no directory the sandbox binds", .0.display())]
    Unbound(PathBuf),
    /// A writable root is not staged, or a staging layer is misplaced.
    #[error("{0}; spear refuses to run a writable command whose writes it could not judge first")]
    Staging(String),
    /// An environment variable looks like a secret.
    #[error("the environment variable {0} looks like a secret and is never passed into a sandbox")]
    SecretInEnvironment(String),
    /// A scratch directory overlaps something else the sandbox binds.
    #[error(
        "the session directory `{}` overlaps `{}`, which the sandbox binds; spear refuses to let a command write a host directory it does not own",
        path.display(), other.display()
    )]
    ScratchOverlap {
        /// The scratch directory.
        path: PathBuf,
        /// What it overlaps.
        other: PathBuf,
    },
    /// The seccomp fd is one of stdio.
    #[error("the seccomp program must be on an fd above stdio, not {0}")]
    SeccompFd(i32),
    /// The command's words (and its environment) are more than the kernel passes to a program
    /// (`exec_limits`): refused before anything starts, where `execve` would fail
    /// inside the sandbox with "Argument list too long".
    #[error(
        "the command is too large to run: {0}, more than the kernel passes to a program (one word at most {max_word} bytes, all words and the environment together at most {max_total} bytes); nothing ran. Write the script or the data to a file in the workspace and run or read that file instead (`bash script.sh`, `cmd < data`)",
        max_word = crate::exec_limits::MAX_WORD_BYTES - 1,
        max_total = crate::exec_limits::MAX_EXEC_BYTES
    )]
    TooLarge(String),
}

/// `gpu, secrets`: the names of `caps`, for [`SpecError::Unimplemented`].
fn names(caps: &[Capability]) -> String {
    caps.iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
