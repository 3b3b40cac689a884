//! spear's execution layer: how to confine a process, and nothing about why.
//!
//! What this crate guarantees:
//! - A [`BwrapSpec`] is made only through [`BwrapSpec::builder`] from what the sandbox is for (the
//!   granted profile, roots, host view, environment, limits, command); a spec that asks for
//!   something unimplemented or unsafe is an error when it is built, before anything runs.
//! - [`build_argv`] is a pure function from a [`BwrapSpec`] to the bubblewrap argv; the sandbox sees
//!   only what the spec names, and it checks the spec again.
//! - Every mechanism a command needs (bwrap, seccomp, the cgroup backend when limits are active) is
//!   checked before it is spawned; a missing one is an error and no process.
//! - A writable spec binds every root only as its staged view ([`Overlay`]): the overlays are
//!   mounted in a mount namespace of the command's own before bwrap starts ([`StagePlan`]), so its
//!   writes land in layers its caller reads afterwards, and nothing it mounts or unmounts reaches
//!   the host's mount table. `/proc` is read-only to every sandbox, whatever its uid.
//! - A spawned command is held through a pidfd from the moment it exists and is signalled only
//!   through it. A timeout or a cancellation kills its whole tree (the PID namespace and the
//!   cgroup); nothing of it outlives the call.
//! - Every [`RunOutcome`] says which guarantees confined the run ([`spear_core::Guarantees`]),
//!   computed from the options handed to bwrap and from what happened, never from what was asked;
//!   a profile requiring a guarantee this host cannot give ([`Sandbox::can_give`]) is refused with
//!   [`SandboxError::GuaranteeUnavailable`] before anything is spawned.
//!
//! - Every credential file inside a tree the sandbox binds from the host, at any depth, can be
//!   masked: [`secret_masks`] finds each (a store by its name, a configuration file of a known
//!   format by what it holds) and keeps what it found by the directories' change stamps (or their
//!   inotify watch, in a session); a masked file reads as empty ([`prepare_empty_file`]).
//!
//! - No GPU is visible in a sandbox but what an operator's grant binds: [`gpu_binds`] plans
//!   exactly the chosen device nodes and the driver's files from what the host shows, or names
//!   what is missing ([`GpuError`]). (Not yet wired to a flag: see issue 34.)
//!
//! - Where bubblewrap cannot make its namespaces, the same spec can run under the landlock
//!   backend (`landlock` module; [`BackendChoice`], [`Confinement`]): Landlock, seccomp, a new
//!   session, no capabilities, rlimits and the command's cgroup. What it cannot hold (writes to
//!   the workspace, the network, GPUs) is refused before anything is made; its guarantees are
//!   computed from the ruleset the kernel took, and never include `process_boundary` or
//!   `read_boundary`. `auto` never takes it unless it gives every guarantee required.
//!
//! - A template directory can be given to a session as a copy-on-write view mounted on the host
//!   ([`CowMount`]: kernel overlayfs as root, `fuse-overlayfs` as a user, an error naming what to
//!   install where neither works); the template is only ever its read-only lower layer, and an
//!   unmount is checked in the mount table.
//!
//! This crate imports no spear crate but `spear-core`: it knows nothing of modes or policy.

mod argv;
mod builder;
mod cgroup;
mod container;
mod dir_lock;
mod empty_file;
mod env;
mod etc_view;
mod exec_limits;
mod gpu;
mod guarantees;
mod landlock;
mod layout;
mod mechanisms;
mod network;
mod output;
mod preflight_store;
mod rlimits;
mod sandbox;
mod seccomp;
mod secret_scan;
mod setup_gate;
mod spawn;
mod spec;
mod stage;
mod template_mount;
mod userns;
mod warm;

pub use argv::{BwrapArgv, build_argv};
pub use builder::SpecBuilder;
pub use cgroup::{
    BackendKind, CgroupBackend, CgroupError, CgroupLimits, CommandCgroup,
    HostPaths as CgroupHostPaths, LimitsHit, RESOURCE_CONTROL_ENV, SessionBudget, SessionCgroup,
    detect as detect_cgroup_backend, detect_with as detect_cgroup_backend_with,
};
pub use dir_lock::{Held as HeldDir, hold_made as hold_made_dir, take_free as take_free_dir};
pub use empty_file::prepare_empty_file;
pub use env::{EnvInputs, EnvPass, EnvPassError, loads_code, looks_secret, sandbox_env};
pub use etc_view::prepare as prepare_etc_view;
pub use gpu::{GpuBinds, GpuError, GpuHost, GpuSelection, driver_libraries, gpu_binds};
pub use landlock::{LandlockError, PlanError, RulesetError, kernel_abi as landlock_abi};
pub use layout::{
    ETC_ENTRIES, EntryKind, ToolchainInputs, Toolchains, credential_masks, etc_entries, host_entry,
    host_list, system_dirs, toolchains,
};
pub use mechanisms::{Mechanism, probe as probe_mechanisms};
pub use network::{EgressAllow, NetworkConfig, NetworkError, REFUSED_RANGES, SLIRP_DNS};
pub use output::{CappedOutput, Captured};
pub use preflight_store::user_private_dir;
pub use rlimits::{Lowered, ResourceLimits};
pub use sandbox::{
    BackendChoice, Confinement, RunOutcome, Sandbox, SandboxConfig, SandboxError,
    bubblewrap_gives_everywhere,
};
pub use seccomp::{kernel_supports_seccomp, program_fd as seccomp_program_fd};
pub use secret_scan::{Depth, MAX_CONFIG_BYTES, RACY, ScanStats, forget_scan, secret_masks};
pub use spawn::{
    CancelToken, Exit, Finished, Launch, OutputTee, ProcessSpawner, Running, SECCOMP_CHILD_FD,
    Spawner, Stop, Watch, supervise,
};
pub use spec::{
    Bind, BwrapSpec, Etc, GIT_CONFIG_PATH, Mask, NetworkSpec, Overlay, ScratchDirs, SpecError,
    SystemDir, TmpfsSizes,
};
pub use stage::{StageFailure, StagePlan, StageStep, opaque_xattr};
pub use template_mount::{
    CowBackend, CowMount, CowMountError, SYSTEM_BIN_DIRS, attempts as cow_attempts, is_mount_point,
    unmount_stale,
};
