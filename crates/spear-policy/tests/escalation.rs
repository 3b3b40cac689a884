//! Justified escalation, as pure decisions: which capabilities a session may ask for once, what an
//! escalating command is given, and what each answer of the person asked means.

mod common;

use std::cell::RefCell;

use common::Fixture;
use spear_core::{Capability, CapabilityPolicy, CapabilitySet, ExecutionMode, RefusalRule};
use spear_policy::{
    Authorization, ConfirmRequest, Confirmation, Confirmer, Decision, confirm_escalation,
    decide_escalation, escalation_capabilities, escalation_request,
};

use Capability::{Network, WorkspaceWrite};
use ExecutionMode::{Ask, Auto, Safe};

fn set(caps: &[Capability]) -> CapabilitySet {
    CapabilitySet::of(caps)
}

fn policy(mode: ExecutionMode, no_network: bool) -> CapabilityPolicy {
    let p = CapabilityPolicy::for_mode(mode);
    if no_network { p.without_network() } else { p }
}

/// Every mode with and without `--no-network`: SAFE may ask for what ASK would confirm and AUTO
/// grants (never for what no mode grants, nor for the network `--no-network` removed); ASK and
/// AUTO can ask for nothing.
#[test]
fn what_a_session_may_ask_for() {
    for (mode, no_network, want) in [
        (Safe, false, set(&[WorkspaceWrite, Network])),
        (Safe, true, set(&[WorkspaceWrite])),
        (Ask, false, set(&[])),
        (Ask, true, set(&[])),
        (Auto, false, set(&[])),
        (Auto, true, set(&[])),
    ] {
        let got = escalation_capabilities(policy(mode, no_network));
        assert_eq!(got, want, "{mode} no_network={no_network}");
        for cap in got.iter() {
            assert!(cap.is_implemented_by_sandbox(), "{cap}");
            assert!(!CapabilityPolicy::modes_granting(cap).is_empty(), "{cap}");
        }
    }
}

/// (script, asked, SAFE's decision and the profile it confirms or the rule it denies with)
#[test]
fn what_an_escalating_command_is_given() {
    use Capability::{FilesystemRead as Read, ShellComplex as Complex};
    enum Want {
        Confirm(&'static [Capability]),
        Deny(RefusalRule),
    }
    let fx = Fixture::new();
    let safe = policy(Safe, false);
    for (script, asked, want) in [
        // Known to write: given what it needs.
        (
            "echo hi > out.txt",
            &[WorkspaceWrite][..],
            Want::Confirm(&[Read, WorkspaceWrite]),
        ),
        // Asked for more than it needs: only what it needs.
        (
            "echo hi > out.txt",
            &[WorkspaceWrite, Network][..],
            Want::Confirm(&[Read, WorkspaceWrite]),
        ),
        // Needs the network and asked for it.
        (
            "curl -sS https://example.com",
            &[Network][..],
            Want::Confirm(&[Read, Network]),
        ),
        // Needs what it did not ask for: denied as without escalation.
        (
            "curl -sS https://example.com",
            &[WorkspaceWrite][..],
            Want::Deny(RefusalRule::ModeForbids),
        ),
        // Effects unknown before it runs: given what was asked.
        (
            "python3 script.py",
            &[WorkspaceWrite][..],
            Want::Confirm(&[Read, WorkspaceWrite, Complex]),
        ),
        // Needs nothing beyond SAFE: nothing to escalate.
        (
            "ls -la",
            &[WorkspaceWrite][..],
            Want::Deny(RefusalRule::EscalationNotNeeded),
        ),
        // What no mode runs stays refused.
        (
            "sudo ls",
            &[WorkspaceWrite][..],
            Want::Deny(RefusalRule::PrivilegeChange),
        ),
        (
            "cat ~/.ssh/id_rsa",
            &[WorkspaceWrite, Network][..],
            Want::Deny(RefusalRule::CredentialStore),
        ),
    ] {
        let a = fx.classify(script);
        let got = decide_escalation(&a, safe, set(asked), script, false);
        match (want, &got) {
            (Want::Confirm(caps), Decision::Confirm(granted)) => {
                assert_eq!(*granted, set(caps), "{script} {asked:?}");
            }
            (Want::Deny(rule), Decision::Deny(r)) => {
                assert_eq!(r.rule(), rule, "{script} {asked:?}: {r}");
            }
            (_, other) => panic!("{script} {asked:?}: {other:?}"),
        }
    }
}

/// Outside the session's set (ASK and AUTO have none; `--no-network` takes the network out):
/// denied, never confirmed, never allowed.
#[test]
fn nothing_outside_the_set_is_confirmed_and_nothing_is_ever_allowed() {
    let fx = Fixture::new();
    let write = fx.classify("echo hi > out.txt");
    let curl = fx.classify("curl -sS https://example.com");
    for (a, mode, no_network, asked, rule) in [
        (
            &curl,
            Safe,
            true,
            set(&[Network]),
            RefusalRule::NetworkRemoved,
        ),
        (
            &write,
            Safe,
            false,
            set(&[Capability::Ssh]),
            RefusalRule::NoModeGrants,
        ),
        (
            &write,
            Auto,
            false,
            set(&[WorkspaceWrite]),
            RefusalRule::ModeForbids,
        ),
        (&curl, Ask, false, set(&[Network]), RefusalRule::ModeForbids),
    ] {
        let got = decide_escalation(a, policy(mode, no_network), asked, "cmd", false);
        assert!(
            matches!(&got, Decision::Deny(r) if r.rule() == rule),
            "{mode} {no_network} {asked:?}: {got:?}"
        );
    }
    // Declined before in this turn: denied at once, whatever is asked.
    let got = decide_escalation(
        &write,
        policy(Safe, false),
        set(&[WorkspaceWrite]),
        "cmd",
        true,
    );
    assert!(
        matches!(&got, Decision::Deny(r) if r.rule() == RefusalRule::EscalationRejectedBefore),
        "{got:?}"
    );
    // Positive control: the same write in SAFE is confirmed.
    assert!(matches!(
        decide_escalation(
            &write,
            policy(Safe, false),
            set(&[WorkspaceWrite]),
            "cmd",
            false
        ),
        Decision::Confirm(_)
    ));
}

struct Recorder {
    answer: Confirmation,
    asked: RefCell<Vec<ConfirmRequest>>,
}

impl Confirmer for Recorder {
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation {
        self.asked.borrow_mut().push(request.clone());
        self.answer
    }
}

/// Only an approval grants, each other answer has its own rule, and the question names the
/// escalation with its justification.
#[test]
fn each_answer_has_its_own_outcome() {
    let fx = Fixture::new();
    let script = "echo hi > out.txt";
    let a = fx.classify(script);
    let safe = policy(Safe, false);
    let Decision::Confirm(granted) =
        decide_escalation(&a, safe, set(&[WorkspaceWrite]), script, false)
    else {
        panic!("confirmed")
    };
    let request = escalation_request(&a, safe, granted, "the tests write a fixture", script);
    let esc = request.escalation.clone().unwrap();
    assert_eq!(esc.capabilities, set(&[WorkspaceWrite]));
    assert_eq!(
        esc.reason(),
        "escalate sandbox to workspace:write: the tests write a fixture"
    );
    assert!(
        request
            .reason
            .starts_with("escalate sandbox to workspace:write: the tests write a fixture; "),
        "{}",
        request.reason
    );
    for (answer, want) in [
        (
            Confirmation::Declined,
            Some(RefusalRule::EscalationDeclined),
        ),
        (
            Confirmation::Dismissed,
            Some(RefusalRule::EscalationUnanswered),
        ),
        (
            Confirmation::Unavailable,
            Some(RefusalRule::EscalationUnavailable),
        ),
        (
            Confirmation::Deferred,
            Some(RefusalRule::AwaitingConfirmation),
        ),
        (Confirmation::Approved, None),
    ] {
        let rec = Recorder {
            answer,
            asked: RefCell::new(Vec::new()),
        };
        let out = confirm_escalation(&request, Some(&rec));
        assert_eq!(
            rec.asked.borrow().as_slice(),
            std::slice::from_ref(&request),
            "{answer:?}"
        );
        match (want, &out) {
            (None, Authorization::Granted(caps)) => assert_eq!(*caps, granted),
            (Some(rule), Authorization::Denied(r) | Authorization::Cancelled(r)) => {
                assert_eq!(r.rule(), rule, "{answer:?}");
            }
            (_, other) => panic!("{answer:?}: {other:?}"),
        }
    }
    let out = confirm_escalation(&request, None);
    assert!(
        matches!(&out, Authorization::Cancelled(r) if r.rule() == RefusalRule::EscalationUnavailable),
        "{out:?}"
    );
}

/// The access an escalation is prepared with: what it was confirmed for is gated (it runs only
/// under the grant the approval produces), what SAFE never grants and it was not confirmed for
/// is denied, and a denial denies every kind.
#[test]
fn an_escalation_is_prepared_gated_on_exactly_what_was_confirmed() {
    use spear_core::authority::{Access, AccessKind};
    let fx = Fixture::new();
    let safe = policy(Safe, false);
    let write = fx.classify("echo hi > out.txt");
    let decision = decide_escalation(&write, safe, set(&[WorkspaceWrite, Network]), "w", false);
    let access = spear_policy::escalation_access(&decision, safe);
    for (kind, want) in [
        (AccessKind::WorkspaceWrite, Access::Gated),
        (AccessKind::Network, Access::Deny),
        (AccessKind::CommandExecution, Access::Gated),
        (AccessKind::HostRead, Access::Gated),
    ] {
        assert_eq!(access.get(kind), want, "{kind:?}");
    }
    let denied = decide_escalation(&write, safe, set(&[WorkspaceWrite]), "w", true);
    let access = spear_policy::escalation_access(&denied, safe);
    for kind in AccessKind::ALL {
        assert_eq!(access.get(kind), Access::Deny, "{kind:?}");
    }
}
