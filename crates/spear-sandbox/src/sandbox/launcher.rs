//! What starts a sandbox ([`Launcher`]): the configuration, the cgroup backend and the spawner,
//! in three phases (inputs prepared, cgroup made, bwrap spawned), shared by a command's cold run
//! and the thread that starts warm sandboxes ([`crate::warm`]).

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use spear_core::Guarantees;

use super::config::SandboxConfig;
use super::error::SandboxError;
use crate::argv::build_argv;
use crate::cgroup::{CgroupBackend, CgroupLimits, CommandCgroup, SessionBudget, SessionCgroup};
use crate::guarantees;
use crate::seccomp;
use crate::spawn::{Launch, Running, Spawner};
use crate::spec::{ARGS_CHILD_FD, BwrapSpec, GO_CHILD_FD, INFO_CHILD_FD, READY_CHILD_FD};
use crate::stage::StagePlan;

/// Numbers the commands of this process, across sandbox instances, so cgroup names never collide.
static COMMANDS: AtomicU64 = AtomicU64::new(0);

/// What starts a sandbox: the configuration, the cgroup backend and the spawner, shared with
/// the thread that starts warm sandboxes ([`crate::warm`]).
#[derive(Debug)]
pub(crate) struct Launcher {
    pub(crate) config: SandboxConfig,
    pub(crate) backend: Result<Arc<dyn CgroupBackend>, String>,
    pub(crate) spawner: Arc<dyn Spawner>,
    /// The session's cgroup, made at the first command. Each command's cgroup holds it too, so it
    /// is removed (what is left in it killed) after both the launcher and the last of them.
    pub(crate) session: Mutex<Option<Arc<SessionCgroup>>>,
}

impl Launcher {
    /// Phase 1: what the command needs before it has a cgroup, each checked: the argv (the spec
    /// validated again), the options on an fd, the staging plan, the network path's pipes (refused
    /// outright once the network is poisoned), bwrap itself, and the seccomp program. Nothing runs.
    pub(crate) fn prepare(&self, spec: &BwrapSpec) -> Result<Inputs, SandboxError> {
        let argv = build_argv(spec)?;
        let networked = spec.profile.network();
        let options = options_fd(&argv.options).map_err(SandboxError::Spawn)?;
        let stage = if spec.staged.is_empty() {
            None
        } else {
            Some(Arc::new(
                StagePlan::prepare(&spec.staged).map_err(SandboxError::Spawn)?,
            ))
        };
        let pipes = if networked {
            Some(NetworkPipes::new().map_err(SandboxError::Spawn)?)
        } else {
            None
        };
        check_bwrap(&self.config.bwrap)?;
        let seccomp = seccomp::program_fd()?;
        tracing::debug!("seccomp program ready");
        let guarantees = guarantees::from_argv(spec, &argv.options);
        Ok(Inputs {
            guarantees,
            command: argv.command,
            options,
            stage,
            pipes,
            seccomp,
        })
    }

    /// Phase 2: the command's own cgroup, when limits are active; refused when they are and no
    /// backend can enforce them. The [`CommandCgroup`] is the guard: dropped on any later return,
    /// it kills what joined it and removes it.
    ///
    /// Named `<prefix>-<spear's pid>-<n>`: `spear` for a command's, `spear-warm` for a sandbox
    /// waiting for a session's next command (told apart from the trees of commands that ran).
    pub(crate) fn create_cgroup(
        &self,
        prefix: &str,
    ) -> Result<Option<CommandCgroup>, SandboxError> {
        let Some(limits) = &self.config.cgroup else {
            return Ok(None);
        };
        let backend = self
            .backend
            .as_ref()
            .map_err(|why| SandboxError::NoCgroupBackend(why.clone()))?;
        let session = match &self.config.session {
            Some(budget) => Some(self.session(backend.as_ref(), budget, limits)?),
            None => None,
        };
        let n = COMMANDS.fetch_add(1, Ordering::Relaxed);
        let name = format!("{prefix}-{}-{n}", std::process::id());
        let cgroup = backend.prepare_in(session.as_ref(), limits, &name)?;
        tracing::debug!(name, "cgroup prepared");
        Ok(Some(cgroup))
    }

    /// The session's cgroup, made now if this is its first command: named
    /// `spear-session-<spear's pid>-<n>`. One that cannot be made is an error (the command does
    /// not run), and is tried again at the next command.
    fn session(
        &self,
        backend: &dyn CgroupBackend,
        budget: &SessionBudget,
        limits: &CgroupLimits,
    ) -> Result<Arc<SessionCgroup>, SandboxError> {
        let mut session = lock(&self.session);
        if let Some(made) = session.as_ref() {
            return Ok(Arc::clone(made));
        }
        let n = COMMANDS.fetch_add(1, Ordering::Relaxed);
        let name = format!("spear-session-{}-{n}", std::process::id());
        let made = Arc::new(backend.prepare_session(budget, limits, &name)?);
        tracing::debug!(name, "session cgroup prepared");
        *session = Some(Arc::clone(&made));
        Ok(made)
    }

    /// Phase 3: bwrap started with the inputs, joining `cgroup` before it execs. The options, the
    /// staging plan and the seccomp program are closed on return (the child has its own copies);
    /// of the network path's pipes only the parent's ends stay. A failure says what to do: bwrap
    /// missing or not executable, or the staging step that failed in the child.
    pub(crate) fn spawn(
        &self,
        inputs: Inputs,
        cgroup: Option<&CommandCgroup>,
        stdin: Option<&OwnedFd>,
        more: &[BorrowedFd<'_>],
    ) -> Result<(Running, Option<HeldNetwork>), SandboxError> {
        let (program, args) = self.command_line(inputs.command, cgroup);
        let mut inherit = vec![inputs.options.as_fd()];
        if let Some(pipes) = &inputs.pipes {
            inherit.extend(pipes.child_ends());
        }
        inherit.extend_from_slice(more);
        let launch = Launch {
            program,
            args,
            seccomp: inputs.seccomp.as_fd(),
            inherit,
            join: cgroup.map(CommandCgroup::join_fds).unwrap_or_default(),
            rlimits: self.config.rlimits,
            stage: inputs.stage.clone(),
            stdin: stdin.map(AsFd::as_fd),
            landlock: None,
            env: Vec::new(),
            cwd: None,
        };
        let spawned = self.spawner.spawn(&launch);
        drop(launch);
        match spawned {
            Ok(running) => Ok((running, inputs.pipes.map(NetworkPipes::into_parent_ends))),
            Err(e) => Err(match inputs.stage.as_ref().and_then(|p| p.reported()) {
                Some(failure) => SandboxError::Stage(failure),
                None => self.spawn_error(e),
            }),
        }
    }

    /// The program and arguments that start bwrap: the cgroup backend's wrapper first when it has
    /// one (`systemd-run ... --`), then bwrap reading its options from [`ARGS_CHILD_FD`], then
    /// `--` and the command.
    fn command_line(
        &self,
        command: Vec<OsString>,
        cgroup: Option<&CommandCgroup>,
    ) -> (PathBuf, Vec<OsString>) {
        let mut args: Vec<OsString> = Vec::new();
        let program = match cgroup.map(CommandCgroup::argv_prefix) {
            Some([first, rest @ ..]) => {
                args.extend(rest.iter().cloned());
                args.push(self.config.bwrap.clone().into_os_string());
                PathBuf::from(first)
            }
            _ => self.config.bwrap.clone(),
        };
        args.push("--args".into());
        args.push(ARGS_CHILD_FD.to_string().into());
        args.push("--".into());
        args.extend(command);
        (program, args)
    }

    /// Why bwrap could not be started, as the error that says what to do about it.
    fn spawn_error(&self, e: io::Error) -> SandboxError {
        let bwrap = || self.config.bwrap.clone();
        match e.kind() {
            io::ErrorKind::NotFound => SandboxError::BwrapAbsent(bwrap()),
            io::ErrorKind::PermissionDenied => {
                SandboxError::BwrapInexecutable(bwrap(), e.to_string())
            }
            _ if e.raw_os_error() == Some(libc::ENOEXEC) => {
                SandboxError::BwrapInexecutable(bwrap(), e.to_string())
            }
            _ => SandboxError::Spawn(e),
        }
    }
}

/// What [`Launcher::prepare`] makes for one command.
pub(crate) struct Inputs {
    /// The guarantees its bwrap options give ([`guarantees::from_argv`]), before the run confirms
    /// its candidates.
    pub(crate) guarantees: Guarantees,
    /// What runs after bwrap's `--`: the network hold, if any, then the command.
    command: Vec<OsString>,
    /// bwrap's options ([`options_fd`]).
    options: OwnedFd,
    /// How the writable roots are staged in the child; `None` for a read-only sandbox.
    stage: Option<Arc<StagePlan>>,
    /// The network path's pipes, for a networked command.
    pipes: Option<NetworkPipes>,
    /// The seccomp program.
    seccomp: OwnedFd,
}

/// The network path's pipes, as made before the spawn: bwrap reports its child on `info`; the
/// hold in front of the command ([`crate::spec::NETWORK_HOLD`]) says "r" on `ready` once the sandbox is
/// set up, and waits for "go" on `go`. Each end is closed when dropped.
struct NetworkPipes {
    info: (OwnedFd, OwnedFd),
    go: (OwnedFd, OwnedFd),
    ready: (OwnedFd, OwnedFd),
}

impl NetworkPipes {
    /// Three close-on-exec pipes.
    fn new() -> io::Result<Self> {
        let pipe = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC);
        Ok(NetworkPipes {
            info: pipe()?,
            go: pipe()?,
            ready: pipe()?,
        })
    }

    /// The child's ends, in the order it gets them after the options fd: [`INFO_CHILD_FD`],
    /// [`GO_CHILD_FD`], [`READY_CHILD_FD`].
    fn child_ends(&self) -> [BorrowedFd<'_>; 3] {
        [self.info.1.as_fd(), self.go.0.as_fd(), self.ready.1.as_fd()]
    }

    /// The parent's ends. Our copies of the child's ends are closed here, so that their EOFs mean
    /// what they say (bwrap or the hold is gone).
    fn into_parent_ends(self) -> HeldNetwork {
        HeldNetwork {
            info: self.info.0,
            ready: self.ready.0,
            go: self.go.1,
        }
    }
}

/// A networked command held in front of its program, from spear's side: bwrap's report, the
/// hold's "set up", and the "go" that releases it. Dropped without [`HeldNetwork::release`], the
/// hold reads EOF and exits 125 without running the command.
pub(crate) struct HeldNetwork {
    pub(super) info: OwnedFd,
    pub(super) ready: OwnedFd,
    pub(super) go: OwnedFd,
}

impl HeldNetwork {
    /// Lets the command run: the network is up and the egress policy in place. Every pipe is
    /// closed after.
    pub(super) fn release(self) {
        if rustix::io::write(&self.go, b"go\n").is_err() {
            tracing::error!("could not release a networked sandbox");
        }
    }
}

/// bwrap's options, NUL-separated, in an anonymous file read from its start (`--args`): bwrap
/// reads it whole and closes it before the command runs.
fn options_fd(options: &[OsString]) -> io::Result<OwnedFd> {
    use std::io::{Seek, Write};
    use std::os::unix::ffi::OsStrExt;
    let fd = rustix::fs::memfd_create("spear-bwrap-args", rustix::fs::MemfdFlags::CLOEXEC)?;
    let mut file = std::fs::File::from(fd);
    let mut bytes = Vec::with_capacity(options.iter().map(|o| o.len() + 1).sum());
    for o in options {
        bytes.extend_from_slice(o.as_bytes());
        bytes.push(0);
    }
    file.write_all(&bytes)?;
    file.seek(io::SeekFrom::Start(0))?;
    Ok(file.into())
}

// The options fd and the network path's pipes reach the child in this order
// (`Launch::inherit`), after the seccomp program: `--args`, the hold and bwrap's `--info-fd` use
// these numbers.
const _: () = assert!(
    ARGS_CHILD_FD == crate::SECCOMP_CHILD_FD + 1
        && INFO_CHILD_FD == ARGS_CHILD_FD + 1
        && GO_CHILD_FD == INFO_CHILD_FD + 1
        && READY_CHILD_FD == GO_CHILD_FD + 1
);

/// Checks that `bwrap` exists and is an executable file.
pub(super) fn check_bwrap(bwrap: &Path) -> Result<(), SandboxError> {
    use rustix::fs::{Access, access};
    match std::fs::metadata(bwrap) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err(SandboxError::BwrapAbsent(bwrap.to_path_buf()))
        }
        Err(e) => Err(SandboxError::BwrapInexecutable(
            bwrap.to_path_buf(),
            e.to_string(),
        )),
        Ok(m) if !m.is_file() => Err(SandboxError::BwrapInexecutable(
            bwrap.to_path_buf(),
            "not a regular file".into(),
        )),
        Ok(_) => access(bwrap, Access::EXEC_OK)
            .map_err(|e| SandboxError::BwrapInexecutable(bwrap.to_path_buf(), e.to_string())),
    }
}

/// The guard of `m`, poisoned or not: what it guards is a cache or a slot, whole at every step.
pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
