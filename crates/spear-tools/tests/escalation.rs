//! Justified escalation through the router: a SAFE (or read-only role's) terminal call that asks
//! to run once with a wider sandbox, with each answer the person asked can give, the schema each
//! session publishes, and the audit pair.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::{Env, Opts, router};
use serde_json::{Value, json};
use spear_core::ExecutionMode::{Ask, Auto, Safe};
use spear_core::{RefusalRule, ToolStatus};
use spear_policy::{ConfirmRequest, Confirmation, Confirmer};
use spear_tools::{Role, ToolResultEnvelope, ToolRouter};

const WHY: &str = "the task is to write the generated fixture";

/// Answers as told and keeps every request whole.
struct Asked {
    answer: Confirmation,
    seen: Arc<Mutex<Vec<ConfirmRequest>>>,
}

fn asked(answer: Confirmation) -> (Box<Asked>, Arc<Mutex<Vec<ConfirmRequest>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    (
        Box::new(Asked {
            answer,
            seen: Arc::clone(&seen),
        }),
        seen,
    )
}

impl Confirmer for Asked {
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation {
        self.seen.lock().unwrap().push(request.clone());
        self.answer
    }
}

fn with(
    mode: spear_core::ExecutionMode,
    answer: Option<Confirmation>,
) -> (Env, ToolRouter, Arc<Mutex<Vec<ConfirmRequest>>>) {
    let env = Env::new();
    let mut opts = Opts::mode(mode);
    let seen = match answer {
        Some(a) => {
            let (c, seen) = asked(a);
            opts.confirmer = Some(c);
            seen
        }
        None => Arc::new(Mutex::new(Vec::new())),
    };
    let r = router(&env, opts);
    (env, r, seen)
}

fn escalating(command: &str, caps: &[&str]) -> Value {
    json!({"command": command, "sandbox_permissions": caps, "justification": WHY})
}

fn rule(e: &ToolResultEnvelope) -> Option<RefusalRule> {
    e.result.refusal.as_ref().map(|r| r.rule())
}

fn terminal_schema(r: &ToolRouter) -> (Value, &'static str) {
    let tools = r.tools();
    let t = tools.iter().find(|s| s.name == "terminal").unwrap();
    (t.input_schema.clone(), t.description)
}

/// Approved: that one call runs with the wider sandbox (the write happens once); the session is
/// unchanged, so the next write, and the same one again without asking, are refused.
#[test]
fn approved_runs_that_one_call_and_the_next_is_confined_again() {
    let (env, r, seen) = with(Safe, Some(Confirmation::Approved));
    let e = r.call(
        "terminal",
        escalating("echo once >> once.txt", &["workspace:write"]),
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(env.read("once.txt").unwrap(), "once\n");
    assert_eq!(e.result.changed_paths, ["once.txt"]);
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        let q = &seen[0];
        assert_eq!(q.command, "echo once >> once.txt");
        let esc = q.escalation.as_ref().unwrap();
        assert_eq!(
            esc.capabilities
                .iter()
                .map(spear_core::Capability::as_str)
                .collect::<Vec<_>>(),
            ["workspace:write"]
        );
        assert_eq!(esc.justification, WHY);
        assert!(
            q.reason
                .starts_with(&format!("escalate sandbox to workspace:write: {WHY}; ")),
            "{}",
            q.reason
        );
        assert!(q.setting.as_deref().unwrap().starts_with("in ."), "{q:?}");
    }
    // The next calls are confined: the same write without escalation, and another.
    for command in ["echo once >> once.txt", "echo twice > twice.txt"] {
        let e = r.call("terminal", json!({"command": command}));
        assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
        assert_eq!(rule(&e), Some(RefusalRule::ModeForbids), "{e:?}");
    }
    assert_eq!(
        env.read("once.txt").unwrap(),
        "once\n",
        "written exactly once"
    );
    assert!(!env.path("twice.txt").exists());
    assert_eq!(seen.lock().unwrap().len(), 1, "nothing else was asked");
    // The audit pair, then the call's own record with what it was granted.
    let log = env.audit();
    let events: Vec<&str> = log.iter().map(|r| r["event"].as_str().unwrap()).collect();
    assert_eq!(
        &events[..3],
        ["escalation_requested", "escalation_approved", "tool_call"],
        "{log:?}"
    );
    let reason = format!("escalate sandbox to workspace:write: {WHY}");
    for record in &log[..2] {
        assert_eq!(record["reason"], reason, "{record}");
        assert_eq!(record["capabilities"], json!(["workspace:write"]));
        assert_eq!(record["tool"], "terminal");
    }
    assert_eq!(log[2]["status"], "ok");
    assert!(
        log[2]["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("workspace:write"))
    );
    assert_eq!(log[3]["rule"], "mode_forbids");
}

/// Declined: nothing runs, and the same escalation of the same command (however spaced) is then
/// refused at once in this turn; another command is still asked about, and a new turn asks again.
#[test]
fn declined_is_final_for_that_command_in_that_turn() {
    let (env, r, seen) = with(Safe, Some(Confirmation::Declined));
    let e = r.call(
        "terminal",
        escalating("echo no > canary.txt", &["workspace:write"]),
    );
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    assert_eq!(rule(&e), Some(RefusalRule::EscalationDeclined));
    assert_eq!(seen.lock().unwrap().len(), 1);
    let e = r.call(
        "terminal",
        escalating("echo  no >  canary.txt", &["workspace:write", "network"]),
    );
    assert_eq!(
        rule(&e),
        Some(RefusalRule::EscalationRejectedBefore),
        "{e:?}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1, "not asked again");
    let e = r.call(
        "terminal",
        escalating("echo no > other.txt", &["workspace:write"]),
    );
    assert_eq!(rule(&e), Some(RefusalRule::EscalationDeclined), "{e:?}");
    assert_eq!(
        seen.lock().unwrap().len(),
        2,
        "another command is asked about"
    );
    r.begin_turn(None).unwrap();
    let e = r.call(
        "terminal",
        escalating("echo no > canary.txt", &["workspace:write"]),
    );
    assert_eq!(rule(&e), Some(RefusalRule::EscalationDeclined), "{e:?}");
    assert_eq!(seen.lock().unwrap().len(), 3, "a new turn asks again");
    assert!(!env.path("canary.txt").exists());
    assert!(!env.path("other.txt").exists());
    let log = env.audit();
    let pair: Vec<(&str, &str)> = log
        .iter()
        .take(5)
        .map(|r| {
            (
                r["event"].as_str().unwrap(),
                r["rule"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        pair,
        [
            ("escalation_requested", ""),
            ("escalation_refused", "escalation_declined"),
            ("tool_call", "escalation_declined"),
            ("escalation_requested", ""),
            ("escalation_refused", "escalation_rejected_before"),
        ]
    );
}

/// Each other way an escalation goes unanswered fails closed with its own rule; nothing runs,
/// and none is remembered as a decline.
#[test]
fn unanswered_unavailable_and_deferred_run_nothing() {
    for (answer, status, want) in [
        (
            Some(Confirmation::Dismissed),
            ToolStatus::Cancelled,
            RefusalRule::EscalationUnanswered,
        ),
        (
            Some(Confirmation::Unavailable),
            ToolStatus::Cancelled,
            RefusalRule::EscalationUnavailable,
        ),
        (
            Some(Confirmation::Deferred),
            ToolStatus::Cancelled,
            RefusalRule::AwaitingConfirmation,
        ),
        (
            None,
            ToolStatus::Cancelled,
            RefusalRule::EscalationUnavailable,
        ),
    ] {
        let (env, r, seen) = with(Safe, answer);
        for _ in 0..2 {
            let e = r.call(
                "terminal",
                escalating("echo no > canary.txt", &["workspace:write"]),
            );
            assert_eq!(e.result.status, status, "{answer:?}: {e:?}");
            assert_eq!(rule(&e), Some(want), "{answer:?}: {e:?}");
            let reason = e.result.reason.unwrap();
            assert!(
                reason.contains("nothing ran") || reason.contains("runs only when"),
                "{answer:?}: {reason}"
            );
        }
        assert_eq!(
            seen.lock().unwrap().len(),
            if answer.is_some() { 2 } else { 0 },
            "{answer:?}"
        );
        assert!(!env.path("canary.txt").exists(), "{answer:?}");
    }
}

/// AUTO grants no escalation by itself: an AUTO session's terminal has no such field (a call
/// that names it is invalid and asks nobody), and a reviewer in AUTO, whose commands run in
/// SAFE, is refused without someone to ask; with one who approves, it runs (positive control).
#[test]
fn auto_never_approves_an_escalation_by_itself() {
    let (env, r, seen) = with(Auto, Some(Confirmation::Approved));
    let e = r.call(
        "terminal",
        escalating("echo no > canary.txt", &["workspace:write"]),
    );
    assert_eq!(e.result.status, ToolStatus::Failed, "{e:?}");
    assert!(
        e.result
            .reason
            .as_deref()
            .unwrap()
            .contains("takes no `sandbox_permissions`"),
        "{e:?}"
    );
    assert!(seen.lock().unwrap().is_empty());
    assert!(!env.path("canary.txt").exists());
    let (schema, description) = terminal_schema(&r);
    assert!(
        schema["properties"].get("sandbox_permissions").is_none(),
        "{schema}"
    );
    assert!(
        schema["properties"].get("justification").is_none(),
        "{schema}"
    );
    assert!(!description.contains("sandbox_permissions"));

    let env = Env::new();
    let mut opts = Opts::mode(Auto);
    opts.role = Role::Reviewer;
    let r = router(&env, opts);
    let e = r.call(
        "terminal",
        escalating("echo no > canary.txt", &["workspace:write"]),
    );
    assert_eq!(rule(&e), Some(RefusalRule::EscalationUnavailable), "{e:?}");
    assert!(!env.path("canary.txt").exists());
    let mut opts = Opts::mode(Auto);
    opts.role = Role::Reviewer;
    let (c, seen) = asked(Confirmation::Approved);
    opts.confirmer = Some(c);
    let r = router(&env, opts);
    let e = r.call(
        "terminal",
        escalating("echo yes > canary.txt", &["workspace:write"]),
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(env.read("canary.txt").unwrap(), "yes\n");
    assert_eq!(seen.lock().unwrap().len(), 1);
}

/// The schema of each session: SAFE offers exactly what it may be given; `--no-network` takes
/// the network out of it; ASK offers nothing. A value outside the set is invalid arguments and
/// asks nobody; so is one field without the other.
#[test]
fn the_schema_and_the_arguments_hold_exactly_the_set() {
    let env = Env::new();
    let safe = router(&env, Opts::mode(Safe));
    let (schema, description) = terminal_schema(&safe);
    assert_eq!(
        schema["properties"]["sandbox_permissions"]["items"]["enum"],
        json!(["workspace:write", "network"])
    );
    assert!(
        description.contains("Never ask in advance"),
        "{description}"
    );
    let mut opts = Opts::mode(Safe);
    opts.no_network = true;
    let (c, seen) = asked(Confirmation::Approved);
    opts.confirmer = Some(c);
    let offline = router(&env, opts);
    let (schema, _) = terminal_schema(&offline);
    assert_eq!(
        schema["properties"]["sandbox_permissions"]["items"]["enum"],
        json!(["workspace:write"])
    );
    let (ask_schema, _) = terminal_schema(&router(&env, Opts::mode(Ask)));
    assert!(
        ask_schema["properties"]
            .get("sandbox_permissions")
            .is_none()
    );

    for (args, needle) in [
        (
            escalating("echo no > canary.txt", &["network"]),
            "--no-network removed it",
        ),
        (
            escalating("echo no > canary.txt", &["filesystem:read"]),
            "can ask only for workspace:write",
        ),
        (
            escalating("echo no > canary.txt", &["root"]),
            "unknown capability",
        ),
        (escalating("echo no > canary.txt", &[]), "is empty"),
        (
            json!({"command": "echo no > canary.txt", "sandbox_permissions": ["workspace:write"]}),
            "come together",
        ),
        (
            json!({"command": "echo no > canary.txt", "justification": WHY}),
            "come together",
        ),
        (
            json!({"command": "echo no > canary.txt", "sandbox_permissions": ["workspace:write"], "justification": "short"}),
            "characters",
        ),
    ] {
        let e = offline.call("terminal", args.clone());
        assert_eq!(e.result.status, ToolStatus::Failed, "{args}: {e:?}");
        let reason = e.result.reason.unwrap();
        assert!(
            reason.contains("invalid arguments for terminal") && reason.contains(needle),
            "{args}: {reason}"
        );
    }
    assert!(seen.lock().unwrap().is_empty());
    assert!(!env.path("canary.txt").exists());
    // Positive control: what the set holds is asked about and runs.
    let e = offline.call(
        "terminal",
        escalating("echo yes > canary.txt", &["workspace:write"]),
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(seen.lock().unwrap().len(), 1);
}

/// What is granted is what the command needs: a command SAFE runs already is not escalated
/// (and nobody is asked); one whose effects are unknown gets what was asked, so a program that
/// failed on the read-only workspace can be run again writable.
#[test]
fn only_what_the_command_needs_is_granted() {
    let (env, r, seen) = with(Safe, Some(Confirmation::Approved));
    let e = r.call("terminal", escalating("ls", &["workspace:write"]));
    assert_eq!(rule(&e), Some(RefusalRule::EscalationNotNeeded), "{e:?}");
    assert!(seen.lock().unwrap().is_empty());
    // Needs the network, asked for writing: refused as without escalation, nobody asked.
    let e = r.call(
        "terminal",
        escalating("curl -sS https://example.com", &["workspace:write"]),
    );
    assert_eq!(rule(&e), Some(RefusalRule::ModeForbids), "{e:?}");
    assert!(seen.lock().unwrap().is_empty());
    // A program of unknown effects: confined first (the write fails), then escalated.
    let script = "sh -c 'echo made > made.txt'";
    let confined = r.call("terminal", json!({"command": script}));
    assert_ne!(confined.result.status, ToolStatus::Ok, "{confined:?}");
    assert!(!env.path("made.txt").exists());
    let e = r.call("terminal", escalating(script, &["workspace:write"]));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(env.read("made.txt").unwrap(), "made\n");
    let q = seen.lock().unwrap()[0].clone();
    assert!(
        q.capabilities
            .contains(spear_core::Capability::WorkspaceWrite),
        "{q:?}"
    );
    assert!(
        !q.capabilities.contains(spear_core::Capability::Network),
        "{q:?}"
    );
}
