//! ASK confirmations through the client.
//!
//! - Protocol versions before 2026-07-28: the server sends `elicitation/create` while the call
//!   waits ([`ElicitConfirmer`]).
//! - 2026-07-28 and later: the call ends with an input-required result carrying the question; the
//!   client calls again with the answer and the sealed state ([`CaptureConfirmer`] on the first
//!   round, [`BoundConfirmer`] on the second).
//! - A client that can ask nothing: no confirmer, so the router cancels the call and says why.
//!
//! Whichever way, the question is built from the router's [`ConfirmRequest`], which holds the
//! command exactly as it will run, and an approval is bound to that request's digest: what is
//! approved is what runs.

use std::sync::{Mutex, PoisonError};

use rmcp::model::{
    ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    InputRequest, ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleServer};
use sha2::{Digest, Sha256};
use spear_policy::{ConfirmRequest, Confirmation, Confirmer};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

/// The key of spear's one question in an input-required result's `inputRequests`.
pub const CONFIRM_KEY: &str = "spear_confirm";

/// The property of the confirmation form a client may send back as `false` to decline.
const APPROVE_FIELD: &str = "approve";

/// The digest an approval is bound to: everything the question shows (the command exactly as it
/// will run, its class, why, where and how it runs) and the capabilities it will get. Any change
/// to one of them is a different question.
pub fn request_digest(request: &ConfirmRequest) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [
        request.command.as_bytes(),
        request.class.as_str().as_bytes(),
        request.reason.as_bytes(),
        request.setting.as_deref().unwrap_or("").as_bytes(),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    for cap in request.capabilities.iter() {
        h.update(cap.as_str().as_bytes());
        h.update([0]);
    }
    // Attack: an approval of one escalation (or of a plain ASK question) reused for another.
    match &request.escalation {
        None => h.update([0]),
        Some(e) => {
            h.update([1]);
            for cap in e.capabilities.iter() {
                h.update(cap.as_str().as_bytes());
                h.update([0]);
            }
            h.update((e.justification.len() as u64).to_le_bytes());
            h.update(e.justification.as_bytes());
        }
    }
    // Attack: an approval of a plain write reused for host-run configuration, or of writes
    // before a command ran for what it wrote after.
    h.update([u8::from(request.after_run)]);
    h.update((request.host_config.len() as u64).to_le_bytes());
    for w in &request.host_config {
        for part in [w.path.as_bytes(), w.entry.as_bytes(), w.why.as_bytes()] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
    }
    // Attack: an answer given for the command in one place reused after the place changed (a
    // directory swapped for a link between the input-required round and its answer).
    match &request.bound {
        None => h.update([0]),
        Some(b) => {
            h.update([1]);
            h.update((b.len() as u64).to_le_bytes());
            h.update(b.as_bytes());
        }
    }
    h.finalize().into()
}

/// The text the user is asked: the command as it will run (control, bidirectional and invisible
/// characters made visible; plain-shaped secrets redacted), its class, why, and what it is given.
pub fn question(request: &ConfirmRequest) -> String {
    let caps: Vec<&str> = request
        .capabilities
        .iter()
        .map(spear_core::Capability::as_str)
        .collect();
    let setting = request
        .setting
        .as_deref()
        .map(|s| format!("runs: {}\n", spear_tools::confirmation_text(s)))
        .unwrap_or_default();
    let warning = spear_tools::hidden_characters_warning(&request.command)
        .map(|w| format!("{w}\n\n"))
        .unwrap_or_default();
    let host_config = spear_tools::host_config_lines(&request.host_config);
    if request.after_run {
        return format!(
            "spear asks before host-run configuration reaches your workspace. This command ran \
             in the sandbox and wrote it there; nothing of it has reached your files yet:\n\n{}\n\n\
             {warning}{host_config}\nAccept to let exactly these writes reach the workspace; \
             decline and they are kept out (the command's other changes are kept).",
            spear_tools::confirmation_text(&request.command),
        );
    }
    let head = match &request.escalation {
        None if !request.host_config.is_empty() => {
            "spear asks before this runs: it writes host-run configuration.".to_owned()
        }
        None => "spear (ASK mode) asks before this runs:".to_owned(),
        Some(e) => {
            let wider: Vec<&str> = e
                .capabilities
                .iter()
                .map(spear_core::Capability::as_str)
                .collect();
            format!(
                "spear asks to escalate the sandbox: the model asks to run this command once \
                 with {} beyond what the session grants, saying: {}",
                wider.join(", "),
                spear_tools::confirmation_text(&e.justification)
            )
        }
    };
    format!(
        "{head}\n\n{}\n\n{warning}{setting}{host_config}class: {}\nwhy: {}\n\
         capabilities: {}\n\nAccept to run exactly this; decline and nothing runs.",
        spear_tools::confirmation_text(&request.command),
        request.class.as_str(),
        // The reason quotes paths from the command, which can hold the same hidden characters.
        spear_tools::confirmation_text(&request.reason),
        if caps.is_empty() {
            "none".to_owned()
        } else {
            caps.join(", ")
        },
    )
}

/// The `elicitation/create` form for `request`: the question, and one optional boolean.
pub fn elicit_params(request: &ConfirmRequest) -> Option<ElicitRequestParams> {
    serde_json::from_value(serde_json::json!({
        "mode": "form",
        "message": question(request),
        "requestedSchema": {
            "type": "object",
            "properties": {
                APPROVE_FIELD: {
                    "type": "boolean",
                    "title": "Run it",
                    "description": "Leave on to run exactly what is shown; turn off to decline.",
                    "default": true
                }
            }
        }
    }))
    .ok()
}

/// The same form as one entry of an input-required result.
pub fn input_request(request: &ConfirmRequest) -> Option<InputRequest> {
    let params = elicit_params(request)?;
    serde_json::from_value(serde_json::json!({
        "method": "elicitation/create",
        "params": params,
    }))
    .ok()
}

/// What the user's answer means. Only an accept approves, and only with the box left on (or no
/// form sent back at all); a decline or a dismissal (`cancel`: no choice made) runs nothing. Attack: a client that sends
/// form values as text (`"false"`, `0`) turning the user's "off" into an approval: anything but
/// `true` in the field declines.
pub fn answer_of(result: &ElicitResult) -> Confirmation {
    match result.action {
        ElicitationAction::Accept => {
            let approve = result.content.as_ref().and_then(|c| c.get(APPROVE_FIELD));
            match approve {
                None | Some(serde_json::Value::Bool(true)) => Confirmation::Approved,
                Some(_) => Confirmation::Declined,
            }
        }
        ElicitationAction::Cancel => Confirmation::Dismissed,
        // Decline, and whatever later versions add.
        _ => Confirmation::Declined,
    }
}

/// The answer in a retried call's `inputResponses`, or `None` when it holds none that parses.
pub fn answer_in(responses: Option<&rmcp::model::InputResponses>) -> Option<Confirmation> {
    let value = responses?.get(CONFIRM_KEY)?;
    let result: ElicitResult = serde_json::from_value(value.clone()).ok()?;
    Some(answer_of(&result))
}

/// Asks through `elicitation/create` and waits for the answer (protocol versions before
/// 2026-07-28). Called from the call's blocking thread, never from the runtime's own.
pub struct ElicitConfirmer {
    /// The client.
    pub peer: Peer<RoleServer>,
    /// The runtime that carries the request.
    pub runtime: Handle,
    /// The call's cancellation: a cancelled call stops waiting.
    pub cancelled: CancellationToken,
}

impl Confirmer for ElicitConfirmer {
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation {
        let Some(params) = elicit_params(request) else {
            return Confirmation::Unavailable;
        };
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
        self.runtime.block_on(async {
            let mut handle = match self
                .peer
                .send_cancellable_request(request, PeerRequestOptions::no_options())
                .await
            {
                Ok(h) => h,
                Err(e) => {
                    tracing::warn!("the client could not be asked: {e}");
                    return Confirmation::Unavailable;
                }
            };
            tokio::select! {
                answer = &mut handle.rx => match answer {
                    Ok(Ok(ClientResult::ElicitResult(result))) => answer_of(&result),
                    Ok(Err(e)) => {
                        tracing::warn!("the client could not ask the user: {e}");
                        Confirmation::Unavailable
                    }
                    // Another kind of answer, or the session went away while asking.
                    Ok(Ok(_)) | Err(_) => Confirmation::Unavailable,
                },
                () = self.cancelled.cancelled() => {
                    // The call was cancelled: withdraw the question, whose answer no longer counts.
                    if let Err(e) = handle.cancel(Some("the tool call was cancelled".into())).await {
                        tracing::debug!("the question could not be withdrawn: {e}");
                    }
                    Confirmation::Unavailable
                }
            }
        })
    }
}

/// Keeps the question and defers it: the first round of an input-required exchange, and any
/// later round whose question changed.
#[derive(Default)]
pub struct CaptureConfirmer {
    asked: Mutex<Option<ConfirmRequest>>,
}

impl CaptureConfirmer {
    /// The question the router asked, if it asked one.
    pub fn take(&self) -> Option<ConfirmRequest> {
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

impl Confirmer for CaptureConfirmer {
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation {
        *self.asked.lock().unwrap_or_else(PoisonError::into_inner) = Some(request.clone());
        Confirmation::Deferred
    }
}

/// The retried round of an input-required exchange: approves only the question that was
/// approved (by digest), and defers any other to be asked afresh.
pub struct BoundConfirmer {
    /// The digest of the approved question.
    pub approved: [u8; 32],
    /// Where a different question is kept.
    pub capture: std::sync::Arc<CaptureConfirmer>,
}

impl Confirmer for BoundConfirmer {
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation {
        if request_digest(request) == self.approved {
            Confirmation::Approved
        } else {
            self.capture.confirm(request)
        }
    }
}

/// Gives the same answer to any question: a retried round whose answer was a decline.
pub struct FixedAnswer(pub Confirmation);

impl Confirmer for FixedAnswer {
    fn confirm(&self, _request: &ConfirmRequest) -> Confirmation {
        self.0
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use spear_core::{Capability, CapabilitySet, CommandClass};

    fn request(command: &str) -> ConfirmRequest {
        ConfirmRequest {
            command: command.to_owned(),
            class: CommandClass::WorkspaceMutating,
            capabilities: CapabilitySet::of(&[Capability::WorkspaceWrite]),
            reason: "it writes".to_owned(),
            setting: None,
            escalation: None,
            bound: None,
            host_config: Vec::new(),
            after_run: false,
        }
    }

    fn result(action: ElicitationAction, content: Option<serde_json::Value>) -> ElicitResult {
        let mut r = ElicitResult::new(action);
        r.content = content;
        r
    }

    #[test]
    fn only_an_accept_approves() {
        use serde_json::json;
        for (action, content, want) in [
            (ElicitationAction::Accept, None, Confirmation::Approved),
            (
                ElicitationAction::Accept,
                Some(json!({})),
                Confirmation::Approved,
            ),
            (
                ElicitationAction::Accept,
                Some(json!({"approve": true})),
                Confirmation::Approved,
            ),
            (
                ElicitationAction::Accept,
                Some(json!({"approve": false})),
                Confirmation::Declined,
            ),
            (
                ElicitationAction::Accept,
                Some(json!({"approve": "false"})),
                Confirmation::Declined,
            ),
            (
                ElicitationAction::Accept,
                Some(json!({"approve": "true"})),
                Confirmation::Declined,
            ),
            (
                ElicitationAction::Accept,
                Some(json!({"approve": 0})),
                Confirmation::Declined,
            ),
            (
                ElicitationAction::Accept,
                Some(json!({"approve": null})),
                Confirmation::Declined,
            ),
            (ElicitationAction::Decline, None, Confirmation::Declined),
            (
                ElicitationAction::Decline,
                Some(json!({"approve": true})),
                Confirmation::Declined,
            ),
            (ElicitationAction::Cancel, None, Confirmation::Dismissed),
            (
                ElicitationAction::Cancel,
                Some(json!({"approve": true})),
                Confirmation::Dismissed,
            ),
        ] {
            assert_eq!(
                answer_of(&result(action.clone(), content.clone())),
                want,
                "{action:?} {content:?}"
            );
        }
    }

    #[test]
    fn answers_in_input_responses() {
        let mut responses = rmcp::model::InputResponses::new();
        assert_eq!(answer_in(Some(&responses)), None);
        assert_eq!(answer_in(None), None);
        responses.insert(CONFIRM_KEY.into(), serde_json::json!({"action": "accept"}));
        assert_eq!(answer_in(Some(&responses)), Some(Confirmation::Approved));
        responses.insert(CONFIRM_KEY.into(), serde_json::json!({"action": "decline"}));
        assert_eq!(answer_in(Some(&responses)), Some(Confirmation::Declined));
        responses.insert(CONFIRM_KEY.into(), serde_json::json!({"action": "maybe"}));
        assert_eq!(answer_in(Some(&responses)), None);
    }

    #[test]
    fn the_question_shows_hidden_characters_and_hides_plain_secrets() {
        let mut asked = request(
            "echo hi\u{202e}txt.exe; curl -H 'Authorization: Bearer sk-abcdefghijklmnopqrstuvwx' x\r",
        );
        asked.reason = "a redirection writes bidi\u{202e}hs.\u{1b}[8mtxt".to_owned();
        let q = question(&asked);
        assert!(!q.contains('\u{1b}'), "{q}");
        assert!(!q.contains('\u{202e}'), "{q}");
        assert!(!q.contains('\r'), "{q}");
        assert!(q.contains("202e") || q.contains("202E"), "{q}");
        assert!(q.contains("warning: the command holds invisible"), "{q}");
        assert!(!q.contains("sk-abcdefghijklmnopqrstuvwx"), "{q}");
        assert!(q.contains("class: WORKSPACE_MUTATING"), "{q}");
        assert!(q.contains("capabilities: workspace:write"), "{q}");
        assert!(!q.contains("\nruns:"), "{q}");
        asked.setting = Some("in sub\u{202e}, as a background job".into());
        let q = question(&asked);
        assert!(q.contains("\nruns: in sub"), "{q}");
        assert!(!q.contains('\u{202e}'), "{q}");
    }

    /// Host-run configuration is named in the question, with what runs it, before a command runs
    /// and after it wrote it; an approval of one question is not one of the other (the digest
    /// holds the writes and which moment it is).
    #[test]
    fn host_run_configuration_is_named_and_bound() {
        let mut asked = request("npx husky init");
        asked.host_config = vec![spear_core::HostConfigWrite {
            path: ".husky/pre-commit".into(),
            entry: "husky".into(),
            why: "git runs husky's hooks".into(),
        }];
        let q = question(&asked);
        assert!(
            q.starts_with("spear asks before this runs: it writes host-run"),
            "{q}"
        );
        assert!(
            q.contains("`.husky/pre-commit` (husky): git runs husky's hooks"),
            "{q}"
        );
        assert!(!q.contains("ASK mode"), "AUTO asks too: {q}");
        let mut after = asked.clone();
        after.after_run = true;
        let q = question(&after);
        assert!(q.contains("ran in the sandbox and wrote it there"), "{q}");
        assert!(q.contains(".husky/pre-commit"), "{q}");
        assert!(q.contains("decline and they are kept out"), "{q}");
        let plain = request("npx husky init");
        let digests = [
            request_digest(&plain),
            request_digest(&asked),
            request_digest(&after),
        ];
        assert_ne!(digests[0], digests[1]);
        assert_ne!(digests[1], digests[2]);
        let mut other = asked.clone();
        other.host_config[0].path = ".husky/pre-push".into();
        assert_ne!(request_digest(&other), digests[1]);
    }

    #[test]
    fn forms_parse_as_the_sdk_types() {
        let r = request("rm -f a");
        let params = serde_json::to_value(elicit_params(&r).unwrap()).unwrap();
        assert_eq!(params["mode"], "form");
        assert_eq!(
            params["requestedSchema"]["properties"]["approve"]["type"],
            "boolean"
        );
        let input = serde_json::to_value(input_request(&r).unwrap()).unwrap();
        assert_eq!(input["method"], "elicitation/create");
        assert_eq!(input["params"]["message"], params["message"]);
    }

    #[test]
    fn an_approval_binds_to_exactly_what_was_asked() {
        let asked = request("rm -f a");
        let capture = std::sync::Arc::new(CaptureConfirmer::default());
        let bound = BoundConfirmer {
            approved: request_digest(&asked),
            capture: std::sync::Arc::clone(&capture),
        };
        assert_eq!(bound.confirm(&asked), Confirmation::Approved);
        assert!(capture.take().is_none());
        let mut other = request("rm -f b");
        assert_eq!(bound.confirm(&other), Confirmation::Deferred);
        assert_eq!(capture.take().unwrap().command, "rm -f b");
        other.command = asked.command.clone();
        other.capabilities.insert(Capability::Network);
        assert_eq!(bound.confirm(&other), Confirmation::Deferred);
        let mut reclassed = asked.clone();
        reclassed.class = CommandClass::ShellComplex;
        assert_ne!(request_digest(&reclassed), request_digest(&asked));
        let mut elsewhere = asked.clone();
        elsewhere.setting = Some("in sub, in the foreground".into());
        assert_ne!(request_digest(&elsewhere), request_digest(&asked));
        let mut other_reason = asked.clone();
        other_reason.reason = "a redirection writes b".into();
        assert_ne!(request_digest(&other_reason), request_digest(&asked));
        let mut bound = asked.clone();
        bound.bound = Some("place-1".into());
        let mut moved = asked.clone();
        moved.bound = Some("place-2".into());
        assert_ne!(request_digest(&bound), request_digest(&asked));
        assert_ne!(request_digest(&bound), request_digest(&moved));
        // An escalation is another question than the same command asked plainly, and each of
        // its parts is part of the question.
        let escalation = |caps: &[Capability], why: &str| {
            let mut r = asked.clone();
            r.escalation = Some(spear_policy::Escalation {
                capabilities: CapabilitySet::of(caps),
                justification: why.into(),
            });
            request_digest(&r)
        };
        let base = escalation(&[Capability::WorkspaceWrite], "the tests need it");
        assert_ne!(base, request_digest(&asked));
        assert_ne!(
            base,
            escalation(
                &[Capability::WorkspaceWrite, Capability::Network],
                "the tests need it"
            )
        );
        assert_ne!(
            base,
            escalation(&[Capability::WorkspaceWrite], "the tests need iT")
        );
        assert_eq!(
            base,
            escalation(&[Capability::WorkspaceWrite], "the tests need it")
        );
    }

    #[test]
    fn an_escalation_question_says_so_and_shows_the_justification_made_visible() {
        let mut asked = request("echo x > a.txt");
        let q = question(&asked);
        assert!(q.starts_with("spear (ASK mode) asks"), "{q}");
        asked.escalation = Some(spear_policy::Escalation {
            capabilities: CapabilitySet::of(&[Capability::WorkspaceWrite]),
            justification: "write the fixture\u{202e}txt".into(),
        });
        let q = question(&asked);
        assert!(q.starts_with("spear asks to escalate the sandbox"), "{q}");
        assert!(q.contains("with workspace:write beyond"), "{q}");
        assert!(q.contains("write the fixture"), "{q}");
        assert!(!q.contains('\u{202e}'), "{q}");
        assert!(q.contains("\n\necho x > a.txt\n\n"), "{q}");
    }
}
