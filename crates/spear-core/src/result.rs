//! The one result every tool call returns.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{CommandClass, Guarantees, Refusal, RefusalRule};

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// It ran, and (for a command) exited 0.
    Ok,
    /// A rule refused it, and nothing ran; or, for a command that ran, a rule (or the person,
    /// for host-run configuration) kept part of what it changed out of the workspace, so the
    /// workspace is not as the command left it (`reason` lists what was kept out, and why).
    Denied,
    /// A person declined it, nobody could be asked, or the client cancelled it.
    Cancelled,
    /// A path was malformed or resolved outside the workspace; nothing ran.
    InvalidPath,
    /// The file or program does not exist.
    NotFound,
    /// It ran out of time and was killed.
    Timeout,
    /// It ran and failed, or the harness could not run it.
    Failed,
}

impl ToolStatus {
    /// The snake-case name used in JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Ok => "ok",
            ToolStatus::Denied => "denied",
            ToolStatus::Cancelled => "cancelled",
            ToolStatus::InvalidPath => "invalid_path",
            ToolStatus::NotFound => "not_found",
            ToolStatus::Timeout => "timeout",
            ToolStatus::Failed => "failed",
        }
    }
}

impl fmt::Display for ToolStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Exit statuses of `spear exec` that are not the command's own.
pub mod exit_code {
    /// The command ran out of time.
    pub const TIMEOUT: i32 = 124;
    /// The sandbox or the harness failed; the command may not have run.
    pub const HARNESS_FAILURE: i32 = 125;
    /// Denied, cancelled, or an invalid path: nothing ran; or the command exited 0 and spear kept
    /// part of what it changed out of the workspace (`denied`).
    pub const REFUSED: i32 = 126;
    /// The program or file was not found.
    pub const NOT_FOUND: i32 = 127;
    /// Bad usage of the `spear` command line itself.
    pub const USAGE: i32 = 2;
}

/// The one honest result of a tool call. `--json` prints exactly these fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolResult {
    /// How the call ended.
    pub status: ToolStatus,
    /// The command's exit code, when it ran and exited: its own, except that
    /// [`exit_code::REFUSED`] (126) replaces a 0 when spear kept part of what it changed out of
    /// the workspace (status `denied`), so that no reader of the code alone takes it for success.
    pub exit_code: Option<i32>,
    /// What it printed on stdout (possibly cut; see `truncated`).
    pub stdout: String,
    /// What it printed on stderr (possibly cut; see `truncated`).
    pub stderr: String,
    /// Workspace paths it created, changed or deleted, as audit labels.
    pub changed_paths: Vec<String>,
    /// Why it ended the way it did, when that is not obvious from the status.
    pub reason: Option<String>,
    /// The class the decision layer gave it, for commands.
    pub class: Option<CommandClass>,
    /// Wall-clock time of the call.
    pub duration_ms: u64,
    /// Whether stdout or stderr was cut.
    pub truncated: bool,
    /// The refusal that ended the call, with its data, when a rule refused it (`denied`,
    /// `cancelled`, `invalid_path`). JSON carries its rule's stable name as `rule` (`null`
    /// otherwise), so that a client acts on a refusal without parsing the prose of `reason`.
    /// A command that ran and is `denied` because part of its changes was kept out has none:
    /// each change kept out has its own rule, named in `reason`.
    #[serde(rename = "rule", serialize_with = "serialize_rule", skip_deserializing)]
    #[schemars(with = "Option<RefusalRule>")]
    pub refusal: Option<Box<Refusal>>,
    /// For a command the sandbox ran: what confined it, computed from what the sandbox really set
    /// up, not from what was asked: `{"enforced": ["process_boundary", ...], "limits":
    /// "cgroup-v1"}` (see [`Guarantees`]). `null` for every other tool and for a command refused
    /// or failed before anything was set up.
    pub guarantees: Option<Guarantees>,
    /// The fields in which spear showed control characters escaped (`\u{1b}`), each with how many
    /// (`{"stdout": 3}`): terminal control sequences in output, files, pages and paths are data,
    /// never passed to a client raw ([`crate::visible`]). `null` when nothing was escaped: every
    /// text field is then exactly what was read.
    #[serde(default)]
    pub escaped: Option<Box<EscapedControls>>,
}

/// How many control characters were shown escaped, by the name of the field they were in
/// (`stdout`, `stderr`, `reason`, `changed_paths`, `web`, ...).
pub type EscapedControls = std::collections::BTreeMap<String, usize>;

/// A refusal as JSON shows it: its rule. (serde hands a field by reference, so the signature is
/// serde's.)
#[allow(clippy::ref_option, reason = "serde's serialize_with signature")]
fn serialize_rule<S: serde::Serializer>(
    refusal: &Option<Box<Refusal>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    refusal.as_deref().map(Refusal::rule).serialize(serializer)
}

/// How many changed paths a result (and its audit record) names: past them, the last entry
/// counts the rest (`... and N more`), so that a command that changed 200,000 files is answered
/// with a bounded message.
pub const MAX_LISTED_CHANGES: usize = 1_000;

impl ToolResult {
    /// Cuts `changed_paths` to [`MAX_LISTED_CHANGES`] entries and one more that counts the rest
    /// (`... and 199000 more`); a shorter list is left as it is.
    pub fn cap_changed_paths(&mut self) {
        let total = self.changed_paths.len();
        if total > MAX_LISTED_CHANGES {
            self.changed_paths.truncate(MAX_LISTED_CHANGES);
            self.changed_paths
                .push(format!("... and {} more", total - MAX_LISTED_CHANGES));
        }
    }

    /// The keys of its JSON, every one always present (`null` when it does not apply): the
    /// documented interface of `--json`, of `spear tool` and of MCP results, held once here for
    /// every test that checks it.
    pub const KEYS: [&'static str; 12] = [
        "status",
        "exit_code",
        "stdout",
        "stderr",
        "changed_paths",
        "reason",
        "rule",
        "class",
        "duration_ms",
        "truncated",
        "guarantees",
        "escaped",
    ];

    /// A result with `status` and nothing else.
    pub fn new(status: ToolStatus) -> Self {
        ToolResult {
            status,
            exit_code: None,
            stdout: String::new(),
            stderr: String::new(),
            changed_paths: Vec::new(),
            reason: None,
            class: None,
            duration_ms: 0,
            truncated: false,
            refusal: None,
            guarantees: None,
            escaped: None,
        }
    }

    /// Shows the control characters of every text field escaped ([`crate::visible`]) and counts
    /// them in `escaped`, under each field's name. A result without any is left as it is.
    pub fn escape_controls(&mut self) {
        let mut counts = self.escaped.take().map(|b| *b).unwrap_or_default();
        let mut count = |field: &str, n: usize| {
            if n > 0 {
                *counts.entry(field.to_owned()).or_default() += n;
            }
        };
        count(
            "stdout",
            crate::visible::escape_controls_in(&mut self.stdout),
        );
        count(
            "stderr",
            crate::visible::escape_controls_in(&mut self.stderr),
        );
        if let Some(reason) = &mut self.reason {
            count("reason", crate::visible::escape_controls_in(reason));
        }
        let paths: usize = self
            .changed_paths
            .iter_mut()
            .map(crate::visible::escape_controls_in)
            .sum();
        count("changed_paths", paths);
        self.escaped = (!counts.is_empty()).then(|| Box::new(counts));
    }

    /// Adds `n` escaped characters of `field` to `escaped` (for the fields a wrapper adds).
    pub fn count_escaped(&mut self, field: &str, n: usize) {
        if n > 0 {
            *self
                .escaped
                .get_or_insert_with(Box::default)
                .entry(field.to_owned())
                .or_default() += n;
        }
    }

    /// A result of `status` ended by `refusal`: its message is the reason, and the refusal is
    /// kept whole.
    pub fn refused(status: ToolStatus, refusal: &Refusal) -> Self {
        ToolResult {
            reason: Some(refusal.message()),
            refusal: Some(Box::new(refusal.clone())),
            ..ToolResult::new(status)
        }
    }

    /// A denied result carrying the refusal.
    pub fn denied(refusal: &Refusal) -> Self {
        ToolResult::refused(ToolStatus::Denied, refusal)
    }

    /// A cancelled result carrying the refusal.
    pub fn cancelled(refusal: &Refusal) -> Self {
        ToolResult::refused(ToolStatus::Cancelled, refusal)
    }

    /// An `invalid_path` result carrying the refusal.
    pub fn invalid_path(refusal: &Refusal) -> Self {
        ToolResult::refused(ToolStatus::InvalidPath, refusal)
    }

    /// The rule that refused the call, if one did.
    pub fn rule(&self) -> Option<crate::RefusalRule> {
        self.refusal.as_deref().map(Refusal::rule)
    }

    /// A failed result saying why: the harness could not do what was asked (nothing ran, or what
    /// ran could not be confirmed). The one constructor of such a result for every crate.
    pub fn failed(reason: impl Into<String>) -> Self {
        ToolResult {
            reason: Some(reason.into()),
            ..ToolResult::new(ToolStatus::Failed)
        }
    }

    /// Adds `text` to the reason, after what it already says (`; ` between them): each layer
    /// that learns something about the call says it without hiding what an earlier one said.
    pub fn append_reason(&mut self, text: &str) {
        self.reason = Some(match self.reason.take() {
            Some(r) => format!("{r}; {text}"),
            None => text.to_owned(),
        });
    }

    /// The exit status `spear exec` reports: the command's own when it ran and exited, otherwise
    /// one of [`exit_code`]'s values. A `denied` result is never 0: its code when that is not 0
    /// (a command that ran, part of whose changes was kept out), otherwise
    /// [`exit_code::REFUSED`].
    pub fn process_exit_code(&self) -> i32 {
        match (self.status, self.exit_code) {
            (ToolStatus::Ok | ToolStatus::Failed, Some(code)) => code,
            (ToolStatus::Denied, Some(code)) if code != 0 => code,
            (ToolStatus::Ok, None) => 0,
            (ToolStatus::Timeout, _) => exit_code::TIMEOUT,
            (ToolStatus::Failed, None) => exit_code::HARNESS_FAILURE,
            (ToolStatus::Denied | ToolStatus::Cancelled | ToolStatus::InvalidPath, _) => {
                exit_code::REFUSED
            }
            (ToolStatus::NotFound, _) => exit_code::NOT_FOUND,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_changed_list_names_a_thousand_and_counts_the_rest() {
        let mut r = ToolResult::new(ToolStatus::Ok);
        r.changed_paths = (0..MAX_LISTED_CHANGES).map(|i| i.to_string()).collect();
        r.cap_changed_paths();
        assert_eq!(
            r.changed_paths.len(),
            MAX_LISTED_CHANGES,
            "at the cap: as it was"
        );
        r.changed_paths.push("one more".into());
        r.changed_paths.push("and another".into());
        r.cap_changed_paths();
        assert_eq!(r.changed_paths.len(), MAX_LISTED_CHANGES + 1);
        assert_eq!(r.changed_paths[MAX_LISTED_CHANGES - 1], "999");
        assert_eq!(r.changed_paths[MAX_LISTED_CHANGES], "... and 2 more");
    }

    /// Every text field of a result carrying an OSC 52, a CSI and a C1 control comes back escaped
    /// and counted; the same text without them comes back byte for byte, and `escaped` stays
    /// `null` (the positive control).
    #[test]
    fn every_text_field_is_escaped_and_counted() {
        let hostile = "a\u{1b}]52;c;aGVsbG8=\u{7}b\u{1b}[2Jc\u{9b}31md";
        let mut r = ToolResult::new(ToolStatus::Ok);
        r.stdout = hostile.to_owned();
        r.stderr = hostile.to_owned();
        r.reason = Some(hostile.to_owned());
        r.changed_paths = vec![hostile.to_owned(), "plain".to_owned()];
        r.escape_controls();
        for text in [
            &r.stdout,
            &r.stderr,
            r.reason.as_ref().unwrap(),
            &r.changed_paths[0],
        ] {
            assert_eq!(text, "a\\u{1b}]52;c;aGVsbG8=\\u{7}b\\u{1b}[2Jc\\u{9b}31md");
        }
        assert_eq!(r.changed_paths[1], "plain");
        let counts = r.escaped.clone().unwrap();
        for field in ["stdout", "stderr", "reason", "changed_paths"] {
            assert_eq!(counts[field], 4, "{field}");
        }
        // Escaping again changes nothing and counts nothing more.
        let before = r.clone();
        r.escape_controls();
        assert_eq!(r, before);
        let mut clean = ToolResult::new(ToolStatus::Ok);
        clean.stdout = "a]52;c;aGVsbG8= b[2J c 31m\r\nd\t".to_owned();
        clean.reason = Some("why".to_owned());
        clean.changed_paths = vec!["x".to_owned()];
        let kept = clean.clone();
        clean.escape_controls();
        assert_eq!(clean, kept);
        assert!(clean.escaped.is_none());
    }

    #[test]
    fn failed_and_appended_reasons() {
        let mut r = ToolResult::failed("the sandbox is down");
        assert_eq!(r.status, ToolStatus::Failed);
        r.append_reason("nothing ran");
        assert_eq!(
            r.reason.as_deref(),
            Some("the sandbox is down; nothing ran")
        );
        let mut ok = ToolResult::new(ToolStatus::Ok);
        ok.append_reason("a note");
        assert_eq!(ok.reason.as_deref(), Some("a note"));
    }

    #[test]
    fn exit_codes() {
        let with = |status, code| ToolResult {
            exit_code: code,
            ..ToolResult::new(status)
        };
        assert_eq!(with(ToolStatus::Ok, Some(0)).process_exit_code(), 0);
        assert_eq!(with(ToolStatus::Failed, Some(3)).process_exit_code(), 3);
        assert_eq!(with(ToolStatus::Failed, None).process_exit_code(), 125);
        assert_eq!(with(ToolStatus::Timeout, None).process_exit_code(), 124);
        assert_eq!(with(ToolStatus::Denied, None).process_exit_code(), 126);
        // A command that ran, part of whose changes was kept out: its code (126 in place of a
        // 0), and never 0 even if a result said so.
        assert_eq!(with(ToolStatus::Denied, Some(126)).process_exit_code(), 126);
        assert_eq!(with(ToolStatus::Denied, Some(3)).process_exit_code(), 3);
        assert_eq!(with(ToolStatus::Denied, Some(0)).process_exit_code(), 126);
        assert_eq!(with(ToolStatus::Cancelled, None).process_exit_code(), 126);
        assert_eq!(with(ToolStatus::InvalidPath, None).process_exit_code(), 126);
        assert_eq!(with(ToolStatus::NotFound, None).process_exit_code(), 127);
    }

    #[test]
    fn json_has_the_documented_keys() {
        let json = serde_json::to_value(ToolResult::new(ToolStatus::InvalidPath)).unwrap();
        let mut keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        let mut documented = ToolResult::KEYS.to_vec();
        documented.sort_unstable();
        assert_eq!(keys, documented);
        assert_eq!(json["status"], "invalid_path");
        assert_eq!(json["rule"], serde_json::Value::Null);
        assert_eq!(json["guarantees"], serde_json::Value::Null);
        assert_eq!(json["escaped"], serde_json::Value::Null);
        let denied = ToolResult::denied(&Refusal::credential_store("~/.ssh/id_rsa"));
        let json = serde_json::to_value(&denied).unwrap();
        assert_eq!(json["rule"], "credential_store");
        assert_eq!(denied.rule(), Some(crate::RefusalRule::CredentialStore));
    }
}
