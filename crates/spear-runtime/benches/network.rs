//! A networked `true` against a closed one, through the same `CommandRunner`: the cost of the
//! network path (slirp4netns attached through pinned namespaces, the egress rules loaded, torn
//! down and confirmed). Prints both medians and their ratio, twice: back to back, and with a
//! pause of `SPEAR_BENCH_PAUSE_MS` (default 50) before each command, as an agent's commands come
//! (a model answers between them): the kernel frees a networked command's tap device after an RCU
//! grace period, which spear leaves to a helper off the command's path, and a command started
//! within those milliseconds could wait for it. Both figures are printed so that it shows if so.

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
    let pause = Duration::from_millis(
        std::env::var("SPEAR_BENCH_PAUSE_MS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(50),
    );
    for (label, pause) in [("back to back", Duration::ZERO), ("paced", pause)] {
        let (mut c, mut n) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            std::thread::sleep(pause);
            let t = Instant::now();
            runner.run(&request(&closed));
            c.push(t.elapsed());
            std::thread::sleep(pause);
            let t = Instant::now();
            let r = runner.run(&request(&networked));
            n.push(t.elapsed());
            assert!(r.reason.is_none(), "{r:?}");
        }
        let (c, n) = (median(c), median(n));
        println!(
            "{label} ({} ms before each): closed /bin/true median {:7.2} ms, networked median {:7.2} ms  ({runs} runs each); ratio of medians {:.2}x (aim: at most 3x)",
            pause.as_millis(),
            c.as_secs_f64() * 1e3,
            n.as_secs_f64() * 1e3,
            n.as_secs_f64() / c.as_secs_f64()
        );
    }
}
