//! A networked `true` against a closed one, through the same `CommandRunner`: the cost of the
//! network path (slirp4netns attached through pinned namespaces, the egress rules loaded, torn
//! down and confirmed). Prints both medians and their ratio.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use spear_core::{Capability, CapabilitySet, ExecutionProfile};
use spear_runtime::{CommandLine, CommandRequest, CommandRunner, RunnerConfig};
use spear_workspace::{Workspace, WorkspaceConfig};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::var("SPEAR_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let dir = tempfile::tempdir().unwrap();
    let mut wc = WorkspaceConfig::new(dir.path());
    wc.single_root = true;
    let ws = Arc::new(Workspace::open(&wc).unwrap());
    let runner = CommandRunner::new(ws, RunnerConfig::from_host());
    let closed = ExecutionProfile::from_granted(
        CapabilitySet::of(&[Capability::FilesystemRead]),
        Vec::new(),
    );
    let networked = ExecutionProfile::from_granted(
        CapabilitySet::of(&[Capability::FilesystemRead, Capability::Network]),
        Vec::new(),
    );
    let request = |p: &ExecutionProfile| {
        CommandRequest::new(CommandLine::Argv(vec!["/bin/true".into()]), p.clone())
    };
    for p in [&closed, &networked] {
        let r = runner.run(&request(p));
        assert!(r.reason.is_none(), "warm-up failed: {r:?}");
    }
    let (mut c, mut n) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        runner.run(&request(&closed));
        c.push(t.elapsed());
        let t = Instant::now();
        let r = runner.run(&request(&networked));
        n.push(t.elapsed());
        assert!(r.reason.is_none(), "{r:?}");
    }
    let (c, n) = (median(c), median(n));
    println!(
        "closed   /bin/true (CommandRunner):  median {:7.2} ms  ({runs} runs)",
        c.as_secs_f64() * 1e3
    );
    println!(
        "networked /bin/true (CommandRunner): median {:7.2} ms  ({runs} runs)",
        n.as_secs_f64() * 1e3
    );
    println!(
        "ratio of medians: {:.2}x (aim: at most 3x)",
        n.as_secs_f64() / c.as_secs_f64()
    );
}
