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

/// How many calls a turn's [`EvidenceLog`] keeps; older ones are summed up in one flag.
pub const EVIDENCE_KEPT: usize = 1024;

/// A turn's evidence, bounded: the last [`EVIDENCE_KEPT`] calls in order, and whether a call
/// dropped before them changed something. A long session (an MCP server's turn can last for
/// thousands of calls) keeps the same memory, and the verdict is the one the whole list gives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvidenceLog {
    recent: std::collections::VecDeque<Evidence>,
    /// Whether a dropped call changed something.
    earlier_change: bool,
    /// Whether the last dropped run after the last dropped change passed, if there was one.
    earlier_run_passed: Option<bool>,
}

impl EvidenceLog {
    /// Adds the next call's evidence, dropping the oldest past the bound.
    pub fn push(&mut self, evidence: Evidence) {
        if self.recent.len() == EVIDENCE_KEPT
            && let Some(old) = self.recent.pop_front()
        {
            if !old.changed.is_empty() {
                // A run that changed files is a change: only a later run verifies it.
                self.earlier_change = true;
                self.earlier_run_passed = None;
            } else if old.ran.is_some() {
                self.earlier_run_passed = Some(passed(&old));
            }
        }
        self.recent.push_back(evidence);
    }

    /// The calls kept, in order.
    pub fn recent(&self) -> Vec<Evidence> {
        self.recent.iter().cloned().collect()
    }

    /// The verdict of every call pushed, kept or not.
    pub fn verdict(&self) -> Verdict {
        verdict_newest_first(
            self.recent.iter().rev(),
            self.earlier_change,
            self.earlier_run_passed,
        )
    }
}

/// Whether a run verifies: it ran to exit 0, with no refusal or timeout.
fn passed(e: &Evidence) -> bool {
    e.status == ToolStatus::Ok && e.exit_code == Some(0)
}

/// The verdict from the calls newest first, and what came before all of them: whether a change
/// did, and whether the last run after it passed.
fn verdict_newest_first<'a>(
    newest_first: impl Iterator<Item = &'a Evidence>,
    earlier_change: bool,
    earlier_run_passed: Option<bool>,
) -> Verdict {
    let mut last_run: Option<bool> = None;
    for e in newest_first {
        if !e.changed.is_empty() {
            return judge(last_run);
        }
        if last_run.is_none() && e.ran.is_some() {
            last_run = Some(passed(e));
        }
    }
    if earlier_change {
        judge(last_run.or(earlier_run_passed))
    } else {
        Verdict::NoChange
    }
}

/// The verdict of changes whose last later run passed, failed, or never came.
fn judge(last_run_passed: Option<bool>) -> Verdict {
    if last_run_passed == Some(true) {
        Verdict::Verified
    } else {
        Verdict::Unverified
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The verdict of a turn whose calls are `evidence`, in order. A verifying run is a call that
    /// ran a command; only one strictly after the last change counts, and the last such run
    /// decides.
    fn verdict(evidence: &[Evidence]) -> Verdict {
        verdict_newest_first(evidence.iter().rev(), false, None)
    }

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

    /// The bounded log gives the verdict the whole list gives, for every case of the table
    /// above padded with reads until its start falls out of the log.
    #[test]
    fn the_bounded_log_keeps_the_verdict_of_the_whole_list() {
        use ToolStatus::{Failed, Ok};
        let read = || Evidence {
            tool: "read_file".into(),
            changed: Vec::new(),
            ran: None,
            status: Ok,
            exit_code: None,
        };
        let heads: Vec<Vec<Evidence>> = vec![
            vec![],
            vec![change("a")],
            vec![change("a"), run(Ok, Some(0))],
            vec![change("a"), run(Failed, Some(1))],
            vec![run(Ok, Some(0))],
            vec![change("a"), run(Ok, Some(0)), run(Failed, Some(1))],
            vec![change("a"), run(Failed, Some(1)), run(Ok, Some(0))],
            vec![change("a"), run(Ok, Some(0)), change("b")],
            vec![change("a"), refused()],
        ];
        let tails: Vec<Vec<Evidence>> = vec![
            vec![],
            vec![run(Ok, Some(0))],
            vec![run(Failed, Some(2))],
            vec![change("b")],
            vec![refused()],
        ];
        for (h, head) in heads.iter().enumerate() {
            for (t, tail) in tails.iter().enumerate() {
                for pad in [
                    0,
                    10,
                    EVIDENCE_KEPT - 3,
                    EVIDENCE_KEPT - 2,
                    EVIDENCE_KEPT - 1,
                    EVIDENCE_KEPT,
                    EVIDENCE_KEPT + 5,
                ] {
                    let mut all = head.clone();
                    all.extend(std::iter::repeat_with(read).take(pad));
                    all.extend(tail.iter().cloned());
                    let mut log = EvidenceLog::default();
                    for e in &all {
                        log.push(e.clone());
                    }
                    assert_eq!(
                        log.verdict(),
                        verdict(&all),
                        "head {h}, pad {pad}, tail {t}"
                    );
                    assert!(log.recent().len() <= EVIDENCE_KEPT);
                    assert_eq!(log.recent().last(), all.last());
                }
            }
        }
    }
}
