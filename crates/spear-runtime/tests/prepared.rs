//! Prepared processes and grants against the real sandbox: a refused `prepare` leaves no process
//! (a counting spawner in front of the real one sees no launch, and the marker the command would
//! write is absent), and every way a grant can fail to hold is produced by really changing what
//! it binds: a byte of the command, the directory, the directory swapped for a link after the
//! approval, a target that appeared, the clock, a replay, a forged MAC, another execution.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use common::{CountingSpawner, PolicyJudge, runner_for, writable};
use spear_core::ToolStatus;
use spear_core::authority::{Access, AccessKind, AccessPolicy, Effective, GrantError};
use spear_runtime::TrackedRules;
use spear_runtime::{
    CommandLine, CommandRequest, CommandRunner, GrantCheck, PrepareError, PrepareOptions,
    RunnerConfig,
};
use spear_runtime::{GrantAuthority, SESSION_GRANT_TTL};
use spear_sandbox::Sandbox;

/// The rules the tests' commands are judged by, as a grant binds them.
const RULES: &str = "protected .git/hooks/\n";

struct Case {
    _dir: tempfile::TempDir,
    base: PathBuf,
    ws: PathBuf,
    config: RunnerConfig,
    spawner: Arc<CountingSpawner>,
    runner: Arc<CommandRunner>,
    grants: GrantAuthority,
}

impl Case {
    fn new() -> Case {
        Case::with(|_| {})
    }

    fn with(edit: impl FnOnce(&mut spear_sandbox::SandboxConfig)) -> Case {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let ws = base.join("ws");
        let home = base.join("home");
        for d in [ws.join("sub"), ws.join("other"), home.clone()] {
            std::fs::create_dir_all(d).unwrap();
        }
        let mut config = RunnerConfig::from_host();
        config.home.clone_from(&home);
        config.host_env = vec![("PATH".into(), "/usr/bin:/bin".into())];
        config.staging = vec![base.join("staging")];
        config.default_timeout = Duration::from_secs(30);
        edit(&mut config.sandbox);
        let spawner = Arc::new(CountingSpawner::default());
        let backend = spear_sandbox::detect_cgroup_backend().map_err(|e| e.to_string());
        let sandbox = Sandbox::with_parts(config.sandbox.clone(), backend, spawner.clone());
        let runner = Arc::new(runner_for(&ws, config.clone(), Some(sandbox)));
        Case {
            _dir: dir,
            base,
            ws,
            config,
            spawner,
            runner,
            grants: GrantAuthority::for_session().unwrap(),
        }
    }

    /// Another runner over the same workspace (with `roots` besides it), its configuration
    /// this case's as `edit` leaves it, and the spawner that counts its launches.
    fn other_runner(
        &self,
        roots: Vec<PathBuf>,
        edit: impl FnOnce(&mut RunnerConfig),
    ) -> (Arc<CommandRunner>, Arc<CountingSpawner>) {
        let mut config = self.config.clone();
        edit(&mut config);
        let spawner = Arc::new(CountingSpawner::default());
        let backend = spear_sandbox::detect_cgroup_backend().map_err(|e| e.to_string());
        let sandbox = Sandbox::with_parts(config.sandbox.clone(), backend, spawner.clone());
        let mut wc = spear_workspace::WorkspaceConfig::new(&self.ws);
        wc.single_root = roots.is_empty();
        wc.extra_roots = roots;
        let workspace = Arc::new(spear_workspace::Workspace::open(&wc).unwrap());
        let runner = Arc::new(CommandRunner::with_sandbox(workspace, config, sandbox));
        (runner, spawner)
    }

    fn launches(&self) -> usize {
        self.spawner.launches()
    }

    fn request(&self, script: &str, dir: &str) -> CommandRequest {
        let mut r = CommandRequest::new(CommandLine::Script(script.into()), writable());
        r.workdir = Some(self.ws.join(dir));
        r
    }

    /// The grant a person's approval of `request` (as execution `exec`) would produce now.
    fn approve(&self, request: &CommandRequest, exec: &str, targets: &[PathBuf]) -> String {
        let binding = self
            .runner
            .binding(request, Some(exec.into()), targets, RULES)
            .unwrap();
        self.grants
            .issue(&binding, SESSION_GRANT_TTL, SystemTime::now())
            .unwrap()
    }

    fn prepare(
        &self,
        request: CommandRequest,
        exec: &str,
        token: Option<&str>,
        targets: Vec<PathBuf>,
        now: SystemTime,
    ) -> Result<spear_runtime::PreparedProcess, PrepareError> {
        self.runner.prepare(
            PrepareOptions {
                request,
                execution: Some(exec.into()),
                access: AccessPolicy::all_gated(),
                grant: token.map(|token| GrantCheck {
                    token,
                    authority: &self.grants,
                }),
                targets,
                rules: RULES.into(),
            },
            now,
        )
    }

    /// Starts `prepared` and commits what it staged.
    fn start(&self, prepared: spear_runtime::PreparedProcess) -> spear_core::ToolResult {
        let report = prepared.start();
        let mut result = report.result;
        if let Some(staged) = &report.staged {
            let ws = self.runner.workspace();
            let fs = ws.fs().unwrap();
            let policy = spear_policy::CommandPolicy::new(
                Arc::clone(ws),
                spear_policy::PolicyConfig::new(None),
            );
            staged
                .commit(
                    ws,
                    &fs,
                    &PolicyJudge::new(&policy),
                    None,
                    &TrackedRules::new(),
                    &|| false,
                )
                .apply_to(&mut result);
        }
        result
    }

    fn exists(&self, rel: &str) -> bool {
        self.ws.join(rel).exists()
    }
}

fn grant_error(r: Result<spear_runtime::PreparedProcess, PrepareError>) -> GrantError {
    match r {
        Err(PrepareError::Grant(e)) => e,
        other => panic!("expected a grant failure, got {other:?}"),
    }
}

#[test]
fn a_refused_prepare_creates_no_process_and_a_used_grant_is_a_replay() {
    let c = Case::new();
    let script = "touch sub/marker";
    // No grant for a gated kind.
    let e = grant_error(c.prepare(
        c.request(script, ""),
        "s:1",
        None,
        vec![],
        SystemTime::now(),
    ));
    assert!(matches!(e, GrantError::Required { .. }), "{e}");
    // A kind the policy denies: no grant can give it.
    let token = c.approve(&c.request(script, ""), "s:1", &[]);
    let denied = c.runner.prepare(
        PrepareOptions {
            request: c.request(script, ""),
            execution: Some("s:1".into()),
            access: AccessPolicy::all_gated().with(AccessKind::WorkspaceWrite, Access::Deny),
            grant: Some(GrantCheck {
                token: &token,
                authority: &c.grants,
            }),
            targets: vec![],
            rules: RULES.into(),
        },
        SystemTime::now(),
    );
    assert!(matches!(
        grant_error(denied),
        GrantError::Denied {
            kind: AccessKind::WorkspaceWrite
        }
    ));
    assert_eq!(c.launches(), 0);
    assert!(!c.exists("sub/marker"));

    // Positive control: the approved command, prepared with its grant, starts and writes.
    let prepared = c
        .prepare(
            c.request(script, ""),
            "s:1",
            Some(&token),
            vec![],
            SystemTime::now(),
        )
        .unwrap();
    assert_eq!(
        prepared.effective_access().workspace_write,
        Effective::Granted
    );
    assert_eq!(prepared.effective_access().network, Effective::Withheld);
    assert!(prepared.grant().is_some());
    // Nothing ran yet.
    assert_eq!(c.launches(), 0);
    assert!(!c.exists("sub/marker"));
    let result = c.start(prepared);
    assert_eq!(result.status, ToolStatus::Ok, "{result:?}");
    assert!(c.launches() > 0);
    assert!(c.exists("sub/marker"));

    // The same grant again: a replay, and nothing new is spawned.
    let before = c.launches();
    let e = grant_error(c.prepare(
        c.request(script, ""),
        "s:1",
        Some(&token),
        vec![],
        SystemTime::now(),
    ));
    assert_eq!(e, GrantError::Replayed);
    assert_eq!(c.launches(), before);
}

#[test]
fn a_released_process_never_starts() {
    let c = Case::new();
    let request = c.request("touch sub/released", "");
    let token = c.approve(&request, "s:1", &[]);
    let mut prepared = c
        .prepare(request, "s:1", Some(&token), vec![], SystemTime::now())
        .unwrap();
    prepared.release();
    prepared.release();
    assert!(prepared.is_released());
    let result = c.start(prepared);
    assert_eq!(result.status, ToolStatus::Failed, "{result:?}");
    assert_eq!(c.launches(), 0);
    assert!(!c.exists("sub/released"));
}

/// One row per way a grant fails: what was approved, what is changed after the approval, and the
/// failure it must be. Every row asserts that nothing was spawned and nothing written.
#[test]
#[allow(clippy::too_many_lines, reason = "a table: one row per failure")]
fn every_grant_failure_from_a_real_change() {
    type Change = fn(&Case, &mut Run);
    struct Run {
        script: String,
        dir: String,
        exec: String,
        token: String,
        targets: Vec<PathBuf>,
        now: SystemTime,
    }
    let rows: [(&str, Change, &str); 8] = [
        (
            "a different byte of the command",
            |_, r| r.script = "touch sub/markex".into(),
            "other_command",
        ),
        (
            "another directory",
            |_, r| r.dir = "other".into(),
            "other_directory",
        ),
        (
            "the directory swapped for a link after the approval",
            |c, _| {
                std::fs::rename(c.ws.join("sub"), c.ws.join("sub.old")).unwrap();
                std::os::unix::fs::symlink("other", c.ws.join("sub")).unwrap();
            },
            "other_directory",
        ),
        (
            "a target that appeared after the approval",
            |c, _| std::fs::write(c.ws.join("sub/t.txt"), "planted").unwrap(),
            "target_changed",
        ),
        (
            "an expired clock",
            |_, r| r.now = SystemTime::now() + SESSION_GRANT_TTL + Duration::from_secs(1),
            "expired",
        ),
        (
            "a forged MAC",
            |_, r| {
                let (head, tag) = r.token.rsplit_once('.').unwrap();
                let flipped = if tag.starts_with('A') { "B" } else { "A" };
                r.token = format!("{head}.{flipped}{}", &tag[1..]);
            },
            "bad_mac",
        ),
        (
            "another execution",
            |_, r| r.exec = "s:2".into(),
            "other_execution",
        ),
        (
            "a replay",
            |c, r| {
                // Used once (by a command that writes nothing), then shown again.
                let first = c
                    .prepare(
                        c.request(&r.script, &r.dir),
                        &r.exec,
                        Some(&r.token),
                        r.targets.clone(),
                        r.now,
                    )
                    .unwrap();
                drop(first);
            },
            "replayed",
        ),
    ];
    for (what, change, want) in rows {
        let c = Case::new();
        let script = "touch marker-ran";
        let targets = vec![c.ws.join("sub/t.txt")];
        let approved = c.request(script, "sub");
        let token = c.approve(&approved, "s:1", &targets);
        let mut run = Run {
            script: script.into(),
            dir: "sub".into(),
            exec: "s:1".into(),
            token,
            targets,
            now: SystemTime::now(),
        };
        change(&c, &mut run);
        let result = c.prepare(
            c.request(&run.script, &run.dir),
            &run.exec,
            Some(&run.token),
            run.targets.clone(),
            run.now,
        );
        let e = grant_error(result);
        assert_eq!(e.as_str(), want, "{what}: {e}");
        assert_eq!(c.launches(), 0, "{what}: something was spawned");
        for dir in ["sub", "other", "sub.old"] {
            assert!(!c.exists(&format!("{dir}/marker-ran")), "{what}");
        }
    }
    // Positive control for the table: unchanged, the same approval runs and writes.
    let c = Case::new();
    let targets = vec![c.ws.join("sub/t.txt")];
    let approved = c.request("touch marker-ran", "sub");
    let token = c.approve(&approved, "s:1", &targets);
    let prepared = c
        .prepare(
            c.request("touch marker-ran", "sub"),
            "s:1",
            Some(&token),
            targets,
            SystemTime::now(),
        )
        .unwrap();
    assert_eq!(c.start(prepared).status, ToolStatus::Ok);
    assert!(c.exists("sub/marker-ran"));
}

#[test]
fn an_invalid_command_or_directory_is_refused_before_anything() {
    let c = Case::new();
    for (script, dir, exec) in [
        ("   ", "", "s:1"),
        ("touch a\0b", "", "s:1"),
        ("true", "", "bad id with spaces"),
    ] {
        let r = c.runner.prepare(
            PrepareOptions {
                request: c.request(script, dir),
                execution: Some(exec.into()),
                access: AccessPolicy::all_gated(),
                grant: None,
                targets: vec![],
                rules: RULES.into(),
            },
            SystemTime::now(),
        );
        assert!(
            matches!(r, Err(PrepareError::Invalid(_))),
            "{script:?}: {r:?}"
        );
    }
    let outside = c.runner.binding(
        &{
            let mut r = c.request("true", "");
            r.workdir = Some(Path::new("/").to_path_buf());
            r
        },
        None,
        &[],
        RULES,
    );
    assert!(
        matches!(outside, Err(PrepareError::Directory { .. })),
        "{outside:?}"
    );
    assert_eq!(c.launches(), 0);
}

/// A grant binds the guarantees its command requires; on a host that cannot give one, the grant
/// fails naming it, and nothing is spawned. Approved without the requirement, the same command
/// with it is another sandbox.
#[test]
fn a_grant_needs_the_guarantees_it_binds() {
    use spear_core::{Guarantee, GuaranteeSet};
    // Limits off: this sandbox gives no resource limits.
    let c = Case::with(|s| s.cgroup = None);
    let requiring = |mut r: CommandRequest| {
        r.profile = r
            .profile
            .with_required(GuaranteeSet::of(&[Guarantee::ResourceLimits]));
        r
    };
    let request = requiring(c.request("touch sub/limited", ""));
    let token = c.approve(&request, "s:1", &[]);
    let e = grant_error(c.prepare(request, "s:1", Some(&token), vec![], SystemTime::now()));
    assert_eq!(e.as_str(), "guarantee_unavailable", "{e}");
    assert!(e.to_string().contains("resource_limits"), "{e}");
    assert_eq!(c.launches(), 0);
    assert!(!c.exists("sub/limited"));
    // Approved without a requirement (one every host gives), shown with it: another sandbox.
    let plain = c.request("touch sub/limited", "");
    let token = c.approve(&plain, "s:1", &[]);
    let mut required = c.request("touch sub/limited", "");
    required.profile = required
        .profile
        .with_required(GuaranteeSet::of(&[Guarantee::EnvironmentScrubbed]));
    let e = grant_error(c.prepare(required, "s:1", Some(&token), vec![], SystemTime::now()));
    assert_eq!(e.as_str(), "other_profile", "{e}");
    assert_eq!(c.launches(), 0);
    assert!(!c.exists("sub/limited"));
    // Positive control: the grant for the plain command runs it.
    let prepared = c
        .prepare(plain, "s:1", Some(&token), vec![], SystemTime::now())
        .unwrap();
    assert_eq!(c.start(prepared).status, ToolStatus::Ok);
    assert!(c.exists("sub/limited"));
}

/// Issue 31, part 5: a grant issued for a command in one sandbox is refused in every wider one,
/// with nothing spawned and nothing written: each row widens one thing the operator's
/// configuration or flags decide (a variable passed by name or by a glob, a host value passed,
/// a root outside the workspace, a host path read, the network's egress allowances, each limit,
/// rules that protect less). Positive control: the same grant, in the sandbox it was issued for,
/// runs once (and a second time is a replay).
#[test]
#[allow(clippy::too_many_lines, reason = "a table: one row per widening")]
fn a_grant_never_runs_in_a_wider_sandbox() {
    use spear_sandbox::EnvPass;
    type Widen = fn(&mut RunnerConfig);
    struct Row {
        what: &'static str,
        roots: bool,
        widen: Widen,
        networked: bool,
        host_read: bool,
        rules: &'static str,
    }
    let row = |what, widen: Widen| Row {
        what,
        roots: false,
        widen,
        networked: false,
        host_read: false,
        rules: RULES,
    };
    let rows = vec![
        row("--env NAME of a secret", |c| {
            c.host_env.push(("APP_TOKEN".into(), "s3cr3t-value".into()));
            c.env_pass.push(EnvPass::parse("APP_TOKEN").unwrap());
        }),
        row("[env] pass APP_*", |c| {
            c.host_env.push(("APP_MODE".into(), "dev".into()));
            c.env_pass.push(EnvPass::parse("APP_*").unwrap());
        }),
        row("another value of a variable the allowlist copies", |c| {
            c.host_env.push(("LANG".into(), "de_DE.UTF-8".into()));
        }),
        row("another home directory", |c| c.home.push("elsewhere")),
        row("more memory", |c| {
            c.sandbox.cgroup.as_mut().unwrap().memory_max_bytes *= 4;
        }),
        row("more tasks", |c| {
            c.sandbox.cgroup.as_mut().unwrap().tasks_max *= 4;
        }),
        row("more CPU", |c| {
            c.sandbox.cgroup.as_mut().unwrap().cpu_percent *= 4;
        }),
        row("a longer timeout", |c| c.default_timeout *= 4),
        row("a larger output cap", |c| c.output_cap *= 4),
        row("more changes committed", |c| c.commit_max_changes *= 4),
        row("a larger /tmp", |c| c.tmpfs.tmp *= 4),
        row("more open files", |c| c.sandbox.rlimits.open_files *= 4),
        Row {
            roots: true,
            ..row("a root outside the workspace", |_| {})
        },
        Row {
            host_read: true,
            ..row("a host path read", |_| {})
        },
        Row {
            networked: true,
            ..row("an egress allowance", |c| {
                c.sandbox
                    .network
                    .allow
                    .push("203.0.113.0/24".parse().unwrap());
            })
        },
        Row {
            rules: "",
            ..row("rules that protect less", |_| {})
        },
    ];
    let c = Case::new();
    let outside = c.base.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let read = c.base.join("data");
    std::fs::create_dir_all(&read).unwrap();
    let request = |networked: bool| {
        let mut r = c.request("touch sub/granted", "");
        if networked {
            r.profile = common::networked();
        }
        r
    };
    let token = c.approve(&request(false), "s:1", &[]);
    let networked_token = c.approve(&request(true), "s:1", &[]);
    for r in &rows {
        let roots = if r.roots {
            vec![outside.clone()]
        } else {
            Vec::new()
        };
        let (runner, spawner) = c.other_runner(roots, r.widen);
        let mut wider = request(r.networked);
        if r.host_read {
            wider.profile = common::reading_host(&wider.profile, vec![read.clone()]);
        }
        let result = runner.prepare(
            PrepareOptions {
                request: wider,
                execution: Some("s:1".into()),
                access: AccessPolicy::all_gated(),
                grant: Some(GrantCheck {
                    token: if r.networked {
                        &networked_token
                    } else {
                        &token
                    },
                    authority: &c.grants,
                }),
                targets: vec![],
                rules: r.rules.into(),
            },
            SystemTime::now(),
        );
        let e = grant_error(result);
        assert_eq!(e.as_str(), "other_profile", "{}: {e}", r.what);
        assert_eq!(spawner.launches(), 0, "{}", r.what);
        assert!(!c.exists("sub/granted"), "{}", r.what);
        assert!(
            !e.to_string().contains("s3cr3t-value"),
            "{}: a value named: {e}",
            r.what
        );
    }
    // The rows' positive control: another runner of the same configuration (built as the rows'
    // are) holds a grant for the same command.
    let control = c.approve(&request(false), "s:1", &[]);
    let (runner, _) = c.other_runner(Vec::new(), |_| {});
    let mut prepared = runner
        .prepare(
            PrepareOptions {
                request: request(false),
                execution: Some("s:1".into()),
                access: AccessPolicy::all_gated(),
                grant: Some(GrantCheck {
                    token: &control,
                    authority: &c.grants,
                }),
                targets: vec![],
                rules: RULES.into(),
            },
            SystemTime::now(),
        )
        .unwrap();
    prepared.release();
    // The networked grant holds in its own sandbox (prepared, not started: nothing widened).
    let mut prepared = c
        .prepare(
            request(true),
            "s:1",
            Some(&networked_token),
            vec![],
            SystemTime::now(),
        )
        .unwrap();
    prepared.release();
    // Positive control: in the sandbox it was issued for, the grant runs, once.
    let prepared = c
        .prepare(
            request(false),
            "s:1",
            Some(&token),
            vec![],
            SystemTime::now(),
        )
        .unwrap();
    assert_eq!(c.start(prepared).status, ToolStatus::Ok);
    assert!(c.exists("sub/granted"));
    let e = grant_error(c.prepare(
        request(false),
        "s:1",
        Some(&token),
        vec![],
        SystemTime::now(),
    ));
    assert_eq!(e, GrantError::Replayed);
}
