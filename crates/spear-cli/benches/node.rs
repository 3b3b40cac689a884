//! The node's figures (`spear mcp --listen`, release, over HTTP on loopback): 64 sessions at once,
//! each running the same 150 mixed actions (`read_file`, `search_files`, `write_file`, `patch`,
//! `terminal`), against one session running them alone; the time to open a session (`POST
//! /mcp/sessions`), on the server's workspace and, with `SPEAR_BENCH_TEMPLATE_FILES` (default
//! 10,000 files of 10 KiB, 100 MB), on a template; resident memory per idle session; and
//! `terminal true` over HTTP paced as a model's calls come, beside bare bwrap running
//! `/bin/true`.
//! `SPEAR_BENCH_NODE=paced` measures that last figure alone; `SPEAR_BENCH_NODE=load` the two
//! runs of sessions alone (one, then 64), for profiling the load.
//!
//! The sessions' calls are driven by one async HTTP client on two threads, each over a
//! keep-alive connection, speaking MCP 2025-11-25 in a session named in its URL. Prints actions
//! per second, p50 and p99 per action kind (the round trip, and the router's own time in it,
//! which the result's `duration_ms` gives), and the ratios the issue aims at.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Sessions at once.
const SESSIONS: usize = 64;

/// Actions per session.
const ACTIONS: usize = 150;

/// The action kinds, in the order each session cycles through them.
const KINDS: [&str; 5] = [
    "read_file",
    "search_files",
    "write_file",
    "patch",
    "terminal",
];

/// The pause before each paced run of `terminal true` and of bare bwrap.
const PACE: Duration = Duration::from_millis(50);

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let base = tempfile::tempdir().unwrap();
    let base = base.path();
    let ws = base.join("ws");
    for i in 0..200 {
        let dir = ws.join(format!("src/m{}", i % 10));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("f{i}.rs")),
            format!("// file {i}\nfn f{i}() -> u32 {{ {i} }}\n// needle {i}\n"),
        )
        .unwrap();
    }
    let template_files: usize = std::env::var("SPEAR_BENCH_TEMPLATE_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let template = base.join("template");
    make_template(&template, template_files);
    let node = Node::start(base, &ws, &template);
    let http = client();

    match std::env::var("SPEAR_BENCH_NODE").as_deref() {
        Ok("paced") => {
            let (paced, bwrap) = paced_against_bwrap(&http, &node, 40);
            print_paced(&paced, &bwrap);
            return;
        }
        Ok("load") => {
            let alone = run_sessions(&http, &node, 1);
            let many = run_sessions(&http, &node, SESSIONS);
            print_load(&alone, &many);
            return;
        }
        _ => {}
    }

    // Resident memory per idle session, on a node that has served one session only: after a
    // load, freed memory the allocator keeps would hide what a session costs.
    Session::open(&http, &node, "").close(&http, &node);
    std::thread::sleep(Duration::from_millis(200));
    let before = rss_kib(node.pid());
    let idle: Vec<Session> = (0..SESSIONS)
        .map(|_| Session::open(&http, &node, ""))
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let after = rss_kib(node.pid());
    let per_idle = (after.saturating_sub(before)) as f64 / SESSIONS as f64;
    for s in idle {
        s.close(&http, &node);
    }

    // terminal true over HTTP, paced, beside bare bwrap: before the load, which leaves its
    // sessions' teardown running for a while after it.
    let (paced, bwrap) = paced_against_bwrap(&http, &node, 40);

    // Opening a session: on the workspace, and on the template (a copy of its own).
    let open_ws = open_times(&http, &node, &node.token, "", 21).unwrap();
    let open_template = open_times(
        &http,
        &node,
        &node.template_token,
        &json!({"template": "template"}).to_string(),
        21,
    );

    // One session alone, then SESSIONS at once, each the same actions.
    let alone = run_sessions(&http, &node, 1);
    let many = run_sessions(&http, &node, SESSIONS);

    println!(
        "session open (POST /mcp/sessions), {} runs each:",
        open_ws.len()
    );
    print_quantiles("  on the workspace", &open_ws);
    match &open_template {
        Ok(times) => print_quantiles(&format!("  on a template of {template_files} files"), times),
        Err(why) => println!("  on a template: not measured: {why}"),
    }
    println!();
    print_load(&alone, &many);
    println!(
        "resident memory per idle session: {per_idle:.0} KiB ({before} KiB before {SESSIONS} idle sessions, {after} KiB with them; aim: under 2 MiB)"
    );
    print_paced(&paced, &bwrap);
    if let Ok(times) = &open_template {
        println!(
            "template session open p50 {:.1} ms (aim: under 50 ms)",
            ms(quantile(times, 0.5))
        );
    }
}

/// The two runs' figures: actions per second, each kind's quantiles, and the ratios aimed at.
fn print_load(alone: &Run, many: &Run) {
    for (label, run) in [
        ("1 session", alone),
        (&*format!("{SESSIONS} sessions"), many),
    ] {
        println!(
            "{label}: {} actions in {:.2} s, {:.1} actions/s",
            run.count,
            run.elapsed.as_secs_f64(),
            run.count as f64 / run.elapsed.as_secs_f64()
        );
        for kind in KINDS {
            print_quantiles(&format!("  {kind:<13}"), &run.samples[kind]);
            print_quantiles("    in the router", &run.in_router[kind]);
        }
    }
    let rate = |r: &Run| r.count as f64 / r.elapsed.as_secs_f64();
    println!(
        "aggregate at {SESSIONS} sessions against one: {:.2}x (aim: at least 1.5x)",
        rate(many) / rate(alone)
    );
    let read_p99 = quantile(&many.samples["read_file"], 0.99);
    println!(
        "read_file p99 at {SESSIONS} sessions: {:.1} ms (aim: under 20 ms)",
        ms(read_p99)
    );
}

/// The paced figure: `terminal true` over HTTP against bare bwrap, medians and their ratio.
fn print_paced(paced: &[Duration], bwrap: &[Duration]) {
    let (ours, theirs) = (quantile(paced, 0.5), quantile(bwrap, 0.5));
    println!(
        "terminal true over HTTP, paced {} ms: median {:.2} ms; bare bwrap /bin/true {:.2} ms; ratio {:.2}x (aim: at most 1.0x)",
        PACE.as_millis(),
        ms(ours),
        ms(theirs),
        ours.as_secs_f64() / theirs.as_secs_f64()
    );
}

/// `files` files of 10 KiB in 100 directories.
fn make_template(dir: &Path, files: usize) {
    let body: String = "abcdefghij".repeat(1024);
    for i in 0..files {
        let sub = dir.join(format!("d{:02}", i % 100));
        if i < 100 {
            std::fs::create_dir_all(&sub).unwrap();
        }
        std::fs::write(sub.join(format!("f{i}.txt")), &body).unwrap();
    }
}

/// A listening server with a token, killed when dropped.
struct Node {
    child: Child,
    base: String,
    /// For sessions on the server's workspace.
    token: String,
    /// For sessions on the template.
    template_token: String,
}

impl Node {
    fn start(base: &Path, ws: &Path, template: &Path) -> Node {
        let spear = env!("CARGO_BIN_EXE_spear");
        let env = |c: &mut Command| {
            c.env("HOME", base.join("home"))
                .env("XDG_STATE_HOME", base.join("state"))
                .env_remove("XDG_CONFIG_HOME");
        };
        std::fs::create_dir_all(base.join("home")).unwrap();
        let add = |name: &str, template: Option<&Path>| {
            let mut add = Command::new(spear);
            add.args(["token", "add", name]);
            if let Some(t) = template {
                add.arg("--template").arg(t);
            }
            env(&mut add);
            let out = add.output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .find(|l| l.starts_with("spear_"))
                .unwrap()
                .trim()
                .to_owned()
        };
        let token = add("bench", None);
        let template_token = add("rollout", Some(template));
        let mut serve = Command::new(spear);
        serve
            .args([
                "mcp",
                "--auto",
                "--listen",
                "127.0.0.1:0",
                "--max-sessions",
                "1000",
            ])
            .arg("--workspace")
            .arg(ws)
            .arg("--template")
            .arg(template)
            .current_dir(base)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        env(&mut serve);
        let mut child = serve.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines.next().expect("the server listens").unwrap();
            if let Some(rest) = line.split("listening on http://").nth(1) {
                break rest.split('/').next().unwrap().to_owned();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Node {
            child,
            base: format!("http://{addr}"),
            token,
            template_token,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// One MCP session in a session named in its URL.
struct Session {
    url: String,
    mcp_id: String,
    next_id: u64,
}

impl Session {
    /// `POST /mcp/sessions` with `ask`, then `initialize` there.
    fn open(http: &reqwest::blocking::Client, node: &Node, ask: &str) -> Session {
        let made: Value = http
            .post(format!("{}/mcp/sessions", node.base))
            .bearer_auth(&node.token)
            .header("Content-Type", "application/json")
            .body(ask.to_owned())
            .send()
            .unwrap()
            .text()
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap();
        let url = made["url"]
            .as_str()
            .unwrap_or_else(|| panic!("{made}"))
            .to_owned();
        let response = http
            .post(&url)
            .bearer_auth(&node.token)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"}}})
                .to_string(),
            )
            .send()
            .unwrap();
        let mcp_id = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let _ = response.text().unwrap();
        let mut session = Session {
            url,
            mcp_id,
            next_id: 1,
        };
        session.post(
            http,
            node,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        session
    }

    /// The headers of every message in the session.
    fn headers(&self) -> reqwest::header::HeaderMap {
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Mcp-Session-Id", self.mcp_id.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ] {
            headers.insert(name, value.parse().unwrap());
        }
        headers
    }

    fn post(&mut self, http: &reqwest::blocking::Client, node: &Node, body: &Value) -> String {
        http.post(&self.url)
            .bearer_auth(&node.token)
            .headers(self.headers())
            .body(body.to_string())
            .send()
            .unwrap()
            .text()
            .unwrap()
    }

    /// Calls `tool`; its structured result's status.
    fn call(
        &mut self,
        http: &reqwest::blocking::Client,
        node: &Node,
        tool: &str,
        args: &Value,
    ) -> String {
        self.call_timed(http, node, tool, args).0
    }

    /// Calls `tool`; its structured result's status, and the time the router took for it
    /// (`duration_ms`, whole milliseconds).
    fn call_timed(
        &mut self,
        http: &reqwest::blocking::Client,
        node: &Node,
        tool: &str,
        args: &Value,
    ) -> (String, Duration) {
        let id = self.next_id;
        self.next_id += 1;
        let text = self.post(http, node, &tool_call(id, tool, args));
        answer(&text, id, tool)
    }

    /// [`Session::call_timed`] through an async client.
    async fn call_async(
        &mut self,
        http: &reqwest::Client,
        token: &str,
        tool: &str,
        args: &Value,
    ) -> (String, Duration) {
        let id = self.next_id;
        self.next_id += 1;
        let text = http
            .post(&self.url)
            .bearer_auth(token)
            .headers(self.headers())
            .body(tool_call(id, tool, args).to_string())
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        answer(&text, id, tool)
    }

    fn close(self, http: &reqwest::blocking::Client, node: &Node) {
        let _ = http.delete(&self.url).bearer_auth(&node.token).send();
    }
}

/// The arguments of action `n` of session `s`.
/// A `tools/call` request.
fn tool_call(id: u64, tool: &str, args: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": args}})
}

/// The answer to call `id` in an SSE body: its structured result's status, and the router's
/// time for it (`duration_ms`, whole milliseconds).
fn answer(text: &str, id: u64, tool: &str) -> (String, Duration) {
    let message = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m["id"] == json!(id))
        .unwrap_or_else(|| panic!("no answer to {tool}: {text}"));
    let result = &message["result"]["structuredContent"];
    (
        result["status"].as_str().unwrap_or("?").to_owned(),
        Duration::from_millis(result["duration_ms"].as_u64().unwrap_or(0)),
    )
}

fn action(s: usize, n: usize) -> (&'static str, Value) {
    let kind = KINDS[n % KINDS.len()];
    let file = format!("out/s{s}/n{n}.txt");
    let args = match kind {
        "read_file" => {
            json!({"path": format!("src/m{}/f{}.rs", n % 10, (n * 7 + s) % 200 / 10 * 10 + n % 10)})
        }
        "search_files" => {
            json!({"pattern": format!("needle {}", n % 200), "path": format!("src/m{}", n % 10)})
        }
        "write_file" => json!({"path": file, "content": format!("session {s} action {n}\n")}),
        "patch" => json!({"patch": format!(
            "*** Begin Patch\n*** Update File: out/s{s}/n{}.txt\n@@\n-session {s} action {}\n+session {s} action {} patched\n*** End Patch\n",
            n - 1, n - 1, n - 1)}),
        _ => json!({"command": "true"}),
    };
    (kind, args)
}

/// One call as a session timed it: its kind, the round trip, and the router's own time.
type Timed = (&'static str, Duration, Duration);

/// What a run of sessions measured.
struct Run {
    count: usize,
    elapsed: Duration,
    samples: BTreeMap<&'static str, Vec<Duration>>,
    /// The router's own time for each call, by kind: what the round trip adds is the rest.
    in_router: BTreeMap<&'static str, Vec<Duration>>,
}

/// The blocking HTTP client that opens and closes sessions and makes the paced calls.
fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(120))
        .pool_max_idle_per_host(SESSIONS * 2)
        .build()
        .unwrap()
}

/// `n` sessions at once, each running [`ACTIONS`] actions; opening them is not timed. One async
/// HTTP client drives them all on two threads, each call over a keep-alive connection: the
/// clients share the server's two cores, and a thread per session (with a blocking client's
/// thread of its own) would wake, and preempt, the server's threads twice for every call.
fn run_sessions(http: &reqwest::blocking::Client, node: &Node, n: usize) -> Run {
    let sessions: Vec<Session> = (0..n).map(|_| Session::open(http, node, "")).collect();
    eprintln!("{n} session(s) start their actions");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .pool_max_idle_per_host(SESSIONS * 2)
        .build()
        .unwrap();
    let started = Instant::now();
    let ran: Vec<(Session, Vec<Timed>)> = runtime.block_on(async {
        let tasks: Vec<_> = sessions
            .into_iter()
            .enumerate()
            .map(|(s, mut session)| {
                let (client, token) = (client.clone(), node.token.clone());
                tokio::spawn(async move {
                    let mut times = Vec::with_capacity(ACTIONS);
                    for a in 0..ACTIONS {
                        let (kind, args) = action(s + n * 1000, a);
                        let t = Instant::now();
                        let (status, in_router) =
                            session.call_async(&client, &token, kind, &args).await;
                        times.push((kind, t.elapsed(), in_router));
                        assert_eq!(status, "ok", "{kind} {args}");
                    }
                    (session, times)
                })
            })
            .collect();
        let mut ran = Vec::with_capacity(tasks.len());
        for task in tasks {
            ran.push(task.await.unwrap());
        }
        ran
    });
    let elapsed = started.elapsed();
    let mut results = Vec::with_capacity(ran.len());
    for (session, times) in ran {
        session.close(http, node);
        results.push(times);
    }
    let mut samples: BTreeMap<&'static str, Vec<Duration>> = BTreeMap::new();
    let mut in_router: BTreeMap<&'static str, Vec<Duration>> = BTreeMap::new();
    let mut count = 0;
    for (kind, d, r) in results.into_iter().flatten() {
        samples.entry(kind).or_default().push(d);
        in_router.entry(kind).or_default().push(r);
        count += 1;
    }
    Run {
        count,
        elapsed,
        samples,
        in_router,
    }
}

/// `runs` times `POST /mcp/sessions` with `ask`, each session closed after.
fn open_times(
    http: &reqwest::blocking::Client,
    node: &Node,
    token: &str,
    ask: &str,
    runs: usize,
) -> Result<Vec<Duration>, Value> {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            let made: Value = http
                .post(format!("{}/mcp/sessions", node.base))
                .bearer_auth(token)
                .header("Content-Type", "application/json")
                .body(ask.to_owned())
                .send()
                .unwrap()
                .text()
                .map(|t| serde_json::from_str(&t).unwrap())
                .unwrap();
            let took = t.elapsed();
            let url = made["url"].as_str().ok_or_else(|| made.clone())?;
            let _ = http.delete(url).bearer_auth(token).send();
            Ok(took)
        })
        .collect()
}

/// `terminal true` in one session and bare bwrap `/bin/true`, interleaved and paced, `runs`
/// each.
fn paced_against_bwrap(
    http: &reqwest::blocking::Client,
    node: &Node,
    runs: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let mut session = Session::open(http, node, "");
    let run_true = json!({"command": "true"});
    session.call(http, node, "terminal", &run_true);
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        std::thread::sleep(PACE);
        let t = Instant::now();
        assert_eq!(session.call(http, node, "terminal", &run_true), "ok");
        ours.push(t.elapsed());
        std::thread::sleep(PACE);
        let t = Instant::now();
        let status = Command::new("bwrap")
            .args(spear_testkit::baseline::BARE_BWRAP)
            .arg("/bin/true")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        theirs.push(t.elapsed());
        assert!(status.success());
    }
    session.close(http, node);
    (ours, theirs)
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn quantile(samples: &[Duration], q: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn print_quantiles(label: &str, samples: &[Duration]) {
    println!(
        "{label}: p50 {:.2} ms, p99 {:.2} ms ({} samples)",
        ms(quantile(samples, 0.5)),
        ms(quantile(samples, 0.99)),
        samples.len()
    );
}
