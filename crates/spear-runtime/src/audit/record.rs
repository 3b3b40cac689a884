//! One audit record: metadata about one event, and nothing else.
//!
//! The record has no field for file contents, command output, environment values or cgroup
//! paths, so none can be logged by mistake. Every string it holds passes through
//! [`spear_core::redact::redact`] before it is written ([`AuditRecord::redacted`]).

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use spear_core::{CommandClass, RefusalRule, ToolStatus};

use spear_core::redact::redact;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditEvent {
    /// A tool call ended (whatever its status).
    ToolCall,
    /// The same refusal came back too many times and the session was told to stop.
    RepeatedRefusalStopped,
    /// A checkpoint was restored.
    Undo,
    /// A command asked to run once with a wider sandbox than the session grants; `reason` says
    /// to what and why (`escalate sandbox to workspace:write: ...`). Written before anyone is
    /// asked, and followed by the answer's record.
    EscalationRequested,
    /// The user allowed that escalation, for that one call.
    EscalationApproved,
    /// The escalation was not allowed; `rule` says how (declined, unanswered, nobody to ask,
    /// declined before, awaiting the answer, or refused by a rule before anyone was asked).
    EscalationRefused,
}

impl AuditEvent {
    /// The snake-case name used in the log.
    pub const fn as_str(self) -> &'static str {
        match self {
            AuditEvent::ToolCall => "tool_call",
            AuditEvent::RepeatedRefusalStopped => "repeated_refusal_stopped",
            AuditEvent::Undo => "undo",
            AuditEvent::EscalationRequested => "escalation_requested",
            AuditEvent::EscalationApproved => "escalation_approved",
            AuditEvent::EscalationRefused => "escalation_refused",
        }
    }
}

/// One line of the audit log: metadata only. Serialized as one JSON object with every field
/// present (absent values are `null`, empty lists `[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// When, in RFC 3339 UTC with milliseconds (`2024-02-29T12:34:56.789Z`).
    pub time: String,
    /// The session (an MCP connection, one `spear exec`). Redacted like every string: a UUID or
    /// a short hex id stays readable, a long random token would not.
    pub session: String,
    /// Who the session is for, when a server admits clients by credential: `token:NAME` for an
    /// operator's token (its name, never its value), `oauth:SUBJECT` for an OAuth access token.
    /// `null` for a session of the user's own (stdio, the command line).
    #[serde(default)]
    pub principal: Option<String>,
    /// The turn within the session, when the client says.
    pub turn: Option<String>,
    /// What happened.
    pub event: AuditEvent,
    /// The tool (`terminal`, `read_file`, ...).
    pub tool: Option<String>,
    /// What it acted on: a path label, or the executable summary of a command.
    pub target: Option<String>,
    /// The class of a command.
    pub class: Option<CommandClass>,
    /// The capabilities granted.
    pub capabilities: Vec<String>,
    /// How it ended.
    pub status: Option<ToolStatus>,
    /// The rule that refused it, when one did (the stable names of `spear_core::RefusalRule`).
    pub rule: Option<RefusalRule>,
    /// A command's exit code.
    pub exit_code: Option<i32>,
    /// How long it took.
    pub duration_ms: Option<u64>,
    /// The labels of the paths it changed.
    pub changed_paths: Vec<String>,
    /// The executable summary (`cargo (2 args)`), never the command line.
    pub executable: Option<String>,
    /// Why, when the event has a reason of its own (an escalation's: `escalate sandbox to
    /// workspace:write: <the model's justification>`).
    #[serde(default)]
    pub reason: Option<String>,
    /// What a call of the web pair fetched or was refused ([`WebAudit`]); `null` for every other
    /// tool.
    #[serde(default)]
    pub web: Option<WebAudit>,
}

/// A fetch (or search) as the audit log records it: where it went and what came back, never
/// what it read. URLs have their query values redacted before they get here (`key=REDACTED`),
/// a search's query is not recorded (only its length), and an API key has no field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebAudit {
    /// The URL asked for (query redacted). For a search: the backend's name.
    pub url: String,
    /// The URL that answered, after redirects (query redacted), when one did.
    pub final_url: Option<String>,
    /// The address connected to last (`93.184.216.34:443`), when a connection was made.
    pub connected: Option<String>,
    /// The HTTP status of the answer.
    pub http_status: Option<u16>,
    /// Bytes of the body read (after decompression).
    pub bytes: Option<u64>,
    /// Whether the body went on past the cap and was cut there.
    pub cut: bool,
    /// The redirects followed, in order.
    pub hops: Vec<WebHop>,
    /// For a refusal: the rule of the guard that refused (`loopback`, `private`, `metadata`,
    /// `port`, `scheme`, `userinfo`, `downgrade`, ...).
    pub refused: Option<String>,
    /// For a refused address: the address.
    pub address: Option<String>,
    /// For a search: how many results came back.
    pub results: Option<u64>,
    /// For a search: the query's length in characters (the query itself is not recorded).
    pub query_chars: Option<u64>,
}

/// One redirect a fetch followed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebHop {
    /// The URL that redirected (query redacted).
    pub url: String,
    /// Its status (301, 302, ...).
    pub status: u16,
    /// The address it was fetched from.
    pub connected: String,
}

impl WebAudit {
    fn redacted(&self) -> WebAudit {
        let r = |s: &String| redact(s).into_owned();
        let ro = |s: &Option<String>| s.as_ref().map(r);
        WebAudit {
            url: r(&self.url),
            final_url: ro(&self.final_url),
            connected: ro(&self.connected),
            http_status: self.http_status,
            bytes: self.bytes,
            cut: self.cut,
            hops: self
                .hops
                .iter()
                .map(|h| WebHop {
                    url: r(&h.url),
                    status: h.status,
                    connected: r(&h.connected),
                })
                .collect(),
            refused: ro(&self.refused),
            address: ro(&self.address),
            results: self.results,
            query_chars: self.query_chars,
        }
    }
}

impl AuditRecord {
    /// A record of `event` in `session`, stamped now, every other field empty.
    pub fn new(session: impl Into<String>, event: AuditEvent) -> Self {
        AuditRecord {
            time: rfc3339_millis(SystemTime::now()),
            session: session.into(),
            principal: None,
            turn: None,
            event,
            tool: None,
            target: None,
            class: None,
            capabilities: Vec::new(),
            status: None,
            rule: None,
            exit_code: None,
            duration_ms: None,
            changed_paths: Vec::new(),
            executable: None,
            reason: None,
            web: None,
        }
    }

    /// The same record with every string field passed through [`redact`].
    #[must_use]
    pub fn redacted(&self) -> AuditRecord {
        let r = |s: &String| redact(s).into_owned();
        let ro = |s: &Option<String>| s.as_ref().map(r);
        AuditRecord {
            time: r(&self.time),
            session: r(&self.session),
            principal: ro(&self.principal),
            turn: ro(&self.turn),
            event: self.event,
            tool: ro(&self.tool),
            target: ro(&self.target),
            class: self.class,
            capabilities: self.capabilities.iter().map(r).collect(),
            status: self.status,
            rule: self.rule,
            exit_code: self.exit_code,
            duration_ms: self.duration_ms,
            changed_paths: self.changed_paths.iter().map(r).collect(),
            executable: ro(&self.executable),
            reason: ro(&self.reason),
            web: self.web.as_ref().map(WebAudit::redacted),
        }
    }
}

/// `t` in RFC 3339 UTC with milliseconds: `2024-02-29T12:34:56.789Z`. A time before 1970 is
/// written as the epoch.
pub fn rfc3339_millis(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// `t` in RFC 3339 UTC to the second: `2024-02-29T12:34:56Z`. A time before 1970 is written as
/// the epoch.
pub fn rfc3339_seconds(t: SystemTime) -> String {
    let mut text = rfc3339_millis(t);
    // `…:56.789Z` less its milliseconds.
    text.replace_range(text.len() - 5..text.len() - 1, "");
    text
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shift the epoch to 0000-03-01, so that leap days fall at the end of a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn rfc3339_table() {
        let cases: &[(u64, u32, &str)] = &[
            (0, 0, "1970-01-01T00:00:00.000Z"),
            (951_782_400, 123, "2000-02-29T00:00:00.123Z"),
            (1_709_210_096, 789, "2024-02-29T12:34:56.789Z"),
            (4_102_444_799, 999, "2099-12-31T23:59:59.999Z"),
            (253_402_300_799, 0, "9999-12-31T23:59:59.000Z"),
            (86_399, 1, "1970-01-01T23:59:59.001Z"),
            (86_400, 0, "1970-01-02T00:00:00.000Z"),
        ];
        for &(secs, millis, want) in cases {
            let t = UNIX_EPOCH + Duration::new(secs, millis * 1_000_000 + 999);
            assert_eq!(rfc3339_millis(t), want);
            assert_eq!(rfc3339_seconds(t), want.replace(&want[19..23], ""));
        }
        assert_eq!(
            rfc3339_millis(UNIX_EPOCH - Duration::from_secs(5)),
            "1970-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn every_day_round_trips_through_its_date() {
        // Consecutive days give consecutive, valid dates over four centuries (leap rules).
        let mut last = (1969, 12, 31);
        for days in 0..146_097 {
            let (y, m, d) = civil_from_days(days);
            let next_day = (y, m, d) == (last.0, last.1, last.2 + 1);
            let next_month = (y, d) == (last.0, 1) && m == last.1 + 1;
            let next_year = (y, m, d) == (last.0 + 1, 1, 1);
            assert!(
                next_day || next_month || next_year,
                "{days}: {last:?} -> {y}-{m}-{d}"
            );
            last = (y, m, d);
        }
        assert_eq!(civil_from_days(146_096), (2369, 12, 31));
    }

    #[test]
    fn serializes_every_field() {
        let record = AuditRecord::new("s1", AuditEvent::RepeatedRefusalStopped);
        let v: serde_json::Value = serde_json::to_value(&record).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys.len(),
            17,
            "time session principal turn event tool target class capabilities status rule exit_code duration_ms changed_paths executable reason web: {keys:?}"
        );
        assert_eq!(v["event"], "repeated_refusal_stopped");
        assert_eq!(v["event"], AuditEvent::RepeatedRefusalStopped.as_str());
    }

    #[test]
    fn redacted_covers_every_string_field() {
        let secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        let mut record = AuditRecord::new(secret, AuditEvent::ToolCall);
        record.time = secret.to_owned();
        record.principal = Some(format!("token:{secret}"));
        record.tool = Some(secret.to_owned());
        record.target = Some(secret.to_owned());
        record.capabilities = vec![secret.to_owned()];
        record.changed_paths = vec![secret.to_owned()];
        record.executable = Some(secret.to_owned());
        record.reason = Some(format!("escalate sandbox to network: {secret}"));
        record.web = Some(WebAudit {
            url: secret.to_owned(),
            final_url: Some(secret.to_owned()),
            connected: Some(secret.to_owned()),
            hops: vec![WebHop {
                url: secret.to_owned(),
                status: 301,
                connected: secret.to_owned(),
            }],
            refused: Some(secret.to_owned()),
            address: Some(secret.to_owned()),
            ..WebAudit::default()
        });
        let line = serde_json::to_string(&record.redacted()).unwrap();
        assert!(!line.contains("0123456789"), "{line}");
        assert_eq!(line.matches("[REDACTED]").count(), 16, "{line}");
    }
}
