//! Justified escalation: a terminal call in a session that confines (SAFE, or a read-only role)
//! may ask to run once with capabilities beyond the session's, saying why; the user is asked.
//!
//! What this module guarantees:
//! - The terminal's schema has `sandbox_permissions` and `justification` only in a session that
//!   can be given something wider ([`spear_policy::escalation_capabilities`]), and the enum of
//!   `sandbox_permissions` is exactly that set: a request that widens nothing, or that asks past
//!   `--no-network`, cannot be written. The same rules are checked on every call ([`parse`],
//!   [`check_in`]), since clients do not validate.
//! - Only a person's answer grants an escalation, through the call's confirmer (an MCP
//!   elicitation, an input-required round, a terminal prompt); the approval becomes a grant bound
//!   to that one call (the terminal's approve path; never an operator's presented grant), and the
//!   session's capabilities never change. AUTO never approves one by itself.
//! - Declined, dismissed, unanswerable or nobody to ask: each refuses with its own rule, and
//!   nothing runs. A declined escalation is final for that command in that turn.
//! - Each escalating call leaves a pair in the audit log: the request, with the reason
//!   `escalate sandbox to <capabilities>: <justification>`, then the answer.

use serde_json::json;
use spear_core::{Capability, CapabilityPolicy, CapabilitySet, CommandAssessment, RefusalRule};
use spear_policy::{
    Authorization, Confirmer, Decision, Escalation, confirm_escalation, decide_escalation,
    escalation_capabilities, escalation_request,
};
use spear_runtime::{AuditEvent, AuditRecord};

use crate::context::CallContext;
use crate::spec::ToolSpec;

/// The argument naming the capabilities asked for.
pub const PERMISSIONS_FIELD: &str = "sandbox_permissions";
/// The argument saying why.
pub const JUSTIFICATION_FIELD: &str = "justification";
/// The shortest justification, in characters (trimmed): a word or two says nothing.
pub const JUSTIFICATION_MIN_CHARS: usize = 10;
/// The longest justification, in characters: the question must stay readable.
pub const JUSTIFICATION_MAX_CHARS: usize = 1000;

/// What an escalating terminal call asks for, its shape checked: at least one capability, none
/// twice, and a justification of [`JUSTIFICATION_MIN_CHARS`] to [`JUSTIFICATION_MAX_CHARS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EscalationAsk {
    /// The capabilities asked for.
    pub capabilities: CapabilitySet,
    /// Why, as the model wrote it.
    pub justification: String,
}

/// The escalation in a terminal call's arguments, or why they are invalid. Pure. Both fields or
/// neither (Attack: a justification shown for a request of nothing, or capabilities asked for
/// with no reason to show the user).
pub fn parse(
    permissions: Option<Vec<Capability>>,
    justification: Option<String>,
) -> Result<Option<EscalationAsk>, String> {
    let (permissions, justification) = match (permissions, justification) {
        (None, None) => return Ok(None),
        (Some(p), Some(j)) => (p, j),
        _ => {
            return Err(format!(
                "invalid arguments for terminal: `{PERMISSIONS_FIELD}` and `{JUSTIFICATION_FIELD}` come together: name the capabilities the command lacks and say why it needs them, or leave out both"
            ));
        }
    };
    if permissions.is_empty() {
        return Err(format!(
            "invalid arguments for terminal: `{PERMISSIONS_FIELD}` is empty: name at least one capability, or leave out both `{PERMISSIONS_FIELD}` and `{JUSTIFICATION_FIELD}`"
        ));
    }
    let mut capabilities = CapabilitySet::EMPTY;
    for cap in permissions {
        if capabilities.contains(cap) {
            return Err(format!(
                "invalid arguments for terminal: `{PERMISSIONS_FIELD}` names `{cap}` twice"
            ));
        }
        capabilities.insert(cap);
    }
    let chars = justification.trim().chars().count();
    if !(JUSTIFICATION_MIN_CHARS..=JUSTIFICATION_MAX_CHARS).contains(&chars) {
        return Err(format!(
            "invalid arguments for terminal: `{JUSTIFICATION_FIELD}` must say in {JUSTIFICATION_MIN_CHARS} to {JUSTIFICATION_MAX_CHARS} characters why the command needs {} (got {chars})",
            names(capabilities)
        ));
    }
    Ok(Some(EscalationAsk {
        capabilities,
        justification,
    }))
}

/// Whether `ask` is one this session's schema can express: every capability in
/// [`escalation_capabilities`] of `policy`. Pure. Attack: a client that does not validate
/// sending a value the schema leaves out (past `--no-network`, a capability no mode grants, one
/// the session already has).
pub fn check_in(ask: &EscalationAsk, policy: CapabilityPolicy) -> Result<(), String> {
    let allowed = escalation_capabilities(policy);
    let Some(cap) = ask.capabilities.iter().find(|c| !allowed.contains(*c)) else {
        return Ok(());
    };
    Err(if cap == Capability::Network && policy.network_removed() {
        format!(
            "invalid arguments for terminal: `{PERMISSIONS_FIELD}`: `network` cannot be asked for: --no-network removed it from this session, and only the user can give it back"
        )
    } else if allowed.is_empty() {
        format!(
            "invalid arguments for terminal: this session's terminal takes no `{PERMISSIONS_FIELD}` or `{JUSTIFICATION_FIELD}` (nothing wider than what it grants can be asked for here); call it without them"
        )
    } else {
        format!(
            "invalid arguments for terminal: `{PERMISSIONS_FIELD}`: `{cap}` is not something this session can be given once; it can ask only for {}",
            names(allowed)
        )
    })
}

/// The terminal's spec in a session that may ask for `allowed` (not empty): `base` with the two
/// fields added to its schema (the enum exactly `allowed`, each field requiring the other) and
/// `description`, the terminal's that teaches the flow. Pure.
pub fn terminal_spec(
    base: &ToolSpec,
    allowed: CapabilitySet,
    description: &'static str,
) -> ToolSpec {
    let mut spec = base.clone();
    spec.description = description;
    let values: Vec<&str> = allowed.iter().map(Capability::as_str).collect();
    if let Some(props) = spec
        .input_schema
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut)
    {
        props.insert(
            PERMISSIONS_FIELD.into(),
            json!({
                "description": "Only to retry a command that was refused, or failed, for lack of one of these: the capabilities to run this one call with beyond what the session grants. The user is asked first; the next call is confined again.",
                "type": "array",
                "items": {"type": "string", "enum": values},
                "minItems": 1,
                "uniqueItems": true
            }),
        );
        props.insert(
            JUSTIFICATION_FIELD.into(),
            json!({
                "description": "Why the task needs the command to run with `sandbox_permissions`, for the user who is asked.",
                "type": "string",
                "minLength": JUSTIFICATION_MIN_CHARS,
                "maxLength": JUSTIFICATION_MAX_CHARS
            }),
        );
    }
    if let Some(schema) = spec.input_schema.as_object_mut() {
        schema.insert(
            "dependentRequired".into(),
            json!({
                PERMISSIONS_FIELD: [JUSTIFICATION_FIELD],
                JUSTIFICATION_FIELD: [PERMISSIONS_FIELD]
            }),
        );
    }
    spec
}

/// The key a declined escalation is remembered by in its turn: the command with its runs of
/// whitespace made one space (Attack: asking again for the same command respaced).
pub fn command_key(command: &str) -> String {
    command.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Decides the escalating command `command` (classified as `assessment`) of the tool `tool` in
/// this session and turn: [`decide_escalation`], with whether the user declined an escalation of
/// it earlier in the turn. A refusal is audited here (the request and its refusal), since nobody
/// is asked.
pub(crate) fn decide(
    cx: &CallContext<'_>,
    tool: &str,
    ask: &EscalationAsk,
    assessment: &CommandAssessment,
    command: &str,
) -> Decision {
    let declined_before = cx
        .lock_turn()
        .rejected_escalations
        .contains(&command_key(command));
    let decision = decide_escalation(
        assessment,
        cx.capabilities,
        ask.capabilities,
        command,
        declined_before,
    );
    if let Decision::Deny(r) = &decision {
        let asked = Escalation {
            capabilities: ask.capabilities,
            justification: ask.justification.clone(),
        };
        audit(
            cx,
            tool,
            assessment,
            AuditEvent::EscalationRequested,
            &asked,
            None,
        );
        audit(
            cx,
            tool,
            assessment,
            AuditEvent::EscalationRefused,
            &asked,
            Some(r.rule()),
        );
    }
    decision
}

/// Asks `confirmer` whether `command` (of the tool `tool`), decided by [`decide`] to need
/// `granted`, may run once with it; audits the request before asking and the answer after, and
/// remembers a decline for the rest of the turn.
pub(crate) fn ask(
    cx: &CallContext<'_>,
    tool: &str,
    ask: &EscalationAsk,
    assessment: &CommandAssessment,
    command: &str,
    granted: CapabilitySet,
    confirmer: Option<&dyn Confirmer>,
) -> Authorization {
    let request = escalation_request(
        assessment,
        cx.capabilities,
        granted,
        &ask.justification,
        command,
    );
    let widened = request.escalation.clone().unwrap_or_else(|| Escalation {
        capabilities: ask.capabilities,
        justification: ask.justification.clone(),
    });
    audit(
        cx,
        tool,
        assessment,
        AuditEvent::EscalationRequested,
        &widened,
        None,
    );
    let answer = confirm_escalation(&request, confirmer);
    match &answer {
        Authorization::Granted(_) => {
            audit(
                cx,
                tool,
                assessment,
                AuditEvent::EscalationApproved,
                &widened,
                None,
            );
        }
        Authorization::Denied(r) | Authorization::Cancelled(r) => {
            if r.rule() == RefusalRule::EscalationDeclined {
                cx.lock_turn()
                    .rejected_escalations
                    .insert(command_key(command));
            }
            audit(
                cx,
                tool,
                assessment,
                AuditEvent::EscalationRefused,
                &widened,
                Some(r.rule()),
            );
        }
    }
    answer
}

/// Writes one record of an escalation of a command of the tool `tool`: the command's summary and
/// class, the capabilities beyond the session, the rule of a refusal, and the reason.
fn audit(
    cx: &CallContext<'_>,
    tool: &str,
    assessment: &CommandAssessment,
    event: AuditEvent,
    escalation: &Escalation,
    rule: Option<RefusalRule>,
) {
    let Some(logger) = cx.audit else {
        return;
    };
    let mut record = AuditRecord::new(cx.session, event);
    record.turn = Some(cx.lock_turn().id.clone());
    record.tool = Some(tool.to_owned());
    record.target = Some(assessment.executable.clone());
    record.class = Some(assessment.class);
    record.capabilities = escalation
        .capabilities
        .iter()
        .map(|c| c.as_str().to_owned())
        .collect();
    record.rule = rule;
    record.reason = Some(escalation.reason());
    if let Err(e) = logger.log(&record) {
        tracing::error!("the audit record of an escalation could not be written: {e}");
    }
}

/// `caps` as messages name them.
fn names(caps: CapabilitySet) -> String {
    caps.iter()
        .map(Capability::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::tool::ToolArgs as _;
    use crate::tools::terminal::{ESCALATING_DESCRIPTION, TerminalArgs};
    use crate::{Role, ToolExposurePolicy, ToolRegistry};
    use spear_core::ExecutionMode::{self, Ask, Auto, Safe};

    use Capability::{Network, WorkspaceWrite};

    fn caps(c: &[Capability]) -> CapabilitySet {
        CapabilitySet::of(c)
    }

    /// Modes × roles × `--no-network`: the set the terminal's schema offers. The read-only roles
    /// run commands in SAFE whatever the session's mode, so they may ask for what SAFE may.
    #[test]
    fn the_set_per_mode_role_and_network() {
        let registry = ToolRegistry::coding();
        let terminal = registry.get(TerminalArgs::NAME).unwrap().spec();
        let safe_set = caps(&[WorkspaceWrite, Network]);
        for (mode, role, no_network, want) in [
            (Safe, Role::Implementation, false, safe_set),
            (Safe, Role::Implementation, true, caps(&[WorkspaceWrite])),
            (Ask, Role::Implementation, false, caps(&[])),
            (Ask, Role::Implementation, true, caps(&[])),
            (Auto, Role::Implementation, false, caps(&[])),
            (Auto, Role::Implementation, true, caps(&[])),
            (Safe, Role::Reviewer, false, safe_set),
            (Ask, Role::Planning, false, safe_set),
            (Auto, Role::Explorer, false, safe_set),
            (Auto, Role::Reviewer, true, caps(&[WorkspaceWrite])),
        ] {
            let policy = crate::router::session_policy(
                ToolExposurePolicy::new(role),
                terminal,
                mode,
                no_network,
            );
            assert_eq!(
                escalation_capabilities(policy),
                want,
                "{mode} {role} no_network={no_network}"
            );
        }
    }

    #[test]
    fn argument_shapes() {
        let j = || Some("the tests write a fixture".to_owned());
        for (perms, why, want) in [
            (None, None, Ok(None)),
            (
                Some(vec![WorkspaceWrite]),
                j(),
                Ok(Some(caps(&[WorkspaceWrite]))),
            ),
            (
                Some(vec![Network, WorkspaceWrite]),
                j(),
                Ok(Some(caps(&[WorkspaceWrite, Network]))),
            ),
            (Some(vec![WorkspaceWrite]), None, Err("come together")),
            (None, j(), Err("come together")),
            (Some(vec![]), j(), Err("is empty")),
            (
                Some(vec![Network, Network]),
                j(),
                Err("names `network` twice"),
            ),
            (
                Some(vec![WorkspaceWrite]),
                Some("   short   ".into()),
                Err("10 to 1000 characters"),
            ),
            (
                Some(vec![WorkspaceWrite]),
                Some("x".repeat(1001)),
                Err("10 to 1000 characters"),
            ),
        ] {
            let got = parse(perms.clone(), why.clone()).map(|a| a.map(|a| a.capabilities));
            match (&want, &got) {
                (Ok(w), Ok(g)) => assert_eq!(w, g, "{perms:?}"),
                (Err(needle), Err(message)) => {
                    assert!(message.contains(needle), "{perms:?}: {message}");
                    assert!(message.starts_with("invalid arguments for terminal"));
                }
                _ => panic!("{perms:?} {why:?}: {got:?}"),
            }
        }
    }

    #[test]
    fn only_the_sessions_set_is_accepted() {
        let ask = |c: &[Capability]| EscalationAsk {
            capabilities: caps(c),
            justification: "the tests write a fixture".into(),
        };
        let safe = CapabilityPolicy::for_mode(Safe);
        let policy = |m: ExecutionMode| CapabilityPolicy::for_mode(m);
        for (ask, policy, want) in [
            (ask(&[WorkspaceWrite]), safe, None),
            (ask(&[WorkspaceWrite, Network]), safe, None),
            (
                ask(&[Capability::FilesystemRead]),
                safe,
                Some("it can ask only for workspace:write, network"),
            ),
            (ask(&[Capability::Ssh]), safe, Some("`ssh` is not")),
            (
                ask(&[Network]),
                safe.without_network(),
                Some("--no-network removed it"),
            ),
            (
                ask(&[WorkspaceWrite]),
                policy(Auto),
                Some("takes no `sandbox_permissions`"),
            ),
            (
                ask(&[Network]),
                policy(Ask),
                Some("takes no `sandbox_permissions`"),
            ),
        ] {
            match (check_in(&ask, policy), want) {
                (Ok(()), None) => {}
                (Err(m), Some(needle)) => assert!(m.contains(needle), "{m}"),
                (got, _) => panic!("{ask:?} in {policy:?}: {got:?}"),
            }
        }
    }

    /// The schema: exactly the set, both fields or neither, and the description only then.
    #[test]
    fn the_schema_offers_exactly_the_set() {
        let registry = ToolRegistry::coding();
        let base = registry.get(TerminalArgs::NAME).unwrap().spec();
        assert!(
            base.input_schema["properties"]
                .get(PERMISSIONS_FIELD)
                .is_none()
        );
        assert!(
            base.input_schema["properties"]
                .get(JUSTIFICATION_FIELD)
                .is_none()
        );
        assert!(!base.description.contains(PERMISSIONS_FIELD));
        let spec = terminal_spec(
            base,
            caps(&[WorkspaceWrite, Network]),
            ESCALATING_DESCRIPTION,
        );
        let props = &spec.input_schema["properties"];
        assert_eq!(
            props[PERMISSIONS_FIELD]["items"]["enum"],
            json!(["workspace:write", "network"])
        );
        assert_eq!(props[PERMISSIONS_FIELD]["minItems"], 1);
        assert_eq!(props[PERMISSIONS_FIELD]["uniqueItems"], true);
        assert_eq!(
            props[JUSTIFICATION_FIELD]["minLength"],
            JUSTIFICATION_MIN_CHARS
        );
        assert_eq!(
            spec.input_schema["dependentRequired"][PERMISSIONS_FIELD],
            json!([JUSTIFICATION_FIELD])
        );
        assert_eq!(spec.input_schema["additionalProperties"], false);
        assert!(spec.description.starts_with(base.description));
        assert!(spec.description.contains("retry that same command once"));
        assert!(spec.description.contains("Never ask in advance"));
        let narrow = terminal_spec(base, caps(&[WorkspaceWrite]), ESCALATING_DESCRIPTION);
        assert_eq!(
            narrow.input_schema["properties"][PERMISSIONS_FIELD]["items"]["enum"],
            json!(["workspace:write"])
        );
    }

    #[test]
    fn a_command_is_remembered_whatever_its_spacing() {
        assert_eq!(command_key("  echo  x >\ta.txt \n"), "echo x > a.txt");
        assert_ne!(command_key("echo x > a.txt"), command_key("echo y > a.txt"));
    }
}
