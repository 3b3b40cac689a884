//! One `spear mcp` session in AUTO stays bounded whatever a client sends and whatever a command
//! writes (issue 18, parts 3 and 4):
//!
//! - a command that creates 200,000 files is answered within 30 s, its changed paths listed up
//!   to 1,000 and the rest counted, in the result and in the audit record;
//! - past the limit of changes one command commits, nothing of it is committed and the result
//!   says what was dropped and why;
//! - SIGTERM, or the end of stdin, stops the server within seconds while it judges a command's
//!   50,000 changes, and nothing is left behind (no process, no staging, no half commit);
//! - 60 concurrent calls carrying 2 MiB each leave the server's peak resident memory under the
//!   stated bound (320 MiB), every call answered: a result, or a JSON-RPC error that says the
//!   server is busy.
//!
//! Spoken raw over stdio, so that calls can be sent before their answers are read. The tests
//! take turns: each loads two cores on its own.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use spear_testkit::cgroup;
use spear_testkit::mcp::RawClient;
use spear_testkit::process::{descendants, peak_rss_kib, processes_with};
use spear_testkit::serial::Turns;
use support::{Dirs, SpearCommands as _, audit_records};

/// One test at a time.
static TURN: Turns = Turns::new();

/// The resident bound the server states (the doc of `MAX_HELD_BYTES` in spear-mcp's `intake.rs`), in KiB.
const RESIDENT_BOUND_KIB: u64 = 320 * 1024;

/// `spear mcp --auto` over a workspace holding `a.txt`, after the handshake, spoken to line by
/// line; its environment with `env` added.
fn start(env: &[(&str, &str)]) -> RawClient {
    start_with(Dirs::with(&[("a.txt", "alpha\n")]), env)
}

/// [`start`] over `dirs`, whose workspace gets a `.git/hooks` first.
fn start_with(dirs: Dirs, env: &[(&str, &str)]) -> RawClient {
    std::fs::create_dir_all(dirs.ws.join(".git/hooks")).unwrap();
    let mut server = dirs.spear_mcp(&["--auto"]);
    server.envs(env.iter().copied());
    RawClient::start(dirs, server)
}

/// Where the server of `s` stages writes.
fn staging(s: &RawClient) -> PathBuf {
    s.dirs.state.join("spear/staging")
}

/// Whether a process under `pid` runs a command line that starts with `start`.
fn running(pid: u32, start: &[u8]) -> bool {
    descendants(pid)
        .into_iter()
        .any(|p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.starts_with(start)))
}

/// Processes anywhere whose command line names `path` (a sandbox binds the workspace by name).
fn processes_naming(path: &Path) -> Vec<String> {
    processes_with(&path.to_string_lossy())
}

/// spear's cgroups of server `pid` (`spear-...-PID-N`), in the pids hierarchy (v1, where spear
/// makes them beside its own, delegated or not) or the unified one.
fn cgroups_of(pid: u32) -> Vec<PathBuf> {
    let mark = format!("-{pid}-");
    ["/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified"]
        .iter()
        .flat_map(|root| {
            cgroup::find(root, 4, |name| {
                name.starts_with("spear") && name.contains(&mark)
            })
        })
        .collect()
}

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, Iterator::count)
}

/// A command that makes `n` empty files under `dir`.
fn make_files(dir: &str, n: usize) -> Value {
    json!({"command": format!("mkdir {dir} && cd {dir} && seq {n} | xargs touch"), "timeout": 120})
}

#[test]
fn a_command_making_200000_files_is_answered_within_30_s_with_a_capped_list() {
    let _turn = TURN.take();
    // The workspace and spear's state on the test network's tmpfs (scripts/test-host.sh): what
    // is measured is spear's own work, not the host disk's (on our VMs' ext4,
    // `seq 200000 | xargs touch` alone takes 20 to 60 s of system time; on a tmpfs, 1.2 s).
    // Without it (a bare `cargo test`), the system's temporary directory.
    let files = [("a.txt", "alpha\n")];
    let on_tmpfs = std::env::var_os("SPEAR_TEST_TMPFS").filter(|p| !p.is_empty());
    let dirs = match &on_tmpfs {
        Some(p) => Dirs::within(Path::new(p), &files),
        None => Dirs::with(&files),
    };
    let mut s = start_with(dirs, &[]);
    let started = Instant::now();
    s.call(1, "terminal", &make_files("d", 200_000));
    let answer = s.answer(1, Duration::from_secs(120));
    let took = started.elapsed();
    let r = &answer["result"]["structuredContent"];
    assert_eq!(r["status"], "ok", "{r}");
    // The whole call (the command; judging, committing, the checkpoint, the audit record, the
    // answer) within 30 s.
    let command = Duration::from_millis(r["duration_ms"].as_u64().unwrap());
    let after = took.saturating_sub(command);
    assert!(
        took < Duration::from_secs(30) || (on_tmpfs.is_none() && after < Duration::from_secs(20)),
        "answered after {took:?} (the command itself: {command:?}; on the test tmpfs: {})",
        on_tmpfs.is_some()
    );
    // Everything landed; the answer names 1,000 paths and counts the rest.
    assert_eq!(entries(&s.dirs.ws.join("d")), 200_000);
    let changed = r["changed_paths"].as_array().unwrap();
    assert_eq!(changed.len(), 1001, "{}", changed.len());
    assert_eq!(changed[0], "d");
    assert_eq!(changed[1000], "... and 199001 more");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.len() < 100_000, "{} bytes of text", text.len());
    // So does the audit record.
    let record = audit_records(&s.dirs)
        .into_iter()
        .rev()
        .find(|r| r["tool"] == "terminal")
        .unwrap();
    let listed = record["changed_paths"].as_array().unwrap();
    assert_eq!(listed.len(), 1001);
    assert_eq!(listed[1000], "... and 199001 more");
    eprintln!("200,000 files: answered in {took:?}, {after:?} after the command");
}

#[test]
fn past_the_limit_nothing_is_committed_and_the_result_says_why() {
    let _turn = TURN.take();
    // The operator's limit of changes a command may make, lowered to 1,000.
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("spear")).unwrap();
    std::fs::write(
        config.path().join("spear/config.toml"),
        "[limits]\nchanges = 1000\n",
    )
    .unwrap();
    let config_home = config.path().to_str().unwrap();
    let mut s = start(&[("XDG_CONFIG_HOME", config_home)]);
    // Positive control: under the limit, the files land.
    s.call(1, "terminal", &make_files("small", 500));
    let r = s.answer(1, Duration::from_secs(60))["result"]["structuredContent"].clone();
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(entries(&s.dirs.ws.join("small")), 500);
    // Over it: nothing lands, and the result says so.
    s.call(2, "terminal", &make_files("big", 1500));
    let r = s.answer(2, Duration::from_secs(60))["result"]["structuredContent"].clone();
    assert_eq!(r["status"], "failed", "{r}");
    assert_eq!(r["exit_code"], 0, "the command itself succeeded: {r}");
    let reason = r["reason"].as_str().unwrap();
    for part in [
        "the limit is 1000",
        "none of its changes were committed",
        "the workspace is as it was before the command",
        "Split the work",
    ] {
        assert!(reason.contains(part), "{part:?} in {reason}");
    }
    assert_eq!(r["changed_paths"], json!([]), "{r}");
    assert!(!s.dirs.ws.join("big").exists());
    assert_eq!(entries(&staging(&s)), 0, "the staged writes are gone");
}

/// Starts a command making `n` files, and waits until it has ended and spear is judging what it
/// staged (the sandbox gone, its writes still staged, no answer yet): the positive control that
/// the post-command work runs when the test acts.
fn in_post_command_work(s: &mut RawClient, n: usize) {
    s.call(1, "terminal", &make_files("d", n));
    let until = Instant::now() + Duration::from_secs(90);
    let (mut ran, mut grouped) = (false, false);
    loop {
        assert!(Instant::now() < until, "never saw the post-command work");
        // Positive control of the cgroup check after the server went: it finds them now.
        grouped |= !cgroups_of(s.pid()).is_empty();
        if let Some(answer) = s.next(Duration::from_millis(100)) {
            assert!(
                answer["id"] != 1,
                "answered before the test could act: {answer}"
            );
        }
        // The command's own processes (a warm sandbox waiting for the next command may stay).
        let sandboxed = running(s.pid(), b"xargs\0");
        ran |= sandboxed;
        let staged = std::fs::read_dir(staging(s))
            .unwrap()
            .flatten()
            .any(|d| entries(&d.path().join("0.upper/d")) >= n);
        if ran && !sandboxed && staged {
            assert!(grouped, "never saw the command's cgroup");
            return;
        }
    }
}

/// After the server went: no process names the workspace, nothing is staged, and the workspace
/// has all of the command's files or none.
fn nothing_left_behind(s: &RawClient, n: usize) {
    assert_eq!(processes_naming(&s.dirs.ws), Vec::<String>::new());
    assert_eq!(
        cgroups_of(s.pid()),
        Vec::<PathBuf>::new(),
        "cgroups left behind"
    );
    assert_eq!(entries(&staging(s)), 0, "staged writes left behind");
    let landed = entries(&s.dirs.ws.join("d"));
    assert!(
        landed == 0 || landed == n,
        "half committed: {landed} of {n}"
    );
}

#[test]
fn sigterm_stops_the_server_while_it_judges_a_commands_changes() {
    let _turn = TURN.take();
    let n = 50_000;
    let mut s = start(&[]);
    in_post_command_work(&mut s, n);
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(i32::try_from(s.pid()).unwrap()).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let took = s.exits_within(Duration::from_secs(15));
    assert!(
        took.is_some(),
        "still running 15 s after SIGTERM\n{}",
        s.dirs.log()
    );
    let took = took.unwrap();
    assert!(took < Duration::from_secs(8), "stopped after {took:?}");
    nothing_left_behind(&s, n);
    eprintln!("SIGTERM during the post-command work: stopped in {took:?}");
}

#[test]
fn the_end_of_stdin_stops_the_server_while_it_judges_a_commands_changes() {
    let _turn = TURN.take();
    let n = 50_000;
    let mut s = start(&[]);
    in_post_command_work(&mut s, n);
    s.close_stdin();
    let took = s.exits_within(Duration::from_secs(15));
    assert!(
        took.is_some(),
        "still running 15 s after stdin closed\n{}",
        s.dirs.log()
    );
    let took = took.unwrap();
    assert!(took < Duration::from_secs(8), "stopped after {took:?}");
    nothing_left_behind(&s, n);
    eprintln!("stdin closed during the post-command work: stopped in {took:?}");
}

/// The answers to calls `sleepers + 1..=calls` (large ones, sent while calls `1..=sleepers` hold
/// every slot), in any order: the refused ones come first. While the sleepers hold every slot,
/// the large calls wait, held: 64 MiB hold 31 of them, so once all are read, at least 21 are
/// refused. Then the sleepers are cancelled (and answer nothing, as MCP says), and the calls
/// held run. Says whether the sleepers had to be cancelled.
fn answers_of_large_calls(
    s: &mut RawClient,
    sleepers: u64,
    calls: u64,
) -> (HashMap<u64, Value>, bool) {
    let is_busy = |a: &Value| a["error"]["code"] == -32000;
    let mut answers: HashMap<u64, Value> = HashMap::new();
    let until = Instant::now() + Duration::from_secs(60);
    let large = usize::try_from(calls - sleepers).unwrap();
    let mut cancelled = false;
    while answers.len() < large {
        let left = until.saturating_duration_since(Instant::now());
        let Some(answer) = s.next(left) else {
            panic!(
                "{} of {large} large calls answered within 60 s: {:?}\n{}",
                answers.len(),
                answers.keys().collect::<Vec<_>>(),
                s.dirs.log()
            );
        };
        if let Some(id) = answer["id"].as_u64() {
            assert!(id > sleepers, "a sleeper answered: {answer}");
            answers.insert(id, answer);
        }
        if !cancelled && answers.values().filter(|a| is_busy(a)).count() >= 21 {
            for id in 1..=sleepers {
                s.send(
                    &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": id, "reason": "the test is done waiting"}}),
                );
            }
            cancelled = true;
        }
    }
    (answers, cancelled)
}

#[test]
fn sixty_concurrent_large_calls_stay_under_the_resident_bound() {
    const SIZE: usize = 2 << 20;
    const CALLS: u64 = 60;
    /// Calls that hold every slot a while (`MAX_RUNNING_CALLS`), so that the large ones wait,
    /// held, as they would behind long commands.
    const SLEEPERS: u64 = 8;
    /// Large calls that really write.
    const WRITES: u64 = 4;
    let _turn = TURN.take();
    let mut s = start(&[]);
    let at_rest = peak_rss_kib(s.pid());
    for id in 1..=SLEEPERS {
        s.call(id, "terminal", &json!({"command": "sleep 50"}));
    }
    let content = "x".repeat(SIZE);
    let writes = SLEEPERS + 1..=SLEEPERS + WRITES;
    for id in SLEEPERS + 1..=CALLS {
        // Most go to a protected path: refused once they run, but only after being read, parsed
        // and held like any other.
        let path = if writes.contains(&id) {
            format!("big{id}.txt")
        } else {
            format!(".spear/big{id}")
        };
        s.call(id, "write_file", &json!({"path": path, "content": content}));
    }
    let (mut answers, cancelled) = answers_of_large_calls(&mut s, SLEEPERS, CALLS);
    let mut outcomes: HashMap<String, u64> = HashMap::new();
    for id in SLEEPERS + 1..=CALLS {
        let answer = answers.remove(&id).unwrap();
        let outcome = if let Some(error) = answer.get("error") {
            assert_eq!(error["code"], -32000, "{answer}");
            let message = error["message"].as_str().unwrap();
            assert!(message.contains("spear is busy"), "{message}");
            assert!(message.contains("Send it again"), "{message}");
            // Positive control: the refused calls carried their bytes.
            assert!(error["data"]["request_bytes"].as_u64().unwrap() > SIZE as u64);
            "busy".to_owned()
        } else {
            let r = &answer["result"]["structuredContent"];
            if writes.contains(&id) {
                assert_eq!(r["status"], "ok", "{answer}");
            } else {
                assert_eq!(r["status"], "denied", "{answer}");
            }
            r["status"].as_str().unwrap().to_owned()
        };
        *outcomes.entry(outcome).or_default() += 1;
    }
    let peak = peak_rss_kib(s.pid());
    eprintln!(
        "60 calls, 52 of 2 MiB: {outcomes:?}; peak resident {peak} KiB (at rest {at_rest} KiB)"
    );
    // The cap engaged, the calls it let through ran, and the sleepers were killed.
    assert!(cancelled && outcomes.contains_key("busy"), "{outcomes:?}");
    assert!(outcomes.contains_key("denied"), "{outcomes:?}");
    // (Warm sandboxes, waiting for a command, may stay.)
    let sleeping = || running(s.pid(), b"sleep\0");
    let until = Instant::now() + Duration::from_secs(10);
    while sleeping() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!sleeping(), "sleepers left");
    // Positive control: the writes that ran carried their 2 MiB.
    let mut written = 0;
    for id in writes {
        if let Ok(meta) = std::fs::metadata(s.dirs.ws.join(format!("big{id}.txt"))) {
            assert_eq!(meta.len(), SIZE as u64);
            written += 1;
        }
    }
    assert!(written > 0, "no large write ran: {outcomes:?}");
    assert!(
        peak < RESIDENT_BOUND_KIB,
        "peak resident {peak} KiB, over the bound of {RESIDENT_BOUND_KIB} KiB"
    );
    // The weight went back: a large call runs after them.
    s.call(
        100,
        "write_file",
        &json!({"path": "after.txt", "content": content}),
    );
    assert_eq!(
        s.answer(100, Duration::from_secs(30))["result"]["structuredContent"]["status"],
        "ok"
    );
}
