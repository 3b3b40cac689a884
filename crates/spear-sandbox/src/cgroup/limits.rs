//! The resource contracts: each command's [`CgroupLimits`], a session's [`SessionBudget`] over
//! all of its commands, each checked before anything is made, and which of them a command hit
//! ([`LimitsHit`]).

use super::error::CgroupError;

/// The resource contract enforced on each command's process tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CgroupLimits {
    /// Memory the tree may use (anonymous memory and page cache), in bytes.
    pub memory_max_bytes: u64,
    /// Swap the tree may use on top of `memory_max_bytes`, in bytes.
    pub swap_max_bytes: u64,
    /// Tasks (processes and threads) the tree may hold at once.
    pub tasks_max: u32,
    /// CPU time per wall-clock time, in percent of one CPU (`800` is eight CPUs' worth).
    pub cpu_percent: u32,
}

impl CgroupLimits {
    /// The default memory limit: 2 GiB.
    pub const DEFAULT_MEMORY_MAX_BYTES: u64 = 2 << 30;
    /// The default swap limit: none.
    pub const DEFAULT_SWAP_MAX_BYTES: u64 = 0;
    /// The default task limit.
    pub const DEFAULT_TASKS_MAX: u32 = 256;
    /// The default CPU limit: eight CPUs' worth.
    pub const DEFAULT_CPU_PERCENT: u32 = 800;

    /// Checks that every limit can be enforced: memory, tasks and CPU must be above zero (a zero
    /// would stop the command before it starts, and cgroupfs has no "zero means unlimited").
    pub fn validate(&self) -> Result<(), CgroupError> {
        let problem = if self.memory_max_bytes == 0 {
            Some("memory_max_bytes is 0")
        } else if self.tasks_max == 0 {
            Some("tasks_max is 0")
        } else if self.cpu_percent == 0 {
            Some("cpu_percent is 0")
        } else {
            None
        };
        match problem {
            Some(problem) => Err(CgroupError::InvalidLimits(problem.to_owned())),
            None => Ok(()),
        }
    }
}

impl Default for CgroupLimits {
    fn default() -> Self {
        Self {
            memory_max_bytes: Self::DEFAULT_MEMORY_MAX_BYTES,
            swap_max_bytes: Self::DEFAULT_SWAP_MAX_BYTES,
            tasks_max: Self::DEFAULT_TASKS_MAX,
            cpu_percent: Self::DEFAULT_CPU_PERCENT,
        }
    }
}

/// What all of a session's commands together may hold at once: the parent cgroup of every command's
/// own ([`SessionCgroup`](super::SessionCgroup)). Each command keeps its own [`CgroupLimits`]
/// inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionBudget {
    /// Tasks (processes and threads) all of the session's commands may hold at once.
    pub tasks_max: u32,
    /// Memory all of the session's commands may use at once, in bytes.
    pub memory_max_bytes: u64,
}

impl SessionBudget {
    /// The default task budget: four commands at their default limit.
    pub const DEFAULT_TASKS_MAX: u32 = 1024;
    /// The default memory budget: 8 GiB.
    pub const DEFAULT_MEMORY_MAX_BYTES: u64 = 8 << 30;

    /// Checks that the budget can hold one command at its own limits: a budget below a command's
    /// limit would make the command's limit a lie (the session's would stop it first).
    pub fn validate(&self, command: &CgroupLimits) -> Result<(), CgroupError> {
        match budget_problem(self, command) {
            Some(problem) => Err(CgroupError::InvalidLimits(problem)),
            None => Ok(()),
        }
    }
}

impl Default for SessionBudget {
    fn default() -> Self {
        Self {
            tasks_max: Self::DEFAULT_TASKS_MAX,
            memory_max_bytes: Self::DEFAULT_MEMORY_MAX_BYTES,
        }
    }
}

/// What is wrong with `budget` for commands limited by `command`, if anything.
fn budget_problem(budget: &SessionBudget, command: &CgroupLimits) -> Option<String> {
    if budget.tasks_max == 0 {
        Some("the session's task budget is 0".to_owned())
    } else if budget.memory_max_bytes == 0 {
        Some("the session's memory budget is 0".to_owned())
    } else if budget.tasks_max < command.tasks_max {
        Some(format!(
            "the session's task budget ({}) is below one command's task limit ({})",
            budget.tasks_max, command.tasks_max
        ))
    } else if budget.memory_max_bytes < command.memory_max_bytes {
        Some(format!(
            "the session's memory budget ({} bytes) is below one command's memory limit ({} bytes)",
            budget.memory_max_bytes, command.memory_max_bytes
        ))
    } else {
        None
    }
}

/// Whether the command reached one of its limits.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LimitsHit {
    /// Memory use reached the limit (the kernel had to reclaim, refused a charge, or OOM-killed).
    pub memory: bool,
    /// A fork or clone was refused because the task limit was reached.
    pub tasks: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_budgets() {
        let command = CgroupLimits::default();
        let cases: [(SessionBudget, Option<&str>); 6] = [
            (SessionBudget::default(), None),
            (
                SessionBudget {
                    tasks_max: 256,
                    memory_max_bytes: 2 << 30,
                },
                None,
            ),
            (
                SessionBudget {
                    tasks_max: 255,
                    ..SessionBudget::default()
                },
                Some("the session's task budget (255) is below one command's task limit (256)"),
            ),
            (
                SessionBudget {
                    memory_max_bytes: (2 << 30) - 1,
                    ..SessionBudget::default()
                },
                Some(
                    "the session's memory budget (2147483647 bytes) is below one command's memory limit (2147483648 bytes)",
                ),
            ),
            (
                SessionBudget {
                    tasks_max: 0,
                    ..SessionBudget::default()
                },
                Some("the session's task budget is 0"),
            ),
            (
                SessionBudget {
                    memory_max_bytes: 0,
                    ..SessionBudget::default()
                },
                Some("the session's memory budget is 0"),
            ),
        ];
        for (budget, want) in cases {
            assert_eq!(
                budget_problem(&budget, &command).as_deref(),
                want,
                "{budget:?}"
            );
            assert_eq!(budget.validate(&command).is_ok(), want.is_none());
        }
        assert_eq!(SessionBudget::default().tasks_max, 1024);
        assert_eq!(SessionBudget::default().memory_max_bytes, 8 << 30);
    }
}
