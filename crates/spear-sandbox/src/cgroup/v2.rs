//! The cgroup v2 backend: a child `<name>` of our own, delegated cgroup, limits written directly.
//!
//! Usable where our own cgroup (`0::/path` in `/proc/self/cgroup`) offers the memory, pids and cpu
//! controllers and is writable by us: a subtree delegated to our user, as systemd does for a unit
//! with `Delegate=yes`.
//!
//! The "no internal processes" rule: a non-root v2 cgroup can enable controllers for its children
//! only while it holds no process itself. Before the first command, spear therefore moves itself
//! (the whole process) into a leaf `spear-supervisor` of its own cgroup and enables
//! `+memory +pids +cpu` in its own `cgroup.subtree_control`; each command's cgroup is a sibling
//! of that leaf. Moving a process between the two needs write access to their common ancestor's
//! `cgroup.procs`, which delegation gives. If other processes share our cgroup, enabling fails and
//! the error says to start spear in a cgroup of its own.
//!
//! Untested on a real cgroup v2 host: the hosts spear is tested on have the controllers bound to
//! cgroup v1. Its file values and detection are unit-tested.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use rustix::io::Errno;

use super::backend::{CgroupBackend, check_session};
use super::backend_kind::BackendKind;
use super::command_cgroup::{CommandCgroup, Control};
use super::error::CgroupError;
use super::limits::{CgroupLimits, SessionBudget};
use super::ops;
use super::ops::CgroupDir;
use super::parse::{self, Hierarchy, Located, SUPERVISOR_LEAF};
use super::session_cgroup::{SessionCgroup, SessionControl};

/// The controllers spear enables for its commands.
pub(crate) const CONTROLLERS: [&str; 3] = ["memory", "pids", "cpu"];

/// Our own, delegated cgroup v2.
#[derive(Debug)]
pub(crate) struct CgroupV2 {
    own: Located,
    /// Whether spear has moved itself into its leaf and enabled the controllers.
    ready: Mutex<bool>,
}

impl CgroupV2 {
    /// A backend over our own cgroup `own`.
    pub(crate) fn new(own: Located) -> Self {
        Self {
            own,
            ready: Mutex::new(false),
        }
    }

    /// Moves this process into the supervisor leaf (unless our cgroup is the root, to which the
    /// rule does not apply, or it already holds no process) and enables the controllers.
    fn ensure_ready(&self) -> Result<(), CgroupError> {
        let mut ready = self.ready.lock().unwrap_or_else(PoisonError::into_inner);
        if *ready {
            return Ok(());
        }
        let dir = &self.own.dir;
        if self.own.rel != "/" && !ops::read_procs(dir)?.is_empty() {
            let leaf = dir.join(SUPERVISOR_LEAF);
            match std::fs::create_dir(&leaf) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(ops::io_error("create", &leaf, e)),
            }
            // "0" moves the writing process, all its threads.
            ops::write_value(&leaf.join("cgroup.procs"), "0")?;
        }
        let control = dir.join("cgroup.subtree_control");
        let enabled = ops::read_text(&control)?;
        for controller in CONTROLLERS {
            if enabled.split_whitespace().any(|c| c == controller) {
                continue;
            }
            match ops::write_value(&control, &format!("+{controller}")) {
                Ok(()) => {}
                Err(CgroupError::Io { source, .. })
                    if source.raw_os_error() == Some(Errno::BUSY.raw_os_error()) =>
                {
                    return Err(CgroupError::InternalProcesses(dir.clone()));
                }
                Err(e) => return Err(e),
            }
        }
        *ready = true;
        Ok(())
    }
}

impl CgroupBackend for CgroupV2 {
    fn kind(&self) -> BackendKind {
        BackendKind::CgroupV2
    }

    fn describe(&self) -> String {
        format!(
            "cgroup v2 at {} (delegated; spear runs in its leaf {SUPERVISOR_LEAF} and makes one child per command)",
            self.own.dir.display()
        )
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
        let writes = parse::v2_limit_writes(limits)
            .ok_or_else(|| CgroupError::InvalidLimits("cpu quota overflows".to_owned()))?;
        self.ensure_ready()?;
        let (parent_rel, parent_dir) = match session {
            None => (self.own.rel.as_str(), self.own.dir.as_path()),
            Some(s) => match (s.kind, s.dirs.first()) {
                (BackendKind::CgroupV2, Some(dir)) => (dir.rel.as_str(), dir.path.as_path()),
                _ => {
                    return Err(CgroupError::InvalidLimits(format!(
                        "session {} is not a cgroup v2 session",
                        s.name
                    )));
                }
            },
        };
        let path = parent_dir.join(name);
        let lock = ops::create_dir(&path)?;
        let mut cgroup = CommandCgroup::new(BackendKind::CgroupV2, name, Control::V2);
        cgroup.session = session.cloned();
        cgroup.dirs.push(CgroupDir {
            hierarchy: Hierarchy::V2,
            rel: parse::child_rel(parent_rel, name),
            path: path.clone(),
            procs: None,
            lock: Some(lock),
        });
        for (file, value) in &writes {
            let file_path = path.join(file);
            if *file == "memory.swap.max" && !file_path.exists() {
                check_swap_uncontrolled(limits)?;
                continue;
            }
            ops::write_value(&file_path, value)?;
        }
        let procs = ops::open_procs(&path)?;
        if let Some(dir) = cgroup.dirs.last_mut() {
            dir.procs = Some(procs);
        }
        Ok(cgroup)
    }

    /// A directory `<name>` beside the supervisor leaf, with the budget written and the
    /// controllers enabled for its children; commands' cgroups go inside it.
    fn prepare_session(
        &self,
        budget: &SessionBudget,
        command: &CgroupLimits,
        name: &str,
    ) -> Result<SessionCgroup, CgroupError> {
        check_session(budget, command, name)?;
        self.ensure_ready()?;
        let path = self.own.dir.join(name);
        let lock = ops::create_dir(&path)?;
        let mut session =
            SessionCgroup::new(BackendKind::CgroupV2, name, *budget, SessionControl::V2);
        session.dirs.push(CgroupDir {
            hierarchy: Hierarchy::V2,
            rel: parse::child_rel(&self.own.rel, name),
            path: path.clone(),
            procs: None,
            lock: Some(lock),
        });
        for (file, value) in parse::v2_session_writes(budget, command) {
            let file_path = path.join(file);
            if file == "memory.swap.max" && !file_path.exists() {
                check_swap_uncontrolled(command)?;
                continue;
            }
            ops::write_value(&file_path, &value)?;
        }
        Ok(session)
    }
}

/// Without `memory.swap.max` (no swap accounting) swap cannot be capped; that is acceptable only
/// when no swap is asked for and the host has none.
fn check_swap_uncontrolled(limits: &CgroupLimits) -> Result<(), CgroupError> {
    let swaps = ops::read_text(Path::new("/proc/swaps"))?;
    if limits.swap_max_bytes == 0 && !parse::swaps_listed(&swaps) {
        return Ok(());
    }
    Err(CgroupError::SwapUncontrolled(
        "this kernel does not account swap in cgroup v2 (no memory.swap.max) and the host has swap: boot \
         with swap accounting, or turn swap off"
            .to_owned(),
    ))
}
