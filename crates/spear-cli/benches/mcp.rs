//! The MCP layer's cost: `read_file` and `terminal true` (SAFE) through `spear mcp` (the release
//! binary, over stdio, driven by one rmcp client), each beside the same call made in process
//! through a `ToolRouter` with the same stores on (audit log, result store, checkpoints); and the
//! server's resident memory after 1,000 calls.
//!
//! Prints calls per second, the median and 99th percentile round trip, and the ratio of the
//! in-process rate to the MCP rate. `SPEAR_BENCH_MS` sets the time per measurement.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::format_collect)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, model::JsonObject};
use serde_json::{Value, json};
use spear_core::ExecutionMode;
use spear_policy::{CommandPolicy, PolicyConfig};
use spear_runtime::AuditLogger;
use spear_runtime::CheckpointStore;
use spear_runtime::ResultStore;
use spear_runtime::{CommandRunner, RunnerConfig};
use spear_testkit::process;
use spear_tools::{RouterConfig, RouterStores, ToolRegistry, ToolRouter};
use spear_workspace::{Workspace, WorkspaceConfig};

/// A call that takes longer than this is a hung server: the bench stops.
const DEADLINE: Duration = Duration::from_secs(60);

/// How many calls the resident memory is read after.
const CALLS_FOR_MEMORY: usize = 1000;

/// The round trips of a run: how many calls per second, and their median and 99th percentile.
struct Timing {
    rate: f64,
    median: Duration,
    p99: Duration,
}

impl Timing {
    fn of(mut samples: Vec<Duration>, elapsed: Duration) -> Timing {
        samples.sort_unstable();
        #[allow(clippy::cast_precision_loss)]
        let rate = samples.len() as f64 / elapsed.as_secs_f64();
        let at = |q: f64| {
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let i = ((samples.len() - 1) as f64 * q).round() as usize;
            samples[i]
        };
        Timing {
            rate,
            median: at(0.5),
            p99: at(0.99),
        }
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Times MCP calls and in-process calls of one kind over `budget`, interleaved in blocks so that
/// both see the same machine; one call of each first, not counted (the first call of a kind warms
/// caches: the sandbox preflight, the result store).
async fn time_both(
    budget: Duration,
    client: &Client,
    router: &ToolRouter,
    tool: &'static str,
    args: &Value,
) -> (Timing, Timing) {
    const BLOCK: usize = 20;
    let in_process = || {
        let e = router.call(tool, args.clone());
        assert!(e.is_ok(), "{e:?}");
    };
    client.call(tool, args).await;
    in_process();
    let (mut mcp, mut bare) = (Vec::new(), Vec::new());
    let (mut mcp_time, mut bare_time) = (Duration::ZERO, Duration::ZERO);
    while mcp_time + bare_time < budget * 2 {
        let block = Instant::now();
        for _ in 0..BLOCK {
            let t = Instant::now();
            client.call(tool, args).await;
            mcp.push(t.elapsed());
        }
        mcp_time += block.elapsed();
        let block = Instant::now();
        for _ in 0..BLOCK {
            let t = Instant::now();
            in_process();
            bare.push(t.elapsed());
        }
        bare_time += block.elapsed();
    }
    (Timing::of(mcp, mcp_time), Timing::of(bare, bare_time))
}

/// The pause before each run of [`session_against_bwrap`].
const PACE: Duration = Duration::from_millis(50);

/// The session ratio: `terminal true` through one router (the session's: its `/tmp` and home kept
/// between commands) beside bare bwrap starting `/bin/true`, interleaved one by one for `budget`;
/// the medians. Paced: each run starts [`PACE`] after the previous one ended, as a model's calls
/// come, so that what the session does between calls (setting the next sandbox up) is neither
/// charged to the next bare run on the shared core nor skipped by a call that comes too soon.
fn session_against_bwrap(budget: Duration, router: &ToolRouter) -> (Duration, Duration) {
    let run_true = json!({"command": "true"});
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let started = Instant::now();
    while started.elapsed() < budget * 2 {
        std::thread::sleep(PACE);
        let t = Instant::now();
        let e = router.call("terminal", run_true.clone());
        ours.push(t.elapsed());
        assert!(e.is_ok(), "{e:?}");
        std::thread::sleep(PACE);
        let t = Instant::now();
        let status = std::process::Command::new("bwrap")
            .args(spear_testkit::baseline::BARE_BWRAP)
            .arg("/bin/true")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        theirs.push(t.elapsed());
        assert!(status.success());
    }
    (
        Timing::of(ours, budget).median,
        Timing::of(theirs, budget).median,
    )
}

/// One rmcp client of one `spear mcp` process.
struct Client {
    service: RunningService<RoleClient, ()>,
    pid: u32,
}

impl Client {
    /// `spear mcp --safe --workspace WS`, with HOME and spear's state beside the workspace.
    async fn start(ws: &Path, base: &Path) -> Client {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_spear"));
        cmd.args(["mcp", "--safe", "--workspace"])
            .arg(ws)
            .current_dir(base)
            .env("HOME", base.join("home"))
            .env("XDG_STATE_HOME", base.join("server-state"))
            .env_remove("XDG_CONFIG_HOME");
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::null())
            .spawn()
            .expect("spear mcp starts");
        let pid = transport.id().expect("the server's pid");
        let service = tokio::time::timeout(DEADLINE, ().serve(transport))
            .await
            .expect("the session starts in time")
            .expect("the session starts");
        Client { service, pid }
    }

    /// Calls `tool` and checks that it succeeded.
    async fn call(&self, tool: &'static str, args: &Value) {
        let args: JsonObject = args.as_object().cloned().unwrap();
        let result = tokio::time::timeout(
            DEADLINE,
            self.service
                .call_tool(CallToolRequestParams::new(tool).with_arguments(args)),
        )
        .await
        .expect("the server answers in time")
        .expect("a result");
        assert_eq!(result.is_error, Some(false), "{result:?}");
    }

    /// The server's memory as `read` reads it in KiB (`process::rss_kib`, `peak_rss_kib`), in
    /// MiB.
    fn memory(&self, read: fn(u32) -> u64) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let kib = read(self.pid) as f64;
        kib / 1024.0
    }
}

/// A router as `spear mcp --safe` opens one: SAFE, every store on.
fn in_process_router(ws_dir: &Path, base: &Path) -> ToolRouter {
    let state = base.join("router-state");
    let workspace = Arc::new(Workspace::open(&WorkspaceConfig::new(ws_dir)).unwrap());
    let policy = Arc::new(CommandPolicy::new(
        Arc::clone(&workspace),
        PolicyConfig::new(Some(base.join("home"))),
    ));
    let mut runner_config = RunnerConfig::from_host();
    runner_config.home = base.join("home");
    // As in `spear mcp`: the session's /tmp and home are kept between its commands.
    runner_config.scratch = spear_runtime::ScratchMode::Session;
    runner_config.sandbox.warm = true;
    let runner = Arc::new(CommandRunner::new(workspace, runner_config));
    let config = RouterConfig::new(ExecutionMode::Safe);
    let stores = RouterStores {
        audit: Some(AuditLogger::open(&state.join("audit.jsonl")).unwrap()),
        results: Some(ResultStore::open(&state.join("results"), &config.session).unwrap()),
        checkpoints: Some(CheckpointStore::open(&state.join("checkpoints")).unwrap()),
    };
    ToolRouter::new(ToolRegistry::coding(), policy, runner, config, stores).unwrap()
}

fn main() {
    let ms: u64 = std::env::var("SPEAR_BENCH_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let budget = Duration::from_millis(ms);
    let dir = tempfile::tempdir().unwrap();
    let base: PathBuf = dir.path().canonicalize().unwrap();
    let ws_dir = base.join("ws");
    std::fs::create_dir_all(&ws_dir).unwrap();
    std::fs::create_dir_all(base.join("home")).unwrap();
    let text: String = (0..100)
        .map(|i| format!("line {i} of a small source file\n"))
        .collect();
    std::fs::write(ws_dir.join("file.txt"), &text).unwrap();
    let read = json!({"path": "file.txt"});
    let run_true = json!({"command": "true"});

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = runtime.block_on(Client::start(&ws_dir, &base));
    let rss_start = client.memory(process::rss_kib);
    runtime.block_on(async {
        for i in 0..CALLS_FOR_MEMORY {
            if i % 2 == 0 {
                client.call("read_file", &read).await;
            } else {
                client.call("terminal", &run_true).await;
            }
        }
    });
    let rss_after = client.memory(process::rss_kib);

    let router = in_process_router(&ws_dir, &base);
    let (mcp_read, bare_read) =
        runtime.block_on(time_both(budget, &client, &router, "read_file", &read));
    let (mcp_true, bare_true) =
        runtime.block_on(time_both(budget, &client, &router, "terminal", &run_true));
    let (session, bwrap) = session_against_bwrap(budget, &router);
    let rss_end = client.memory(process::rss_kib);
    let hwm = client.memory(process::peak_rss_kib);
    runtime
        .block_on(async { tokio::time::timeout(DEADLINE, client.service.cancel()).await })
        .expect("the session ends in time")
        .unwrap();

    for (what, mcp, bare) in [
        ("read_file          ", &mcp_read, &bare_read),
        ("terminal true, SAFE", &mcp_true, &bare_true),
    ] {
        println!(
            "{what} through MCP: {:>8.0} calls/s, median {:>7.1} µs, p99 {:>7.1} µs   in-process ToolRouter: {:>8.0}/s, median {:>7.1} µs   ratio {:.2}x (+{:.1} µs a call)",
            mcp.rate,
            micros(mcp.median),
            micros(mcp.p99),
            bare.rate,
            micros(bare.median),
            bare.rate / mcp.rate,
            micros(mcp.median) - micros(bare.median),
        );
    }
    println!(
        "session: terminal true (SAFE) through one router: median {:.2} ms   bare bwrap /bin/true: median {:.2} ms   ratio {:.2}x (aim: at most 1.0x)",
        micros(session) / 1e3,
        micros(bwrap) / 1e3,
        session.as_secs_f64() / bwrap.as_secs_f64(),
    );
    println!(
        "spear mcp resident memory: {rss_start:.1} MiB after the handshake, {rss_after:.1} MiB after {CALLS_FOR_MEMORY} calls (half read_file, half terminal), {rss_end:.1} MiB at the end (peak {hwm:.1} MiB)"
    );
}
