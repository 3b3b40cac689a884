//! The audit log: one JSON line of metadata per event, appended to a private file outside the
//! workspace.
//!
//! What this module guarantees:
//! - A record ([`AuditRecord`]) holds metadata only: it has no field for file contents, command
//!   output, environment values or cgroup paths. Commands appear only as the executable summary
//!   the decision layer made as it read them (`spear_core::CommandAssessment::executable`,
//!   `cargo (2 args)`), never with their arguments.
//! - Every string field is redacted ([`spear_core::redact::redact`]) before it is written.
//! - One record is exactly one line, and records from concurrent calls or processes never
//!   interleave or get lost ([`AuditLogger::log`]).
//! - The log is a regular file of this user's, mode 0600, in a directory of this user's, mode
//!   0700, reached without following a link at either ([`AuditLogger::open`]).

mod logger;
mod record;
mod tail;

use std::path::{Path, PathBuf};

pub use logger::{AuditError, AuditLogger};
pub use record::{AuditEvent, AuditRecord, WebAudit, WebHop, rfc3339_seconds};

/// The default audit log: `$XDG_STATE_HOME/spear/audit.jsonl`, or
/// `$HOME/.local/state/spear/audit.jsonl` when `XDG_STATE_HOME` is unset, empty or relative (the
/// XDG rule); `None` when neither gives an absolute directory.
pub fn default_path(xdg_state_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    if let Some(state) = xdg_state_home.filter(|p| p.is_absolute()) {
        return Some(state.join("spear").join("audit.jsonl"));
    }
    home.filter(|p| p.is_absolute()).map(|h| {
        h.join(".local")
            .join("state")
            .join("spear")
            .join("audit.jsonl")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_path_table() {
        let p = |s: &str| PathBuf::from(s);
        let cases: &[(Option<&str>, Option<&str>, Option<&str>)] = &[
            (
                Some("/x/state"),
                Some("/home/u"),
                Some("/x/state/spear/audit.jsonl"),
            ),
            (
                None,
                Some("/home/u"),
                Some("/home/u/.local/state/spear/audit.jsonl"),
            ),
            (
                Some(""),
                Some("/home/u"),
                Some("/home/u/.local/state/spear/audit.jsonl"),
            ),
            (
                Some("rel/state"),
                Some("/home/u"),
                Some("/home/u/.local/state/spear/audit.jsonl"),
            ),
            (Some("/x/state"), None, Some("/x/state/spear/audit.jsonl")),
            (None, None, None),
            (None, Some("relative-home"), None),
            (Some(""), Some(""), None),
        ];
        for &(xdg, home, want) in cases {
            let xdg = xdg.map(p);
            let home = home.map(p);
            assert_eq!(
                default_path(xdg.as_deref(), home.as_deref()),
                want.map(p),
                "{xdg:?} {home:?}"
            );
        }
    }
}
