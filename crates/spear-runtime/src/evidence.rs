//! Evidence and verdicts: what each call of a turn changed and ran, and whether the turn's changes
//! were verified by a run that came after them.

use serde::Serialize;
use spear_core::ToolStatus;

/// What one call did, as far as the verdict is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// The tool called.
    pub tool: String,
    /// Paths the call changed (labels).
    pub changed: Vec<String>,
    /// The executable summary of the command it ran, when it ran one.
    pub ran: Option<String>,
    /// How it ended.
    pub status: ToolStatus,
    /// The command's exit code, when it ran to an end.
    pub exit_code: Option<i32>,
}

/// A turn's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    /// Files changed, and the last run after the last change exited 0 without refusal or
    /// timeout.
    Verified,
    /// Files changed, and no run after the last change succeeded (or the last one failed).
    Unverified,
    /// Nothing changed.
    NoChange,
}

impl Verdict {
    /// The verdict as the log and the CLI print it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Verdict::Verified => "VERIFIED",
            Verdict::Unverified => "UNVERIFIED",
            Verdict::NoChange => "NO_CHANGE",
        }
    }
}

/// The verdict of a turn whose calls are `evidence`, in order. A verifying run is a call that ran
/// a command; only one strictly after the last change counts, and the last such run decides.
pub fn verdict(evidence: &[Evidence]) -> Verdict {
    let Some(last_change) = evidence.iter().rposition(|e| !e.changed.is_empty()) else {
        return Verdict::NoChange;
    };
    let last_run = evidence[last_change + 1..]
        .iter()
        .rev()
        .find(|e| e.ran.is_some());
    match last_run {
        Some(e) if e.status == ToolStatus::Ok && e.exit_code == Some(0) => Verdict::Verified,
        _ => Verdict::Unverified,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(path: &str) -> Evidence {
        Evidence {
            tool: "write_file".into(),
            changed: vec![path.into()],
            ran: None,
            status: ToolStatus::Ok,
            exit_code: None,
        }
    }

    fn run(status: ToolStatus, code: Option<i32>) -> Evidence {
        Evidence {
            tool: "terminal".into(),
            changed: Vec::new(),
            ran: Some("cargo (1 args)".into()),
            status,
            exit_code: code,
        }
    }

    fn refused() -> Evidence {
        Evidence {
            tool: "terminal".into(),
            changed: Vec::new(),
            ran: None,
            status: ToolStatus::Denied,
            exit_code: None,
        }
    }

    #[test]
    fn verdicts() {
        use ToolStatus::{Failed, Ok, Timeout};
        use Verdict::{NoChange, Unverified, Verified};
        let cases: Vec<(Vec<Evidence>, Verdict)> = vec![
            (vec![], NoChange),
            (vec![run(Ok, Some(0))], NoChange),
            (vec![change("a")], Unverified),
            (vec![change("a"), run(Ok, Some(0))], Verified),
            (vec![run(Ok, Some(0)), change("a")], Unverified),
            (vec![change("a"), run(Failed, Some(1))], Unverified),
            (vec![change("a"), run(Timeout, None)], Unverified),
            (
                vec![change("a"), run(Failed, Some(1)), run(Ok, Some(0))],
                Verified,
            ),
            (
                vec![change("a"), run(Ok, Some(0)), run(Failed, Some(1))],
                Unverified,
            ),
            (vec![change("a"), run(Ok, Some(0)), refused()], Verified),
            (vec![change("a"), refused()], Unverified),
            (vec![change("a"), run(Ok, Some(0)), change("b")], Unverified),
        ];
        for (i, (evidence, expected)) in cases.into_iter().enumerate() {
            assert_eq!(verdict(&evidence), expected, "case {i}");
        }
        // A run that itself changed files is a change: it needs a later run.
        let mut changing_run = run(ToolStatus::Ok, Some(0));
        changing_run.changed = vec!["snap.txt".into()];
        assert_eq!(verdict(&[change("a"), changing_run.clone()]), Unverified);
        assert_eq!(
            verdict(&[change("a"), changing_run, run(ToolStatus::Ok, Some(0))]),
            Verified
        );
    }
}
