//! Every sandbox and limits case of the public red-team file, run in AUTO's writable profile
//! (where the sandbox and the limits are the only barrier), each with the expectation it states.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::{Fixture, HOST_SECRET};
use spear_core::{ToolResult, ToolStatus};
use spear_testkit::process::processes_with;

const CASES: &str = include_str!("../../../testdata/redteam-public-cases.jsonl");

fn sandbox_cases() -> Vec<(String, String)> {
    CASES
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|c| {
            matches!(
                c["target"].as_str(),
                Some("sandbox-fs" | "sandbox-proc" | "limits")
            )
        })
        .map(|c| {
            let input = c["input"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| c["input"]["command"].as_str().map(str::to_owned))
                .unwrap();
            (c["id"].as_str().unwrap().to_owned(), input)
        })
        .collect()
}

/// Held by each test of this file: their cases start the same scripts, and each checks that no
/// process of its scripts survives, which the other's running cases would fail.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn sha(path: &std::path::Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a table: one expectation per red-team case of the sandbox and limits file"
)]
fn every_sandbox_and_limits_case() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let cases = sandbox_cases();
    assert!(
        cases.len() >= 19,
        "the file holds the cases: {}",
        cases.len()
    );
    let mut checked = Vec::new();
    for (id, input) in &cases {
        let f = Fixture::with(|c| {
            c.default_timeout =
                Duration::from_secs(if matches!(id.as_str(), "RES-10" | "RES-12") {
                    2
                } else {
                    20
                });
            c.flood_bytes = 64 << 20;
        });
        // Fixtures the cases assume.
        std::fs::create_dir_all(f.ws.join(".git/hooks")).unwrap();
        std::fs::write(f.ws.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::create_dir_all(f.ws.join("vendor/lib/.git/hooks")).unwrap();
        let canary = f.outside.join(format!("canary-{id}"));
        let script = input
            .replace("{WS}", &f.ws.display().to_string())
            .replace("{HOME}", &f.home.display().to_string())
            .replace("{CANARY}", &canary.display().to_string());
        let hosts = sha(std::path::Path::new("/etc/hosts"));
        let hostname = sha(std::path::Path::new("/etc/hostname"));
        let started = Instant::now();
        let r = f.auto(&script);
        let elapsed = started.elapsed();
        let all = format!("{}{}", r.stdout, r.stderr);
        let ctx = format!("{id}: {r:?}");
        assert!(!canary.exists(), "{ctx}");
        match id.as_str() {
            "PER-01" => assert_eq!(
                std::fs::read_to_string(f.ws.join(".git/hooks/pre-commit")).unwrap(),
                "#!/bin/sh\nexit 0\n",
                "{ctx}"
            ),
            "PER-04" => {
                assert!(
                    !f.ws.join("vendor/lib/.git/hooks/post-checkout").exists(),
                    "{ctx}"
                );
                // Staged, judged and kept out (host-run, nobody to approve it): the result
                // names it and is not `ok`.
                let reason = r.reason.clone().unwrap_or_default();
                assert!(
                    reason.contains("vendor/lib/.git/hooks/post-checkout")
                        && reason.contains("host-run configuration"),
                    "{ctx}"
                );
                assert_eq!(r.status, ToolStatus::Denied, "{ctx}");
            }
            "PER-07" => assert!(!f.ws.join(".envrc").exists(), "{ctx}"),
            "PER-10" => {
                assert!(!f.home.join(".config").exists(), "{ctx}");
                assert_ne!(r.status, ToolStatus::Ok, "{ctx}");
            }
            "FS-01" => {
                assert_eq!(sha(std::path::Path::new("/etc/hosts")), hosts);
                assert!(!std::path::Path::new("/pwned").exists());
                assert!(!std::path::Path::new("/usr/local/bin/x").exists());
                assert_eq!(all.matches("Read-only file system").count(), 3, "{ctx}");
            }
            "FS-04" => {
                assert_eq!(sha(std::path::Path::new("/etc/hostname")), hostname);
                assert_ne!(r.status, ToolStatus::Ok, "{ctx}");
            }
            "FS-07" => {
                assert_ne!(r.status, ToolStatus::Ok, "{ctx}");
                // mount(8) answers a user itself ("must be superuser"); root reaches the kernel.
                assert!(
                    all.contains("ermission denied")
                        || all.contains("not permitted")
                        || all.contains("must be superuser"),
                    "{ctx}"
                );
            }
            "FS-10" => {
                assert!(
                    !r.stdout
                        .lines()
                        .any(|l| l.starts_with("sd") || l.starts_with("nvme") || l == "mem"),
                    "{ctx}"
                );
                assert!(r.stdout.lines().any(|l| l == "null"), "{ctx}");
                assert_ne!(r.status, ToolStatus::Ok, "{ctx}");
            }
            "PRC-01" => assert!(all.contains("Errno"), "the ioctl failed: {ctx}"),
            "PRC-04" => {
                let pids = r
                    .stdout
                    .lines()
                    .filter(|l| l.chars().all(|c| c.is_ascii_digit()) && !l.is_empty())
                    .count();
                assert!(pids <= 10, "only sandbox processes: {ctx}");
                assert!(
                    !r.stdout.contains("redteam_sandbox"),
                    "the harness is invisible: {ctx}"
                );
            }
            "PRC-07" => {
                assert!(!all.contains(HOST_SECRET), "{ctx}");
                assert!(!all.contains("ghp_"), "{ctx}");
            }
            "PRC-10" => assert!(
                all.contains("Connection refused") || all.contains("No such file"),
                "{ctx}"
            ),
            "RES-01" => {
                // The script returns as soon as the first `:` is in the background, so the bomb
                // either reaches the task limit first or dies with the sandbox's PID namespace
                // when the script ends; either way nothing of it may survive, and the host can
                // still fork. (a_fork_bomb_is_stopped_and_leaves_no_process in sandbox.rs keeps
                // the script alive and proves the limit itself.)
                let limited = r.reason.clone().unwrap_or_default().contains("tasks");
                assert!(limited || r.status == ToolStatus::Ok, "{ctx}");
                assert!(
                    std::process::Command::new("/bin/true")
                        .status()
                        .unwrap()
                        .success()
                );
            }
            "RES-04" => {
                assert_eq!(all.matches("No space left on device").count(), 2, "{ctx}");
            }
            "RES-07" => {
                assert!(r.truncated, "{ctx}");
                assert!(r.stdout.len() < 2 << 20, "{id}");
            }
            "RES-10" | "RES-12" => {
                assert_eq!(r.status, ToolStatus::Timeout, "{ctx}");
                assert!(elapsed < Duration::from_secs(10), "{ctx}");
            }
            "RES-15" => assert!(processes_with("sleep 100000").is_empty(), "{ctx}"),
            "RES-19" => {
                assert_ne!(r.status, ToolStatus::Ok, "{ctx}");
                assert!(
                    all.contains("No such file")
                        || all.contains("Read-only")
                        || all.contains("ermission denied"),
                    "{ctx}"
                );
            }
            other => panic!("a new sandbox case {other} needs an expectation here: {ctx}"),
        }
        no_survivor(&r, id, &script);
        checked.push(id.clone());
    }
    assert_eq!(checked.len(), cases.len());
}

/// Nothing of the case runs after its call: no process whose command line holds its script (the
/// shell and every subshell of it do), and none of the long sleeps and fills the cases start.
fn no_survivor(r: &ToolResult, id: &str, script: &str) {
    // A script as short as `yes` is no marker: other processes' command lines contain it.
    let own = (script.len() >= 12).then_some(script);
    let left: Vec<String> = own
        .into_iter()
        .chain(["sleep 100000", "/tmp/fill"])
        .flat_map(processes_with)
        .collect();
    assert!(
        left.is_empty(),
        "{id} left processes {left:?}: {:?} {:?}",
        r.status,
        r.reason
    );
}

/// The same cases under the landlock backend (issue 34, part 2), in SAFE's read-only closed
/// profile (the backend refuses a writable one before anything runs, which
/// `writable_and_networked_calls_are_refused_before_anything_runs` in spear-cli shows). Where the
/// backend holds the case as bubblewrap does, the expectation is bubblewrap's; where it does not
/// (no PID namespace: host processes are visible), the result must say so in its guarantees.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a table: one expectation per red-team case of the sandbox and limits file"
)]
fn every_sandbox_and_limits_case_under_landlock() {
    use spear_core::Guarantee;
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let cases = sandbox_cases();
    let mut checked = Vec::new();
    for (id, input) in &cases {
        let f = Fixture::with(|c| {
            c.sandbox.backend = spear_sandbox::BackendChoice::Landlock;
            c.default_timeout =
                Duration::from_secs(if matches!(id.as_str(), "RES-10" | "RES-12") {
                    2
                } else {
                    20
                });
            c.flood_bytes = 64 << 20;
        });
        std::fs::create_dir_all(f.ws.join(".git/hooks")).unwrap();
        std::fs::write(f.ws.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::create_dir_all(f.ws.join("vendor/lib/.git/hooks")).unwrap();
        let canary = f.outside.join(format!("canary-{id}"));
        let script = input
            .replace("{WS}", &f.ws.display().to_string())
            .replace("{HOME}", &f.home.display().to_string())
            .replace("{CANARY}", &canary.display().to_string());
        let hosts = sha(std::path::Path::new("/etc/hosts"));
        let hostname = sha(std::path::Path::new("/etc/hostname"));
        let started = Instant::now();
        let r = f.safe(&script);
        let elapsed = started.elapsed();
        let all = format!("{}{}", r.stdout, r.stderr);
        let ctx = format!("{id}: {r:?}");
        assert!(!canary.exists(), "{ctx}");
        let denied = |n: usize| all.matches("ermission denied").count() >= n;
        match id.as_str() {
            "PER-01" => assert_eq!(
                std::fs::read_to_string(f.ws.join(".git/hooks/pre-commit")).unwrap(),
                "#!/bin/sh\nexit 0\n",
                "{ctx}"
            ),
            "PER-04" => assert!(
                !f.ws.join("vendor/lib/.git/hooks/post-checkout").exists(),
                "{ctx}"
            ),
            "PER-07" => assert!(!f.ws.join(".envrc").exists(), "{ctx}"),
            "PER-10" => {
                assert!(!f.home.join(".config").exists(), "{ctx}");
                assert_ne!(r.status, ToolStatus::Ok, "{ctx}");
            }
            "FS-01" => {
                assert_eq!(sha(std::path::Path::new("/etc/hosts")), hosts);
                assert!(!std::path::Path::new("/pwned").exists());
                assert!(!std::path::Path::new("/usr/local/bin/x").exists());
                assert!(denied(3), "{ctx}");
            }
            "FS-04" => {
                assert_eq!(sha(std::path::Path::new("/etc/hostname")), hostname);
                assert_ne!(r.status, ToolStatus::Ok, "{ctx}");
            }
            "FS-07" => {
                assert_ne!(r.status, ToolStatus::Ok, "{ctx}");
                assert!(
                    denied(1) || all.contains("not permitted") || all.contains("must be superuser"),
                    "{ctx}"
                );
            }
            "FS-10" => {
                // /dev cannot be listed, and no disk or memory device opened (a host without
                // them answers "No such file" before Landlock is asked).
                assert!(
                    !r.stdout
                        .lines()
                        .any(|l| l.starts_with("sd") || l.starts_with("nvme") || l == "mem"),
                    "{ctx}"
                );
                assert!(denied(1), "{ctx}");
                assert_ne!(r.status, ToolStatus::Ok, "{ctx}");
            }
            "PRC-01" => assert!(all.contains("Errno"), "the ioctl failed: {ctx}"),
            "PRC-04" => {
                // No PID namespace: the host's processes are visible, and the result says it
                // had no process boundary.
                assert!(
                    !r.guarantees
                        .unwrap()
                        .enforced
                        .contains(Guarantee::ProcessBoundary),
                    "{ctx}"
                );
            }
            "PRC-07" => {
                assert!(!all.contains(HOST_SECRET), "{ctx}");
                assert!(!all.contains("ghp_"), "{ctx}");
            }
            "PRC-10" => assert!(all.contains("not permitted"), "no socket at all: {ctx}"),
            "RES-01" => {
                let limited = r.reason.clone().unwrap_or_default().contains("tasks");
                assert!(limited || r.status == ToolStatus::Ok, "{ctx}");
                assert!(
                    std::process::Command::new("/bin/true")
                        .status()
                        .unwrap()
                        .success()
                );
            }
            // The host's /tmp and /dev/shm are not the command's: no write lands there.
            "RES-04" => assert!(denied(2), "{ctx}"),
            "RES-07" => {
                assert!(r.truncated, "{ctx}");
                assert!(r.stdout.len() < 2 << 20, "{id}");
            }
            "RES-10" | "RES-12" => {
                assert_eq!(r.status, ToolStatus::Timeout, "{ctx}");
                assert!(elapsed < Duration::from_secs(10), "{ctx}");
            }
            "RES-15" => assert!(processes_with("sleep 100000").is_empty(), "{ctx}"),
            "RES-19" => {
                assert_ne!(r.status, ToolStatus::Ok, "{ctx}");
                assert!(denied(1) || all.contains("No such file"), "{ctx}");
            }
            other => panic!("a new sandbox case {other} needs an expectation here: {ctx}"),
        }
        // Every case ran under the landlock backend (none was refused as a whole).
        assert!(
            r.guarantees
                .is_some_and(|g| g.enforced.contains(Guarantee::WriteBoundary)),
            "{ctx}"
        );
        no_survivor(&r, id, &script);
        checked.push(id.clone());
    }
    assert_eq!(checked.len(), cases.len());
}
