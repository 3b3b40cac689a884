//! Every file-tool case of the public red-team set, run through the router with its expectation,
//! and the race cases around them: a link swapped in between two calls and during calls, a FIFO,
//! a 20 GB sparse file, the harness's own `/proc/self`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::format_collect)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{Env, Opts, router, tree};
use serde_json::{Value, json};
use spear_core::{ExecutionMode, ToolStatus};

const CASES: &str = include_str!("../../../testdata/redteam-public-cases.jsonl");

/// The outside secret every probe looks for.
const SECRET: &str = "ssh-private-key-material-0123456789";

fn file_tool_cases() -> Vec<Value> {
    CASES
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|c| c["target"] == "file-tool")
        .collect()
}

fn substitute(text: &str, env: &Env) -> String {
    text.replace("{WS}", env.ws.to_str().unwrap())
        .replace("{HOME}", env.home.to_str().unwrap())
        .replace("{CANARY}", env.outside.join("canary").to_str().unwrap())
}

fn substitute_value(v: &Value, env: &Env) -> Value {
    match v {
        Value::String(s) => Value::String(substitute(s, env)),
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute_value(x, env)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), substitute_value(x, env)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    spear_testkit::process::rss_kib(std::process::id())
}

#[test]
fn every_public_file_tool_case() {
    let cases = file_tool_cases();
    assert!(cases.len() >= 5, "the public set has file-tool cases");
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let env = Env::new();
        std::fs::create_dir_all(env.home.join(".ssh")).unwrap();
        std::fs::write(env.home.join(".ssh/id_rsa"), SECRET).unwrap();
        let mode: ExecutionMode = case["mode"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .parse()
            .unwrap();
        let input = substitute_value(&case["input"], &env);

        // Setup commands run in the sandbox, as the case says, through an AUTO router.
        let setup_router = router(&env, Opts::mode(ExecutionMode::Auto));
        for step in input["setup"].as_array().cloned().unwrap_or_default() {
            let step = step.as_str().unwrap();
            let command = step
                .strip_prefix("sandboxed command ran: ")
                .unwrap_or_else(|| panic!("{id}: unknown setup {step}"));
            let e = setup_router.call("terminal", json!({ "command": command }));
            if e.result.status == ToolStatus::Denied && command.starts_with("ln -s ") {
                // The classifier refuses to link to a credential store; the link is made on the
                // host, as a process outside spear could, so that the read is still tried.
                let mut words = command.split_whitespace().skip(2);
                let (target, name) = (words.next().unwrap(), words.next().unwrap());
                std::os::unix::fs::symlink(target, env.path(name)).unwrap();
            } else if command.starts_with("truncate -s 20G") {
                // The sandbox's file-size limit (8 GiB) refuses it; the file is made on the host,
                // as another program could, so that the read is still tried.
                assert_ne!(
                    e.result.status,
                    ToolStatus::Ok,
                    "{id}: the file-size limit holds"
                );
                let f = std::fs::File::create(env.path("big.bin")).unwrap();
                f.set_len(20 << 30).unwrap();
            } else {
                assert_eq!(
                    e.result.status,
                    ToolStatus::Ok,
                    "{id}: setup {command}: {e:?}"
                );
            }
        }

        let r = router(&env, Opts::mode(mode));
        let outside_before = tree(&env.home);
        let rss_before = rss_kib();
        let tool = input["tool"].as_str().unwrap();
        let e = r.call(tool, input["args"].clone());
        let expect = case["expect"].as_str().unwrap();
        if expect.starts_with("DENY") {
            assert!(
                matches!(
                    e.result.status,
                    ToolStatus::InvalidPath | ToolStatus::Denied
                ),
                "{id}: {e:?}"
            );
            assert!(e.result.stdout.is_empty(), "{id}: nothing read: {e:?}");
            assert!(!e.result.reason.as_deref().unwrap_or("").contains(SECRET));
        } else if id == "PTH-13" {
            // A sparse file reads as zeros: refused as binary, naming its size, after reading a
            // bounded head of it; either way the harness's memory stays bounded.
            let bounded = (e.result.status == ToolStatus::Ok
                && e.result.truncated
                && e.result.stdout.contains("of at least"))
                || (e.result.status == ToolStatus::Failed
                    && e.result
                        .reason
                        .as_deref()
                        .unwrap_or("")
                        .contains("21474836480 bytes"));
            assert!(bounded, "{id}: {e:?}");
            let grown = rss_kib().saturating_sub(rss_before);
            assert!(grown < 64 * 1024, "{id}: the harness grew by {grown} KiB");
        } else {
            panic!("{id}: no expectation handled: {expect}");
        }
        assert_eq!(
            tree(&env.home),
            outside_before,
            "{id}: nothing outside changed"
        );
    }
}

#[test]
fn proc_and_dev_paths_of_the_harness_are_refused() {
    let env = Env::new();
    let r = router(&env, Opts::mode(ExecutionMode::Auto));
    for path in [
        "/proc/self/environ",
        "/proc/self/root/etc/passwd",
        "/proc/self/cwd/README.md",
        "/proc/self/fd/0",
        "/dev/fd/0",
        "/dev/stdin",
        "/proc/1/environ",
    ] {
        let e = r.call("read_file", json!({ "path": path }));
        assert_eq!(e.result.status, ToolStatus::InvalidPath, "{path}: {e:?}");
        assert!(e.result.stdout.is_empty());
    }
    // A link in the workspace to the harness's /proc/self is refused as well.
    std::os::unix::fs::symlink("/proc/self", env.path("me")).unwrap();
    let e = r.call("read_file", json!({"path": "me/environ"}));
    assert_eq!(e.result.status, ToolStatus::InvalidPath, "{e:?}");
}

#[test]
fn a_link_swapped_in_between_two_calls() {
    let env = Env::new();
    std::fs::write(env.outside.join("id_rsa"), SECRET).unwrap();
    env.write("notes/a.txt", "inside\n");
    let r = router(&env, Opts::mode(ExecutionMode::Auto));
    let e = r.call("read_file", json!({"path": "notes/a.txt"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "positive control: {e:?}");
    // The file becomes a link to the outside, then the directory does.
    std::fs::remove_file(env.path("notes/a.txt")).unwrap();
    std::os::unix::fs::symlink(env.outside.join("id_rsa"), env.path("notes/a.txt")).unwrap();
    let e = r.call("read_file", json!({"path": "notes/a.txt"}));
    assert_eq!(e.result.status, ToolStatus::InvalidPath, "{e:?}");
    std::fs::remove_dir_all(env.path("notes")).unwrap();
    std::os::unix::fs::symlink(&env.outside, env.path("notes")).unwrap();
    let outside = tree(&env.outside);
    for (tool, args) in [
        ("read_file", json!({"path": "notes/id_rsa"})),
        (
            "write_file",
            json!({"path": "notes/id_rsa", "content": "overwritten"}),
        ),
        (
            "write_file",
            json!({"path": "notes/new", "content": "planted"}),
        ),
        ("delete_file", json!({"path": "notes/id_rsa"})),
    ] {
        let e = r.call(tool, args);
        assert_eq!(e.result.status, ToolStatus::InvalidPath, "{tool}: {e:?}");
        assert!(!e.result.stdout.contains(SECRET));
    }
    assert_eq!(tree(&env.outside), outside);
    // delete_file on the link itself removes the link, not its target.
    let e = r.call("delete_file", json!({"path": "notes"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert!(env.path("notes").symlink_metadata().is_err());
    assert_eq!(
        std::fs::read_to_string(env.outside.join("id_rsa")).unwrap(),
        SECRET
    );
}

/// A directory swapped for a link to the outside, and back, as fast as possible while reads and
/// writes run: no call ever reads the outside secret or writes outside.
#[test]
fn a_link_swapped_in_during_calls() {
    let env = Env::new();
    std::fs::write(env.outside.join("a.txt"), SECRET).unwrap();
    env.write("d/a.txt", "inside\n");
    let mut opts = Opts::mode(ExecutionMode::Auto);
    // Refused calls repeat by design here; the turn must not stop.
    opts.repeats = u32::MAX;
    let r = router(&env, opts);
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let (ws, outside) = (env.ws.clone(), env.outside.clone());
        std::thread::spawn(move || {
            // `d` is always there: the directory and a link to the outside trade places atomically.
            let (d, other) = (ws.join("d"), ws.join("d.swap"));
            std::os::unix::fs::symlink(&outside, &other).unwrap();
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &d,
                    rustix::fs::CWD,
                    &other,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                swaps += 1;
            }
            if swaps % 2 == 1 {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &d,
                    rustix::fs::CWD,
                    &other,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
            }
            swaps
        })
    };
    let deadline = Instant::now() + Duration::from_secs(3);
    let (mut ok_reads, mut refused) = (0, 0);
    while Instant::now() < deadline {
        let e = r.call("read_file", json!({"path": "d/a.txt"}));
        assert!(!e.result.stdout.contains(SECRET), "read the outside: {e:?}");
        match e.result.status {
            ToolStatus::Ok => ok_reads += 1,
            _ => refused += 1,
        }
        let e = r.call(
            "write_file",
            json!({"path": "d/a.txt", "content": "inside\n"}),
        );
        // Refused (the path led outside when it was resolved, checked or opened) or written
        // inside; never anything else.
        assert!(
            matches!(
                e.result.status,
                ToolStatus::Ok | ToolStatus::InvalidPath | ToolStatus::Denied
            ),
            "{e:?}"
        );
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 10, "the swapper ran ({swaps} swaps)");
    assert!(
        ok_reads > 0,
        "positive control: some reads saw the real file ({refused} refused)"
    );
    assert_eq!(
        std::fs::read_to_string(env.outside.join("a.txt")).unwrap(),
        SECRET
    );
    assert_eq!(
        std::fs::read_dir(&env.outside).unwrap().count(),
        1,
        "nothing created outside"
    );
}

#[test]
fn a_fifo_does_not_block() {
    let env = Env::new();
    let fifo = env.path("pipe");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let r = router(&env, Opts::mode(ExecutionMode::Safe));
    let started = Instant::now();
    let e = r.call("read_file", json!({"path": "pipe"}));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(e.result.status, ToolStatus::Failed, "{e:?}");
    assert!(e.result.reason.unwrap().contains("not a regular file"));
}

#[test]
fn binary_files_and_windows() {
    let env = Env::new();
    std::fs::write(env.path("bin.dat"), b"\x7fELF\x00\x01\x02").unwrap();
    let lines: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    env.write("lines.txt", &lines);
    let r = router(&env, Opts::mode(ExecutionMode::Safe));
    let e = r.call("read_file", json!({"path": "bin.dat"}));
    assert_eq!(e.result.status, ToolStatus::Failed);
    assert!(e.result.reason.unwrap().contains("binary"));
    let e = r.call("read_file", json!({"path": "missing.txt"}));
    assert_eq!(e.result.status, ToolStatus::NotFound, "{e:?}");
    let e = r.call(
        "read_file",
        json!({"path": "lines.txt", "offset": 10, "limit": 3}),
    );
    assert_eq!(e.result.status, ToolStatus::Ok);
    assert!(
        e.result
            .stdout
            .starts_with("    10\tline 10\n    11\tline 11\n    12\tline 12\n"),
        "{}",
        e.result.stdout
    );
    assert!(e.result.stdout.contains("offset 13"), "{}", e.result.stdout);
    let e = r.call("read_file", json!({"path": "lines.txt"}));
    assert!(!e.result.truncated);
    assert!(e.result.stdout.ends_with("    30\tline 30\n"));
    let e = r.call("read_file", json!({"path": "."}));
    assert_eq!(e.result.status, ToolStatus::Failed);
    assert!(e.result.reason.unwrap().contains("directory"));
}

/// A huge text file: the page is read, the count stops at its budget and says so, memory stays
/// bounded.
#[test]
fn a_huge_text_file_is_read_in_part() {
    let env = Env::new();
    let line = "0123456789 abcdefghij 0123456789 abcdefghij 0123456789 abcdefghij\n";
    let head: String = line.repeat((2 << 20) / line.len());
    std::fs::write(env.path("huge.log"), &head).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(env.path("huge.log"))
        .unwrap()
        .set_len(20 << 30)
        .unwrap();
    let r = router(&env, Opts::mode(ExecutionMode::Safe));
    let before = rss_kib();
    let e = r.call("read_file", json!({"path": "huge.log", "limit": 5}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert!(e.result.truncated);
    assert!(e.result.stdout.starts_with("     1\t0123456789"));
    assert!(
        e.result.stdout.contains("[lines 1-5 of at least "),
        "{}",
        e.result.stdout
    );
    assert!(e.result.stdout.contains("next offset 6]"));
    assert!(e.result.stdout.contains("21474836480-byte file"));
    assert!(rss_kib().saturating_sub(before) < 64 * 1024);
}

/// A 6 MB file pages to its last line: every offset past the first MiB answers with that line,
/// "lines a-b of N" and the next offset.
#[test]
fn read_file_pages_to_any_line_of_a_large_file() {
    use std::io::Write as _;
    let env = Env::new();
    // Written as a stream: this test binary's other tests measure the process's memory.
    let mut out = std::io::BufWriter::new(std::fs::File::create(env.path("six.log")).unwrap());
    let pad = "y".repeat(50);
    for i in 1..=100_000u32 {
        writeln!(out, "line {i:06} {pad}").unwrap();
    }
    out.flush().unwrap();
    drop(out);
    assert!(std::fs::metadata(env.path("six.log")).unwrap().len() > 6_000_000);
    let r = router(&env, Opts::mode(ExecutionMode::Safe));
    for (offset, limit) in [(20_000u64, 3u64), (70_000, 2), (99_999, 5)] {
        let e = r.call(
            "read_file",
            json!({"path": "six.log", "offset": offset, "limit": limit}),
        );
        assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
        let first = format!("{offset:>6}\tline {offset:06} ");
        assert!(e.result.stdout.starts_with(&first), "{}", e.result.stdout);
        let last = (offset + limit - 1).min(100_000);
        if last < 100_000 {
            assert!(
                e.result.stdout.ends_with(&format!(
                    "[lines {offset}-{last} of 100000; next offset {}]\n",
                    last + 1
                )),
                "{}",
                e.result.stdout
            );
            assert!(e.result.truncated);
        } else {
            assert!(
                e.result
                    .stdout
                    .ends_with(&format!("[lines {offset}-100000 of 100000; end of file]\n")),
                "{}",
                e.result.stdout
            );
            assert!(!e.result.truncated);
        }
    }
    let e = r.call("read_file", json!({"path": "six.log", "offset": 100_001}));
    assert!(
        e.result
            .stdout
            .contains("has 100000 lines; offset 100001 is past its end"),
        "{}",
        e.result.stdout
    );
}
