//! Controlling a cgroup v2 command once made: killed through `cgroup.kill` (or freezer and pidfds),
//! read for the limits it and its session hit.

use std::path::Path;
use std::time::Instant;

use super::error::CgroupError;
use super::limits::LimitsHit;
use super::ops::{self, CgroupDir, Freezer, KILL_DEADLINE};

/// Which of the session's budgets stopped the command of `dirs` (see the v1 twin): tasks from
/// `pids.peak` against `pids.max` (`max` unlimited), memory when its own `memory.events.local` counts no
/// `max` while the session's does.
pub(crate) fn session_limits_hit(
    dirs: &[CgroupDir],
    session: &[CgroupDir],
    own: LimitsHit,
) -> LimitsHit {
    let reached = |dirs: &[CgroupDir]| {
        dirs.first().and_then(|d| {
            let peak = ops::number(&d.path.join("pids.peak"))?;
            let max = ops::number(&d.path.join("pids.max")).unwrap_or(u64::MAX);
            Some(peak >= max)
        })
    };
    let max_events = |dirs: &[CgroupDir]| {
        dirs.first()
            .and_then(|d| ops::counter(&d.path.join("memory.events.local"), "max"))
    };
    LimitsHit {
        tasks: own.tasks && reached(dirs) == Some(false) && reached(session) == Some(true),
        memory: own.memory
            && max_events(dirs) == Some(0)
            && max_events(session).is_some_and(|n| n > 0),
    }
}

/// `cgroup.kill` (Linux 5.14+) until empty; on older kernels, freeze, pidfd-kill, thaw.
pub(crate) fn kill_all(dirs: &[CgroupDir]) -> Result<(), CgroupError> {
    let deadline = Instant::now() + KILL_DEADLINE;
    let Some(dir) = dirs.first() else {
        return Ok(());
    };
    let kill = dir.path.join("cgroup.kill");
    if !kill.exists() {
        ops::freeze_kill_thaw(dir, Freezer::V2, deadline)?;
        return ops::wait_empty(dirs, deadline);
    }
    loop {
        if ops::read_procs(&dir.path)?.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(ops::timeout(&dir.path, "killing its processes"));
        }
        ops::write_value(&kill, "1")?;
        let round_end = deadline.min(Instant::now() + std::time::Duration::from_millis(200));
        ops::wait_until(round_end, || Ok(ops::read_procs(&dir.path)?.is_empty()))?;
    }
}

pub(crate) fn limits_hit(dir: &Path) -> LimitsHit {
    let events = dir.join("memory.events");
    let memory = ["max", "oom", "oom_kill"]
        .iter()
        .any(|key| ops::counter(&events, key).is_some_and(|n| n > 0));
    let tasks = ops::counter(&dir.join("pids.events"), "max").is_some_and(|n| n > 0);
    LimitsHit { memory, tasks }
}
