//! What the sandbox saw, turned into a result: how the command ended, the limits it hit, a broken
//! network path or cgroup, and a guarantee its profile requires that the run lost.

use std::time::Duration;

use spear_core::{ExecutionProfile, Guarantee, ToolResult, ToolStatus};
use spear_sandbox::{CgroupLimits, LimitsHit, SessionBudget};
use spear_sandbox::{Exit, RunOutcome, Stop};

use super::command_runner::CommandRunner;

impl CommandRunner {
    /// Turns what the sandbox saw into a result.
    pub(super) fn interpret(&self, outcome: &RunOutcome, timeout: Duration) -> ToolResult {
        let f = &outcome.finished;
        let mut result = ToolResult::new(ToolStatus::Failed);
        result.guarantees = Some(outcome.guarantees);
        result.stdout.clone_from(&f.stdout.text);
        result.stderr.clone_from(&f.stderr.text);
        result.truncated = f.stdout.truncated || f.stderr.truncated;
        if let Some(setup) = &outcome.setup_error {
            if setup.contains("execvp") && setup.contains("No such file or directory") {
                result.status = ToolStatus::NotFound;
                result.reason = Some(format!("the program was not found in the sandbox: {setup}"));
            } else {
                result.reason = Some(format!(
                    "the sandbox could not be set up, so the command did not run: {setup}"
                ));
            }
            return result;
        }
        let limits = self.config.sandbox.cgroup;
        match (f.stop, f.exit) {
            (_, Exit::Unknown) => {
                result.reason = Some(
                    "containment failed: spear could not confirm that the command's processes died; check for leftover processes".into(),
                );
            }
            (Stop::Timeout, _) => {
                result.status = ToolStatus::Timeout;
                result.reason = Some(format!(
                    "timed out after {} s; the command and every process it started were killed. Ask for a longer timeout or run something shorter",
                    timeout.as_secs_f64()
                ));
            }
            (Stop::Cancelled, _) => {
                result.status = ToolStatus::Cancelled;
                result.reason =
                    Some("cancelled; the command and every process it started were killed".into());
            }
            (Stop::Flood, _) => {
                result.reason = Some(format!(
                    "the command printed more than {} MiB on one stream and was killed; redirect its output to a file and read parts of it",
                    self.config.flood_bytes >> 20
                ));
            }
            (Stop::None, Exit::Code(0)) => {
                result.status = ToolStatus::Ok;
                result.exit_code = Some(0);
            }
            (Stop::None, Exit::Code(code)) => result.exit_code = Some(code),
            (Stop::None, Exit::Signal(sig)) => {
                result.exit_code = Some(128 + sig);
                result.reason = Some(format!("the sandbox was killed by signal {sig}"));
            }
        }
        for note in limit_notes(
            outcome.limits_hit,
            outcome.session_limits_hit,
            limits,
            self.config.sandbox.session,
        ) {
            result.append_reason(&note);
        }
        if let Some(e) = &outcome.network_error {
            result.status = ToolStatus::Failed;
            result.append_reason(&format!(
                    "network containment failed: {e}; this session refuses networked commands from now on"
                ),
            );
        }
        if let Some(e) = &outcome.cleanup_error {
            result.append_reason(&format!("the command's cgroup could not be removed: {e}"));
        }
        result
    }
}

/// What a result says about the limits a command hit: its own (`hit`, `limits`), or the session's
/// budget (`session_hit`, `session`) when that is what stopped it, with what to do about it.
fn limit_notes(
    hit: LimitsHit,
    session_hit: LimitsHit,
    limits: Option<CgroupLimits>,
    session: Option<SessionBudget>,
) -> Vec<String> {
    let mut notes = Vec::new();
    if session_hit.memory {
        let mib = session.map_or(0, |b| b.memory_max_bytes >> 20);
        notes.push(format!(
            "the session's memory budget ({mib} MiB, all of its commands and background jobs together) is reached and processes were killed; stop a background job with terminal_kill"
        ));
    } else if hit.memory {
        let mib = limits.map_or(0, |l| l.memory_max_bytes >> 20);
        notes.push(format!(
            "the command reached its memory limit ({mib} MiB) and processes were killed"
        ));
    }
    if session_hit.tasks {
        let n = session.map_or(0, |b| b.tasks_max);
        notes.push(format!(
            "the session's task budget of {n} (all of its commands and background jobs together) is reached; forks beyond it failed; stop a background job with terminal_kill"
        ));
    } else if hit.tasks {
        let n = limits.map_or(0, |l| l.tasks_max);
        notes.push(format!(
            "the command reached its limit of {n} tasks; forks beyond it failed"
        ));
    }
    notes
}

/// A command that ran without a guarantee its profile requires is a failure, whatever it printed
/// (the sandbox refuses before spawning what the host cannot give; this is what the run itself
/// lost, e.g. a tree whose end could not be confirmed). `target_policy` is judged after the
/// runner, by its caller.
pub(super) fn unmet_after_run(result: &mut ToolResult, profile: &ExecutionProfile) {
    let Some(g) = &result.guarantees else {
        return;
    };
    let mut unmet = profile.required().unmet(g.enforced);
    unmet.remove(Guarantee::TargetPolicy);
    if !unmet.is_empty() {
        result.status = ToolStatus::Failed;
        let text = format!(
            "the command ran without {}, which it requires",
            unmet.names()
        );
        result.append_reason(&text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Guarantee as G;
    use spear_core::{Capability, CapabilitySet, GuaranteeSet, Guarantees};

    #[test]
    fn notes_name_the_limit_that_stopped_the_command() {
        let limits = Some(CgroupLimits::default());
        let session = Some(SessionBudget {
            tasks_max: 600,
            memory_max_bytes: 4 << 30,
        });
        let none = LimitsHit::default();
        let tasks = LimitsHit {
            tasks: true,
            memory: false,
        };
        let memory = LimitsHit {
            tasks: false,
            memory: true,
        };
        let own_tasks = "the command reached its limit of 256 tasks; forks beyond it failed";
        let session_tasks = "the session's task budget of 600 (all of its commands and background jobs together) is reached; forks beyond it failed; stop a background job with terminal_kill";
        let own_memory =
            "the command reached its memory limit (2048 MiB) and processes were killed";
        let session_memory = "the session's memory budget (4096 MiB, all of its commands and background jobs together) is reached and processes were killed; stop a background job with terminal_kill";
        // (hit, the session's part of it, notes)
        let cases: [(LimitsHit, LimitsHit, Vec<&str>); 5] = [
            (none, none, vec![]),
            (tasks, none, vec![own_tasks]),
            (tasks, tasks, vec![session_tasks]),
            (memory, memory, vec![session_memory]),
            (
                LimitsHit {
                    tasks: true,
                    memory: true,
                },
                memory,
                vec![session_memory, own_tasks],
            ),
        ];
        for (hit, session_hit, want) in cases {
            assert_eq!(
                limit_notes(hit, session_hit, limits, session),
                want,
                "{hit:?} {session_hit:?}"
            );
        }
        assert_eq!(limit_notes(memory, none, limits, session), vec![own_memory]);
    }

    #[test]
    fn a_run_without_a_required_guarantee_fails() {
        let profile = |bits: &[G]| {
            ExecutionProfile::from_granted(CapabilitySet::of(&[Capability::FilesystemRead]), vec![])
                .with_required(GuaranteeSet::of(bits))
        };
        let ran = |bits: &[G]| ToolResult {
            guarantees: Some(Guarantees {
                enforced: GuaranteeSet::of(bits),
                limits: None,
                gpu: false,
            }),
            ..ToolResult::new(ToolStatus::Ok)
        };
        // (required, enforced, still ok)
        let cases: [(&[G], &[G], bool); 6] = [
            (&[], &[], true),
            (&[G::ProcessBoundary], &[G::ProcessBoundary], true),
            (&[G::ProcessBoundary], &[G::ReadBoundary], false),
            (&[G::NetworkFiltered], &[G::NetworkClosed], true),
            (&[G::ResourceLimits], &[G::NetworkClosed], false),
            // Judged by the runner's caller, after it.
            (&[G::TargetPolicy], &[], true),
        ];
        for (required, enforced, ok) in cases {
            let mut r = ran(enforced);
            unmet_after_run(&mut r, &profile(required));
            assert_eq!(
                r.status == ToolStatus::Ok,
                ok,
                "{required:?} {enforced:?}: {r:?}"
            );
            if !ok {
                assert!(r.reason.unwrap().contains(required[0].as_str()));
            }
        }
        // Nothing ran: nothing to say.
        let mut r = ToolResult::new(ToolStatus::Failed);
        unmet_after_run(&mut r, &profile(&[G::ResourceLimits]));
        assert_eq!(r.reason, None);
    }
}
