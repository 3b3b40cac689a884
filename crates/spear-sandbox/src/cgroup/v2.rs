//! The cgroup v2 backend: the subtree spear needs, made by spear itself where the host's tree
//! allows it ([`super::v2_plan`]), and one child per command and per session inside it, limits
//! written directly.
//!
//! Before the first command the backend carries out its [`Plan`]:
//! 1. each ancestor the plan names enables memory, pids and cpu for its children, root first;
//! 2. where spear's own cgroup holds nothing but spear ([`Base::Own`]), spear moves itself (the
//!    whole process) into a leaf `spear-supervisor` of it, unless it is the hierarchy's real root
//!    (exempt from "no internal processes"), and enables the controllers in it; each command's
//!    cgroup is a sibling of that leaf;
//! 3. where spear shares its cgroup with other processes (the shell that started it, a CI job's
//!    steps: [`Base::Beside`]), it makes `spear-beside-<pid>-0` under the same parent, writes
//!    there every limit its own cgroup had (so that no limit that applied to spear is lifted),
//!    moves itself into that cgroup's leaf, and enables the controllers there. At its end it moves
//!    back and removes what it made; after a crash, the next spear's [`CgroupBackend::sweep_stale`]
//!    removes it (its lock, not its pid, says whether its spear lives).
//!
//! Moving a process between two cgroups needs write access to their common ancestor's
//! `cgroup.procs`: root has it, and so does a user given a delegated subtree.
//!
//! Untested on a real cgroup v2 host by the suite: the hosts it runs on have the controllers bound
//! to cgroup v1. The plan is tested against fake trees, and [`CgroupV2`]'s steps against a fake
//! cgroupfs (files standing for the kernel's); `scripts/test-device.sh` runs the limits on a pure
//! cgroup v2 host.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
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
use super::v2_plan::{Base, CONTROLLERS, Plan};

/// The limit files a cgroup beside spear's own takes from it: every limit the memory, pids and
/// cpu controllers put on spear's own cgroup (and so on spear and what it started) before.
const CARRIED_LIMITS: [&str; 5] = [
    "memory.max",
    "memory.high",
    "memory.swap.max",
    "pids.max",
    "cpu.max",
];

/// Our own cgroup v2, and what spear does there before its first command.
#[derive(Debug)]
pub(crate) struct CgroupV2 {
    own: Located,
    /// Whether `own` is the hierarchy's real root (no "no internal processes" rule there).
    own_is_root: bool,
    /// Ancestors' directories (root first) and the controllers each must enable for its children.
    ancestors: Vec<(PathBuf, Vec<&'static str>)>,
    /// Where the commands go.
    base: Base,
    /// Where the commands' cgroups are made, once the plan is carried out.
    ready: Mutex<Option<Ready>>,
}

/// The directory the commands' and sessions' cgroups are made in, once spear has set it up.
#[derive(Debug)]
struct Ready {
    /// Its path in the hierarchy, as `/proc/<pid>/cgroup` writes it.
    rel: String,
    /// Its directory.
    dir: PathBuf,
    /// The cgroup spear made beside its own, held (and removed at the end) by this backend.
    beside: Option<Beside>,
}

/// A cgroup spear made beside its shared own one.
#[derive(Debug)]
struct Beside {
    /// The lock that tells another spear's sweep that its owner lives.
    _lock: OwnedFd,
    /// The leaf spear moved itself into.
    leaf: PathBuf,
}

impl CgroupV2 {
    /// A backend over our own cgroup `own`, carrying out `plan` (made from the chain read under
    /// `own.mount`) before its first command.
    pub(crate) fn new(own: Located, own_is_root: bool, plan: Plan) -> Self {
        let ancestors = plan
            .enable
            .into_iter()
            .filter(|(rel, _)| !same_cgroup(&own, rel))
            .map(|(rel, controllers)| (under_mount(&own.mount, &rel), controllers))
            .collect();
        Self {
            own,
            own_is_root,
            ancestors,
            base: plan.base,
            ready: Mutex::new(None),
        }
    }

    /// What spear does before its first command, in order, and where its commands then go:
    /// the plan made concrete for process `pid` (pure).
    fn steps(&self, pid: u32) -> (Vec<Step>, String, PathBuf) {
        let mut steps: Vec<Step> = self
            .ancestors
            .iter()
            .map(|(dir, controllers)| Step::Enable {
                dir: dir.clone(),
                controllers: controllers.clone(),
            })
            .collect();
        let (rel, dir) = match &self.base {
            Base::Own => (self.own.rel.clone(), self.own.dir.clone()),
            Base::Beside { .. } => {
                let name = beside_name(pid);
                let dir = self.own.dir.parent().unwrap_or(&self.own.dir).join(&name);
                steps.push(Step::MakeBeside {
                    dir: dir.clone(),
                    from: self.own.dir.clone(),
                });
                (parse::child_rel(parent_rel(&self.own.rel), &name), dir)
            }
        };
        // The real root is exempt from "no internal processes": spear stays where it is.
        if !(self.own_is_root && self.base == Base::Own) {
            steps.push(Step::MoveInto {
                leaf: dir.join(SUPERVISOR_LEAF),
            });
        }
        steps.push(Step::Enable {
            dir: dir.clone(),
            controllers: CONTROLLERS.to_vec(),
        });
        (steps, rel, dir)
    }

    /// The directory the commands go in and its path in the hierarchy, the steps carried out at
    /// the first call. A failed step is an error (no command runs); what a failed first call
    /// made beside spear's cgroup is removed, and the next call starts again.
    fn ensure_ready(&self) -> Result<(String, PathBuf), CgroupError> {
        let mut ready = self.ready.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(r) = ready.as_ref() {
            return Ok((r.rel.clone(), r.dir.clone()));
        }
        let (steps, rel, dir) = self.steps(std::process::id());
        let mut beside = None;
        for step in &steps {
            if let Err(e) = carry_out(step, &mut beside) {
                if let Some(made) = beside.take() {
                    self.leave_beside(&dir, &made);
                }
                return Err(e);
            }
        }
        *ready = Some(Ready {
            rel: rel.clone(),
            dir: dir.clone(),
            beside,
        });
        Ok((rel, dir))
    }

    /// Moves this process back into its own cgroup and removes the leaf and the cgroup beside it
    /// (which stays while a command's or session's cgroup is still in it; a later sweep takes
    /// it). Best effort: nothing here can fail the caller.
    fn leave_beside(&self, dir: &Path, beside: &Beside) {
        if ops::read_procs(&beside.leaf).is_ok_and(|p| !p.is_empty()) {
            let _ = ops::write_value(&self.own.dir.join("cgroup.procs"), "0");
        }
        let _ = std::fs::remove_dir(&beside.leaf);
        let _ = std::fs::remove_dir(dir);
    }
}

/// One step, on the real tree.
fn carry_out(step: &Step, beside: &mut Option<Beside>) -> Result<(), CgroupError> {
    match step {
        Step::Enable { dir, controllers } => enable(dir, controllers),
        Step::MakeBeside { dir, from } => {
            let lock = ops::create_dir(dir)?;
            *beside = Some(Beside {
                _lock: lock,
                leaf: dir.join(SUPERVISOR_LEAF),
            });
            carry_limits(from, dir)
        }
        Step::MoveInto { leaf } => {
            match std::fs::create_dir(leaf) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(ops::io_error("create", leaf, e)),
            }
            // "0" moves the writing process, all its threads.
            ops::write_value(&leaf.join("cgroup.procs"), "0")
        }
    }
}

/// One thing spear does to the cgroup tree before its first command.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// `+controller` into `dir`'s `cgroup.subtree_control`, for each not yet enabled.
    Enable {
        dir: PathBuf,
        controllers: Vec<&'static str>,
    },
    /// Make `dir` (locked, held for spear's life) beside spear's shared cgroup `from`, and write
    /// there every limit `from` has.
    MakeBeside { dir: PathBuf, from: PathBuf },
    /// Make the leaf (if absent) and move this process, every thread, into it.
    MoveInto { leaf: PathBuf },
}

impl Drop for CgroupV2 {
    fn drop(&mut self) {
        let ready = self
            .ready
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(Ready {
            dir,
            beside: Some(beside),
            ..
        }) = ready
        {
            self.leave_beside(&dir, &beside);
        }
    }
}

/// The name of the cgroup spear `pid` makes beside its own.
pub(crate) fn beside_name(pid: u32) -> String {
    format!("spear-beside-{pid}-0")
}

/// Whether the chain's `rel` (relative to the mount) is `own`'s cgroup.
fn same_cgroup(own: &Located, rel: &str) -> bool {
    under_mount(&own.mount, rel) == own.dir
}

/// The directory of the chain's `rel` under `mount`.
fn under_mount(mount: &Path, rel: &str) -> PathBuf {
    let rel = rel.trim_matches('/');
    if rel.is_empty() {
        mount.to_path_buf()
    } else {
        mount.join(rel)
    }
}

/// The parent of a path in the hierarchy (`/a/b` -> `/a`, `/a` -> `/`).
fn parent_rel(rel: &str) -> &str {
    match rel.trim_end_matches('/').rsplit_once('/') {
        Some(("", _)) | None => "/",
        Some((parent, _)) => parent,
    }
}

/// Enables `controllers` in `dir`'s `cgroup.subtree_control`, each that is not yet. Attack it
/// stops by failing: a command cgroup made without a controller would run unlimited in it.
fn enable(dir: &Path, controllers: &[&str]) -> Result<(), CgroupError> {
    let control = dir.join("cgroup.subtree_control");
    let enabled = ops::read_text(&control)?;
    for controller in controllers {
        if enabled.split_whitespace().any(|c| c == *controller) {
            continue;
        }
        match ops::write_value(&control, &format!("+{controller}")) {
            Ok(()) => {}
            Err(CgroupError::Io { source, .. })
                if source.raw_os_error() == Some(Errno::BUSY.raw_os_error()) =>
            {
                return Err(CgroupError::InternalProcesses(dir.to_owned()));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes into `to` every limit `from` has ([`CARRIED_LIMITS`], each not `max`), so that moving
/// spear from `from` into `to` lifts none. A limit `to` has no file for is an error: the
/// controller is not enabled there, and spear would leave a limit behind.
fn carry_limits(from: &Path, to: &Path) -> Result<(), CgroupError> {
    for file in CARRIED_LIMITS {
        let Ok(value) = std::fs::read_to_string(from.join(file)) else {
            continue;
        };
        let value = value.trim();
        if value == "max" || value.starts_with("max ") {
            continue;
        }
        let target = to.join(file);
        if !target.exists() {
            return Err(CgroupError::InvalidLimits(format!(
                "{} has {file} = {value}, and {} has no {file} to carry it to",
                from.display(),
                to.display()
            )));
        }
        ops::write_value(&target, value)?;
    }
    Ok(())
}

impl CgroupBackend for CgroupV2 {
    fn kind(&self) -> BackendKind {
        BackendKind::CgroupV2
    }

    fn describe(&self) -> String {
        let mut line = match &self.base {
            Base::Own if self.own_is_root => format!(
                "cgroup v2 at {} (the hierarchy's root; one child per command)",
                self.own.dir.display()
            ),
            Base::Own => format!(
                "cgroup v2 at {} (spear runs in its leaf {SUPERVISOR_LEAF} and makes one child per command)",
                self.own.dir.display()
            ),
            Base::Beside { .. } => format!(
                "cgroup v2 at {} (beside spear's own {}, which other processes share: spear moves \
                 into it with its limits and makes one child per command)",
                self.own
                    .dir
                    .parent()
                    .unwrap_or(&self.own.dir)
                    .join(beside_name(std::process::id()))
                    .display(),
                self.own.dir.display()
            ),
        };
        if !self.ancestors.is_empty() {
            let steps: Vec<String> = self
                .ancestors
                .iter()
                .map(|(dir, c)| format!("{} in {}", c.join(" "), dir.display()))
                .collect();
            line = format!("{line}; first enables {}", steps.join(", "));
        }
        line
    }

    /// Under the directory the commands go in: every directory spear named that no spear holds
    /// (its own commands' and sessions', and another spear's cgroup beside its own), removed
    /// deepest first while empty.
    fn sweep_stale(&self) -> usize {
        ops::sweep_children(&self.own.dir)
            + match &self.base {
                Base::Own => 0,
                Base::Beside { .. } => self.own.dir.parent().map_or(0, ops::sweep_children),
            }
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
        let (base_rel, base_dir) = self.ensure_ready()?;
        let (parent_rel, parent_dir) = match session {
            None => (base_rel.as_str(), base_dir.as_path()),
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
        let (base_rel, base_dir) = self.ensure_ready()?;
        let path = base_dir.join(name);
        let lock = ops::create_dir(&path)?;
        let mut session =
            SessionCgroup::new(BackendKind::CgroupV2, name, *budget, SessionControl::V2);
        session.dirs.push(CgroupDir {
            hierarchy: Hierarchy::V2,
            rel: parse::child_rel(&base_rel, name),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cgroup::v2_plan::{Chain, Node, plan};

    const ALL: &[&str] = &["cpuset", "cpu", "io", "memory", "pids"];
    const M: &str = "/sys/fs/cgroup";

    fn node(rel: &str, controllers: &[&str], subtree: &[&str], processes: usize) -> Node {
        Node {
            rel: rel.into(),
            controllers: controllers.iter().map(|s| (*s).to_owned()).collect(),
            subtree_control: subtree.iter().map(|s| (*s).to_owned()).collect(),
            processes,
            writable: true,
            is_root: rel == "/",
        }
    }

    /// The backend for `chain` (spear's own its last), as detection makes it.
    fn backend(chain: &Chain) -> CgroupV2 {
        let own = chain.0.last().unwrap();
        let own_is_root = own.is_root;
        let located = Located {
            mount: M.into(),
            rel: own.rel.clone(),
            dir: under_mount(Path::new(M), &own.rel),
        };
        CgroupV2::new(located, own_is_root, plan(chain, M).unwrap())
    }

    fn enable(dir: &str, controllers: &[&'static str]) -> Step {
        Step::Enable {
            dir: dir.into(),
            controllers: controllers.to_vec(),
        }
    }

    fn move_into(leaf: &str) -> Step {
        Step::MoveInto { leaf: leaf.into() }
    }

    /// Every layout, the exact steps in order and where the commands go: each ancestor enables
    /// before its child, spear leaves a cgroup before it enables controllers there, and the
    /// cgroup beside a shared one takes its limits before spear moves into it.
    #[test]
    fn the_steps_of_each_layout() {
        let ubuntu = Chain(vec![
            node("/", ALL, &["memory"], 30),
            node("/user.slice", &["memory"], &["memory"], 0),
            node("/user.slice/session-1", &["memory"], &[], 1),
        ]);
        let shared = Chain(vec![
            node("/", ALL, ALL, 30),
            node("/ci", ALL, &["memory", "pids"], 0),
            node("/ci/job", ALL, &[], 3),
        ]);
        let mut ns_root = node("/", ALL, &[], 1);
        ns_root.is_root = false;
        let container = Chain(vec![ns_root]);
        let host_root = Chain(vec![node("/", ALL, &[], 40)]);
        let cases: Vec<(&str, Chain, Vec<Step>, &str, &str)> = vec![
            (
                "ubuntu 24.04",
                ubuntu,
                vec![
                    enable("/sys/fs/cgroup", &["pids", "cpu"]),
                    enable("/sys/fs/cgroup/user.slice", &["pids", "cpu"]),
                    move_into("/sys/fs/cgroup/user.slice/session-1/spear-supervisor"),
                    enable("/sys/fs/cgroup/user.slice/session-1", &CONTROLLERS),
                ],
                "/user.slice/session-1",
                "/sys/fs/cgroup/user.slice/session-1",
            ),
            (
                "shared with the job's shell",
                shared,
                vec![
                    enable("/sys/fs/cgroup/ci", &["cpu"]),
                    Step::MakeBeside {
                        dir: "/sys/fs/cgroup/ci/spear-beside-77-0".into(),
                        from: "/sys/fs/cgroup/ci/job".into(),
                    },
                    move_into("/sys/fs/cgroup/ci/spear-beside-77-0/spear-supervisor"),
                    enable("/sys/fs/cgroup/ci/spear-beside-77-0", &CONTROLLERS),
                ],
                "/ci/spear-beside-77-0",
                "/sys/fs/cgroup/ci/spear-beside-77-0",
            ),
            (
                "a container's namespace root, spear alone",
                container,
                vec![
                    move_into("/sys/fs/cgroup/spear-supervisor"),
                    enable("/sys/fs/cgroup", &CONTROLLERS),
                ],
                "/",
                "/sys/fs/cgroup",
            ),
            (
                "the host's real root",
                host_root,
                vec![enable("/sys/fs/cgroup", &CONTROLLERS)],
                "/",
                "/sys/fs/cgroup",
            ),
        ];
        for (name, chain, want, rel, dir) in cases {
            let (steps, got_rel, got_dir) = backend(&chain).steps(77);
            assert_eq!(steps, want, "{name}");
            assert_eq!(
                (got_rel.as_str(), got_dir.as_path()),
                (rel, Path::new(dir)),
                "{name}"
            );
        }
    }

    /// Limits the shared cgroup had are written beside it; `max` is nothing to carry; a limit with
    /// nowhere to go is an error, not a limit lifted.
    #[test]
    fn limits_are_carried_beside() {
        let tmp = tempfile::tempdir().unwrap();
        let from = tmp.path().join("job");
        let to = tmp.path().join("spear-beside-1-0");
        std::fs::create_dir_all(&from).unwrap();
        std::fs::create_dir_all(&to).unwrap();
        for (file, value) in [
            ("memory.max", "1073741824\n"),
            ("memory.high", "max\n"),
            ("pids.max", "512\n"),
            ("cpu.max", "50000 100000\n"),
        ] {
            std::fs::write(from.join(file), value).unwrap();
        }
        for file in CARRIED_LIMITS {
            std::fs::write(to.join(file), "max\n").unwrap();
        }
        carry_limits(&from, &to).unwrap();
        let read = |f: &str| std::fs::read_to_string(to.join(f)).unwrap();
        assert_eq!(read("memory.max"), "1073741824");
        assert_eq!(read("pids.max"), "512\n");
        assert_eq!(read("cpu.max"), "50000 100000");
        assert_eq!(read("memory.high"), "max\n");
        // Positive control of the refusal: without the file to carry it to.
        std::fs::remove_file(to.join("pids.max")).unwrap();
        let error = carry_limits(&from, &to).unwrap_err().to_string();
        assert!(error.contains("pids.max = 512"), "{error}");
    }

    /// A dead spear's cgroup beside its own (its leaf inside) is swept; one whose spear holds its
    /// lock, and a directory spear did not name, are left.
    #[test]
    fn a_dead_spears_cgroup_beside_is_swept() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = tmp.path().join(beside_name(999_999));
        std::fs::create_dir_all(dead.join(SUPERVISOR_LEAF)).unwrap();
        let live = tmp.path().join(beside_name(999_998));
        std::fs::create_dir_all(live.join(SUPERVISOR_LEAF)).unwrap();
        let held = crate::dir_lock::hold_made(&live).unwrap();
        assert!(matches!(held, crate::dir_lock::Held::Locked(_)));
        let other = tmp.path().join("job");
        std::fs::create_dir(&other).unwrap();
        assert_eq!(ops::sweep_children(tmp.path()), 1);
        assert!(!dead.exists());
        assert!(live.join(SUPERVISOR_LEAF).exists());
        assert!(other.exists());
        drop(held);
        // Its spear gone, the second one goes too.
        assert_eq!(ops::sweep_children(tmp.path()), 1);
        assert!(!live.exists());
    }
}
