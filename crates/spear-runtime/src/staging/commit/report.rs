//! What a commit did ([`CommitReport`]), and how that reads in the command's result: what was
//! refused, kept together, kept aside or not kept, and why a result some of whose changes were
//! kept out is not a success.

use std::path::PathBuf;

use spear_core::{Refusal, ToolResult, ToolStatus, exit_code};
use spear_workspace::Location;

use crate::checkpoint::EntryState;
use crate::staging::limits::{MAX_LISTED, MAX_UNTRACKED_KEPT};

/// What a commit did.
#[derive(Debug, Default)]
pub struct CommitReport {
    /// The state before of every tracked entry that changed and of every entry removed, for
    /// the turn's checkpoint.
    pub captured: Vec<(Location, EntryState)>,
    /// Labels of the tracked entries that changed (files and links, and directories that
    /// appeared or vanished) and of every removal, tracked or not.
    pub changed: Vec<String>,
    /// Changes refused, with why (one per refused entry or removed tree).
    pub refused: Vec<(String, Refusal)>,
    /// Git directories in which a change was refused, each with how many of its other changes
    /// were kept out with it: a git operation's changes are committed together or not at all.
    pub kept_together: Vec<(String, usize)>,
    /// Entries the host changed while the command ran, left as the host has them.
    pub conflicts: Vec<String>,
    /// Where the staged versions of conflicting entries were kept.
    pub kept_at: Option<PathBuf>,
    /// Tracked entries whose earlier content was not kept (too large), so undo cannot restore
    /// them.
    pub not_kept: Vec<String>,
    /// Removed untracked files past `MAX_UNTRACKED_KEPT` (16 MiB), so undo cannot restore them.
    pub not_kept_untracked: Vec<String>,
    /// Fifos, sockets and devices the command left, which are never committed.
    pub special: Vec<String>,
    /// Changes that could not be applied.
    pub failures: Vec<String>,
    /// Whether the plan could not be made at all (nothing was committed).
    pub unreadable: Option<String>,
    /// Changes to untracked entries (`.git`, ignored build output) that were committed.
    pub untracked: usize,
    /// The command left more changes than the commit takes: none was committed.
    pub over_limit: Option<OverLimit>,
    /// The call was cancelled before anything was applied: none was committed.
    pub stopped: Option<usize>,
    /// Why the askable changes (host-run configuration, listed in `refused`) were not let
    /// through: the person declined, or nobody could be asked.
    pub unapproved: Option<Refusal>,
}

/// What a commit over its limit saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverLimit {
    /// The limit.
    pub max: usize,
    /// The changes planned, when planning got that far (otherwise the layer alone held more
    /// entries than the limit).
    pub planned: Option<usize>,
}

/// `items` joined with `sep`, at most [`MAX_LISTED`] of them, the rest counted.
pub fn listed(items: &[String], sep: &str) -> String {
    let shown = items.get(..MAX_LISTED).unwrap_or(items);
    let text = shown.join(sep);
    if items.len() > shown.len() {
        format!("{text}{sep}... and {} more", items.len() - shown.len())
    } else {
        text
    }
}

impl CommitReport {
    /// Adds what the commit did to the command's result: changed paths, and reasons for what
    /// was refused, kept aside or could not be applied (which also fail the result).
    ///
    /// A result with any change refused is `denied`, not `ok` (a `failed`, `cancelled` or
    /// `timeout` one keeps its status): the workspace is not as the command left it. Its exit
    /// code stays the command's own when that was not 0; a 0 becomes
    /// [`exit_code::REFUSED`], and the reason says that the command itself exited 0.
    pub fn apply_to(&self, result: &mut ToolResult) {
        // A set, not `Vec::contains`: a command that changed 200,000 paths must not cost their
        // square here.
        let mut seen: std::collections::HashSet<String> =
            result.changed_paths.iter().cloned().collect();
        for label in &self.changed {
            if seen.insert(label.clone()) {
                result.changed_paths.push(label.clone());
            }
        }
        if let Some(over) = &self.over_limit {
            result.status = ToolStatus::Failed;
            let counted = over.planned.map_or_else(
                || format!("its staged writes hold more than {} entries", over.max),
                |n| format!("it made {n} changes"),
            );
            result.append_reason(&format!(
                    "the command changed more of the workspace than spear commits from one command \
                     ({counted}; the limit is {max}), so none of its changes were committed: all or \
                     nothing, the workspace is as it was before the command. Split the work into \
                     smaller commands, or write bulk output outside the workspace (/tmp)",
                    max = over.max
                ),
            );
        }
        if let Some(planned) = self.stopped {
            result.status = ToolStatus::Cancelled;
            result.append_reason(&format!(
                "the call was cancelled while spear judged the command's {planned} changes; \
                     none of them were committed: the workspace is as it was before the command"
            ));
        }
        if let Some(why) = &self.unreadable {
            result.status = ToolStatus::Failed;
            result.append_reason(&format!(
                "{why}; the workspace is as it was before the command"
            ));
        }
        self.deny_partial(result);
        if let Some(answer) = &self.unapproved {
            let rest = if self.kept_together.is_empty() {
                "the rest was committed"
            } else {
                "the rest was committed, but for the git operations they belong to"
            };
            result.append_reason(&format!(
                "the command wrote host-run configuration, which reaches the workspace only \
                     with the user's approval; it was not approved, so those writes were kept \
                     out (listed below) and {rest}: {}",
                answer.message()
            ));
        }
        if let Some(refused) = self.refused_reason() {
            result.append_reason(&refused);
        }
        if !self.conflicts.is_empty() {
            let kept = self
                .kept_at
                .as_ref()
                .map(|p| format!("; this command's versions are kept in {}", p.display()))
                .unwrap_or_default();
            result.append_reason(&format!(
                "changed on the host while the command ran, so left as the host has them: {}{kept}",
                listed(&self.conflicts, ", ")
            ));
        }
        self.append_not_kept(result);
        if !self.failures.is_empty() {
            result.status = ToolStatus::Failed;
            result.append_reason(&format!(
                "some changes could not be put into the workspace: {}",
                listed(&self.failures, "; ")
            ));
        }
    }
}

impl CommitReport {
    /// A command some of whose changes were kept out did not do what it did in its own view: an
    /// `ok` result becomes `denied`, and an exit code of 0 becomes [`exit_code::REFUSED`], said
    /// in the reason (a client reading only the exit code must not take it for success). A
    /// result already `failed`, `cancelled` or `timeout` keeps its status and its code.
    fn deny_partial(&self, result: &mut ToolResult) {
        if self.refused.is_empty() || !matches!(result.status, ToolStatus::Ok | ToolStatus::Denied)
        {
            return;
        }
        result.status = ToolStatus::Denied;
        if result.exit_code == Some(0) {
            result.exit_code = Some(exit_code::REFUSED);
            result.append_reason(&format!(
                "the command itself exited 0, but spear kept out part of what it changed, so \
                     the workspace is not as the command left it (exit code {} says so; what was \
                     kept out and why is listed below)",
                exit_code::REFUSED
            ));
        }
    }

    /// What the result says of what the commit did not keep: fifos, sockets and devices, and the
    /// earlier content of what undo cannot restore.
    fn append_not_kept(&self, result: &mut ToolResult) {
        if !self.special.is_empty() {
            result.append_reason(&format!(
                "fifos, sockets and devices are not kept: {}",
                listed(&self.special, ", ")
            ));
        }
        if !self.not_kept.is_empty() {
            result.append_reason(&format!(
                    "the earlier content of {} was not kept (too large), so `spear undo` cannot restore it",
                    listed(&self.not_kept, ", ")
                ),
            );
        }
        if !self.not_kept_untracked.is_empty() {
            result.append_reason(&format!(
                "the command removed ignored files or files of a git directory; past the \
                     first {} MiB of them, their content was not kept, so `spear undo` cannot \
                     restore {}",
                MAX_UNTRACKED_KEPT >> 20,
                listed(&self.not_kept_untracked, ", ")
            ));
        }
    }

    /// What the result says of the refused changes, if any: each with its rule's reason (a
    /// host-run one shortly, with what runs it; the answer that kept it out is said once).
    fn refused_reason(&self) -> Option<String> {
        if self.refused.is_empty() {
            return None;
        }
        let list: Vec<String> = self
            .refused
            .iter()
            .map(|(label, r)| match r {
                Refusal::HostRunConfig { entry, why, .. } => {
                    format!("{label} (host-run configuration `{entry}`: {why})")
                }
                _ => format!("{label} ({})", r.message()),
            })
            .collect();
        let mut text = format!(
            "spear did not let these changes reach the workspace (the command saw them; nothing else did): {}",
            listed(&list, "; ")
        );
        if !self.kept_together.is_empty() {
            let dirs: Vec<String> = self
                .kept_together
                .iter()
                .map(|(dir, n)| format!("{dir} ({n})"))
                .collect();
            text = format!(
                "{text}; the rest of the changes to {} were kept out with them: a git \
                 operation's changes are committed together or not at all",
                listed(&dirs, ", ")
            );
        }
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(status: ToolStatus, code: i32) -> ToolResult {
        ToolResult {
            exit_code: Some(code),
            ..ToolResult::new(status)
        }
    }

    fn refused_one() -> CommitReport {
        CommitReport {
            refused: vec![(
                ".git/worktrees/wt/gitdir".to_owned(),
                Refusal::credential_store(".git/worktrees/wt/gitdir"),
            )],
            kept_together: vec![(".git".to_owned(), 7)],
            ..CommitReport::default()
        }
    }

    /// A command that exited 0 and had part of its changes kept out is denied with 126, and
    /// the reason says so before the list; the positive control, nothing refused, stays ok
    /// and 0 with no reason.
    #[test]
    fn a_commit_that_kept_changes_out_is_not_a_success() {
        let mut r = ran(ToolStatus::Ok, 0);
        refused_one().apply_to(&mut r);
        assert_eq!(r.status, ToolStatus::Denied);
        assert_eq!(r.exit_code, Some(exit_code::REFUSED));
        assert_eq!(r.process_exit_code(), exit_code::REFUSED);
        let reason = r.reason.clone().unwrap();
        let exited = reason
            .find("the command itself exited 0, but spear kept out part of what it changed")
            .unwrap();
        let list = reason
            .find("spear did not let these changes reach the workspace")
            .unwrap();
        assert!(exited < list, "{reason}");
        assert!(reason.contains(".git/worktrees/wt/gitdir"), "{reason}");
        assert!(
            reason.contains(
                "the rest of the changes to .git (7) were kept out with them: a git \
                 operation's changes are committed together or not at all"
            ),
            "{reason}"
        );
        assert!(r.refusal.is_none(), "the call itself was not refused");

        let mut clean = ran(ToolStatus::Ok, 0);
        CommitReport {
            changed: vec!["a.txt".to_owned()],
            ..CommitReport::default()
        }
        .apply_to(&mut clean);
        assert_eq!(clean.status, ToolStatus::Ok);
        assert_eq!(clean.exit_code, Some(0));
        assert_eq!(clean.reason, None);
        assert_eq!(clean.changed_paths, ["a.txt"]);
    }

    /// A failed, cancelled or timed-out command keeps its status and its own code; the list of
    /// what was kept out is still said, the exit-0 sentence is not.
    #[test]
    fn a_worse_status_and_a_non_zero_code_are_kept() {
        for (status, code) in [
            (ToolStatus::Failed, 3),
            (ToolStatus::Cancelled, 0),
            (ToolStatus::Timeout, 0),
        ] {
            let mut r = ran(status, code);
            refused_one().apply_to(&mut r);
            assert_eq!((r.status, r.exit_code), (status, Some(code)));
            let reason = r.reason.unwrap();
            assert!(
                reason.contains("did not let these changes reach"),
                "{reason}"
            );
            assert!(!reason.contains("itself exited 0"), "{reason}");
        }
        // Host-run configuration nobody approved: denied, 126, and why it was not approved.
        let mut r = ran(ToolStatus::Ok, 0);
        CommitReport {
            unapproved: Some(Refusal::no_confirmer("x")),
            ..refused_one()
        }
        .apply_to(&mut r);
        assert_eq!(
            (r.status, r.exit_code),
            (ToolStatus::Denied, Some(exit_code::REFUSED))
        );
        assert!(r.reason.unwrap().contains("it was not approved"));
        // Applied twice (a report read again), a result is not marked twice.
        let mut r = ran(ToolStatus::Ok, 0);
        refused_one().apply_to(&mut r);
        let once = r.clone();
        CommitReport {
            refused: refused_one().refused,
            ..CommitReport::default()
        }
        .deny_partial(&mut r);
        assert_eq!(r, once);
    }
}
