//! A workspace on a tempdir and a runner over it, with the real sandbox.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use spear_core::{Capability, CapabilitySet, ExecutionProfile, ToolResult};
use spear_runtime::{CommandLine, CommandRequest, CommandRunner, RunnerConfig};
use spear_runtime::{Judge, Proposed, TrackedRules};
use spear_sandbox::{Launch, ProcessSpawner, Running, Sandbox, SandboxConfig, Spawner};
use spear_testkit::workspace::Dirs;
use spear_workspace::{Workspace, WorkspaceConfig};

/// The target policy as the judge of staged writes (the tool layer's judge, rebuilt here: the
/// runtime knows no policy of its own).
pub struct PolicyJudge<'a> {
    policy: &'a spear_policy::CommandPolicy,
    git: spear_policy::GitIndirections,
}

impl<'a> PolicyJudge<'a> {
    pub fn new(policy: &'a spear_policy::CommandPolicy) -> Self {
        PolicyJudge {
            policy,
            git: policy.git_indirections(),
        }
    }
}

impl Judge for PolicyJudge<'_> {
    fn judge(&self, change: &Proposed<'_>) -> Result<(), spear_core::Refusal> {
        self.policy.judge_change(
            &self.git,
            change.loc,
            change.kind,
            change.tracked,
            change.staged,
            change.host,
        )
    }
}

/// Runs `request` and commits what it staged, judged by the built-in target policy.
pub fn run_committed(runner: &CommandRunner, request: &CommandRequest) -> ToolResult {
    let report = runner.run_report(request);
    let mut result = report.result;
    if let Some(staged) = &report.staged {
        let ws = runner.workspace();
        let fs = ws.fs().unwrap();
        let policy =
            spear_policy::CommandPolicy::new(Arc::clone(ws), spear_policy::PolicyConfig::new(None));
        let judge = PolicyJudge::new(&policy);
        staged
            .commit(ws, &fs, &judge, None, &TrackedRules::new(), &|| false)
            .apply_to(&mut result);
    }
    result
}

/// A secret planted in the host environment the runner sees.
pub const HOST_SECRET: &str = "sk-spear-test-secret-0123456789";

/// A test's directories ([`Dirs`]: the workspace holding `README.md`, and a HOME holding
/// `.ssh/id_rsa`), `outside/`, a made directory outside every root, and a runner over the
/// workspace.
pub struct Fixture {
    pub dirs: Dirs,
    /// Where the runner stages writes.
    pub staging: PathBuf,
    pub ws: PathBuf,
    pub home: PathBuf,
    pub outside: PathBuf,
    pub runner: Arc<CommandRunner>,
}

impl Fixture {
    pub fn new() -> Self {
        Fixture::with(|_| {})
    }

    /// A fixture whose runner config is adjusted by `edit` first.
    pub fn with(edit: impl FnOnce(&mut RunnerConfig)) -> Self {
        let dirs = Dirs::with(&[("README.md", "hello\n")]);
        let base = dirs.base.clone();
        let ws = dirs.ws.clone();
        let home = dirs.home.clone();
        let outside = base.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE KEY").unwrap();
        let mut config = RunnerConfig::from_host();
        config.home.clone_from(&home);
        config.host_env = vec![
            ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
            ("LANG".into(), "C.UTF-8".into()),
            ("OPENAI_API_KEY".into(), HOST_SECRET.into()),
            ("GITHUB_TOKEN".into(), "ghp_spearTestToken".into()),
            ("HOME".into(), home.clone().into_os_string()),
        ];
        config.default_timeout = Duration::from_secs(30);
        config.staging = vec![base.join("staging")];
        edit(&mut config);
        let runner = Arc::new(runner_for(&ws, config, None));
        Fixture {
            staging: base.join("staging"),
            dirs,
            ws,
            home,
            outside,
            runner,
        }
    }

    /// Runs `script` with `profile`, and commits what it staged.
    pub fn run(&self, profile: ExecutionProfile, script: &str) -> ToolResult {
        run_committed(
            &self.runner,
            &CommandRequest::new(CommandLine::Script(script.to_owned()), profile),
        )
    }

    /// Runs `script` writable (AUTO's shell profile).
    pub fn auto(&self, script: &str) -> ToolResult {
        self.run(writable(), script)
    }

    /// Runs `script` read-only (SAFE's profile).
    pub fn safe(&self, script: &str) -> ToolResult {
        self.run(read_only(), script)
    }
}

/// The node's TLS key, written by [`write_node_key`] into the workspace's `tls/`.
pub const NODE_KEY: &str = "-----BEGIN PRIVATE KEY----- spear-node-key-5e1a";

/// `config` with the workspace's `tls/key.pem` as a secret of the runner (what `spear mcp
/// --listen --tls-key` does); the workspace is found beside the home, where [`Fixture::with`]
/// makes both.
pub fn with_node_key(config: &mut RunnerConfig) {
    let ws = config.home.parent().unwrap().join("ws");
    config.secrets = vec![ws.join("tls/key.pem")];
}

/// Writes the node's key and a certificate beside it into `fixture`'s workspace.
pub fn write_node_key(fixture: &Fixture) {
    assert_eq!(fixture.home.parent().unwrap().join("ws"), fixture.ws);
    std::fs::create_dir_all(fixture.ws.join("tls")).unwrap();
    std::fs::write(fixture.ws.join("tls/key.pem"), NODE_KEY).unwrap();
    std::fs::write(fixture.ws.join("tls/cert.pem"), "CERTIFICATE").unwrap();
}

/// A spawner that counts every launch, then really spawns it: a refusal's test shows nothing was
/// spawned, and its positive control that something was.
#[derive(Debug, Default)]
pub struct CountingSpawner(AtomicUsize);

impl CountingSpawner {
    /// The launches so far.
    pub fn launches(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Spawner for CountingSpawner {
    fn spawn(&self, launch: &Launch<'_>) -> io::Result<Running> {
        self.0.fetch_add(1, Ordering::SeqCst);
        ProcessSpawner.spawn(launch)
    }
}

/// A runner over a single-root workspace at `ws`, with `sandbox` or the host's.
pub fn runner_for(ws: &Path, config: RunnerConfig, sandbox: Option<Sandbox>) -> CommandRunner {
    let mut wc = WorkspaceConfig::new(ws);
    wc.single_root = true;
    let workspace = Arc::new(Workspace::open(&wc).unwrap());
    match sandbox {
        Some(s) => CommandRunner::with_sandbox(workspace, config, s),
        None => CommandRunner::new(workspace, config),
    }
}

/// The profile of exactly `caps` granted, reading no host path.
pub fn granting(caps: &[Capability]) -> ExecutionProfile {
    ExecutionProfile::from_granted(CapabilitySet::of(caps), Vec::new())
}

/// `profile` with `caps` granted too (its host paths kept).
pub fn plus(profile: &ExecutionProfile, caps: &[Capability]) -> ExecutionProfile {
    ExecutionProfile::from_granted(
        profile.granted().union(CapabilitySet::of(caps)),
        profile.host_read_paths().to_vec(),
    )
}

/// `profile` reading `paths` of the host too (`host:read` granted).
pub fn reading_host(profile: &ExecutionProfile, paths: Vec<PathBuf>) -> ExecutionProfile {
    ExecutionProfile::from_granted(
        profile
            .granted()
            .union(CapabilitySet::of(&[Capability::HostRead])),
        paths,
    )
}

pub fn writable() -> ExecutionProfile {
    granting(&[
        Capability::FilesystemRead,
        Capability::WorkspaceWrite,
        Capability::ShellComplex,
    ])
}

pub fn read_only() -> ExecutionProfile {
    granting(&[Capability::FilesystemRead])
}

/// [`writable`] with the network.
pub fn networked() -> ExecutionProfile {
    plus(&writable(), &[Capability::Network])
}

pub fn sandbox_config(edit: impl FnOnce(&mut SandboxConfig)) -> SandboxConfig {
    let mut c = SandboxConfig::default();
    edit(&mut c);
    c
}

pub fn os(s: &str) -> OsString {
    s.into()
}
