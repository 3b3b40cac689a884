//! A workspace on a tempdir, the real sandbox, and a router over them.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spear_core::ExecutionMode;
use spear_policy::{CommandPolicy, ConfirmRequest, Confirmation, Confirmer, PolicyConfig};
use spear_runtime::AuditLogger;
use spear_runtime::CheckpointStore;
use spear_runtime::ResultStore;
use spear_runtime::{CommandRunner, RunnerConfig};
use spear_testkit::workspace::Dirs;
use spear_tools::{Role, RouterConfig, RouterStores, ToolRegistry, ToolRouter};
use spear_workspace::{Workspace, WorkspaceConfig};

/// A test's directories ([`Dirs`]: the workspace holding `README.md`, a HOME, and the state
/// directory the router's stores live in) and `outside/`, a made directory outside every root.
pub struct Env {
    pub dirs: Dirs,
    pub ws: PathBuf,
    pub home: PathBuf,
    pub outside: PathBuf,
    pub state: PathBuf,
}

impl Env {
    pub fn new() -> Self {
        let dirs = Dirs::with(&[("README.md", "hello\n")]);
        let outside = dirs.path("outside");
        std::fs::create_dir_all(&outside).unwrap();
        Env {
            ws: dirs.ws.clone(),
            home: dirs.home.clone(),
            state: dirs.state.clone(),
            outside,
            dirs,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.ws.join(rel)
    }

    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.ws.join(rel)).ok()
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn audit_path(&self) -> PathBuf {
        self.state.join("audit").join("audit.jsonl")
    }

    pub fn checkpoints(&self) -> CheckpointStore {
        CheckpointStore::open(&self.state.join("checkpoints")).unwrap()
    }

    /// The audit records written so far, as JSON.
    pub fn audit(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.audit_path())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Undoes the last turn through the checkpoint store, as `spear undo` does.
    pub fn undo_last(&self) -> spear_runtime::UndoReport {
        let ws = Workspace::open(&WorkspaceConfig::new(&self.ws)).unwrap();
        self.checkpoints()
            .undo_last(&ws, &ws.fs().unwrap())
            .unwrap()
    }
}

/// Options of a router under test.
pub struct Opts {
    pub mode: ExecutionMode,
    pub role: Role,
    pub stores: bool,
    pub confirmer: Option<Box<dyn Confirmer + Send + Sync>>,
    pub bwrap: Option<PathBuf>,
    pub session: Option<String>,
    pub repeats: u32,
    pub no_network: bool,
    pub web: spear_tools::WebPair,
    /// The operator's `[policy] allow_host_config`.
    pub allow_host_config: Vec<String>,
}

impl Opts {
    pub fn mode(mode: ExecutionMode) -> Self {
        Opts {
            mode,
            role: Role::Implementation,
            stores: true,
            confirmer: None,
            bwrap: None,
            session: None,
            repeats: 5,
            no_network: false,
            web: spear_tools::WebPair::off(),
            allow_host_config: Vec::new(),
        }
    }

    /// [`Opts::mode`] with the web pair `web`.
    pub fn web(mode: ExecutionMode, web: spear_tools::WebPair) -> Self {
        Opts {
            web,
            ..Opts::mode(mode)
        }
    }
}

pub fn policy(env: &Env) -> Arc<CommandPolicy> {
    policy_allowing(env, Vec::new())
}

/// [`policy`] with the operator's `[policy] allow_host_config`.
pub fn policy_allowing(env: &Env, allow_host_config: Vec<String>) -> Arc<CommandPolicy> {
    let workspace = Workspace::open(&WorkspaceConfig::new(&env.ws)).unwrap();
    let mut config = PolicyConfig::new(Some(env.home.clone()));
    config.allow_host_config = allow_host_config;
    Arc::new(CommandPolicy::new(Arc::new(workspace), config))
}

pub fn router(env: &Env, opts: Opts) -> ToolRouter {
    let policy = policy_allowing(env, opts.allow_host_config);
    let mut config = RunnerConfig::from_host();
    config.home.clone_from(&env.home);
    config.host_env = vec![
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("HOME".into(), env.home.clone().into_os_string()),
    ];
    config.default_timeout = Duration::from_secs(30);
    config.staging = vec![env.state.join("staging")];
    if let Some(bwrap) = opts.bwrap {
        config.sandbox.bwrap = bwrap;
    }
    let runner = Arc::new(CommandRunner::new(policy.shared_workspace(), config));
    let mut rc = RouterConfig::new(opts.mode);
    rc.role = opts.role;
    rc.refusal_repeats = opts.repeats;
    rc.no_network = opts.no_network;
    rc.web = opts.web;
    if let Some(s) = opts.session {
        rc.session = s;
    }
    let stores = if opts.stores {
        RouterStores {
            audit: Some(AuditLogger::open(&env.audit_path()).unwrap()),
            results: Some(ResultStore::open(&env.state.join("results"), &rc.session).unwrap()),
            checkpoints: Some(env.checkpoints()),
        }
    } else {
        RouterStores::default()
    };
    let mut router = ToolRouter::new(ToolRegistry::coding(), policy, runner, rc, stores).unwrap();
    if let Some(c) = opts.confirmer {
        router.set_confirmer(c);
    }
    router
}

/// A confirmer that answers the same every time and records what it was shown.
pub struct Answer {
    pub answer: Confirmation,
    pub seen: Arc<Mutex<Vec<String>>>,
}

impl Answer {
    pub fn new(answer: Confirmation) -> (Box<Self>, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        (
            Box::new(Answer {
                answer,
                seen: Arc::clone(&seen),
            }),
            seen,
        )
    }
}

impl Confirmer for Answer {
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation {
        self.seen.lock().unwrap().push(request.command.clone());
        self.answer
    }
}

/// Every file under `dir` with its content, for "nothing changed" checks.
pub fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let e = e.unwrap();
            let p = e.path();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(p.clone());
                out.push((p, Vec::new()));
            } else if ft.is_symlink() {
                out.push((
                    p.clone(),
                    std::fs::read_link(&p)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                ));
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}
