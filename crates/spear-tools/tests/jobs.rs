//! Background jobs: started at once, read incrementally (never the same byte twice), killed with
//! their whole tree, owned by their session, dead with it, and a writable job's changes found,
//! checked and checkpointed when it ends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{Env, Opts, router};
use serde_json::json;
use spear_core::ExecutionMode::{Auto, Safe};
use spear_core::ToolStatus;
use spear_testkit::process::command_lines;
use spear_tools::{ToolResultEnvelope, ToolRouter};

/// Whether any process still mentions `marker` (the shell that runs it, bwrap, or the sleep).
fn alive(marker: &str) -> bool {
    command_lines().iter().any(|c| c.contains(marker))
}

/// Whether the `sleep {marker}` itself runs, so that what the script did before it has been done
/// (the shell's own command line holds the marker from the start).
fn sleeping(marker: &str) -> bool {
    command_lines()
        .iter()
        .any(|c| c.trim_end() == format!("sleep {marker}"))
}

/// Whether `f` holds within 20 s.
fn wait_for(f: impl FnMut() -> bool) -> bool {
    spear_testkit::wait::wait_for(Duration::from_secs(20), f)
}

fn start(r: &ToolRouter, command: &str) -> String {
    let e = r.call("terminal", json!({"command": command, "background": true}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    let job = e.job.clone().unwrap();
    assert_eq!(job.state, spear_tools::JobPhase::Running);
    job.id
}

/// Reads until the job has ended; returns every read.
fn drain(r: &ToolRouter, id: &str) -> Vec<ToolResultEnvelope> {
    let mut reads = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let e = r.call("terminal_output", json!({ "job_id": id }));
        let done = e
            .job
            .as_ref()
            .is_some_and(|j| j.state == spear_tools::JobPhase::Exited);
        reads.push(e);
        if done {
            return reads;
        }
        assert!(Instant::now() < deadline, "the job did not end");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_job_is_read_incrementally_and_never_twice() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Safe));
    let started = Instant::now();
    let id = start(
        &r,
        "for i in 1 2 3 4 5; do echo line$i; echo err$i >&2; sleep 0.2; done",
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "returned at once"
    );
    let reads = drain(&r, &id);
    assert!(reads.len() >= 2, "read while it ran: {reads:?}");
    let stdout: String = reads.iter().map(|e| e.result.stdout.as_str()).collect();
    let stderr: String = reads.iter().map(|e| e.result.stderr.as_str()).collect();
    assert_eq!(stdout, "line1\nline2\nline3\nline4\nline5\n");
    assert_eq!(stderr, "err1\nerr2\nerr3\nerr4\nerr5\n");
    let last = reads.last().unwrap();
    assert_eq!(
        (last.result.status, last.result.exit_code),
        (ToolStatus::Ok, Some(0))
    );
    // Collected: the id is gone.
    let e = r.call("terminal_output", json!({ "job_id": id }));
    assert_eq!(e.result.status, ToolStatus::NotFound, "{e:?}");
}

#[test]
fn a_failing_job_reports_its_exit_code() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Safe));
    let id = start(&r, "echo bye; exit 3");
    let last = drain(&r, &id).pop().unwrap();
    assert_eq!(
        (last.result.status, last.result.exit_code),
        (ToolStatus::Failed, Some(3))
    );
}

#[test]
fn kill_ends_the_whole_tree() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Safe));
    let marker = "987654.25";
    let id = start(
        &r,
        &format!("sleep {marker} & (sleep {marker} &) ; sleep {marker}"),
    );
    assert!(
        wait_for(|| sleeping(marker)),
        "positive control: the job's processes run"
    );
    let e = r.call("terminal_kill", json!({ "job_id": id }));
    assert_eq!(e.result.status, ToolStatus::Cancelled, "{e:?}");
    assert_eq!(e.job.unwrap().state, spear_tools::JobPhase::Exited);
    assert!(!alive(marker), "nothing is left running");
}

#[test]
fn jobs_die_with_their_session_and_belong_to_it() {
    let env = Env::new();
    let marker = "987653.5";
    let r = router(&env, Opts::mode(Safe));
    let id = start(&r, &format!("sleep {marker}"));
    assert!(wait_for(|| sleeping(marker)));
    // Another session does not see it.
    let other = router(&env, Opts::mode(Safe));
    let e = other.call("terminal_output", json!({ "job_id": id }));
    assert_eq!(e.result.status, ToolStatus::NotFound, "{e:?}");
    let e = other.call("terminal_kill", json!({ "job_id": id }));
    assert_eq!(e.result.status, ToolStatus::NotFound);
    assert!(alive(marker));
    drop(r);
    assert!(!alive(marker), "the session ended, and its job with it");
}

#[test]
fn a_writable_jobs_changes_are_found_when_it_ends() {
    let env = Env::new();
    env.write("generated/g.rs", "// generated\n");
    env.write("w.py", "import sys\nopen(sys.argv[1], 'w').write('x')\n");
    let r = router(&env, Opts::mode(Auto));
    r.begin_turn(Some("jobs")).unwrap();
    let id = start(
        &r,
        "sleep 0.3; echo made > made.txt; python3 w.py generated/g.rs",
    );
    // Nothing else writes while a writable job may: its changes are checked when it ends.
    let e = r.call("write_file", json!({"path": "other.txt", "content": "o"}));
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    assert!(e.result.reason.unwrap().contains(&id));
    let e = r.call("terminal", json!({"command": "./w.py x"}));
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    // Reads go on.
    let e = r.call("read_file", json!({"path": "w.py"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    let last = drain(&r, &id).pop().unwrap();
    // Part of what it changed was kept out: denied, and 126 in place of its 0.
    assert_eq!(last.result.status, ToolStatus::Denied, "{last:?}");
    assert_eq!(
        last.result.exit_code,
        Some(spear_core::exit_code::REFUSED),
        "{last:?}"
    );
    assert!(
        last.result.changed_paths.contains(&"made.txt".to_owned()),
        "{last:?}"
    );
    // The target policy holds for a job as for any command: the generated file never lands.
    assert_eq!(env.read("generated/g.rs").unwrap(), "// generated\n");
    assert!(
        last.result
            .reason
            .unwrap()
            .contains("did not let these changes reach the workspace")
    );
    let ws =
        spear_workspace::Workspace::open(&spear_workspace::WorkspaceConfig::new(&env.ws)).unwrap();
    // Once it has ended and been read, writes go on.
    let e = r.call("write_file", json!({"path": "other.txt", "content": "o"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    env.checkpoints().undo_last(&ws, &ws.fs().unwrap()).unwrap();
    assert!(!env.path("made.txt").exists());
    assert!(!env.path("other.txt").exists());
}

/// A writable job never read is reported when the session ends: killed, its staged changes
/// judged, committed where allowed, and checkpointed. Until then none of them is on the host.
#[test]
fn an_uncollected_job_is_reported_when_the_session_ends() {
    let env = Env::new();
    env.write("generated/g.rs", "// generated\n");
    env.write("w.py", "import sys\nopen(sys.argv[1], 'w').write('x')\n");
    let r = router(&env, Opts::mode(Auto));
    r.begin_turn(Some("ending")).unwrap();
    let marker = "4711.3";
    let id = start(
        &r,
        &format!("python3 w.py generated/g.rs; echo done > made.txt; exec sleep {marker}"),
    );
    assert!(wait_for(|| sleeping(marker)));
    assert!(
        !env.path("made.txt").exists(),
        "staged, not on the host yet"
    );
    drop(r);
    assert!(!alive(marker));
    assert_eq!(
        env.read("made.txt").unwrap(),
        "done\n",
        "committed at the end"
    );
    assert_eq!(env.read("generated/g.rs").unwrap(), "// generated\n");
    let log = std::fs::read_to_string(env.audit_path()).unwrap();
    assert!(log.contains("terminal_kill") && log.contains(&id), "{log}");
    let ws =
        spear_workspace::Workspace::open(&spear_workspace::WorkspaceConfig::new(&env.ws)).unwrap();
    env.checkpoints().undo_last(&ws, &ws.fs().unwrap()).unwrap();
    assert!(!env.path("made.txt").exists());
}

/// A job verifies only what was there when it started, and a killed job verifies nothing.
#[test]
fn verdicts_and_jobs() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Auto));
    // Started before a change, collected after it: not a verification of the change.
    let id = start(&r, "sleep 0.3");
    let e = r.call("write_file", json!({"path": "a.txt", "content": "a"}));
    assert_eq!(
        e.result.status,
        ToolStatus::Ok,
        "a read-only job does not block writes: {e:?}"
    );
    drain(&r, &id);
    assert_eq!(r.verdict(), spear_runtime::Verdict::Unverified);
    // Started after the change and ended by itself with 0: verified.
    let id = start(&r, "test -f a.txt");
    drain(&r, &id);
    assert_eq!(r.verdict(), spear_runtime::Verdict::Verified);
    // Killing a server afterwards takes nothing back.
    let id = start(&r, "sleep 100");
    r.call("terminal_kill", json!({ "job_id": id }));
    assert_eq!(r.verdict(), spear_runtime::Verdict::Verified);
}

#[test]
fn a_background_job_has_no_timeout_to_give() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Safe));
    let e = r.call(
        "terminal",
        json!({"command": "true", "background": true, "timeout": 5}),
    );
    assert_eq!(e.result.status, ToolStatus::Failed, "{e:?}");
    assert!(e.result.reason.unwrap().contains("no timeout"));
}

#[test]
fn a_job_in_a_read_only_session_cannot_write() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Safe));
    let e = r.call(
        "terminal",
        json!({"command": "touch made.txt", "background": true}),
    );
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    assert!(e.job.is_none());
    // A script the classifier cannot see into runs, on a read-only workspace.
    env.write("w.py", "open('made.txt', 'w').write('x')\n");
    let id = start(&r, "python3 w.py");
    let last = drain(&r, &id).pop().unwrap();
    assert_ne!(last.result.exit_code, Some(0), "{last:?}");
    assert!(!env.path("made.txt").exists());
    // The answer says why the write failed and which flags grant writing (issue 32).
    let reason = last.result.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("SAFE mode the workspace is read-only")
            && reason.contains("--ask or --auto"),
        "{last:?}"
    );
}
