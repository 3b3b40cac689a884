//! Authorisation: what a mode grants a command, decided as a pure function, and the thin effect of
//! asking a person when the mode says to.

use spear_core::authority::{Access, AccessKind, AccessPolicy};
use spear_core::{
    Capability, CapabilityPolicy, CapabilitySet, CommandAssessment, CommandClass, ExecutionMode,
    Grant, Refusal, ToolResult,
};

/// What a mode decides for an assessment, before anyone is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Runs with these capabilities.
    Allow(CapabilitySet),
    /// Runs with these capabilities if a person confirms.
    Confirm(CapabilitySet),
    /// Never runs in this mode.
    Deny(Refusal),
}

/// What a person is asked to confirm: exactly what will run, and why it needs asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmRequest {
    /// The command or tool call, exactly as it will run.
    pub command: String,
    /// Its class.
    pub class: CommandClass,
    /// The capabilities it will be given.
    pub capabilities: CapabilitySet,
    /// Why it has that class.
    pub reason: String,
    /// Where and how it runs, when the caller says (a command's working directory, whether it
    /// runs as a background job, its timeout): part of what is approved.
    pub setting: Option<String>,
}

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// Go ahead.
    Approved,
    /// Do not run it.
    Declined,
    /// Nobody could be asked (no terminal, a client without elicitation).
    Unavailable,
    /// The question was handed to the client, whose answer comes with a later call (MCP's
    /// input-required result); nothing may run now.
    Deferred,
}

/// Asks a person to confirm a call. Implemented by the CLI (a terminal prompt) and the MCP server
/// (elicitation).
pub trait Confirmer {
    /// Shows `request` and returns the answer. Must show the command exactly as it will run.
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation;
}

/// The outcome of [`authorize`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authorization {
    /// Run with these capabilities.
    Granted(CapabilitySet),
    /// A rule refused it; nothing may run.
    Denied(Refusal),
    /// A person declined, or nobody could be asked; nothing may run.
    Cancelled(Refusal),
}

impl Authorization {
    /// The terminal result for a call that may not run; `None` when granted.
    pub fn refusal_result(&self) -> Option<ToolResult> {
        match self {
            Authorization::Granted(_) => None,
            Authorization::Denied(r) => Some(ToolResult::denied(r)),
            Authorization::Cancelled(r) => Some(ToolResult::cancelled(r)),
        }
    }
}

/// Decides what `policy` grants for `assessment`. Pure.
///
/// - A refusal in the assessment (DANGEROUS) denies in every mode.
/// - A capability the mode never grants denies, naming the modes that would (or saying no mode
///   does, or that `--no-network` removed it).
/// - `SHELL_COMPLEX` work also gets `workspace:write` where the mode grants it without asking: the
///   sandbox confines what it does.
/// - ASK confirms anything that may mutate, has unknown effects, or needs a capability the matrix
///   marks `confirm` (network, host reads).
pub fn decide(assessment: &CommandAssessment, policy: CapabilityPolicy, command: &str) -> Decision {
    let subject = summary(command);
    if let Some(r) = &assessment.refusal {
        return Decision::Deny(r.clone());
    }
    let mut confirm = false;
    for cap in assessment.capabilities.iter() {
        match policy.grant(cap) {
            Grant::Yes => {}
            Grant::Confirm => confirm = true,
            Grant::Never => return Decision::Deny(never(cap, policy, subject)),
        }
    }
    let mut granted = assessment.capabilities;
    if assessment.class == CommandClass::ShellComplex
        && policy.grant(Capability::WorkspaceWrite) == Grant::Yes
    {
        granted.insert(Capability::WorkspaceWrite);
    }
    if policy.mode() == ExecutionMode::Ask
        && (granted.contains(Capability::WorkspaceWrite)
            || assessment.class >= CommandClass::ShellComplex)
    {
        confirm = true;
    }
    if confirm {
        Decision::Confirm(granted)
    } else {
        Decision::Allow(granted)
    }
}

fn never(cap: Capability, policy: CapabilityPolicy, subject: String) -> Refusal {
    if CapabilityPolicy::modes_granting(cap).is_empty() {
        Refusal::no_mode_grants(cap, subject)
    } else if cap == Capability::Network && policy.network_removed() {
        Refusal::network_removed(subject)
    } else {
        Refusal::mode_forbids(policy.mode(), cap, subject)
    }
}

/// What the policy gives each kind of access for a call decided `decision` under `policy`, for
/// the runtime to enforce before it spawns anything: a kind the mode never grants is denied; a
/// call that needs confirming has every kind it uses gated (the approval's grant must cover
/// them all); a call allowed outright has them allowed. Pure.
pub fn access_for(decision: &Decision, policy: CapabilityPolicy) -> AccessPolicy {
    let mut access = AccessPolicy::all_gated();
    for kind in AccessKind::ALL {
        let given = match (policy.grant(kind.capability()), decision) {
            (Grant::Never, _) | (_, Decision::Deny(_)) => Access::Deny,
            (_, Decision::Allow(caps)) if caps.contains(kind.capability()) => Access::Allow,
            _ => Access::Gated,
        };
        access = access.with(kind, given);
    }
    access
}

/// Decides, and asks `confirmer` when the decision says to. The confirmer is never called for a
/// call that would be denied anyway; without a confirmer a call that needs one is cancelled.
pub fn authorize(
    assessment: &CommandAssessment,
    policy: CapabilityPolicy,
    command: &str,
    confirmer: Option<&dyn Confirmer>,
) -> Authorization {
    match decide(assessment, policy, command) {
        Decision::Allow(caps) => Authorization::Granted(caps),
        Decision::Deny(r) => Authorization::Denied(r),
        Decision::Confirm(caps) => {
            let Some(confirmer) = confirmer else {
                return Authorization::Cancelled(Refusal::no_confirmer(summary(command)));
            };
            let request = ConfirmRequest {
                command: command.to_owned(),
                class: assessment.class,
                capabilities: caps,
                reason: assessment.reason.clone(),
                setting: None,
            };
            match confirmer.confirm(&request) {
                Confirmation::Approved => Authorization::Granted(caps),
                Confirmation::Declined => {
                    Authorization::Denied(Refusal::declined(summary(command)))
                }
                Confirmation::Unavailable => {
                    Authorization::Cancelled(Refusal::no_confirmer(summary(command)))
                }
                Confirmation::Deferred => {
                    Authorization::Cancelled(Refusal::awaiting_confirmation(summary(command)))
                }
            }
        }
    }
}

/// A command shortened for a message: secrets redacted (a refusal is shown to the user and goes
/// back to the client), one line, at most 120 characters, control characters shown escaped.
fn summary(command: &str) -> String {
    let mut out = String::new();
    for c in spear_core::redact::redact(command).chars() {
        if out.chars().count() >= 120 {
            out.push('…');
            break;
        }
        if c.is_control() || is_bidi_or_invisible(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` with every control, bidirectional and invisible character shown escaped (`\u{202e}`),
/// and nothing cut: what a confirmation shows, so that what is approved reads as what runs.
pub fn make_visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if (c.is_control() && c != '\n') || is_bidi_or_invisible(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// Bidirectional overrides and zero-width characters, which can make displayed text differ from
/// what runs.
pub(crate) fn is_bidi_or_invisible(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}' | '\u{00ad}')
}
