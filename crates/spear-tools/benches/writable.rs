//! A writable command's cost as the workspace grows: `terminal {"command": "date +%s%N > a"}` through
//! the router in AUTO (staged, judged, committed, checkpointed, audited) in workspaces of 1,000,
//! 10,000 and 100,000 files, beside bare bwrap running the same command with the workspace bound
//! writable, measured in the same run. Prints medians and each size's difference from the
//! smallest (aim: within 20 ms). `SPEAR_BENCH_SIZES` (comma-separated) and `SPEAR_BENCH_RUNS`
//! change the sizes and the runs per size.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use spear_core::ExecutionMode;
use spear_policy::{CommandPolicy, PolicyConfig};
use spear_runtime::AuditLogger;
use spear_runtime::CheckpointStore;
use spear_runtime::ResultStore;
use spear_runtime::{CommandRunner, RunnerConfig};
use spear_tools::{RouterConfig, RouterStores, ToolRegistry, ToolRouter};
use spear_workspace::{Workspace, WorkspaceConfig};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `n` small files in directories of 100, and a `.gitignore` for a build tree.
fn fill(ws: &Path, n: usize) {
    for i in 0..n {
        let dir = ws.join(format!("src/d{}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        std::fs::write(dir.join(format!("f{i}.rs")), format!("// file {i}\n")).unwrap();
    }
    std::fs::write(ws.join(".gitignore"), "/target\n").unwrap();
}

fn bare_touch(ws: &Path) -> Duration {
    let ws = ws.to_str().unwrap();
    let t = Instant::now();
    let status = Command::new("bwrap")
        .args(spear_testkit::baseline::BARE_BWRAP)
        .args(["--bind", ws, ws, "--chdir", ws, "touch", "a"])
        .status()
        .unwrap();
    assert!(status.success());
    t.elapsed()
}

fn main() {
    let sizes: Vec<usize> = std::env::var("SPEAR_BENCH_SIZES").ok().map_or_else(
        || vec![1_000, 10_000, 100_000],
        |s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
    );
    let runs: usize = std::env::var("SPEAR_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let mut smallest: Option<f64> = None;
    for n in sizes {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().canonicalize().unwrap();
        let ws_dir = tmp.join("ws");
        let state = tmp.join("state");
        std::fs::create_dir_all(&ws_dir).unwrap();
        fill(&ws_dir, n);
        let workspace = Arc::new(Workspace::open(&WorkspaceConfig::new(&ws_dir)).unwrap());
        let policy = Arc::new(CommandPolicy::new(
            Arc::clone(&workspace),
            PolicyConfig::new(Some(tmp.join("home"))),
        ));
        let mut rc = RunnerConfig::from_host();
        rc.staging = vec![state.join("staging")];
        let runner = Arc::new(CommandRunner::new(Arc::clone(&workspace), rc));
        let config = RouterConfig::new(ExecutionMode::Auto);
        let stores = RouterStores {
            audit: Some(AuditLogger::open(&state.join("audit.jsonl")).unwrap()),
            results: Some(ResultStore::open(&state.join("results"), &config.session).unwrap()),
            checkpoints: Some(CheckpointStore::open(&state.join("checkpoints")).unwrap()),
        };
        let router =
            ToolRouter::new(ToolRegistry::coding(), policy, runner, config, stores).unwrap();
        let call = || {
            let t = Instant::now();
            let e = router.call("terminal", json!({"command": "date +%s%N > a"}));
            assert!(e.is_ok(), "{e:?}");
            assert_eq!(e.result.changed_paths, ["a"], "{e:?}");
            t.elapsed()
        };
        let first = call();
        bare_touch(&ws_dir);
        let (mut ours, mut bare) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            bare.push(bare_touch(&ws_dir));
            ours.push(call());
        }
        let (ours, bare) = (ms(median(ours)), ms(median(bare)));
        let delta = smallest.map_or(String::new(), |s| {
            format!("  {:+.1} ms from the smallest", ours - s)
        });
        smallest.get_or_insert(ours);
        println!(
            "{n:>7} files: terminal `date > a` (AUTO, staged, committed) median {ours:6.1} ms   bare bwrap `date > a` {bare:5.1} ms   first call {:6.1} ms{delta}",
            ms(first)
        );
    }
}
