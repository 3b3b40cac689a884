//! Choosing the backend from what the host offers.
//!
//! `SPEAR_RESOURCE_CONTROL` decides first: `delegated` (an outer runtime limits spear; nothing is
//! probed), `systemd` or `cgroupfs` (that backend or an error), unset or empty (the first usable of
//! systemd scope, cgroup v2, cgroup v1). Anything else is an error. Each probe reads
//! `/proc/self/cgroup` and `/proc/self/mountinfo` and checks permissions; it creates nothing.
//!
//! systemd comes first where it is usable: under a systemd manager the cgroup tree is systemd's,
//! and writing into a cgroup it did not delegate would fight it.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Access, AtFlags, CWD, accessat};

use super::backend::CgroupBackend;
use super::backend_kind::BackendKind;
use super::delegated::Delegated;
use super::error::CgroupError;
use super::parse::{self, Hierarchy, Located, Mount, ProcCgroupLine, V1Swap};
use super::systemd_units::{Manager, SystemdScope};
use super::v1::{self, CgroupV1};
use super::v2::CgroupV2;
use super::v2_plan;

/// The environment variable that forces a backend: `systemd`, `cgroupfs` or `delegated`.
pub const RESOURCE_CONTROL_ENV: &str = "SPEAR_RESOURCE_CONTROL";

/// Where detection looks at the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPaths {
    /// The `/proc/self` directory whose `cgroup` and `mountinfo` describe this process.
    pub proc_self: PathBuf,
    /// The directory absolute paths are looked up under (mount points, the bus socket, `PATH`
    /// entries): `/` on a real host, a scratch directory in tests.
    pub root: PathBuf,
}

impl Default for HostPaths {
    fn default() -> Self {
        Self {
            proc_self: PathBuf::from("/proc/self"),
            root: PathBuf::from("/"),
        }
    }
}

/// Chooses the backend from the real environment and host; see [`detect_with`].
pub fn detect() -> Result<Box<dyn CgroupBackend>, CgroupError> {
    detect_with(&|key| std::env::var(key).ok(), &HostPaths::default())
}

/// Chooses the backend: `env` looks up environment variables (`SPEAR_RESOURCE_CONTROL`, and for
/// systemd `DBUS_SESSION_BUS_ADDRESS`, `XDG_RUNTIME_DIR`, `PATH`), `host` says where to read the
/// host. With no usable backend the error says what each one lacks and how to fix it.
pub fn detect_with(
    env: &dyn Fn(&str) -> Option<String>,
    host: &HostPaths,
) -> Result<Box<dyn CgroupBackend>, CgroupError> {
    let setting = parse_setting(env(RESOURCE_CONTROL_ENV).as_deref())?;
    if setting == Setting::Delegated {
        return Ok(Box::new(Delegated));
    }
    let (systemd, v2, v1) = match read_proc_self(host) {
        Ok((cgroup_text, mountinfo_text)) => {
            let lines = parse::parse_proc_cgroup(&cgroup_text);
            let mounts = parse::parse_mountinfo(&mountinfo_text);
            let unified = probe_unified(&lines, &mounts, host);
            let systemd = probe_systemd(env, host, &unified);
            (
                systemd,
                unified.and_then(Unified::backend),
                probe_v1(&lines, &mounts, host),
            )
        }
        Err(reason) => (Err(reason.clone()), Err(reason.clone()), Err(reason)),
    };
    let offers = [
        (
            BackendKind::SystemdScope,
            systemd.as_ref().map(|_| ()).map_err(Clone::clone),
        ),
        (
            BackendKind::CgroupV2,
            v2.as_ref().map(|_| ()).map_err(Clone::clone),
        ),
        (
            BackendKind::CgroupV1,
            v1.as_ref().map(|_| ()).map_err(Clone::clone),
        ),
    ];
    let chosen = choose(setting, &offers)?;
    let backend: Result<Box<dyn CgroupBackend>, String> = match chosen {
        BackendKind::SystemdScope => systemd.map(|b| Box::new(b) as Box<dyn CgroupBackend>),
        BackendKind::CgroupV2 => v2.map(|b| Box::new(b) as Box<dyn CgroupBackend>),
        BackendKind::CgroupV1 => v1.map(|b| Box::new(b) as Box<dyn CgroupBackend>),
        BackendKind::Delegated => Ok(Box::new(Delegated)),
    };
    backend.map_err(|reasons| CgroupError::NoBackend { reasons })
}

fn read_proc_self(host: &HostPaths) -> Result<(String, String), String> {
    let read = |name: &str| {
        let path = host.proc_self.join(name);
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    Ok((read("cgroup")?, read("mountinfo")?))
}

/// What `SPEAR_RESOURCE_CONTROL` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Setting {
    /// Unset or empty: the first usable backend.
    Auto,
    /// `systemd`.
    Systemd,
    /// `cgroupfs`: v2, else v1.
    Cgroupfs,
    /// `delegated`.
    Delegated,
}

pub(crate) fn parse_setting(value: Option<&str>) -> Result<Setting, CgroupError> {
    match value {
        None | Some("") => Ok(Setting::Auto),
        Some("systemd") => Ok(Setting::Systemd),
        Some("cgroupfs") => Ok(Setting::Cgroupfs),
        Some("delegated") => Ok(Setting::Delegated),
        Some(other) => Err(CgroupError::UnknownSetting {
            value: other.to_owned(),
        }),
    }
}

/// Picks a backend from `offers` (each usable, or why not) as `setting` asks.
pub(crate) fn choose(
    setting: Setting,
    offers: &[(BackendKind, Result<(), String>)],
) -> Result<BackendKind, CgroupError> {
    let wanted: &[BackendKind] = match setting {
        Setting::Delegated => return Ok(BackendKind::Delegated),
        Setting::Auto => &[
            BackendKind::SystemdScope,
            BackendKind::CgroupV2,
            BackendKind::CgroupV1,
        ],
        Setting::Systemd => &[BackendKind::SystemdScope],
        Setting::Cgroupfs => &[BackendKind::CgroupV2, BackendKind::CgroupV1],
    };
    let mut reasons = Vec::new();
    for kind in wanted {
        match offers.iter().find(|(k, _)| k == kind).map(|(_, r)| r) {
            Some(Ok(())) => return Ok(*kind),
            Some(Err(reason)) => reasons.push(format!("{}: {reason}", kind.as_str())),
            None => reasons.push(format!("{}: not probed", kind.as_str())),
        }
    }
    let reasons = reasons.join("; ");
    match setting {
        Setting::Systemd => Err(CgroupError::ForcedUnavailable {
            setting: "systemd",
            reason: reasons,
        }),
        Setting::Cgroupfs => Err(CgroupError::ForcedUnavailable {
            setting: "cgroupfs",
            reason: reasons,
        }),
        Setting::Auto | Setting::Delegated => Err(CgroupError::NoBackend { reasons }),
    }
}

/// Whether we may create entries in `path` (and write it, for a file), with our effective ids.
/// A read-only mount fails this too.
fn writable(path: &Path) -> bool {
    let access = if path.is_dir() {
        Access::WRITE_OK | Access::EXEC_OK
    } else {
        Access::WRITE_OK
    };
    accessat(CWD, path, access, AtFlags::EACCESS).is_ok()
}

fn uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Our cgroup in the unified (v2) hierarchy.
#[derive(Debug)]
struct Unified {
    own: Located,
    /// The controllers spear needs that our cgroup is not offered (by its parent).
    missing: Vec<&'static str>,
}

impl Unified {
    /// The backend, if spear can make the subtree it needs from where it is ([`v2_plan`]): the
    /// planner reads the tree from the hierarchy's root down to our cgroup, and says what spear
    /// will do there, or why it cannot and the one step that would let it.
    fn backend(self) -> Result<CgroupV2, String> {
        let Some(chain) = v2_plan::read_chain(&self.own.mount, &self.own.dir, &writable) else {
            let short = if self.missing.is_empty() {
                String::new()
            } else {
                format!(
                    " (ours is offered no {} controller)",
                    self.missing.join(", ")
                )
            };
            return Err(format!(
                "cannot read the cgroup v2 tree from {} down to {}{short}",
                self.own.mount.display(),
                self.own.dir.display()
            ));
        };
        let mount = self.own.mount.display().to_string();
        let own_is_root = chain.0.last().is_some_and(|n| n.is_root);
        match v2_plan::plan(&chain, &mount) {
            Ok(plan) => Ok(CgroupV2::new(self.own, own_is_root, plan)),
            Err(refusal) if self.missing.is_empty() => Err(refusal.to_string()),
            Err(refusal) => Err(format!(
                "our cgroup {} is offered no {} controller; {refusal}",
                self.own.dir.display(),
                self.missing.join(", ")
            )),
        }
    }
}

fn probe_unified(
    lines: &[ProcCgroupLine<'_>],
    mounts: &[Mount],
    host: &HostPaths,
) -> Result<Unified, String> {
    let mut own = parse::locate(lines, mounts, Hierarchy::V2)?;
    own.dir = parse::under_root(&host.root, &own.dir);
    own.mount = parse::under_root(&host.root, &own.mount);
    let path = own.dir.join("cgroup.controllers");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let missing = v2_plan::CONTROLLERS
        .iter()
        .copied()
        .filter(|c| !text.split_whitespace().any(|t| t == *c))
        .collect();
    Ok(Unified { own, missing })
}

fn probe_systemd(
    env: &dyn Fn(&str) -> Option<String>,
    host: &HostPaths,
    unified: &Result<Unified, String>,
) -> Result<SystemdScope, String> {
    let non_empty = |key: &str| env(key).filter(|v| !v.is_empty());
    let address = non_empty("DBUS_SESSION_BUS_ADDRESS");
    let runtime_dir = non_empty("XDG_RUNTIME_DIR");
    let socket = runtime_dir.as_ref().is_some_and(|dir| {
        std::fs::metadata(parse::under_root(&host.root, &Path::new(dir).join("bus")))
            .is_ok_and(|m| m.file_type().is_socket())
    });
    let manager = if address.is_some() || socket {
        Manager::User
    } else if uid() == 0 && booted_with_systemd(&host.root) {
        Manager::System
    } else {
        return Err(format!(
            "no user bus ($DBUS_SESSION_BUS_ADDRESS is unset and there is no socket \
             $XDG_RUNTIME_DIR/bus){}",
            if uid() == 0 {
                ", and no systemd system manager (/run/systemd/system, /run/systemd/private)"
            } else {
                ""
            }
        ));
    };
    let mut bus_env = Vec::new();
    if manager == Manager::User {
        if let Some(address) = address {
            bus_env.push(("DBUS_SESSION_BUS_ADDRESS".to_owned(), address));
        }
        if let Some(dir) = runtime_dir {
            bus_env.push(("XDG_RUNTIME_DIR".to_owned(), dir));
        }
    }
    let path = env("PATH").unwrap_or_else(|| "/usr/bin:/bin".to_owned());
    let find = |name: &str| {
        find_program(&path, name, &host.root).ok_or_else(|| format!("{name} is not on PATH"))
    };
    let systemd_run = find("systemd-run")?;
    let systemctl = find("systemctl")?;
    let busctl = find("busctl")?;
    let env_program = find("env")?;
    let unified = unified
        .as_ref()
        .map_err(|e| format!("systemd would not enforce the limits: {e}"))?;
    if !unified.missing.is_empty() {
        return Err(format!(
            "systemd would not enforce the limits: our cgroup {} is offered no {} controller",
            unified.own.dir.display(),
            unified.missing.join(", ")
        ));
    }
    Ok(SystemdScope {
        manager,
        env: env_program,
        systemd_run,
        systemctl,
        busctl,
        bus_env,
        cgroup2_mount: unified.own.mount.clone(),
    })
}

/// Whether the host was booted with systemd as its manager (`sd_booted`: `/run/systemd/system`
/// is a directory), and its private socket, which systemctl and systemd-run use as root, is
/// there.
fn booted_with_systemd(root: &Path) -> bool {
    parse::under_root(root, Path::new("/run/systemd/system")).is_dir()
        && std::fs::metadata(parse::under_root(root, Path::new("/run/systemd/private")))
            .is_ok_and(|m| m.file_type().is_socket())
}

/// The first executable `name` in the absolute directories of `path`.
fn find_program(path: &str, name: &str, root: &Path) -> Option<PathBuf> {
    path.split(':')
        .filter(|d| d.starts_with('/'))
        .map(|d| Path::new(d).join(name))
        .find(|candidate| {
            let on_host = parse::under_root(root, candidate);
            on_host.is_file() && accessat(CWD, &on_host, Access::EXEC_OK, AtFlags::EACCESS).is_ok()
        })
}

fn probe_v1(
    lines: &[ProcCgroupLine<'_>],
    mounts: &[Mount],
    host: &HostPaths,
) -> Result<CgroupV1, String> {
    let mut own = Vec::new();
    let mut problems = Vec::new();
    for controller in v1::CONTROLLERS {
        match parse::locate(lines, mounts, Hierarchy::V1(controller)) {
            Ok(mut located) => {
                located.dir = parse::under_root(&host.root, &located.dir);
                if writable(&located.dir) {
                    own.push((controller, located));
                } else {
                    problems.push(format!(
                        "{} is not writable by uid {}",
                        located.dir.display(),
                        uid()
                    ));
                }
            }
            Err(problem) => problems.push(problem),
        }
    }
    if !problems.is_empty() {
        return Err(problems.join(", "));
    }
    let memsw = own
        .iter()
        .find(|(c, _)| *c == "memory")
        .is_some_and(|(_, l)| l.dir.join("memory.memsw.limit_in_bytes").exists());
    Ok(CgroupV1::new(
        own,
        if memsw {
            V1Swap::Memsw
        } else {
            V1Swap::SwappinessOnly
        },
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn settings() {
        let table: &[(Option<&str>, Option<Setting>)] = &[
            (None, Some(Setting::Auto)),
            (Some(""), Some(Setting::Auto)),
            (Some("systemd"), Some(Setting::Systemd)),
            (Some("cgroupfs"), Some(Setting::Cgroupfs)),
            (Some("delegated"), Some(Setting::Delegated)),
            (Some("auto"), None),
            (Some("Systemd"), None),
            (Some("none"), None),
        ];
        for (value, want) in table {
            assert_eq!(parse_setting(*value).ok(), *want, "{value:?}");
        }
        let error = parse_setting(Some("off"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.contains("SPEAR_RESOURCE_CONTROL=\"off\"")
                && error.contains("systemd, cgroupfs or delegated")
        );
    }

    fn offers(systemd: bool, v2: bool, v1: bool) -> Vec<(BackendKind, Result<(), String>)> {
        let offer = |ok: bool, why: &str| if ok { Ok(()) } else { Err(why.to_owned()) };
        vec![
            (BackendKind::SystemdScope, offer(systemd, "no user bus")),
            (BackendKind::CgroupV2, offer(v2, "no v2 controllers")),
            (BackendKind::CgroupV1, offer(v1, "v1 not writable")),
        ]
    }

    #[test]
    fn choosing() {
        use BackendKind::{CgroupV1, CgroupV2, Delegated, SystemdScope};
        type Row = (
            Setting,
            (bool, bool, bool),
            Result<BackendKind, &'static str>,
        );
        let table: &[Row] = &[
            (Setting::Auto, (true, true, true), Ok(SystemdScope)),
            (Setting::Auto, (false, true, true), Ok(CgroupV2)),
            (Setting::Auto, (false, false, true), Ok(CgroupV1)),
            (Setting::Auto, (true, false, false), Ok(SystemdScope)),
            (
                Setting::Auto,
                (false, false, false),
                Err(
                    "no writable cgroup (systemd-scope: no user bus; cgroup-v2: no v2 controllers; cgroup-v1: v1 not \
                     writable): run as root on a cgroup v1 host, delegate a cgroup v2 subtree to your user (systemd \
                     does this for user sessions), run under systemd with a user bus, or set \
                     SPEAR_RESOURCE_CONTROL=delegated if a container runtime limits spear",
                ),
            ),
            (Setting::Systemd, (true, true, true), Ok(SystemdScope)),
            (
                Setting::Systemd,
                (false, true, true),
                Err(
                    "SPEAR_RESOURCE_CONTROL=systemd but systemd-scope: no user bus: unset it to let spear choose, or \
                     fix the host",
                ),
            ),
            (Setting::Cgroupfs, (true, true, true), Ok(CgroupV2)),
            (Setting::Cgroupfs, (true, false, true), Ok(CgroupV1)),
            (
                Setting::Cgroupfs,
                (true, false, false),
                Err(
                    "SPEAR_RESOURCE_CONTROL=cgroupfs but cgroup-v2: no v2 controllers; cgroup-v1: v1 not writable: \
                     unset it to let spear choose, or fix the host",
                ),
            ),
            (Setting::Delegated, (false, false, false), Ok(Delegated)),
        ];
        for (setting, (s, v2, v1), want) in table {
            let got = choose(*setting, &offers(*s, *v2, *v1)).map_err(|e| e.to_string());
            assert_eq!(
                got,
                want.map_err(str::to_owned),
                "{setting:?} {s} {v2} {v1}"
            );
        }
    }

    /// A scratch host: `/proc/self/{cgroup,mountinfo}` and directories under a temporary root.
    struct FakeHost {
        dir: tempfile::TempDir,
    }

    impl FakeHost {
        fn new(cgroup: &str, mountinfo: &str) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let proc_self = dir.path().join("proc/self");
            fs::create_dir_all(&proc_self).unwrap();
            fs::write(proc_self.join("cgroup"), cgroup).unwrap();
            fs::write(proc_self.join("mountinfo"), mountinfo).unwrap();
            Self { dir }
        }

        fn paths(&self) -> HostPaths {
            HostPaths {
                proc_self: self.dir.path().join("proc/self"),
                root: self.dir.path().to_owned(),
            }
        }

        fn file(&self, abs: &str, text: &str) {
            let path = parse::under_root(self.dir.path(), Path::new(abs));
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }

        /// A cgroup v2 directory with its control files (and `cgroup.type`, which every cgroup
        /// but the hierarchy's real root has).
        fn cgroup(&self, abs: &str, controllers: &str, subtree: &str, procs: &str) {
            self.file(&format!("{abs}/cgroup.controllers"), controllers);
            self.file(&format!("{abs}/cgroup.subtree_control"), subtree);
            self.file(&format!("{abs}/cgroup.procs"), procs);
            if abs != "/sys/fs/cgroup" && abs != "/sys/fs/cgroup/unified" {
                self.file(&format!("{abs}/cgroup.type"), "domain\n");
            }
        }

        fn program(&self, abs: &str) {
            self.file(abs, "#!/bin/sh\n");
            let path = parse::under_root(self.dir.path(), Path::new(abs));
            fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
        }

        fn detect(&self, env: &[(&str, &str)]) -> Result<Box<dyn CgroupBackend>, CgroupError> {
            let env: HashMap<String, String> = env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            detect_with(&|key| env.get(key).cloned(), &self.paths())
        }
    }

    const HYBRID_CGROUP: &str =
        "8:pids:/\n6:freezer:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/\n0::/\n";
    const HYBRID_MOUNTINFO: &str = "\
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
";

    fn hybrid() -> FakeHost {
        let host = FakeHost::new(HYBRID_CGROUP, HYBRID_MOUNTINFO);
        host.cgroup("/sys/fs/cgroup/unified", "hugetlb\n", "", "1\n");
        host.file(
            "/sys/fs/cgroup/memory/process_api/abc/memory.memsw.limit_in_bytes",
            "0\n",
        );
        for dir in ["pids", "freezer", "cpu,cpuacct"] {
            host.file(&format!("/sys/fs/cgroup/{dir}/cgroup.procs"), "");
        }
        host
    }

    fn kind(result: &Result<Box<dyn CgroupBackend>, CgroupError>) -> Result<BackendKind, String> {
        result
            .as_ref()
            .map(|b| b.kind())
            .map_err(ToString::to_string)
    }

    #[test]
    fn a_hybrid_host_gets_cgroup_v1() {
        let host = hybrid();
        let backend = host.detect(&[]);
        assert_eq!(kind(&backend), Ok(BackendKind::CgroupV1));
        let root = host.dir.path().display().to_string();
        let describe = backend.map(|b| b.describe()).unwrap_or_default();
        assert_eq!(
            describe,
            format!(
                "cgroup v1 (freezer at {root}/sys/fs/cgroup/freezer, pids at {root}/sys/fs/cgroup/pids, memory at \
                 {root}/sys/fs/cgroup/memory/process_api/abc, cpu at {root}/sys/fs/cgroup/cpu,cpuacct; swap capped \
                 by memory.memsw)"
            )
        );
        assert_eq!(
            kind(&host.detect(&[("SPEAR_RESOURCE_CONTROL", "cgroupfs")])),
            Ok(BackendKind::CgroupV1)
        );
        assert_eq!(
            kind(&host.detect(&[("SPEAR_RESOURCE_CONTROL", "delegated")])),
            Ok(BackendKind::Delegated)
        );
        let forced = kind(&host.detect(&[("SPEAR_RESOURCE_CONTROL", "systemd")]));
        let root_only = if uid() == 0 {
            ", and no systemd system manager (/run/systemd/system, /run/systemd/private)"
        } else {
            ""
        };
        assert_eq!(
            forced,
            Err(format!(
                "SPEAR_RESOURCE_CONTROL=systemd but systemd-scope: no user bus ($DBUS_SESSION_BUS_ADDRESS is unset \
                 and there is no socket $XDG_RUNTIME_DIR/bus){root_only}: unset it to let spear choose, or fix the host"
            ))
        );
        assert!(matches!(
            host.detect(&[("SPEAR_RESOURCE_CONTROL", "v1")]),
            Err(CgroupError::UnknownSetting { .. })
        ));
    }

    #[test]
    fn without_memsw_v1_keeps_swap_off_by_swappiness() {
        let host = hybrid();
        fs::remove_file(
            host.dir
                .path()
                .join("sys/fs/cgroup/memory/process_api/abc/memory.memsw.limit_in_bytes"),
        )
        .unwrap();
        let describe = host.detect(&[]).map(|b| b.describe()).unwrap_or_default();
        assert!(
            describe.ends_with("no swap accounting: swap kept at zero by memory.swappiness=0)"),
            "{describe}"
        );
    }

    #[test]
    fn a_missing_controller_is_named() {
        let host = FakeHost::new(
            HYBRID_CGROUP,
            &HYBRID_MOUNTINFO.replace("rw,freezer", "rw,devices"),
        );
        host.cgroup("/sys/fs/cgroup/unified", "hugetlb\n", "", "1\n");
        host.file("/sys/fs/cgroup/memory/process_api/abc/cgroup.procs", "");
        let error = kind(&host.detect(&[])).err().unwrap_or_default();
        assert!(
            error.starts_with("no writable cgroup (systemd-scope: no user bus"),
            "{error}"
        );
        assert!(error.contains("cgroup-v2: our cgroup "), "{error}");
        assert!(
            error.contains("is offered no memory, pids, cpu controller; the cgroup v2 hierarchy"),
            "{error}"
        );
        assert!(
            error.contains("SPEAR_RESOURCE_CONTROL=delegated"),
            "{error}"
        );
        assert!(
            error.contains("cgroup-v1: the cgroup v1 freezer controller is not mounted"),
            "{error}"
        );
    }

    /// A pure v2 host without systemd, spear in a cgroup its parent gives only memory (the
    /// measured Ubuntu 24.04 case): spear plans to enable the rest itself, root first, and says
    /// so; where it cannot (a cgroup on the way holds processes), the reason names the cgroup and
    /// the step that fixes it.
    #[test]
    fn a_v2_cgroup_short_of_controllers_is_set_up_or_given_the_step_that_fixes_it() {
        let host = FakeHost::new("0::/user.slice/session-1\n", UNIFIED_MOUNTINFO);
        host.cgroup(
            "/sys/fs/cgroup",
            "cpuset cpu io memory pids\n",
            "memory\n",
            "1\n",
        );
        host.cgroup("/sys/fs/cgroup/user.slice", "memory\n", "memory\n", "");
        host.cgroup(
            "/sys/fs/cgroup/user.slice/session-1",
            "memory\n",
            "",
            "77\n",
        );
        let backend = host.detect(&[]);
        assert_eq!(kind(&backend), Ok(BackendKind::CgroupV2));
        let root = host.dir.path().display().to_string();
        assert_eq!(
            backend.map(|b| b.describe()).unwrap_or_default(),
            format!(
                "cgroup v2 at {root}/sys/fs/cgroup/user.slice/session-1 (spear runs in its leaf \
                 spear-supervisor and makes one child per command); first enables pids cpu in \
                 {root}/sys/fs/cgroup, pids cpu in {root}/sys/fs/cgroup/user.slice"
            )
        );
        // The slice between holds a process: it cannot enable controllers for its children.
        host.file("/sys/fs/cgroup/user.slice/cgroup.procs", "5\n");
        let error = kind(&host.detect(&[])).err().unwrap_or_default();
        assert!(
            error.contains("session-1 is offered no pids, cpu controller; "),
            "{error}"
        );
        assert!(
            error.contains("/sys/fs/cgroup/user.slice holds 1 process(es)"),
            "{error}"
        );
        assert!(
            error.contains("move those processes into a child cgroup"),
            "{error}"
        );
    }

    /// spear shares its cgroup with the shell that started it (every controller offered): it
    /// plans a cgroup beside it.
    #[test]
    fn a_shared_v2_cgroup_gets_a_cgroup_beside_it() {
        let host = FakeHost::new("0::/ci/job\n", UNIFIED_MOUNTINFO);
        host.cgroup("/sys/fs/cgroup", ALL, ALL, "1\n");
        host.cgroup("/sys/fs/cgroup/ci", ALL, ALL, "");
        host.cgroup("/sys/fs/cgroup/ci/job", ALL, "", "40\n41\n");
        let backend = host.detect(&[]);
        let root = host.dir.path().display().to_string();
        let pid = std::process::id();
        assert_eq!(
            backend.map(|b| b.describe()).unwrap_or_default(),
            format!(
                "cgroup v2 at {root}/sys/fs/cgroup/ci/spear-beside-{pid}-0 (beside spear's own \
                 {root}/sys/fs/cgroup/ci/job, which other processes share: spear moves into it \
                 with its limits and makes one child per command)"
            )
        );
    }

    const ALL: &str = "cpuset cpu io memory pids\n";
    const UNIFIED_CGROUP: &str =
        "0::/user.slice/user-1000.slice/user@1000.service/app.slice/spear.service\n";
    const UNIFIED_MOUNTINFO: &str =
        "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
    const OWN: &str =
        "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/spear.service";

    /// spear in a user's delegated subtree whose parent offers it `controllers`.
    fn unified(controllers: &str) -> FakeHost {
        let host = FakeHost::new(UNIFIED_CGROUP, UNIFIED_MOUNTINFO);
        host.cgroup("/sys/fs/cgroup", ALL, ALL, "1\n");
        let mut dir = "/sys/fs/cgroup".to_owned();
        let parts = ["user.slice", "user-1000.slice", "user@1000.service"];
        for part in parts {
            dir = format!("{dir}/{part}");
            host.cgroup(&dir, ALL, ALL, "");
        }
        host.cgroup(&format!("{dir}/app.slice"), ALL, controllers, "");
        host.cgroup(OWN, controllers, "", "");
        host
    }

    #[test]
    fn a_delegated_v2_subtree_gets_cgroup_v2() {
        let host = unified("cpuset cpu io memory pids\n");
        let backend = host.detect(&[]);
        assert_eq!(kind(&backend), Ok(BackendKind::CgroupV2));
        let root = host.dir.path().display().to_string();
        assert_eq!(
            backend.map(|b| b.describe()).unwrap_or_default(),
            format!(
                "cgroup v2 at {root}{OWN} (spear runs in its leaf spear-supervisor and makes one child per \
                 command)"
            )
        );
        // Its parent withholds memory and holds a process itself: nothing can grant it.
        let missing = unified("cpu io pids\n");
        missing.file(
            "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/cgroup.procs",
            "9\n",
        );
        let error = kind(&missing.detect(&[("SPEAR_RESOURCE_CONTROL", "cgroupfs")]))
            .err()
            .unwrap_or_default();
        assert!(error.contains("is offered no memory controller"), "{error}");
        assert!(
            error.contains("cgroup-v1: /proc/self/cgroup names no cgroup of the cgroup v1 freezer"),
            "{error}"
        );
    }

    #[test]
    fn a_user_bus_and_systemd_run_get_a_systemd_scope() {
        let host = unified("cpu memory pids\n");
        let runtime = host.dir.path().join("run/user/1000");
        fs::create_dir_all(&runtime).unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(runtime.join("bus")).unwrap();
        for program in ["systemd-run", "systemctl", "busctl", "env"] {
            host.program(&format!("/usr/bin/{program}"));
        }
        let env = [
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("PATH", "/usr/local/bin:/usr/bin:relative"),
        ];
        let backend = host.detect(&env);
        assert_eq!(kind(&backend), Ok(BackendKind::SystemdScope));
        assert_eq!(
            backend.map(|b| b.describe()).unwrap_or_default(),
            "systemd user scope via /usr/bin/systemd-run (XDG_RUNTIME_DIR=/run/user/1000; untested on real systemd \
             by spear's own tests)"
        );
        // cgroupfs still forces the direct backend.
        let forced = [("SPEAR_RESOURCE_CONTROL", "cgroupfs"), env[0], env[1]];
        assert_eq!(kind(&host.detect(&forced)), Ok(BackendKind::CgroupV2));
        // An address alone is a bus too; a runtime dir without a socket is not.
        let address = [("DBUS_SESSION_BUS_ADDRESS", "unix:path=/x"), env[1]];
        assert_eq!(kind(&host.detect(&address)), Ok(BackendKind::SystemdScope));
        let no_socket = [("XDG_RUNTIME_DIR", "/run/user/2000"), env[1]];
        assert_eq!(kind(&host.detect(&no_socket)), Ok(BackendKind::CgroupV2));
        // Without systemd-run on PATH there is no systemd backend.
        let no_program = [env[0], ("PATH", "/usr/local/bin")];
        let error = kind(&host.detect(&[
            ("SPEAR_RESOURCE_CONTROL", "systemd"),
            no_program[0],
            no_program[1],
        ]));
        assert_eq!(
            error,
            Err("SPEAR_RESOURCE_CONTROL=systemd but systemd-scope: systemd-run is not on PATH: unset it to let spear \
                 choose, or fix the host"
                .to_owned())
        );
    }

    /// Root on a host booted with systemd, no user bus (a root shell over ssh): the system
    /// manager's scopes, never writing into systemd's tree by hand. Not root: no systemd backend.
    #[test]
    fn root_without_a_user_bus_gets_the_system_managers_scope() {
        let host = unified("cpu memory pids\n");
        for program in ["systemd-run", "systemctl", "busctl", "env"] {
            host.program(&format!("/usr/bin/{program}"));
        }
        let run = host.dir.path().join("run/systemd");
        fs::create_dir_all(run.join("system")).unwrap();
        let env = [("PATH", "/usr/bin")];
        // Positive control: without the manager's socket, no systemd backend.
        assert_eq!(kind(&host.detect(&env)), Ok(BackendKind::CgroupV2));
        let _listener = std::os::unix::net::UnixListener::bind(run.join("private")).unwrap();
        let backend = host.detect(&env);
        if uid() == 0 {
            assert_eq!(kind(&backend), Ok(BackendKind::SystemdScope));
            assert!(
                backend
                    .map(|b| b.describe())
                    .unwrap_or_default()
                    .starts_with(
                        "systemd system scope via /usr/bin/systemd-run (root without a user bus"
                    ),
            );
        } else {
            assert_eq!(kind(&backend), Ok(BackendKind::CgroupV2));
        }
    }

    #[test]
    fn systemd_without_v2_controllers_is_refused() {
        let host = unified("cpu pids\n");
        let runtime = host.dir.path().join("run/user/1000");
        fs::create_dir_all(&runtime).unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(runtime.join("bus")).unwrap();
        for program in ["systemd-run", "systemctl", "busctl", "env"] {
            host.program(&format!("/usr/bin/{program}"));
        }
        let env = [("XDG_RUNTIME_DIR", "/run/user/1000"), ("PATH", "/usr/bin")];
        // spear enables memory in the parent itself, and takes cgroup v2 over the scope.
        assert_eq!(kind(&host.detect(&env)), Ok(BackendKind::CgroupV2));
        let error = kind(&host.detect(&[("SPEAR_RESOURCE_CONTROL", "systemd"), env[0], env[1]]))
            .err()
            .unwrap_or_default();
        assert!(
            error.contains("systemd-scope: systemd would not enforce the limits: our cgroup"),
            "{error}"
        );
        assert!(error.contains("is offered no memory controller"), "{error}");
    }

    #[test]
    fn unreadable_proc_is_no_backend() {
        let host = HostPaths {
            proc_self: PathBuf::from("/nonexistent/proc/self"),
            root: PathBuf::from("/"),
        };
        let error = detect_with(&|_| None, &host)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.starts_with(
                "no writable cgroup (systemd-scope: cannot read /nonexistent/proc/self/cgroup"
            ),
            "{error}"
        );
    }
}
