//! Calls per second through the router: `read_file` and `write_file` on a small file, with every
//! store on (audit log, result store, checkpoints), beside the bare `WorkspaceFs` operation they
//! wrap; and a command read-only (SAFE) and writable (AUTO: its writes staged, judged and
//! committed, in a workspace of 2,000 files), each beside the bare `CommandRunner`, all measured
//! in the same run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::format_collect)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use spear_core::ExecutionMode;
use spear_policy::{CommandPolicy, PolicyConfig};
use spear_runtime::AuditLogger;
use spear_runtime::ResultStore;
use spear_runtime::{CheckpointStore, StoreQuota};
use spear_runtime::{CommandRunner, RunnerConfig};
use spear_tools::{RouterConfig, RouterStores, ToolRegistry, ToolRouter};
use spear_workspace::{Workspace, WorkspaceConfig};

/// Calls per second of `f` over `budget`, after one call that is not counted (the first call of a
/// kind warms caches: the sandbox preflight).
fn per_second(budget: Duration, mut f: impl FnMut(usize)) -> (f64, usize) {
    f(usize::MAX);
    let started = Instant::now();
    let mut n = 0;
    while started.elapsed() < budget {
        f(n);
        n += 1;
    }
    #[allow(clippy::cast_precision_loss)]
    let rate = n as f64 / started.elapsed().as_secs_f64();
    (rate, n)
}

/// The workspace at `ws_dir`, a router in AUTO with every store on (under `state`) and one in SAFE
/// with none.
fn routers(
    base: &std::path::Path,
    ws_dir: &std::path::Path,
    state: &std::path::Path,
    quota: Option<StoreQuota>,
) -> (Arc<Workspace>, ToolRouter, ToolRouter) {
    let workspace = Arc::new(Workspace::open(&WorkspaceConfig::new(ws_dir)).unwrap());
    let policy = Arc::new(CommandPolicy::new(
        Arc::clone(&workspace),
        PolicyConfig::new(Some(base.join("home"))),
    ));
    let runner = Arc::new(CommandRunner::new(
        Arc::clone(&workspace),
        RunnerConfig::from_host(),
    ));
    let config = RouterConfig::new(ExecutionMode::Auto);
    let stores = RouterStores {
        audit: Some(AuditLogger::open(&state.join("audit.jsonl")).unwrap()),
        results: Some(ResultStore::open(&state.join("results"), &config.session).unwrap()),
        checkpoints: Some({
            let store = CheckpointStore::open(&state.join("checkpoints")).unwrap();
            match quota {
                Some(q) => store.with_quota(q),
                None => store,
            }
        }),
    };
    let router = ToolRouter::new(
        ToolRegistry::coding(),
        Arc::clone(&policy),
        Arc::clone(&runner),
        config,
        stores,
    )
    .unwrap();
    let safe = ToolRouter::new(
        ToolRegistry::coding(),
        policy,
        runner,
        RouterConfig::new(ExecutionMode::Safe),
        RouterStores::default(),
    )
    .unwrap();
    (workspace, router, safe)
}

/// A workspace of some size: 2,000 files in 40 directories, each `text` with a header.
fn fill_workspace(ws_dir: &std::path::Path, text: &str) {
    for d in 0..40 {
        let dir = ws_dir.join(format!("src/m{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..50 {
            std::fs::write(dir.join(format!("f{f}.rs")), format!("// {d} {f}\n{text}")).unwrap();
        }
    }
}

/// A request for the bare runner: `script`, granted `caps`.
fn runner_request(script: &str, caps: &[spear_core::Capability]) -> spear_runtime::CommandRequest {
    spear_runtime::CommandRequest::new(
        spear_runtime::CommandLine::Script(script.into()),
        spear_core::ExecutionProfile::from_granted(spear_core::CapabilitySet::of(caps), Vec::new()),
    )
}

/// `write_file` of `turns.txt` in a turn of its own.
fn new_turn_write(r: &ToolRouter, i: usize, text: &str) {
    r.begin_turn(Some(&format!("t{i}"))).unwrap();
    let e = r.call(
        "write_file",
        json!({"path": "turns.txt", "content": format!("{i}\n{text}")}),
    );
    assert!(e.is_ok(), "{e:?}");
}

#[allow(clippy::too_many_lines)] // One benchmark after another, printed together.
fn main() {
    let ms: u64 = std::env::var("SPEAR_BENCH_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let budget = Duration::from_millis(ms);
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let ws_dir = base.join("ws");
    let state = base.join("state");
    std::fs::create_dir_all(&ws_dir).unwrap();
    let text: String = (0..100)
        .map(|i| format!("line {i} of a small source file\n"))
        .collect();
    std::fs::write(ws_dir.join("file.txt"), &text).unwrap();

    // The checkpoint store held to the default quotas, as `spear mcp` holds it.
    let defaults = spear_policy::quotas::Quotas::default();
    let quota = StoreQuota {
        max_bytes: defaults.checkpoints_bytes,
        all_max_bytes: defaults.checkpoints_all_bytes,
        free_floor_bytes: defaults.free_floor_bytes,
    };
    let (workspace, router, safe) = routers(&base, &ws_dir, &state, Some(quota));
    // The same without a quota, for the cost of keeping to one.
    let (_, unlimited, _) = routers(&base, &ws_dir, &base.join("state-unlimited"), None);
    let fs = workspace.fs().unwrap();

    let (bare_read, _) = per_second(budget, |_| {
        let p = workspace.resolve("file.txt").unwrap();
        std::hint::black_box(fs.read(&p, 1 << 20).unwrap());
    });
    let (read, _) = per_second(budget, |_| {
        let e = router.call("read_file", json!({"path": "file.txt"}));
        assert!(e.is_ok());
    });
    let (bare_write, _) = per_second(budget, |i| {
        let p = workspace.resolve("bare.txt").unwrap();
        fs.write(&p, format!("{i}\n{text}").as_bytes()).unwrap();
    });
    let (write, _) = per_second(budget, |i| {
        let e = router.call(
            "write_file",
            json!({"path": "w.txt", "content": format!("{i}\n{text}")}),
        );
        assert!(e.is_ok(), "{e:?}");
    });
    // A new turn each call: every write stores a new checkpoint blob (the quota's slow path).
    let (turns_unlimited, _) = per_second(budget, |i| new_turn_write(&unlimited, i, &text));
    let (turns_quota, _) = per_second(budget, |i| new_turn_write(&router, i, &text));
    fill_workspace(&ws_dir, &text);
    let runner_only = CommandRunner::new(Arc::clone(&workspace), RunnerConfig::from_host());
    let request = runner_request("true", &[spear_core::Capability::FilesystemRead]);
    let (bare_run, _) = per_second(budget, |_| {
        assert_eq!(runner_only.run(&request).status, spear_core::ToolStatus::Ok);
    });
    let (safe_run, _) = per_second(budget, |_| {
        let e = safe.call("terminal", json!({"command": "true"}));
        assert!(e.is_ok(), "{e:?}");
    });
    // A program the classifier cannot know: AUTO runs it writable, so the router commits what it
    // staged; beside the same program through the bare runner, writable (staged) too.
    std::fs::write(ws_dir.join("noop.sh"), "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(
        ws_dir.join("noop.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let writable = runner_request(
        "./noop.sh",
        &[
            spear_core::Capability::FilesystemRead,
            spear_core::Capability::WorkspaceWrite,
            spear_core::Capability::ShellComplex,
        ],
    );
    let (bare_writable, _) = per_second(budget, |_| {
        assert_eq!(
            runner_only.run(&writable).status,
            spear_core::ToolStatus::Ok
        );
    });
    let first = Instant::now();
    let e = router.call("terminal", json!({"command": "./noop.sh"}));
    assert!(e.is_ok(), "{e:?}");
    let first = first.elapsed();
    let (auto_run, _) = per_second(budget, |_| {
        let e = router.call("terminal", json!({"command": "./noop.sh"}));
        assert!(e.is_ok(), "{e:?}");
        assert!(e.result.changed_paths.is_empty());
    });
    println!(
        "read_file   through the router: {read:>9.0} calls/s   bare WorkspaceFs::read:  {bare_read:>9.0}/s   ratio {:.2}x",
        bare_read / read
    );
    println!(
        "write_file  through the router: {write:>9.0} calls/s   bare WorkspaceFs::write: {bare_write:>9.0}/s   ratio {:.2}x",
        bare_write / write
    );
    println!(
        "write_file, a new turn each (a new checkpoint blob each): {turns_quota:>7.0} calls/s with the default quotas   {turns_unlimited:>7.0}/s without   ratio {:.2}x",
        turns_unlimited / turns_quota
    );
    println!(
        "terminal true, SAFE:            {safe_run:>9.1} calls/s   bare CommandRunner:      {bare_run:>9.1}/s   ratio {:.2}x",
        bare_run / safe_run
    );
    println!(
        "terminal ./noop.sh, AUTO (writable, committed, 2,000 files): {auto_run:>7.1} calls/s   bare writable CommandRunner: {bare_writable:>7.1}/s   ratio {:.2}x",
        bare_writable / auto_run
    );
    println!(
        "  the session's first writable command: {:.0} ms",
        first.as_secs_f64() * 1000.0
    );
}
