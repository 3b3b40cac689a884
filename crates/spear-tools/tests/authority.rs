//! Approvals become grants bound to what runs (real bwrap): what a person approved is what
//! starts, and a directory swapped while they read the question is not what they approved.
//! Red-team APR-01 (display spoofing) runs here against the confirmation channel.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::{Env, Opts, router};
use serde_json::json;
use spear_core::ExecutionMode::Ask;
use spear_core::{RefusalRule, ToolStatus};
use spear_policy::{ConfirmRequest, Confirmation, Confirmer};

/// Approves, after doing `meanwhile` (what happens on the host while the person reads), and keeps
/// the questions it was asked.
struct ApproveAfter {
    meanwhile: Box<dyn Fn() + Send + Sync>,
    asked: Arc<Mutex<Vec<ConfirmRequest>>>,
}

impl Confirmer for ApproveAfter {
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation {
        self.asked.lock().unwrap().push(request.clone());
        (self.meanwhile)();
        Confirmation::Approved
    }
}

fn approving(
    meanwhile: impl Fn() + Send + Sync + 'static,
) -> (Opts, Arc<Mutex<Vec<ConfirmRequest>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let mut opts = Opts::mode(Ask);
    opts.confirmer = Some(Box::new(ApproveAfter {
        meanwhile: Box::new(meanwhile),
        asked: Arc::clone(&asked),
    }));
    (opts, asked)
}

#[test]
fn a_directory_swapped_while_the_person_reads_is_not_what_was_approved() {
    let env = Env::new();
    std::fs::create_dir_all(env.path("sub")).unwrap();
    std::fs::create_dir_all(env.path("other")).unwrap();
    let (sub, ws) = (env.path("sub"), env.ws.clone());
    let (opts, asked) = approving(move || {
        std::fs::rename(&sub, ws.join("sub.old")).unwrap();
        std::os::unix::fs::symlink("other", ws.join("sub")).unwrap();
    });
    let r = router(&env, opts);
    let e = r.call(
        "terminal",
        json!({"command": "touch made.txt", "workdir": "sub"}),
    );
    assert_eq!(asked.lock().unwrap().len(), 1, "{e:?}");
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    assert_eq!(e.result.rule(), Some(RefusalRule::GrantRefused), "{e:?}");
    let reason = e.result.reason.as_deref().unwrap();
    assert!(reason.contains("another working directory"), "{reason}");
    for dir in ["sub", "other", "sub.old"] {
        assert!(!env.path(&format!("{dir}/made.txt")).exists(), "{dir}");
    }
    let log = std::fs::read_to_string(env.audit_path()).unwrap();
    assert!(log.contains("\"grant_refused\""), "{log}");

    // Positive control: nothing swapped, the approved command runs where it was approved.
    let env = Env::new();
    std::fs::create_dir_all(env.path("sub")).unwrap();
    let (opts, _) = approving(|| {});
    let r = router(&env, opts);
    let e = r.call(
        "terminal",
        json!({"command": "touch made.txt", "workdir": "sub"}),
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert!(env.path("sub/made.txt").exists());
}

#[test]
fn each_approval_runs_once_and_the_next_call_is_asked_again() {
    let env = Env::new();
    let (opts, asked) = approving(|| {});
    let r = router(&env, opts);
    for n in 1..=2 {
        let e = r.call("terminal", json!({"command": "echo x >> log.txt"}));
        assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
        assert_eq!(asked.lock().unwrap().len(), n);
    }
    assert_eq!(env.read("log.txt").unwrap(), "x\nx\n");
}

/// APR-01: the confirmation shows the bidirectional override escaped and warns of it, and what
/// runs is exactly the bytes approved (the override included), nothing the display suggested.
#[test]
fn apr_01_the_approved_bytes_are_the_bytes_that_run() {
    let cases = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/redteam-public-cases.jsonl"
    ))
    .unwrap();
    let case: serde_json::Value = cases
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|c| c["id"] == "APR-01")
        .unwrap();
    let env = Env::new();
    let canary = env.outside.join("canary-apr01");
    let input = case["input"]
        .as_str()
        .unwrap()
        .replace("{CANARY}", canary.to_str().unwrap());
    assert!(input.contains('\u{202e}'));
    // Written to a file, so that ASK asks.
    let command = format!("{input} > shown.txt");
    let (opts, asked) = approving(|| {});
    let r = router(&env, opts);
    let e = r.call("terminal", json!({ "command": command }));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    // The question holds the command exactly (the MCP and terminal prompts render it escaped,
    // with the warning: checked where they are built); here, its bytes are the call's.
    assert_eq!(asked[0].command, command);
    let shown = spear_tools::confirmation_text(&asked[0].command);
    assert!(
        !shown.contains('\u{202e}') && shown.contains("\\u{202e}"),
        "{shown}"
    );
    assert!(spear_tools::hidden_characters_warning(&asked[0].command).is_some());
    // What ran: echo of the string, override and all; the "touch" inside it never ran.
    let out = env.read("shown.txt").unwrap();
    assert!(out.contains('\u{202e}') && out.contains("touch"), "{out:?}");
    assert!(!canary.exists());
}

#[test]
fn a_target_planted_while_the_person_reads_is_not_what_was_approved() {
    let env = Env::new();
    let (ws, outside) = (env.ws.clone(), env.outside.clone());
    let (opts, _) = approving(move || {
        std::os::unix::fs::symlink(outside.join("victim"), ws.join("t.txt")).unwrap();
    });
    let r = router(&env, opts);
    let e = r.call("terminal", json!({"command": "echo x > t.txt"}));
    assert_eq!(e.result.rule(), Some(RefusalRule::GrantRefused), "{e:?}");
    assert!(
        e.result
            .reason
            .as_deref()
            .unwrap()
            .contains("changed since the approval")
    );
    assert!(!env.outside.join("victim").exists());
    assert!(
        std::fs::symlink_metadata(env.path("t.txt"))
            .unwrap()
            .is_symlink()
    );
}

/// Declines, and keeps what each question was bound to.
struct RecordBound(Arc<Mutex<Vec<Option<String>>>>);

impl Confirmer for RecordBound {
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation {
        self.0.lock().unwrap().push(request.bound.clone());
        Confirmation::Declined
    }
}

/// The question is bound to the place as it was read when it was asked, so an answer (an
/// input-required round's, carried in its sealed state) given for the command in `sub` does not
/// approve the same command after `sub` was swapped for a link: that is another question.
#[test]
fn a_question_is_bound_to_the_place_it_was_asked_about() {
    let env = Env::new();
    std::fs::create_dir_all(env.path("sub")).unwrap();
    std::fs::create_dir_all(env.path("other")).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut opts = Opts::mode(Ask);
    opts.confirmer = Some(Box::new(RecordBound(Arc::clone(&seen))));
    let r = router(&env, opts);
    let call = || {
        r.call(
            "terminal",
            json!({"command": "touch made.txt", "workdir": "sub"}),
        )
    };
    call();
    call();
    std::fs::rename(env.path("sub"), env.path("sub.old")).unwrap();
    std::os::unix::fs::symlink("other", env.path("sub")).unwrap();
    call();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert!(seen[0].is_some());
    // The same place: the same question (an earlier answer would still be the answer).
    assert_eq!(seen[0], seen[1]);
    // Swapped: another question.
    assert_ne!(seen[0], seen[2]);
    assert!(!env.path("other/made.txt").exists() && !env.path("sub.old/made.txt").exists());
}
