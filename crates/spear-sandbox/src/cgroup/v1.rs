//! The cgroup v1 backend: a child `<name>` of our own cgroup in each of the memory, pids, cpu and
//! freezer hierarchies, limits written directly.
//!
//! Usable where we may create cgroups under our own ones: as root, or as a user a v1 subtree was
//! delegated to (`scripts/delegate-cgroup.sh`). Moving a process into a v1 cgroup needs write
//! access to the destination's `cgroup.procs` and, unless root, the same uid as the process: a
//! command joining its own cgroups from between fork and exec meets both.
//!
//! Swap: with swap accounting (`memory.memsw.*`), memory + swap is capped at
//! `memory_max + swap_max`. Without it, swap cannot be accounted; a swap limit of zero is then kept
//! with `memory.swappiness=0` (the cgroup's reclaim does not swap), and any other swap limit is an
//! error.

use std::path::Path;
use std::sync::Arc;

use super::backend::{CgroupBackend, check_session};
use super::backend_kind::BackendKind;
use super::command_cgroup::{CommandCgroup, Control};
use super::error::CgroupError;
use super::limits::{CgroupLimits, SessionBudget};
use super::ops;
use super::ops::CgroupDir;
use super::parse::{self, Hierarchy, Located, V1Swap};
use super::session_cgroup::{SessionCgroup, SessionControl};

/// The controllers spear uses, in join order: the freezer first, so that any process in one of a
/// command's cgroups is in the one `kill_all` freezes.
pub(crate) const CONTROLLERS: [&str; 4] = ["freezer", "pids", "memory", "cpu"];

/// Our own cgroups in the v1 hierarchies spear uses.
#[derive(Debug)]
pub(crate) struct CgroupV1 {
    /// Our cgroup in each of [`CONTROLLERS`], in that order.
    own: Vec<(&'static str, Located)>,
    swap: V1Swap,
}

impl CgroupV1 {
    /// A backend over our own cgroups `own` (one per controller of [`CONTROLLERS`], in order).
    pub(crate) fn new(own: Vec<(&'static str, Located)>, swap: V1Swap) -> Self {
        Self { own, swap }
    }
}

impl CgroupBackend for CgroupV1 {
    /// Under our own cgroup in each hierarchy: every directory spear named (`spear-<pid>-<n>` and
    /// the warm and session ones) that no spear holds, removed deepest first while empty. One
    /// still holding a process is left as it is.
    ///
    /// Whether its spear lives is its lock ([`crate::dir_lock`]), not its pid: a spear in another
    /// PID namespace sharing this cgroup is alive though its pid is not in our `/proc`, and an
    /// empty session cgroup of its, between two commands, must not be removed from under it.
    fn sweep_stale(&self) -> usize {
        self.own
            .iter()
            .map(|(_, own)| ops::sweep_children(&own.dir))
            .sum()
    }

    fn kind(&self) -> BackendKind {
        BackendKind::CgroupV1
    }

    fn describe(&self) -> String {
        let dirs: Vec<String> = self
            .own
            .iter()
            .map(|(c, l)| format!("{c} at {}", l.dir.display()))
            .collect();
        let swap = match self.swap {
            V1Swap::Memsw => "swap capped by memory.memsw",
            V1Swap::SwappinessOnly => {
                "no swap accounting: swap kept at zero by memory.swappiness=0"
            }
        };
        format!("cgroup v1 ({}; {swap})", dirs.join(", "))
    }

    fn prepare_in(
        &self,
        session: Option<&Arc<SessionCgroup>>,
        limits: &CgroupLimits,
        name: &str,
    ) -> Result<CommandCgroup, CgroupError> {
        limits.validate()?;
        if !parse::is_valid_name(name) {
            return Err(CgroupError::InvalidName(name.to_owned()));
        }
        let memory_writes = self.memory_writes(limits)?;
        let parents = self.parents(session)?;
        // Built up as directories are made: on an error, dropping it removes what exists.
        let mut cgroup = CommandCgroup::new(BackendKind::CgroupV1, name, Control::V1);
        cgroup.session = session.cloned();
        for (controller, parent_rel, parent_dir) in parents {
            let path = parent_dir.join(name);
            let lock = ops::create_dir(&path)?;
            cgroup.dirs.push(CgroupDir {
                hierarchy: Hierarchy::V1(controller),
                rel: parse::child_rel(parent_rel, name),
                path: path.clone(),
                procs: None,
                lock: Some(lock),
            });
            match controller {
                "memory" => {
                    for (file, value) in &memory_writes {
                        ops::write_value(&path.join(file), value)?;
                    }
                }
                "pids" => ops::write_value(&path.join("pids.max"), &limits.tasks_max.to_string())?,
                "cpu" => {
                    let period_path = path.join("cpu.cfs_period_us");
                    let period = ops::read_text(&period_path)?
                        .trim()
                        .parse::<u64>()
                        .map_err(|e| {
                            ops::io_error(
                                "parse",
                                &period_path,
                                std::io::Error::other(e.to_string()),
                            )
                        })?;
                    let quota =
                        parse::cfs_quota_us(limits.cpu_percent, period).ok_or_else(|| {
                            CgroupError::InvalidLimits("cpu quota overflows".to_owned())
                        })?;
                    ops::write_value(&path.join("cpu.cfs_quota_us"), &quota.to_string())?;
                }
                _ => {}
            }
            // The child joins through `tasks`, not `cgroup.procs`: it writes `0` (itself) from
            // between fork and exec, where it has exactly one thread, so moving that thread moves
            // the whole process. The kernel moves a single `current` thread without taking the
            // global threadgroup lock, whose RCU grace period otherwise costs every command
            // several milliseconds (tens on a busy host).
            let procs = ops::open_join_file(&path, "tasks")?;
            if let Some(dir) = cgroup.dirs.last_mut() {
                dir.procs = Some(procs);
            }
        }
        Ok(cgroup)
    }

    fn prepare_session(
        &self,
        budget: &SessionBudget,
        command: &CgroupLimits,
        name: &str,
    ) -> Result<SessionCgroup, CgroupError> {
        check_session(budget, command, name)?;
        let writes = parse::v1_session_writes(budget, command, self.swap)
            .ok_or_else(|| self.memory_writes(command).err().unwrap_or_else(overflow))?;
        // Built up as directories are made: on an error, dropping it removes what exists.
        let mut session =
            SessionCgroup::new(BackendKind::CgroupV1, name, *budget, SessionControl::V1);
        for (controller, own) in &self.own {
            let path = own.dir.join(name);
            let lock = ops::create_dir(&path)?;
            session.dirs.push(CgroupDir {
                hierarchy: Hierarchy::V1(controller),
                rel: parse::child_rel(&own.rel, name),
                path: path.clone(),
                procs: None,
                lock: Some(lock),
            });
            for (_, file, value) in writes.iter().filter(|(c, _, _)| c == controller) {
                ops::write_value(&path.join(file), value)?;
            }
        }
        Ok(session)
    }
}

impl CgroupV1 {
    /// The memory files of a command limited by `limits`, or why this host cannot enforce them.
    fn memory_writes(
        &self,
        limits: &CgroupLimits,
    ) -> Result<Vec<(&'static str, String)>, CgroupError> {
        parse::v1_memory_writes(limits, self.swap).ok_or_else(|| match self.swap {
            V1Swap::SwappinessOnly => CgroupError::SwapUncontrolled(format!(
                "swap limit {} bytes asked for, but this kernel does not account swap in cgroup v1 \
                 (no memory.memsw files): set the swap limit to 0, or boot with swapaccount=1",
                limits.swap_max_bytes
            )),
            V1Swap::Memsw => overflow(),
        })
    }

    /// Where a command's directories go, per controller in join order (controller, hierarchy
    /// path, directory): inside `session`'s, or under our own cgroups.
    fn parents<'a>(
        &'a self,
        session: Option<&'a Arc<SessionCgroup>>,
    ) -> Result<Vec<(&'static str, &'a str, &'a Path)>, CgroupError> {
        let Some(session) = session else {
            return Ok(self
                .own
                .iter()
                .map(|(c, own)| (*c, own.rel.as_str(), own.dir.as_path()))
                .collect());
        };
        if session.kind != BackendKind::CgroupV1 {
            return Err(CgroupError::InvalidLimits(format!(
                "a {} session cannot hold a cgroup v1 command",
                session.kind
            )));
        }
        CONTROLLERS
            .iter()
            .map(|controller| {
                session
                    .dirs
                    .iter()
                    .find(|d| d.hierarchy == Hierarchy::V1(controller))
                    .map(|d| (*controller, d.rel.as_str(), d.path.as_path()))
                    .ok_or_else(|| {
                        CgroupError::InvalidLimits(format!(
                            "session {} has no {controller} cgroup",
                            session.name
                        ))
                    })
            })
            .collect()
    }
}

/// Removes the cgroup directory `dir` and every one below it, deepest first, each only while it
/// holds no process (rmdir fails otherwise); whether `dir` itself went.
fn overflow() -> CgroupError {
    CgroupError::InvalidLimits("memory + swap overflows".to_owned())
}
