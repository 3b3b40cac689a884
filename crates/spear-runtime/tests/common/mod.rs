//! A workspace on a tempdir and a runner over it, with the real sandbox.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use spear_core::{Capability, CapabilitySet, ExecutionProfile, ToolResult};
use spear_runtime::{CommandLine, CommandRequest, CommandRunner, RunnerConfig};
use spear_runtime::{Judge, Proposed, TrackedRules};
use spear_sandbox::{Sandbox, SandboxConfig};
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

pub struct Fixture {
    pub dir: tempfile::TempDir,
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
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let ws = base.join("ws");
        let home = base.join("home");
        let outside = base.join("outside");
        for d in [&ws, &home, &outside] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE KEY").unwrap();
        std::fs::write(ws.join("README.md"), "hello\n").unwrap();
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
            dir,
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

/// Processes on the host whose command line contains `marker`.
pub fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .chars()
            .all(|c| c.is_ascii_digit())
        {
            continue;
        }
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if text.contains(marker) {
                found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

pub fn sandbox_config(edit: impl FnOnce(&mut SandboxConfig)) -> SandboxConfig {
    let mut c = SandboxConfig::default();
    edit(&mut c);
    c
}

pub fn os(s: &str) -> OsString {
    s.into()
}

/// The test "internet" host, which `scripts/test-host.sh run` serves beside the tests.
pub const TEST_HOST_ADDR: &str = "203.0.113.10:8080";

/// Fails, saying how to run the test, when this process is not inside the test network: a
/// network test run without it would fail on every probe for a reason it cannot name. The body is
/// checked, not just the connection: a machine's own network may answer any address (a proxy).
pub fn require_test_network() {
    use std::io::{Read, Write};
    let addr: std::net::SocketAddr = TEST_HOST_ADDR.parse().unwrap();
    let answer =
        std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).and_then(|mut s| {
            s.set_read_timeout(Some(Duration::from_secs(2)))?;
            s.write_all(b"GET / HTTP/1.0\r\n\r\n")?;
            let mut body = String::new();
            s.read_to_string(&mut body)?;
            Ok(body)
        });
    let answered = answer
        .as_ref()
        .is_ok_and(|b| b.ends_with("\r\n\r\nspear test host\n"));
    assert!(
        answered,
        "the test host {TEST_HOST_ADDR} does not answer the tests ({answer:?}): run them inside \
         the test network, as root: scripts/test-host.sh run cargo test -p spear-runtime \
         --test network (as spear-test: scripts/test-unprivileged.sh)"
    );
}
