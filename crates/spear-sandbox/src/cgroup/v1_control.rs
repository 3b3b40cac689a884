//! Controlling a cgroup v1 command or session once made: killed through its freezer, read for the
//! limits it and its session hit.

use std::path::Path;
use std::time::Instant;

use super::error::CgroupError;
use super::limits::LimitsHit;
use super::ops::{self, CgroupDir, Freezer, KILL_DEADLINE};
use super::parse::Hierarchy;

/// Kills through the freezer cgroup, then waits until every directory is empty. Without a
/// freezer directory (a `prepare` that failed before making it) nothing can have joined.
pub(crate) fn kill_all(dirs: &[CgroupDir]) -> Result<(), CgroupError> {
    let deadline = Instant::now() + KILL_DEADLINE;
    if let Some(freezer) = dirs
        .iter()
        .find(|d| d.hierarchy == Hierarchy::V1("freezer"))
    {
        ops::freeze_kill_thaw(freezer, Freezer::V1, deadline)?;
    }
    ops::wait_empty(dirs, deadline)
}

pub(crate) fn limits_hit(dirs: &[CgroupDir]) -> LimitsHit {
    let memory = dir_of(dirs, "memory").is_some_and(|dir| {
        ops::number(&dir.join("memory.failcnt")).is_some_and(|n| n > 0)
            || (dir.join("memory.memsw.failcnt").exists()
                && ops::number(&dir.join("memory.memsw.failcnt")).is_some_and(|n| n > 0))
            || ops::counter(&dir.join("memory.oom_control"), "oom_kill").is_some_and(|n| n > 0)
    });
    let tasks = dir_of(dirs, "pids")
        .is_some_and(|dir| ops::counter(&dir.join("pids.events"), "max").is_some_and(|n| n > 0));
    LimitsHit { memory, tasks }
}

/// Which of the session's budgets stopped the command of `dirs` (its own limits hit as `own`):
/// tasks when forks failed in it while its own `pids.peak` stayed below its own `pids.max` and the
/// session's reached the session's; memory when it hit a memory limit while its own usage never
/// reached its own limit and the session's reached the session's (`memory.max_usage_in_bytes`,
/// and the memory + swap twins).
pub(crate) fn session_limits_hit(
    dirs: &[CgroupDir],
    session: &[CgroupDir],
    own: LimitsHit,
) -> LimitsHit {
    let reached = |dirs: &[CgroupDir]| {
        dir_of(dirs, "pids").and_then(|dir| {
            let peak = ops::number(&dir.join("pids.peak"))?;
            let max = ops::number(&dir.join("pids.max"))?;
            Some(peak >= max)
        })
    };
    // A memory counter's high-water mark reaches its limit exactly when a charge met it
    // (`memory.failcnt` is not kept by every kernel: 6.18 counts no failure in a parent whose
    // limit refused a child's charge). With swap accounting, memory + swap counts too.
    let memory_reached = |dirs: &[CgroupDir]| {
        dir_of(dirs, "memory").and_then(|dir| {
            let reached = |usage: &str, limit: &str| -> Option<bool> {
                Some(ops::number(&dir.join(usage))? >= ops::number(&dir.join(limit))?)
            };
            let memory = reached("memory.max_usage_in_bytes", "memory.limit_in_bytes")?;
            let memsw = if dir.join("memory.memsw.limit_in_bytes").exists() {
                reached(
                    "memory.memsw.max_usage_in_bytes",
                    "memory.memsw.limit_in_bytes",
                )?
            } else {
                false
            };
            Some(memory || memsw)
        })
    };
    LimitsHit {
        tasks: own.tasks && reached(dirs) == Some(false) && reached(session) == Some(true),
        memory: own.memory
            && memory_reached(dirs) == Some(false)
            && memory_reached(session) == Some(true),
    }
}

pub(crate) fn dir_of<'a>(dirs: &'a [CgroupDir], controller: &str) -> Option<&'a Path> {
    dirs.iter()
        .find(|d| matches!(d.hierarchy, Hierarchy::V1(c) if c == controller))
        .map(|d| d.path.as_path())
}
