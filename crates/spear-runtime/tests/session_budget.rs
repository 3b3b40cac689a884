//! A session's budget, against the real kernel and the real sandbox: all of a session's commands
//! and background jobs together stay within the session's task budget (a parent cgroup over each
//! command's own), while each command still stops at its own limit; and nothing of the session
//! (no cgroup directory, no process) outlives it.
//!
//! Runs as root (the cgroup v1 backend on our hosts), and as the unprivileged user through
//! `scripts/test-unprivileged.sh` (a delegated v1 subtree). Every negative check has a positive
//! control: one job alone fills its own limit, and the session's jobs together do fill the
//! session's budget (so the budget, not a lack of processes, is what held them).

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Fixture, writable};
use spear_core::ToolStatus;
use spear_runtime::{CommandLine, CommandRequest, Jobs};
use spear_sandbox::{CgroupLimits, SessionBudget};
use spear_testkit::process::command_lines;
use spear_testkit::wait::wait_for;

/// One command's task limit in these tests.
const COMMAND_TASKS: u32 = 64;
/// The session's task budget: room for two commands at their limit, not for five.
const SESSION_TASKS: u32 = 150;

/// The command lines of the host's processes that are exactly `sleep {marker}`.
fn sleeps(marker: &str) -> usize {
    let want = format!("sleep {marker}");
    command_lines()
        .iter()
        .filter(|c| c.trim_end() == want)
        .count()
}

/// A script that tries to hold 400 processes at once.
fn bomb(marker: &str) -> String {
    format!("for i in $(seq 400); do sleep {marker} & done; wait")
}

/// The most of `measure` seen over `span`, sampled every 5 ms.
fn most(span: Duration, mut measure: impl FnMut() -> u64) -> u64 {
    let start = Instant::now();
    let mut most = 0;
    while start.elapsed() < span {
        most = most.max(measure());
        std::thread::sleep(Duration::from_millis(5));
    }
    most
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one story: the control, the jobs together, their ends, the session's end"
)]
fn a_sessions_jobs_together_stay_within_its_task_budget() {
    let marker = "2718.2818";
    let f = Fixture::with(|c| {
        c.sandbox.cgroup = Some(CgroupLimits {
            tasks_max: COMMAND_TASKS,
            ..CgroupLimits::default()
        });
        c.sandbox.session = Some(SessionBudget {
            tasks_max: SESSION_TASKS,
            ..SessionBudget::default()
        });
    });
    // The first command makes the session's cgroup (and the preflight runs inside it).
    let r = f.safe("true");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    let session = f.runner.sandbox().session().expect("the session's cgroup");
    let session_dirs: Vec<PathBuf> = session.dirs().into_iter().map(PathBuf::from).collect();
    assert!(
        !session_dirs.is_empty(),
        "a cgroupfs session has directories"
    );
    for dir in &session_dirs {
        assert!(dir.is_dir(), "{}", dir.display());
    }
    let pids_dir = session_dirs
        .iter()
        .find(|d| d.join("pids.max").exists())
        .unwrap()
        .clone();
    assert_eq!(
        std::fs::read_to_string(pids_dir.join("pids.max"))
            .unwrap()
            .trim(),
        SESSION_TASKS.to_string()
    );
    let current = || session.tasks_current().unwrap();
    let jobs = Jobs::default();
    let job = |n: u32| {
        jobs.start(
            Arc::clone(&f.runner),
            CommandRequest::new(CommandLine::Script(bomb(marker)), writable()),
            &format!("bomb {n}"),
            u64::from(n),
        )
        .unwrap()
    };

    // Positive control: one job alone fills its own limit, and the session's budget has room
    // left. Each job's tree counts bwrap and its shell too, so its sleeps are a few below its
    // limit.
    let first = job(1);
    assert!(
        wait_for(Duration::from_secs(20), || sleeps(marker) >= 50),
        "the first job started its sleeps ({})",
        sleeps(marker)
    );
    let alone = most(Duration::from_secs(2), || {
        u64::try_from(sleeps(marker)).unwrap()
    });
    assert!(
        alone < u64::from(COMMAND_TASKS),
        "one job holds {alone} sleeps, within its own limit"
    );
    assert!(
        alone >= u64::from(COMMAND_TASKS) - 8,
        "one job filled its own limit ({alone} sleeps)"
    );
    let with_one = current();
    assert!(
        with_one <= u64::from(COMMAND_TASKS) + 4,
        "the session holds one job's tasks ({with_one})"
    );

    // Four more: alone, each would hold 60 sleeps (300 in all); together they stop at the budget.
    let others: Vec<_> = (2..=5).map(job).collect();
    let most_tasks = most(Duration::from_secs(4), current);
    let most_sleeps = u64::try_from(sleeps(marker)).unwrap();
    assert!(
        most_tasks <= u64::from(SESSION_TASKS),
        "the session held {most_tasks} tasks, over its budget of {SESSION_TASKS}"
    );
    assert!(
        most_sleeps < u64::from(SESSION_TASKS),
        "{most_sleeps} sleeps in the session"
    );
    assert!(
        most_tasks >= u64::from(SESSION_TASKS) - 2,
        "the jobs together filled the session's budget ({most_tasks} of {SESSION_TASKS})"
    );
    assert_eq!(
        session.tasks_peak(),
        Some(u64::from(SESSION_TASKS)),
        "the kernel's own peak"
    );

    eprintln!(
        "one job alone: {alone} sleeps, the session {with_one} tasks; five jobs: at most {most_tasks} tasks \
         ({most_sleeps} sleeps) in a session of {SESSION_TASKS}"
    );

    // Their ends say which limit stopped them: the first its own, a later one the session's.
    for j in std::iter::once(&first).chain(&others) {
        j.kill();
    }
    let reasons: Vec<String> = std::iter::once(&first)
        .chain(&others)
        .map(|j| {
            let end = j.read().finished.expect("a killed job has ended");
            end.result.reason.unwrap_or_default()
        })
        .collect();
    assert!(
        reasons[0].contains(&format!(
            "the command reached its limit of {COMMAND_TASKS} tasks"
        )),
        "{reasons:?}"
    );
    assert!(
        reasons[1..].iter().any(|r| r.contains(&format!(
            "the session's task budget of {SESSION_TASKS} (all of its commands and background jobs together) is reached"
        ))),
        "{reasons:?}"
    );
    assert!(
        wait_for(Duration::from_secs(5), || sleeps(marker) == 0),
        "the killed jobs' processes are gone"
    );
    // The session lives on without its jobs, and runs commands again.
    assert!(session_dirs.iter().all(|d| d.is_dir()));
    let r = f.safe("echo again");
    assert_eq!(r.stdout, "again\n", "{r:?}");

    // Nothing of the session outlives it: a job still running when the session ends is killed,
    // and every directory goes.
    let last = job(6);
    assert!(wait_for(Duration::from_secs(20), || sleeps(marker) >= 10));
    drop(last);
    drop(others);
    drop(first);
    drop(jobs);
    drop(session);
    drop(f);
    assert!(
        wait_for(Duration::from_secs(5), || sleeps(marker) == 0),
        "{} sleeps outlived the session",
        sleeps(marker)
    );
    for dir in &session_dirs {
        assert!(!dir.exists(), "{} outlived the session", dir.display());
    }
}
