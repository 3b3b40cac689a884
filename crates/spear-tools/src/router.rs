//! The router: the one path every tool call takes, whichever client sent it.
//!
//! For each call, in order:
//! 1. the caller's role view: a tool outside it does not exist;
//! 2. a turn stopped by repeated refusals answers nothing more;
//! 3. the arguments are parsed against the tool's schema (unknown fields are an error);
//! 4. the tool's execution modes: a tool that writes does not run in SAFE;
//! 5. request scope: every path the call names resolves inside the roots;
//! 6. target policy: every path it writes passes the protected/generated/snapshot rules, and no
//!    write runs once a command found the sandbox down;
//! 7. ASK asks (for a file write; a command is asked about by the command gates at step 9);
//! 8. the prior state of every path it writes is checkpointed;
//! 9. the tool runs; a command (a `terminal` call, [`ToolRouter::run_command`]) first passes the
//!    command gates (`crate::gates`: classification, authorization, escalation, approval and
//!    grants, the sandbox found down, the write lock), and a writable command's staged writes are
//!    judged and committed;
//! 10. evidence, checkpoints, the output preview (the rest kept in the result store), refusal
//!     counting, the audit record, and the observers.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use spear_core::credentials::names_credential_store;
use spear_core::{
    Capability, CapabilityPolicy, CapabilitySet, CommandAssessment, CommandClass, ExecutionMode,
    HostConfigWrite, Refusal, RefusalRule, ToolResult, ToolStatus,
};
use spear_policy::{Authorization, CommandPolicy, Confirmer, authorize, escalation_capabilities};
use spear_runtime::ResultStore;
use spear_runtime::{AuditEvent, AuditLogger, AuditRecord};
use spear_runtime::{CheckpointError, CheckpointStore, TurnCheckpoint};
use spear_runtime::{CommandRunner, Evidence, Verdict};
use spear_runtime::{REFUSAL_REPEATS_VAR, Repeat, repeats_from_env};
use spear_workspace::{Location, Workspace, WorkspaceFs};

use crate::command::CommandCall;
use crate::gates::sandbox_down_refusal;
use crate::tool::{Call, ToolArgs as _};
use crate::tools::terminal::{ESCALATING_DESCRIPTION, TerminalArgs};
use crate::turn::{SandboxMark, TurnState};
use crate::{
    Access, CallContext, CallOptions, Effect, Outcome, Resolved, Role, ToolExposurePolicy,
    ToolLimits, ToolRegistry, ToolResultEnvelope, ToolSpec, WebDetail, WebPair, Withdrawn, gates,
    preview,
};

/// Watches calls; the router tells it before and after each one.
pub trait ToolObserver: Send + Sync {
    /// A call is about to be routed.
    fn before_call(&self, tool: &str, args: &serde_json::Value);
    /// A call was answered.
    fn after_call(&self, envelope: &ToolResultEnvelope);
}

/// Why a router cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum RouterError {
    /// A root cannot be opened.
    #[error("the workspace cannot be opened: {0}")]
    Fs(#[from] spear_workspace::FsError),
    /// A root holds the home directory.
    #[error(
        "the workspace root `{}` holds the home directory, which holds credential stores; start spear in a project directory instead",
        .root.display()
    )]
    HomeInRoot {
        /// The root.
        root: std::path::PathBuf,
    },
    /// spear's own state would live inside a root.
    #[error(
        "spear's state `{}` lies inside the workspace root `{}`, where the tools could rewrite it; set XDG_STATE_HOME to a directory outside the workspace",
        .path.display(),
        .root.display()
    )]
    StateInRoot {
        /// The state file or directory.
        path: std::path::PathBuf,
        /// The root.
        root: std::path::PathBuf,
    },
    /// No key for the session's grants (the kernel gave no randomness).
    #[error("the session's grants cannot be sealed: {0}")]
    Grants(String),
    /// A root lies inside spear's state directory.
    #[error(
        "the workspace root `{}` lies inside spear's state directory `{}` (its audit log, checkpoints and approval channel), which no sandbox and no tool may see; start spear in a project directory instead",
        .root.display(),
        .state.display()
    )]
    RootInState {
        /// The root.
        root: std::path::PathBuf,
        /// The state directory.
        state: std::path::PathBuf,
    },
}

impl RouterError {
    /// spear's state directory holds, or lies inside, `root`.
    fn state_overlaps(state: &std::path::Path, root: &std::path::Path) -> Option<Self> {
        if root.starts_with(state) {
            Some(RouterError::RootInState {
                root: root.to_path_buf(),
                state: state.to_path_buf(),
            })
        } else if state.starts_with(root) {
            Some(RouterError::StateInRoot {
                path: state.to_path_buf(),
                root: root.to_path_buf(),
            })
        } else {
            None
        }
    }
}

/// spear's state directory as spelled and as the kernel resolves it (a link in its path), so that
/// either spelling of a path inside it is recognised. Resolved once, when a router is made: a
/// directory not made yet is resolved through its nearest existing ancestor, so that one spear
/// makes later (with `mkdir`, never a link) keeps the spelling it will have.
fn state_dirs(state: Option<&std::path::Path>) -> Vec<std::path::PathBuf> {
    let Some(state) = state else {
        return Vec::new();
    };
    let mut dirs = vec![state.to_path_buf()];
    let resolved = state.ancestors().find_map(|existing| {
        let real = std::fs::canonicalize(existing).ok()?;
        let rest = state.strip_prefix(existing).ok()?;
        Some(real.join(rest))
    });
    if let Some(real) = resolved
        && real != state
    {
        dirs.push(real);
    }
    dirs
}

/// A turn id that cannot name a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` cannot name a turn: use 1 to 64 letters, digits, `-` and `_`")]
pub struct InvalidTurnId(pub String);

/// How a router is set up.
pub struct RouterConfig {
    /// The session's mode.
    pub mode: ExecutionMode,
    /// `--no-network`.
    pub no_network: bool,
    /// The caller's role.
    pub role: Role,
    /// The session's id (audit records, the result store).
    pub session: String,
    /// Bounds of the tools.
    pub limits: ToolLimits,
    /// Identical refusals that stop a turn.
    pub refusal_repeats: u32,
    /// Whether commands may run as background jobs. A client that makes one call and exits (the
    /// CLI) turns them off: its jobs would die with it at once.
    pub background_jobs: bool,
    /// The web pair (`fetch_url`, `search_internet`): one fetcher for the session, built from the
    /// operator's `[web]` ([`WebPair::from_settings`]). [`WebPair::off`] by default: a router
    /// offers the web only when it is given one. `no_network` withdraws it whatever it holds.
    pub web: WebPair,
}

impl RouterConfig {
    /// A configuration for `mode` with a new random session id, default bounds, and the
    /// repeated-refusal limit from `SPEAR_REFUSAL_REPEATS` (5 when unset).
    pub fn new(mode: ExecutionMode) -> Self {
        RouterConfig {
            mode,
            no_network: false,
            role: Role::Implementation,
            session: random_id(),
            limits: ToolLimits::default(),
            refusal_repeats: repeats_from_env(std::env::var(REFUSAL_REPEATS_VAR).ok().as_deref()),
            background_jobs: true,
            web: WebPair::off(),
        }
    }
}

/// Where the router keeps what outlives a call. Each is optional; without a checkpoint store
/// nothing can be undone, without a result store long output is only cut, without a logger
/// nothing is audited.
#[derive(Default)]
pub struct RouterStores {
    /// The audit log.
    pub audit: Option<AuditLogger>,
    /// Long outputs.
    pub results: Option<ResultStore>,
    /// Prior contents, for undo.
    pub checkpoints: Option<CheckpointStore>,
}

/// Routes tool calls: the provider-neutral lifecycle above the sandbox.
pub struct ToolRouter {
    registry: ToolRegistry,
    exposure: ToolExposurePolicy,
    policy: Arc<CommandPolicy>,
    fs: WorkspaceFs,
    runner: Arc<CommandRunner>,
    config: RouterConfig,
    stores: RouterStores,
    tracked: spear_runtime::TrackedRules,
    confirmer: Option<Box<dyn Confirmer + Send + Sync>>,
    observers: Vec<Box<dyn ToolObserver>>,
    /// The current turn: its refusals, evidence, changes, whether it was stopped and whether a
    /// command found the sandbox down.
    turn: Mutex<TurnState>,
    /// The session's background jobs; dropped with the router, which kills what still runs.
    jobs: spear_runtime::Jobs,
    /// Calls started so far.
    calls: std::sync::atomic::AtomicU64,
    /// Held through every call that writes (a file tool, a command in a writable sandbox), so that
    /// the changes found around a command are that command's and checkpoints are taken in order.
    writing: Mutex<()>,
    /// The grants of this session's approvals.
    grants: spear_runtime::GrantAuthority,
    /// The terminal's spec in this session, when it may ask for a wider sandbox: its schema has
    /// `sandbox_permissions` with exactly what may be asked for (see `crate::escalation`).
    terminal_spec: Option<ToolSpec>,
    /// spear's state directory as spelled and as resolved when the router was made
    /// ([`state_dirs`]): the paths no file tool may name. Resolved once, not on every call.
    state_dirs: Vec<std::path::PathBuf>,
}

impl ToolRouter {
    /// A router over `policy`'s workspace, running commands with `runner`.
    pub fn new(
        registry: ToolRegistry,
        policy: Arc<CommandPolicy>,
        runner: Arc<CommandRunner>,
        config: RouterConfig,
        stores: RouterStores,
    ) -> Result<Self, RouterError> {
        let ws = policy.workspace();
        for root in ws.roots() {
            // Attack: a workspace that holds the home directory would give the file tools every
            // credential store in it (the sandbox refuses such a root for the same reason).
            if let Some(home) = &policy.config().home
                && home.starts_with(root.host_path())
            {
                return Err(RouterError::HomeInRoot {
                    root: root.host_path().to_path_buf(),
                });
            }
            // Attack: state inside a root could be rewritten by the tools it records (a forged
            // checkpoint manifest would make `spear undo` write anywhere in the workspace).
            let dirs = [
                stores.audit.as_ref().map(|a| a.path().to_path_buf()),
                stores.results.as_ref().map(|r| r.dir().to_path_buf()),
                stores.checkpoints.as_ref().map(|c| c.dir().to_path_buf()),
            ];
            if let Some(dir) = dirs
                .into_iter()
                .flatten()
                .find(|d| d.starts_with(root.host_path()))
            {
                return Err(RouterError::StateInRoot {
                    path: dir,
                    root: root.host_path().to_path_buf(),
                });
            }
        }
        // Attack: a root inside spear's state directory (`--workspace ~/.local/state/spear`)
        // would give the tools and the sandbox the audit log and the approval socket, through
        // which a command could approve its own pending calls; one holding it, the same.
        let states = state_dirs(runner.config().state_dir.as_deref());
        for root in ws.roots() {
            if let Some(e) = states
                .iter()
                .find_map(|s| RouterError::state_overlaps(s, root.host_path()))
            {
                return Err(e);
            }
        }
        let fs = ws.fs()?;
        let turn = TurnState::new(random_id(), config.refusal_repeats);
        let exposure =
            ToolExposurePolicy::new(config.role).with_web(config.web.exposure(config.no_network));
        let terminal_spec = registry.get(TerminalArgs::NAME).and_then(|t| {
            let spec = t.spec();
            let allowed = escalation_capabilities(session_policy(
                exposure,
                spec,
                config.mode,
                config.no_network,
            ));
            (!allowed.is_empty())
                .then(|| crate::escalation::terminal_spec(spec, allowed, ESCALATING_DESCRIPTION))
        });
        Ok(ToolRouter {
            registry,
            exposure,
            policy,
            fs,
            runner,
            config,
            stores,
            tracked: spear_runtime::TrackedRules::new(),
            confirmer: None,
            observers: Vec::new(),
            turn: Mutex::new(turn),
            jobs: spear_runtime::Jobs::default(),
            calls: std::sync::atomic::AtomicU64::new(0),
            writing: Mutex::new(()),
            grants: spear_runtime::GrantAuthority::for_session()
                .map_err(|e| RouterError::Grants(e.to_string()))?,
            terminal_spec,
            state_dirs: states,
        })
    }

    /// Sets who is asked in ASK when a call brings no confirmer of its own
    /// ([`CallOptions::confirmer`]). Without either, what needs asking is cancelled.
    pub fn set_confirmer(&mut self, confirmer: Box<dyn Confirmer + Send + Sync>) {
        self.confirmer = Some(confirmer);
    }

    /// Adds an observer.
    pub fn add_observer(&mut self, observer: Box<dyn ToolObserver>) {
        self.observers.push(observer);
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        self.policy.workspace()
    }

    /// The session id.
    pub fn session(&self) -> &str {
        &self.config.session
    }

    /// The configuration commands run with.
    pub fn runner_config(&self) -> &spear_runtime::RunnerConfig {
        self.runner.config()
    }

    /// The session's mode.
    pub fn mode(&self) -> ExecutionMode {
        self.config.mode
    }

    /// The specs the caller's role sees and the session's mode can run, by name (SAFE lists no
    /// tool that writes: see [`ToolExposurePolicy`](crate::ToolExposurePolicy)).
    /// The terminal's is this session's: with `sandbox_permissions` where it may ask for a wider
    /// sandbox ([`ToolRouter::escalation_capabilities`]).
    pub fn tools(&self) -> Vec<&ToolSpec> {
        self.registry
            .specs()
            .filter(|s| self.exposure.lists(s, self.config.mode))
            .map(|s| match &self.terminal_spec {
                Some(terminal) if s.name == terminal.name => terminal,
                _ => s,
            })
            .collect()
    }

    /// What a terminal call of this session may ask to be given once, beyond what the session
    /// grants (with the user's approval); empty when it can ask for nothing, and then its
    /// schema has no such field. A client that can ask the user must be offered to the calls
    /// of a session where this is not empty.
    pub fn escalation_capabilities(&self) -> CapabilitySet {
        self.terminal_spec
            .as_ref()
            .map_or(CapabilitySet::EMPTY, |spec| {
                escalation_capabilities(session_policy(
                    self.exposure,
                    spec,
                    self.config.mode,
                    self.config.no_network,
                ))
            })
    }

    /// Starts a new turn (`id`, or a new random one): refusal counts, evidence and a sandbox
    /// found down are forgotten; checkpoints of the new turn start empty. Returns the turn's id,
    /// or refuses one that cannot name a checkpoint.
    pub fn begin_turn(&self, id: Option<&str>) -> Result<String, InvalidTurnId> {
        let id = id.map_or_else(random_id, str::to_owned);
        // Attack: an id that cannot name a checkpoint would let commands write unrecorded.
        if !CheckpointStore::is_valid_turn_id(&id) {
            return Err(InvalidTurnId(id));
        }
        *self.lock_turn() = TurnState::new(id.clone(), self.config.refusal_repeats);
        Ok(id)
    }

    /// The current turn's id.
    pub fn turn_id(&self) -> String {
        self.lock_turn().id.clone()
    }

    /// The current turn's verdict.
    pub fn verdict(&self) -> Verdict {
        self.lock_turn().evidence.verdict()
    }

    /// The current turn's evidence, in call order: its last
    /// [`EVIDENCE_KEPT`](spear_runtime::EVIDENCE_KEPT) calls.
    pub fn evidence(&self) -> Vec<Evidence> {
        self.lock_turn().evidence.recent()
    }

    /// Whether `tool` is a registered tool whose calls are quick ([`ToolSpec::quick`]): a server
    /// may run them on its event loop.
    pub fn is_quick(&self, tool: &str) -> bool {
        self.registry.get(tool).is_some_and(|t| t.spec().quick)
    }

    /// Calls `tool` with `args`.
    pub fn call(&self, tool: &str, args: serde_json::Value) -> ToolResultEnvelope {
        self.call_with(tool, args, CallOptions::default())
    }

    /// Calls `tool` with `args`, cancellable and reporting progress as `options` say.
    pub fn call_with(
        &self,
        tool: &str,
        args: serde_json::Value,
        options: CallOptions,
    ) -> ToolResultEnvelope {
        for o in &self.observers {
            o.before_call(tool, &args);
        }
        let started = Instant::now();
        let (mut envelope, record) = self.route(tool, args, options);
        self.answer(started, &mut envelope, &record);
        envelope
    }

    /// Runs one command through the terminal tool's gates, exactly as a `terminal` call would
    /// (the router's own, then the command gates: classification, authorization, escalation,
    /// approval and grants, the sandbox-down and job-writing gates, the write lock; then
    /// checkpoints, the change tracker, audit, evidence): the front ends that take a command in
    /// another shape than the tool's JSON (`spear exec` with an argv, a stdin, the runner's
    /// timeout; `spear grant`) come in here, so no front end holds a gate of its own.
    pub fn run_command(&self, call: CommandCall, options: CallOptions) -> ToolResultEnvelope {
        let name = TerminalArgs::NAME;
        if !self.observers.is_empty() {
            let args = call.as_args();
            for o in &self.observers {
                o.before_call(name, &args);
            }
        }
        let started = Instant::now();
        let record = self.new_record();
        let (mut envelope, record) = match self.lookup(name) {
            Ok(tool) => self.route_prepared(tool.spec(), Call::Command(call), options, record),
            Err(result) => (ToolResultEnvelope::new(name, result), record),
        };
        self.answer(started, &mut envelope, &record);
        envelope
    }

    /// Step 10 and the observers, for a call that has its envelope.
    fn answer(&self, started: Instant, envelope: &mut ToolResultEnvelope, record: &CallRecord) {
        if envelope.result.duration_ms == 0 {
            envelope.result.duration_ms =
                u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        }
        self.finish(envelope, record);
        // The one place every call's answer leaves the router (MCP, `spear tool`, `spear exec`,
        // a served call): terminal control sequences in output, files, pages and paths go back
        // as text. After the preview is cut and the whole kept: what is stored stays exact, and
        // `read_output` of it is escaped on its own way out.
        envelope.escape_controls();
        for o in &self.observers {
            o.after_call(envelope);
        }
    }

    /// A new call's record: its number, and the turn it starts in.
    fn new_record(&self) -> CallRecord {
        CallRecord {
            seq: self
                .calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1,
            started_in: {
                let turn = self.lock_turn();
                (turn.id.clone(), turn.changes_done)
            },
            ..CallRecord::default()
        }
    }

    /// Steps 1 and 2: the tool, if the caller's role sees it and the turn still runs.
    fn lookup(&self, name: &str) -> Result<&dyn crate::Tool, ToolResult> {
        let Some(tool) = self
            .registry
            .get(name)
            .filter(|t| self.exposure.exposes(t.spec()))
        else {
            let names: Vec<&str> = self.tools().iter().map(|s| s.name).collect();
            return Err(ToolResult::failed(format!(
                "there is no tool named `{name}` for the {} role; the tools are: {}",
                self.exposure.role(),
                names.join(", ")
            )));
        };
        // A tool of the web pair this session lacks by its configuration is a tool it does not
        // have; under --no-network the call is refused once its arguments are read (`admit`).
        if let Some(why) = self
            .exposure
            .withdrawn(tool.spec())
            .filter(|w| *w != Withdrawn::NoNetwork)
        {
            let names: Vec<&str> = self.tools().iter().map(|s| s.name).collect();
            return Err(ToolResult::failed(format!(
                "{}; the tools are: {}",
                why.reason(name, self.config.web.unavailable()),
                names.join(", ")
            )));
        }
        if let Some(stopped) = self.lock_turn().stopped.clone() {
            return Err(ToolResult::denied(&Refusal::turn_stopped(name, stopped)));
        }
        Ok(tool.as_ref())
    }

    /// Steps 1 to 9; returns the envelope and what the audit record needs.
    fn route(
        &self,
        name: &str,
        args: serde_json::Value,
        options: CallOptions,
    ) -> (ToolResultEnvelope, CallRecord) {
        let record = self.new_record();
        let tool = match self.lookup(name) {
            Ok(tool) => tool,
            Err(result) => return (ToolResultEnvelope::new(name, result), record),
        };
        match tool.prepare(args) {
            Ok(call) => self.route_prepared(tool.spec(), call, options, record),
            Err(message) => (
                ToolResultEnvelope::new(name, ToolResult::failed(message)),
                record,
            ),
        }
    }

    /// Steps 4 to 9, for a call whose arguments are valid.
    // The options are the call's own: they end with it.
    #[allow(clippy::needless_pass_by_value)]
    fn route_prepared(
        &self,
        spec: &ToolSpec,
        call: Call,
        options: CallOptions,
        mut record: CallRecord,
    ) -> (ToolResultEnvelope, CallRecord) {
        let (result, job, web) = match self.gate_and_run(spec, call, &options, &mut record) {
            Ok(done) => done,
            Err(refused) => (refused, None, None),
        };
        let mut envelope = ToolResultEnvelope::new(spec.name, result);
        envelope.job = job;
        envelope.web = web;
        (envelope, record)
    }

    /// The gates in order, each one's refusal ending the call (`Err`); then the call runs and is
    /// settled. A command passes the router's gates as any call does, then the command gates
    /// (`crate::gates`), which decide it, at step 9.
    fn gate_and_run(
        &self,
        spec: &ToolSpec,
        mut call: Call,
        options: &CallOptions,
        record: &mut CallRecord,
    ) -> Result<Settled, ToolResult> {
        // A web call's target is the URL as results show it: every known secret redacted.
        let target = self.config.web.scrub(&call.target());
        record.target = Some(target.clone());
        let access = call.access();
        // A call that names paths to write is gated as a write whatever its tool's effect
        // (`fetch_url`'s `save_as`): the target policy, SAFE's refusal, ASK's question, the
        // checkpoint, all before it runs.
        let writes = !access.writes.is_empty() || !access.removes.is_empty();
        let capabilities = self.admit(spec, &target, writes)?;
        let send_approved = match &call {
            Call::Tool(prepared) => {
                self.gate_known_secrets(spec, &**prepared, options.confirmer.as_deref())?
            }
            // A command sends no request of spear's own: what it sends is the sandbox's network.
            Call::Command(_) => false,
        };
        let resolved = self.resolve(&access)?;
        if let Some(label) = resolved
            .writes
            .first()
            .map(|w| self.workspace().label(&w.entry))
        {
            record.target = Some(label);
        }
        let mut cx = self.context(capabilities, options, record.seq);
        cx.send_approved = send_approved;
        let writing = match &mut call {
            Call::Tool(prepared) => self.gate_file_write(
                spec,
                &mut **prepared,
                &resolved,
                capabilities,
                options.confirmer.as_deref(),
                &cx,
                record,
            )?,
            // A command names no path it writes: the command gates take the write lock, only
            // when it runs writable (read-only commands run side by side).
            Call::Command(_) => None,
        };
        not_cancelled(options)?;
        let (turn_checkpoint, not_kept) = self.checkpoint_before(&resolved)?;
        let mut outcome = match call {
            Call::Tool(prepared) => prepared.run(&cx, &resolved),
            // Step 9 for a command: the command gates decide it; the terminal runs what passed.
            Call::Command(command) => match gates::pass(&cx, spec.name, &command, &resolved) {
                Ok(cleared) => crate::tools::terminal::run(&cx, &command, cleared),
                Err(ended) => *ended,
            },
        };
        if spec.web.is_some() {
            outcome.redact(self.config.web.known_secrets());
        }
        Ok(self.settle(
            outcome,
            &resolved,
            turn_checkpoint,
            &not_kept,
            writing,
            options.cancel.as_ref(),
            record,
        ))
    }

    /// Step 4: the tool's execution modes. A tool not listed in this mode (see
    /// `crate::exposure`) is refused after its arguments are read, so that refusals of different
    /// targets are told apart by the repeat tracker. Returns what the mode grants.
    fn admit(
        &self,
        spec: &ToolSpec,
        target: &str,
        writes: bool,
    ) -> Result<CapabilityPolicy, ToolResult> {
        if self.exposure.withdrawn(spec) == Some(Withdrawn::NoNetwork) {
            return Err(ToolResult::denied(&Refusal::network_removed(format!(
                "{} {target}",
                spec.name
            ))));
        }
        if !self.exposure.acts_in(spec, self.config.mode) {
            return Err(ToolResult::denied(&Refusal::tool_not_in_mode(
                spec.name,
                target,
                self.config.mode,
                spec.modes,
            )));
        }
        Ok(call_policy(
            self.exposure,
            spec,
            writes,
            self.config.mode,
            self.config.no_network,
        ))
    }

    /// Steps 6 and 7 for a file tool: the target policy, ASK's question, then the write lock,
    /// held from the last gate to the last capture (checked before anyone is asked, and again
    /// under the lock: a command running meanwhile may have found the sandbox down or changed a
    /// header). A command takes the lock itself, only when it runs writable (read-only commands
    /// run side by side): `None`.
    #[allow(clippy::too_many_arguments)]
    fn gate_file_write(
        &self,
        spec: &ToolSpec,
        prepared: &mut dyn crate::Prepared,
        resolved: &Resolved,
        capabilities: CapabilityPolicy,
        asker: Option<&(dyn Confirmer + Send + Sync)>,
        cx: &CallContext<'_>,
        record: &mut CallRecord,
    ) -> Result<Option<MutexGuard<'_, ()>>, ToolResult> {
        if spec.effect != Effect::Write && resolved.writes.is_empty() {
            return Ok(None);
        }
        let host_config = self.gate_writes(spec.name, resolved)?;
        record.granted =
            self.authorize_write(spec, prepared, capabilities, asker, host_config.clone())?;
        // Authorised: the slow part (a download) now, before the lock every write waits for.
        prepared.before_writing(cx);
        let writing = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        // Attack: host-run configuration that became so while the person was asked (an include
        // added meanwhile) is not what was approved.
        if let Some(new) = self
            .gate_writes(spec.name, resolved)?
            .into_iter()
            .find(|w| !host_config.contains(w))
        {
            return Err(ToolResult::denied(&Refusal::host_run_config(
                new.path, new.entry, new.why,
            )));
        }
        Ok(Some(writing))
    }

    /// What a call may use while it runs (step 9).
    fn context<'a>(
        &'a self,
        capabilities: CapabilityPolicy,
        options: &'a CallOptions,
        call_seq: u64,
    ) -> CallContext<'a> {
        let confirmer = options
            .confirmer
            .as_deref()
            .map(|c| c as &dyn Confirmer)
            .or_else(|| self.confirmer.as_deref().map(|c| c as &dyn Confirmer));
        CallContext {
            workspace: self.workspace(),
            policy: &self.policy,
            fs: &self.fs,
            runner: &self.runner,
            jobs: &self.jobs,
            capabilities,
            confirmer,
            cancel: options.cancel.clone(),
            progress: options.progress.clone(),
            limits: self.config.limits,
            turn: &self.turn,
            tracked: &self.tracked,
            checkpoints: self.stores.checkpoints.as_ref(),
            results: self.stores.results.as_ref(),
            writing: &self.writing,
            background_jobs: self.config.background_jobs,
            call_seq,
            execution: format!("{}:{call_seq}", self.session()),
            grants: &self.grants,
            presented: options.grant.as_ref(),
            issue_grant: options.issue_grant.as_ref(),
            audit: self.stores.audit.as_ref(),
            session: &self.config.session,
            web: &self.config.web,
            send_approved: false,
        }
    }

    /// Step 4b, for a call that sends requests of spear's own (the web pair): what it would send
    /// ([`crate::Prepared::outgoing`]) is checked for the secrets spear holds, before anything
    /// else happens. One found: SAFE and AUTO refuse (`secret_in_request`), ASK asks, showing
    /// the call with the secret redacted and naming whose it is. Returns whether a person
    /// approved sending one (the call's first request then goes out as approved; its
    /// redirects are still guarded).
    fn gate_known_secrets(
        &self,
        spec: &ToolSpec,
        prepared: &dyn crate::Prepared,
        asker: Option<&(dyn Confirmer + Send + Sync)>,
    ) -> Result<bool, ToolResult> {
        let known = self.config.web.known_secrets();
        if spec.web.is_none() || known.is_empty() {
            return Ok(false);
        }
        let Some(leak) = prepared.outgoing().iter().find_map(|text| known.find(text)) else {
            return Ok(false);
        };
        let what = self.config.web.scrub(prepared.describe().trim_end());
        let confirmer = asker
            .or(self.confirmer.as_deref())
            .map(|c| c as &dyn Confirmer);
        let why = format!("it holds {}", leak.describe());
        match spear_policy::authorize_secret_request(self.config.mode, &what, &why, confirmer) {
            Authorization::Granted(_) => Ok(true),
            refused => Err(refused
                .refusal_result()
                .unwrap_or_else(|| ToolResult::new(ToolStatus::Denied))),
        }
    }

    /// After the call: what the audit record needs, the sandbox mark, and the checkpoint of what
    /// it changed (under the write lock, taken now if the call did not hold it).
    #[allow(clippy::too_many_arguments)]
    fn settle<'r>(
        &'r self,
        outcome: Outcome,
        resolved: &Resolved,
        turn_checkpoint: Option<TurnCheckpoint>,
        not_kept: &[String],
        mut writing: Option<MutexGuard<'r, ()>>,
        cancel: Option<&spear_sandbox::CancelToken>,
        record: &mut CallRecord,
    ) -> Settled {
        if let Some(target) = &outcome.target {
            record.target = Some(target.clone());
        }
        if !outcome.granted.is_empty() {
            record.granted = outcome.granted;
        }
        record.ran.clone_from(&outcome.ran);
        record.changes_unknown = outcome.changes_unknown;
        record.ran_since = outcome.ran_since;
        record.web.clone_from(&outcome.web_audit);
        if let Some(down) = &outcome.sandbox_down {
            self.lock_turn().sandbox = SandboxMark::Down(down.clone());
        }
        let mut result = outcome.result.clone();
        if !not_kept.is_empty() && !result.changed_paths.is_empty() {
            result.append_reason(&format!(
                    "the earlier content of {} was not kept (too large, or not a regular file), so `spear undo` cannot restore it",
                    not_kept.join(", ")
                ),
            );
        }
        if writing.is_none() && !outcome.captured.is_empty() {
            writing = Some(self.writing.lock().unwrap_or_else(PoisonError::into_inner));
        }
        if let Err(e) = self.checkpoint(resolved, turn_checkpoint, &outcome, cancel) {
            result.append_reason(&format!(
                    "the checkpoint of this change could not be saved, so `spear undo` cannot undo it: {e}"
                ),
            );
        }
        drop(writing);
        (result, outcome.job, outcome.web)
    }

    /// Request scope: every path resolves inside the roots.
    fn resolve(&self, access: &Access) -> Result<Resolved, ToolResult> {
        let ws = self.workspace();
        let mut writes: Vec<_> = access
            .writes
            .iter()
            .map(|p| ws.resolve(p).map_err(refused(p)))
            .collect::<Result<_, _>>()?;
        for p in &access.removes {
            writes.push(ws.resolve_entry(p).map_err(refused(p))?);
        }
        let resolved = Resolved {
            reads: access
                .reads
                .iter()
                .map(|p| ws.resolve(p).map_err(refused(p)))
                .collect::<Result<_, _>>()?,
            writes,
        };
        // Attack: a project's own credential files (`.npmrc`, a deploy key) read or rewritten by
        // a file tool; commands naming them are refused by the classifier, and so are the tools.
        // And spear's own state (the audit log, the approval socket): no root may hold it (see
        // `ToolRouter::new`), and no path a tool names may lie in it.
        for r in resolved.reads.iter().chain(&resolved.writes) {
            for loc in [&r.entry, &r.target] {
                let host = ws.host_path(loc);
                if self.state_dirs.iter().any(|s| host.starts_with(s)) {
                    return Err(ToolResult::denied(&Refusal::spear_state(ws.label(loc))));
                }
                if names_credential_store(&host.to_string_lossy()) {
                    return Err(ToolResult::denied(&Refusal::credential_store(
                        ws.label(loc),
                    )));
                }
            }
        }
        Ok(resolved)
    }

    /// Target policy on every write, and no write while the sandbox is down. Returns the
    /// host-run configuration among the writes (each askable: a person's approval lets it
    /// through), or the refusal of the first write no approval can let through.
    fn gate_writes(
        &self,
        tool: &str,
        resolved: &Resolved,
    ) -> Result<Vec<HostConfigWrite>, ToolResult> {
        if let SandboxMark::Down(why) = &self.lock_turn().sandbox {
            return Err(ToolResult::denied(&sandbox_down_refusal(tool, why)));
        }
        // Attack: two writers at once would charge each other's changes (and undo them).
        if let Some(job) = self.jobs.writable_pending() {
            return Err(ToolResult::denied(&Refusal::job_writing(tool, job)));
        }
        let mut host_config = Vec::new();
        for w in &resolved.writes {
            // A link is checked by its name only: what it points at is not what is written.
            let is_link = matches!(
                self.fs.entry_kind(&w.entry),
                Ok(Some((spear_workspace::EntryKind::Symlink, _)))
            );
            let checks = if is_link {
                vec![
                    self.policy.config().targets.check(&w.entry.rel),
                    self.policy.host_config_by_name(&w.entry, false),
                ]
            } else {
                vec![self.policy.check_write(&w.entry)]
            };
            for checked in checks
                .into_iter()
                .chain(std::iter::once(self.policy.check_as_written(&w.as_written)))
            {
                match checked {
                    Ok(()) => {}
                    Err(refusal) => match HostConfigWrite::of_refusal(&refusal) {
                        Some(write) => {
                            if !host_config.contains(&write) {
                                host_config.push(write);
                            }
                        }
                        None => return Err(ToolResult::denied(&refusal)),
                    },
                }
            }
        }
        Ok(host_config)
    }

    /// What the mode grants a file write: SAFE never gets here, ASK asks, AUTO grants, unless
    /// it writes host-run configuration (`host_config`), which AUTO asks about as ASK would.
    fn authorize_write(
        &self,
        spec: &ToolSpec,
        prepared: &dyn crate::Prepared,
        capabilities: CapabilityPolicy,
        asker: Option<&(dyn Confirmer + Send + Sync)>,
        host_config: Vec<HostConfigWrite>,
    ) -> Result<CapabilitySet, ToolResult> {
        let reason = if host_config.is_empty() {
            format!("{} changes files in the workspace", spec.name)
        } else {
            format!(
                "{} writes host-run configuration, which a tool on the host runs or obeys later, \
                 outside every sandbox",
                spec.name
            )
        };
        let assessment = CommandAssessment {
            class: CommandClass::WorkspaceMutating,
            capabilities: CapabilitySet::of(&[
                Capability::FilesystemRead,
                Capability::WorkspaceWrite,
            ]),
            write_targets: Vec::new(),
            host_reads: Vec::new(),
            host_config,
            reason,
            refusal: None,
            executable: String::new(),
        };
        let confirmer = asker
            .or(self.confirmer.as_deref())
            .map(|c| c as &dyn Confirmer);
        // A web call's question shows its URL with every known secret redacted.
        let describe = self.config.web.scrub(&prepared.describe());
        match authorize(&assessment, capabilities, &describe, confirmer) {
            Authorization::Granted(caps) => Ok(caps),
            refused => Err(refused
                .refusal_result()
                .unwrap_or_else(|| ToolResult::new(ToolStatus::Denied))),
        }
    }

    /// Records the state before of every path a file tool writes, in the current turn's
    /// checkpoint (the first capture of a path in a turn wins). Returns the turn, and the labels of
    /// entries too large (or too odd) to keep, which are changed without a checkpoint and said so.
    /// Any other failure refuses the call: nothing is written that could not be undone.
    fn checkpoint_before(
        &self,
        resolved: &Resolved,
    ) -> Result<(Option<TurnCheckpoint>, Vec<String>), ToolResult> {
        let (Some(store), false) = (&self.stores.checkpoints, resolved.writes.is_empty()) else {
            return Ok((None, Vec::new()));
        };
        // Below the state's free-space floor, nothing is written.
        if let Err(e) = store.check_floor() {
            return Err(ToolResult::failed(e.to_string()));
        }
        let mut not_kept = Vec::new();
        let captured = store.turn(&self.turn_id()).and_then(|mut turn| {
            for w in &resolved.writes {
                match store.capture_before(&mut turn, self.workspace(), &self.fs, &w.entry) {
                    Ok(_) => {}
                    Err(CheckpointError::TooLarge { .. } | CheckpointError::Unsupported { .. }) => {
                        not_kept.push(self.workspace().label(&w.entry));
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(turn)
        });
        match captured {
            Ok(turn) => Ok((Some(turn), not_kept)),
            Err(e) => Err(ToolResult::failed(format!(
                "spear could not checkpoint what this call changes, so nothing was written: {e}"
            ))),
        }
    }

    /// Completes the turn's checkpoint: the state before of what a command changed (as it
    /// found it; the first capture of a path in a turn wins), and the state after of every entry
    /// the call changed.
    fn checkpoint(
        &self,
        resolved: &Resolved,
        turn: Option<TurnCheckpoint>,
        outcome: &Outcome,
        cancel: Option<&spear_sandbox::CancelToken>,
    ) -> Result<(), String> {
        let Some(store) = &self.stores.checkpoints else {
            return Ok(());
        };
        if outcome.result.changed_paths.is_empty() && outcome.captured.is_empty() {
            return Ok(());
        }
        let ws = self.workspace();
        let mut turn = match turn {
            Some(t) => t,
            None => store.turn(&self.turn_id()).map_err(|e| e.to_string())?,
        };
        let mut touched: Vec<&Location> = resolved.writes.iter().map(|w| &w.entry).collect();
        for (loc, prior) in &outcome.captured {
            turn.note_before(ws, loc, prior.clone());
            touched.push(loc);
        }
        let stop = || cancel.is_some_and(spear_sandbox::CancelToken::is_cancelled);
        let stopped = store
            .capture_after_all(&mut turn, ws, &self.fs, &touched, &stop)
            .map_err(|e| e.to_string())?;
        if let Some(done) = stopped {
            // Cancelled (the server is stopping): what was recorded is kept, the rest is not
            // waited for, and the result says so.
            let saved = turn.save().map_err(|e| e.to_string());
            return Err(format!(
                "the call was cancelled while the state after of its changes was recorded \
                 ({done} of {}), so `spear undo` may not restore all of them{}",
                touched.len(),
                saved.err().map(|e| format!(" ({e})")).unwrap_or_default()
            ));
        }
        turn.save().map_err(|e| e.to_string())
    }

    /// Step 10: preview and result store, evidence, refusal counting, audit.
    fn finish(&self, envelope: &mut ToolResultEnvelope, record: &CallRecord) {
        self.keep_output(envelope);
        let result = &envelope.result;
        let mut turn = self.lock_turn();
        let changed = if record.changes_unknown {
            vec![UNKNOWN_CHANGES.to_owned()]
        } else {
            result.changed_paths.clone()
        };
        // A run verifies only what was there when it started: a change that landed while it ran
        // (a concurrent call's, or anything while a background job ran) is not verified by it.
        let landed_meanwhile = if let Some(start) = record.ran_since {
            // A background job: any change by a call after the one that started it.
            turn.last_change_call.is_some_and(|c| c > start)
        } else {
            // A call: any change that ended after it started, or a turn begun meanwhile.
            let (turn_id, done) = &record.started_in;
            *turn_id != turn.id || turn.changes_done > *done
        };
        let ran = if landed_meanwhile {
            None
        } else {
            record.ran.clone()
        };
        if !changed.is_empty() {
            turn.changes_done += 1;
            turn.last_change_call = Some(
                turn.last_change_call
                    .map_or(record.seq, |c| c.max(record.seq)),
            );
        }
        turn.evidence.push(Evidence {
            tool: envelope.tool.clone(),
            changed,
            ran,
            status: result.status,
            exit_code: result.exit_code,
        });
        let mut event = AuditEvent::ToolCall;
        // Counted by what refused it: the tool, the rule and what the rule refused. A person's
        // answer (declined, nobody to ask) is not a rule refusing, and a refusal of the turn
        // itself is not counted again.
        if let (Some(refusal), None) = (result.refusal.as_ref(), turn.stopped.as_ref())
            && matches!(result.status, ToolStatus::Denied | ToolStatus::InvalidPath)
            && refusal.rule() != RefusalRule::TurnStopped
        {
            let reason = refusal.message();
            if let Repeat::Stop(n) =
                turn.refusals
                    .record(&envelope.tool, refusal.rule(), refusal.subject())
            {
                let text = format!(
                    "{} was refused {n} times in this turn for the same reason: {reason}",
                    envelope.tool
                );
                turn.stopped = Some(text.clone());
                envelope.turn_stopped = true;
                let stopped = Refusal::turn_stopped(&envelope.tool, text);
                envelope.result.reason = Some(stopped.message());
                envelope.result.refusal = Some(Box::new(stopped));
                event = AuditEvent::RepeatedRefusalStopped;
            }
        }
        let turn_id = turn.id.clone();
        drop(turn);
        // The evidence above holds every path; the answer and the audit record name at most
        // MAX_LISTED_CHANGES of them and count the rest.
        envelope.result.cap_changed_paths();
        self.audit(envelope, record, event, &turn_id);
    }

    /// Cuts long output to the preview and keeps the whole in the result store.
    fn keep_output(&self, envelope: &mut ToolResultEnvelope) {
        let max = self.config.limits.preview_chars;
        let store = self.stores.results.as_ref();
        let keep = |text: &mut String, what: &str| -> Option<String> {
            if text.chars().count() <= max {
                return None;
            }
            let stored = store.and_then(|s| s.put(text.as_bytes()).ok());
            let reference = stored.as_ref().map(|r| r.hash.clone());
            let (cut, _) = preview::cut(text, max, |n| match &reference {
                Some(r) => format!(
                    "[... spear cut {n} characters of {what} here; read them with read_output {{\"ref\": \"{r}\", \"offset\": 0, \"limit\": 50000}} ...]"
                ),
                None => format!("[... spear cut {n} characters of {what} here ...]"),
            });
            *text = cut;
            reference
        };
        let result = &mut envelope.result;
        let out_ref = keep(&mut result.stdout, "stdout");
        let err_ref = keep(&mut result.stderr, "stderr");
        if out_ref.is_some() || err_ref.is_some() {
            result.truncated = true;
        }
        envelope.output_ref = out_ref;
        envelope.stderr_ref = err_ref;
    }

    /// Writes the audit record of a call.
    fn audit(
        &self,
        envelope: &ToolResultEnvelope,
        record: &CallRecord,
        event: AuditEvent,
        turn: &str,
    ) {
        let Some(logger) = &self.stores.audit else {
            return;
        };
        let result = &envelope.result;
        let mut entry = AuditRecord::new(self.config.session.clone(), event);
        entry.turn = Some(turn.to_owned());
        entry.tool = Some(envelope.tool.clone());
        entry.target.clone_from(&record.target);
        entry.class = result.class;
        entry.capabilities = record
            .granted
            .iter()
            .map(|c| c.as_str().to_owned())
            .collect();
        // A GPU is the operator's grant, not the mode's: named when the sandbox really had one.
        if result.guarantees.is_some_and(|g| g.gpu) {
            entry
                .capabilities
                .push(spear_core::Capability::Gpu.as_str().to_owned());
        }
        entry.status = Some(result.status);
        entry.rule = result.rule();
        entry.exit_code = result.exit_code;
        entry.duration_ms = Some(result.duration_ms);
        entry.changed_paths.clone_from(&result.changed_paths);
        entry.executable.clone_from(&record.ran);
        entry.web.clone_from(&record.web);
        if let Err(e) = logger.log(&entry) {
            tracing::error!("the audit record could not be written: {e}");
        }
    }

    fn lock_turn(&self) -> MutexGuard<'_, TurnState> {
        self.turn.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for ToolRouter {
    /// The session ends: every job still running is killed, and every job's end is reported
    /// through the router as a `terminal_kill` (its changes checked, put back where refused,
    /// checkpointed and audited).
    fn drop(&mut self) {
        for id in self.jobs.ids() {
            let _ = self.call(
                crate::tools::terminal_job::TerminalKillArgs::NAME,
                serde_json::json!({ "job_id": id }),
            );
        }
    }
}

/// What the audit record of a call needs beyond its result.
#[derive(Debug, Clone, Default)]
struct CallRecord {
    seq: u64,
    target: Option<String>,
    granted: CapabilitySet,
    ran: Option<String>,
    changes_unknown: bool,
    ran_since: Option<u64>,
    /// The turn when the call started, and how many of its calls had changed something by then.
    started_in: (String, u64),
    /// What a call of the web pair fetched or was refused.
    web: Option<spear_runtime::WebAudit>,
}

/// A call's end: its result, the background job it started or reported on, and what the web
/// pair adds for the client.
type Settled = (ToolResult, Option<crate::JobState>, Option<WebDetail>);

/// What a session in `mode` (with `--no-network` when `no_network`) grants `spec` for a caller of
/// `exposure`'s role: the matrix of the mode the tool runs in for that role. Pure.
pub(crate) fn session_policy(
    exposure: ToolExposurePolicy,
    spec: &ToolSpec,
    mode: ExecutionMode,
    no_network: bool,
) -> CapabilityPolicy {
    call_policy(exposure, spec, false, mode, no_network)
}

/// What a session grants one call of `spec` that writes the paths it names when `writes`: the
/// matrix of the mode the call runs in for the caller's role
/// ([`ToolExposurePolicy::mode_for_call`]). Pure.
pub(crate) fn call_policy(
    exposure: ToolExposurePolicy,
    spec: &ToolSpec,
    writes: bool,
    mode: ExecutionMode,
    no_network: bool,
) -> CapabilityPolicy {
    let policy = CapabilityPolicy::for_mode(exposure.mode_for_call(spec, writes, mode));
    if no_network {
        policy.without_network()
    } else {
        policy
    }
}

/// A call cancelled while it was asked about or waited for the write lock ends here, before it
/// checkpoints or writes anything (a command checks again as it starts).
fn not_cancelled(options: &CallOptions) -> Result<(), ToolResult> {
    if options
        .cancel
        .as_ref()
        .is_some_and(spear_sandbox::CancelToken::is_cancelled)
    {
        let mut result = ToolResult::new(ToolStatus::Cancelled);
        result.reason = Some("cancelled before it ran; nothing was changed".into());
        return Err(result);
    }
    Ok(())
}

/// The `invalid_path` result of `path`, which did not resolve for the reason `e`.
fn refused(path: &str) -> impl FnOnce(spear_workspace::ResolveError) -> ToolResult + '_ {
    move |e| ToolResult::invalid_path(&Refusal::invalid_path(path, e.to_string()))
}

/// What a call's evidence says it changed when its changes could not be found.
const UNKNOWN_CHANGES: &str = "(changes unknown)";

/// 128 random bits written as a UUID (`8-4-4-4-12` hex digits): unique, and readable in the audit
/// log (whose redaction takes long unbroken hex runs for secrets).
pub fn random_id() -> String {
    let mut bytes = [0u8; 16];
    if rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty()).is_err() {
        // Unique enough for a label when the kernel's generator is unavailable.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = nanos.to_le_bytes();
    }
    let mut s = String::with_capacity(36);
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::state_dirs;

    #[test]
    fn the_state_directory_is_known_by_both_spellings_made_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = real.with_file_name("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        // Made already, and not made yet (spear makes it after the router): both spellings.
        std::fs::create_dir(real.join("made")).unwrap();
        assert_eq!(
            state_dirs(Some(&link.join("made"))),
            [link.join("made"), real.join("made")]
        );
        assert_eq!(
            state_dirs(Some(&link.join("later/spear"))),
            [link.join("later/spear"), real.join("later/spear")]
        );
        // Positive control: a spelling without a link is the only one.
        assert_eq!(
            state_dirs(Some(&real.join("later/spear"))),
            [real.join("later/spear")]
        );
        assert!(state_dirs(None).is_empty());
    }
}
