//! Prepared processes: everything about a command is checked before a process exists.
//!
//! [`CommandRunner::prepare`] validates the command, its execution id and its working directory;
//! checks the access the policy gives each kind the profile uses ([`AccessPolicy`]); captures the
//! identity of the working directory and of every write target (through `openat2`, no link
//! followed); compiles the sandbox spec; checks that the host has every mechanism it needs and
//! can give every guarantee the profile requires; and
//! last, when a gated kind is used, verifies the grant against all of that and uses it up. A
//! refusal at any step is an error and no child exists. The [`PreparedProcess`] it returns
//! reports its effective access, starts at most once (`start` takes it), and is released
//! idempotently (its staged layers go; nothing ran).
//!
//! Attack stopped: a gated command spawned on a confirmation that was for something else, or on
//! none. The runner, not its caller, refuses to spawn it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use spear_core::authority::{
    Access, AccessKind, AccessPolicy, Effective, EffectiveAccess, GrantError,
};
use spear_sandbox::{BwrapSpec, SandboxError, SpecError};
use spear_workspace::Location;

use crate::grant::{
    Binding, GrantAuthority, GrantClaims, NetworkRoute, SandboxBinding, TargetBinding,
    command_digest,
};
use spear_core::CommandLine;

use crate::runner::{CommandRequest, CommandRunner, RunReport};
use crate::staging::Staging;

/// A grant presented with a command, and the authority that verifies it.
#[derive(Debug, Clone, Copy)]
pub struct GrantCheck<'a> {
    /// The token.
    pub token: &'a str,
    /// Who verifies it (the session's key, or the operator's).
    pub authority: &'a GrantAuthority,
}

/// What [`CommandRunner::prepare`] is asked to prepare.
#[derive(Debug)]
pub struct PrepareOptions<'a> {
    /// The command and its profile.
    pub request: CommandRequest,
    /// The execution this is (a session's call), bound by a grant minted for it.
    pub execution: Option<String>,
    /// What the policy gives each kind of access.
    pub access: AccessPolicy,
    /// The grant, when an approval produced one.
    pub grant: Option<GrantCheck<'a>>,
    /// Host paths of the files the command is known to write (identities bound by a grant).
    pub targets: Vec<PathBuf>,
    /// The rules it is judged by, as text (the caller's decision configuration, its target
    /// policy included): bound by a grant, so that one issued under rules that protect an entry
    /// does not run under rules that do not.
    pub rules: String,
}

/// Why a command could not be prepared. In every case no process was created.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The command itself is unusable (empty, a NUL byte, a bad execution id).
    #[error("the command cannot run: {0}")]
    Invalid(String),
    /// Its working directory is not in the workspace, or cannot be read.
    #[error("the working directory {}: {why}", path.display())]
    Directory {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The access it needs is denied, or gated and not granted, or the grant does not hold.
    #[error("{0}")]
    Grant(#[from] GrantError),
    /// The sandbox spec was refused (an unimplemented capability, an unbound directory...).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A mechanism the sandbox needs is missing.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

/// A command ready to start: checked, bound, and compiled, with no process yet.
#[derive(Debug)]
pub struct PreparedProcess {
    runner: Arc<CommandRunner>,
    pub(crate) request: CommandRequest,
    staging: Option<Staging>,
    spec: Option<BwrapSpec>,
    effective: EffectiveAccess,
    grant: Option<GrantClaims>,
}

impl PreparedProcess {
    /// What it will really be given, per kind of access.
    pub fn effective_access(&self) -> EffectiveAccess {
        self.effective
    }

    /// The grant it was prepared with, once verified (and used up).
    pub fn grant(&self) -> Option<&GrantClaims> {
        self.grant.as_ref()
    }

    /// The request it will run.
    pub fn request(&self) -> &CommandRequest {
        &self.request
    }

    /// Whether it was released (it can no longer start).
    pub fn is_released(&self) -> bool {
        self.spec.is_none()
    }

    /// Gives up the prepared command: its staged layers are removed and it can never start.
    /// Idempotent.
    pub fn release(&mut self) {
        self.spec = None;
        self.staging = None;
    }

    /// Starts it, once (this takes it), and runs it to one report. A released process reports a
    /// failure and spawns nothing.
    pub fn start(mut self) -> RunReport {
        let started = std::time::Instant::now();
        let spec = self.spec.take().ok_or_else(|| {
            SpecError::Staging("the prepared command was released; it cannot start".into())
        });
        let mut report = self
            .runner
            .execute(&self.request, self.staging.take(), spec);
        report.result.class = self.request.class;
        report.result.duration_ms =
            u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        report
    }
}

impl CommandRunner {
    /// Prepares `options.request` without creating any process (see the module's doc). The
    /// grant, when one is needed, is checked last and used up only if everything else held.
    pub fn prepare(
        self: &Arc<Self>,
        options: PrepareOptions<'_>,
        now: SystemTime,
    ) -> Result<PreparedProcess, PrepareError> {
        let PrepareOptions {
            request,
            execution,
            access,
            grant,
            targets,
            rules,
        } = options;
        validate(&request, execution.as_deref())?;
        let granted = request.profile.granted();
        let mut effective = EffectiveAccess::none();
        let mut gated = None;
        for kind in AccessKind::used_by(granted) {
            match access.get(kind) {
                Access::Deny => return Err(GrantError::Denied { kind }.into()),
                Access::Gated => {
                    gated.get_or_insert(kind);
                    effective = effective.with(kind, Effective::Granted);
                }
                Access::Allow => effective = effective.with(kind, Effective::Allowed),
            }
        }
        if let (Some(kind), None) = (gated, grant) {
            return Err(GrantError::Required { kind }.into());
        }
        let binding = gated
            .map(|_| self.binding(&request, execution, &targets, &rules))
            .transpose()?;
        let (staging, spec) = self.compile(&request)?;
        self.sandbox().check_mechanisms()?;
        // Every guarantee the profile requires (its own, the operator's) must be one this host
        // gives; for a command that came with a grant, that is the grant's failure, since the
        // grant binds the bits it was approved with.
        match self.sandbox().check_required(&spec) {
            Ok(()) => {}
            Err(SandboxError::GuaranteeUnavailable { guarantee, why }) if binding.is_some() => {
                return Err(GrantError::GuaranteeUnavailable {
                    guarantee: guarantee.as_str().to_owned(),
                    why,
                }
                .into());
            }
            Err(e) => return Err(e.into()),
        }
        let claims = match (binding, grant) {
            (Some(binding), Some(check)) => {
                Some(check.authority.verify(check.token, &binding, now)?)
            }
            _ => None,
        };
        Ok(PreparedProcess {
            runner: Arc::clone(self),
            request,
            staging,
            spec: Some(spec),
            effective,
            grant: claims,
        })
    }

    /// What a grant for `request` binds, read now: its command's digest, its working directory
    /// and that directory's identity, its profile's fingerprint, its network route, its class,
    /// the identity of every target (read through `openat2`, no link followed), and its sandbox
    /// beyond the profile ([`CommandRunner::sandbox_binding`], with `rules`, the text of the
    /// rules its writes will be judged by).
    pub fn binding(
        &self,
        request: &CommandRequest,
        execution: Option<String>,
        targets: &[PathBuf],
        rules: &str,
    ) -> Result<Binding, PrepareError> {
        let ws = self.workspace();
        let cwd = request
            .workdir
            .clone()
            .unwrap_or_else(|| ws.launch_dir().to_path_buf());
        let fs = ws.fs().map_err(|e| PrepareError::Directory {
            path: cwd.clone(),
            why: e.to_string(),
        })?;
        let identity = |path: &PathBuf| -> Result<Option<crate::grant::Identity>, String> {
            let loc: Location = ws
                .locate(path)
                .ok_or_else(|| format!("{} is in no root of the workspace", path.display()))?;
            fs.identity(&loc)
                .map(|id| id.map(Into::into))
                .map_err(|e| e.to_string())
        };
        let cwd_identity = identity(&cwd).map_err(|why| PrepareError::Directory {
            path: cwd.clone(),
            why,
        })?;
        if cwd_identity.is_none() {
            return Err(PrepareError::Directory {
                path: cwd,
                why: "it does not exist".into(),
            });
        }
        let mut bound = Vec::with_capacity(targets.len());
        for target in targets {
            let label = ws
                .locate(target)
                .map_or_else(|| target.display().to_string(), |loc| ws.label(&loc));
            // A target that cannot be read is one that changed: bound as what it is now, absent.
            let id = identity(target).unwrap_or(None);
            bound.push(TargetBinding {
                label,
                identity: id,
            });
        }
        bound.sort_by(|a, b| a.label.cmp(&b.label));
        bound.dedup_by(|a, b| a.label == b.label);
        let (argv, script) = match &request.command {
            CommandLine::Argv(argv) => (Some(argv.as_slice()), None),
            CommandLine::Script(s) => (None, Some(s.as_str())),
        };
        Ok(Binding {
            execution,
            command: command_digest(argv, script),
            cwd: cwd.display().to_string(),
            cwd_identity,
            profile: profile_fingerprint(&request.profile),
            network: if request.profile.network() {
                NetworkRoute::Filtered
            } else {
                NetworkRoute::Closed
            },
            guarantees: request
                .profile
                .required()
                .iter()
                .map(|g| g.as_str().to_owned())
                .collect(),
            class: request.class.map(|c| c.as_str().to_owned()),
            targets: bound,
            sandbox: self.sandbox_binding(request, rules)?,
        })
    }

    /// What a grant binds of `request`'s sandbox beyond its profile: everything that widens what
    /// the command may see or do. Read from the spec the runner would build (before any layer is
    /// staged: [`spear_sandbox::BwrapSpec::reach`]) and from the runner's own limits:
    /// - the environment, every name and value (`--env`, `[env] pass`, the allowlist's host
    ///   values), and the names passed exactly;
    /// - the workspace roots (`[workspace] roots`, `--workspace`, `--single-root`), the toolchain
    ///   directories bound (from the host's `PATH` and toolchain variables), the home directory;
    /// - the limits: the command's time, its output cap and flood limit, the changes one commit
    ///   takes, the rlimits, the cgroup's memory, swap, tasks and CPU, the session's budget, the
    ///   tmpfs sizes (`[limits]`, `--memory`, `--timeout`, ...);
    /// - for a networked command, the egress allowances (`[network] allow`);
    /// - `rules`, the rules it is judged by (the decision layer's configuration: `[paths]`,
    ///   `[targets]`, the workspace's policy, ...).
    ///
    /// The host paths it reads (`[paths] read`), its capabilities, its network route and the
    /// guarantees it requires are the profile's, bound beside this.
    pub fn sandbox_binding(
        &self,
        request: &CommandRequest,
        rules: &str,
    ) -> Result<SandboxBinding, PrepareError> {
        use sha2::Digest as _;
        use std::os::unix::ffi::OsStrExt as _;
        let builder = self.spec_builder(request, None)?;
        let spec = builder.unchecked();
        let mut env: Vec<String> = spec
            .env()
            .iter()
            .map(|(n, _)| n.to_string_lossy().into_owned())
            .collect();
        env.sort();
        let roots: Vec<String> = spec
            .roots()
            .iter()
            .map(|r| format!("{} -> {}", r.host.display(), r.mount.display()))
            .collect();
        let c = self.config();
        let sandbox = &c.sandbox;
        let timeout = request.timeout.unwrap_or(c.default_timeout);
        let limits = vec![
            format!("timeout={}ms", timeout.as_millis()),
            format!("output_cap={}", c.output_cap),
            format!("flood={}", request.flood_bytes.unwrap_or(c.flood_bytes)),
            format!("changes={}", c.commit_max_changes),
            format!("rlimits={:?}", sandbox.rlimits),
            format!("cgroup={:?}", sandbox.cgroup),
            format!("session={:?}", sandbox.session),
            format!("tmpfs={} {} {}", c.tmpfs.tmp, c.tmpfs.home, c.tmpfs.shm),
        ];
        let egress: Vec<String> = if request.profile.network() {
            sandbox
                .network
                .allow
                .iter()
                .map(|a| format!("{a:?}"))
                .collect()
        } else {
            Vec::new()
        };
        let rules = crate::grant::hex_digest(&sha2::Sha256::digest(rules.as_bytes()));
        let mut h = sha2::Sha256::new();
        let mut part = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        part(&spec.reach());
        for line in env.iter().chain(&roots).chain(&limits).chain(&egress) {
            part(line.as_bytes());
        }
        part(rules.as_bytes());
        if let Some(state) = &c.state_dir {
            part(state.as_os_str().as_bytes());
        }
        let digest = crate::grant::hex_digest(&h.finalize());
        Ok(SandboxBinding {
            env,
            roots,
            limits,
            egress,
            rules,
            digest,
        })
    }
}

/// The SHA-256 of a profile's JSON (its capabilities and host paths), hex.
fn profile_fingerprint(profile: &spear_core::ExecutionProfile) -> String {
    use sha2::Digest as _;
    let json = serde_json::to_vec(profile).unwrap_or_default();
    crate::grant::hex_digest(&sha2::Sha256::digest(json))
}

/// The command and execution id are usable: a program or script that is not empty and holds no
/// NUL byte (execve would cut it: what ran would not be what was approved), and an execution id
/// of printable ASCII.
fn validate(request: &CommandRequest, execution: Option<&str>) -> Result<(), PrepareError> {
    use std::os::unix::ffi::OsStrExt as _;
    match &request.command {
        CommandLine::Argv(argv) => {
            if argv.first().is_none_or(|p| p.is_empty()) {
                return Err(PrepareError::Invalid("no program to run".into()));
            }
            if argv.iter().any(|a| a.as_bytes().contains(&0)) {
                return Err(PrepareError::Invalid("an argument holds a NUL byte".into()));
            }
        }
        CommandLine::Script(s) => {
            if s.trim().is_empty() {
                return Err(PrepareError::Invalid("the script is empty".into()));
            }
            if s.contains('\0') {
                return Err(PrepareError::Invalid("the script holds a NUL byte".into()));
            }
        }
    }
    if let Some(id) = execution
        && (id.is_empty() || id.len() > 200 || !id.bytes().all(|b| b.is_ascii_graphic()))
    {
        return Err(PrepareError::Invalid(
            "the execution id must be 1 to 200 printable ASCII characters".into(),
        ));
    }
    Ok(())
}
