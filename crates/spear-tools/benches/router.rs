//! Calls per second through the router: `read_file` and `write_file` on a small file, with every
//! store on (audit log, result store, checkpoints), beside the bare `WorkspaceFs` operation they
//! wrap, measured in the same run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::format_collect)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use spear_core::ExecutionMode;
use spear_policy::{CommandPolicy, PolicyConfig, TargetRules};
use spear_runtime::audit::AuditLogger;
use spear_runtime::checkpoint::CheckpointStore;
use spear_runtime::result_store::ResultStore;
use spear_runtime::{CommandRunner, RunnerConfig};
use spear_tools::{RouterConfig, RouterStores, ToolRegistry, ToolRouter};
use spear_workspace::{Workspace, WorkspaceConfig};

fn per_second(budget: Duration, mut f: impl FnMut(usize)) -> (f64, usize) {
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

    let workspace = Arc::new(Workspace::open(&WorkspaceConfig::new(&ws_dir)).unwrap());
    let policy = Arc::new(CommandPolicy::new(
        Arc::clone(&workspace),
        PolicyConfig::new(Some(base.join("home"))),
    ));
    let runner = Arc::new(CommandRunner::new(
        Arc::clone(&workspace),
        RunnerConfig::from_host(TargetRules::default().protected_patterns()),
    ));
    let config = RouterConfig::new(ExecutionMode::Auto);
    let stores = RouterStores {
        audit: Some(AuditLogger::open(&state.join("audit.jsonl")).unwrap()),
        results: Some(ResultStore::open(&state.join("results"), &config.session).unwrap()),
        checkpoints: Some(CheckpointStore::open(&state.join("checkpoints")).unwrap()),
    };
    let router = ToolRouter::new(ToolRegistry::coding(), policy, runner, config, stores).unwrap();
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
    println!(
        "read_file   through the router: {read:>9.0} calls/s   bare WorkspaceFs::read:  {bare_read:>9.0}/s   ratio {:.2}x",
        bare_read / read
    );
    println!(
        "write_file  through the router: {write:>9.0} calls/s   bare WorkspaceFs::write: {bare_write:>9.0}/s   ratio {:.2}x",
        bare_write / write
    );
}
