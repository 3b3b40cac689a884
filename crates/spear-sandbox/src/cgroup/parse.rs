//! Pure parsing of the kernel's cgroup text files, and the arithmetic of limits. No I/O here: every
//! function takes the text it reads, so each is table-tested.

use std::path::{Path, PathBuf};

use super::{CgroupLimits, SessionBudget};

/// One line of `/proc/<pid>/cgroup`: `hierarchy-id:controller-list:path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProcCgroupLine<'a> {
    /// `0` for the cgroup v2 (unified) hierarchy.
    pub hierarchy: &'a str,
    /// Empty for v2; `["cpu", "cpuacct"]` for a co-mounted v1 hierarchy; `["name=systemd"]` for a
    /// named one.
    pub controllers: Vec<&'a str>,
    /// The cgroup's path inside its hierarchy, relative to the reader's cgroup namespace.
    pub path: &'a str,
}

/// Parses `/proc/<pid>/cgroup`. Malformed lines are skipped (the path may itself hold `:`, so only
/// the first two are separators).
pub(crate) fn parse_proc_cgroup(text: &str) -> Vec<ProcCgroupLine<'_>> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let hierarchy = parts.next()?;
            let controllers = parts.next()?;
            let path = parts.next()?;
            if hierarchy.is_empty() || !path.starts_with('/') {
                return None;
            }
            let controllers = controllers.split(',').filter(|c| !c.is_empty()).collect();
            Some(ProcCgroupLine {
                hierarchy,
                controllers,
                path,
            })
        })
        .collect()
}

/// Which hierarchy a lookup is about: a v1 controller or the v2 unified hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hierarchy {
    /// The cgroup v1 hierarchy that holds this controller.
    V1(&'static str),
    /// The cgroup v2 hierarchy (`0::/path`).
    V2,
}

/// The path of the process's cgroup in `hierarchy`, from `/proc/<pid>/cgroup` text.
pub(crate) fn cgroup_path<'a>(
    lines: &[ProcCgroupLine<'a>],
    hierarchy: Hierarchy,
) -> Option<&'a str> {
    lines
        .iter()
        .find(|line| match hierarchy {
            Hierarchy::V2 => line.hierarchy == "0" && line.controllers.is_empty(),
            Hierarchy::V1(controller) => {
                line.hierarchy != "0" && line.controllers.contains(&controller)
            }
        })
        .map(|line| line.path)
}

/// One line of `/proc/<pid>/mountinfo`, the fields cgroup detection needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mount {
    /// The path inside the filesystem that is mounted (for cgroupfs: the cgroup at the mount).
    pub root: String,
    /// Where it is mounted.
    pub target: PathBuf,
    /// `cgroup` (v1) or `cgroup2`, among others.
    pub fstype: String,
    /// For a v1 cgroupfs, these name its controllers (`rw,cpu,cpuacct`).
    pub super_options: Vec<String>,
}

/// Parses `/proc/<pid>/mountinfo` (see proc(5)): `id parent maj:min root mount-point options
/// [optional...] - fstype source super-options`. Octal escapes (`\040`) in paths are decoded.
pub(crate) fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let dash = fields.iter().position(|f| *f == "-")?;
            if dash < 6 {
                return None;
            }
            let root = unescape_octal(fields[3]);
            let target = PathBuf::from(unescape_octal(fields[4]));
            let fstype = (*fields.get(dash + 1)?).to_owned();
            let super_options = fields
                .get(dash + 3)
                .map(|o| o.split(',').map(str::to_owned).collect())
                .unwrap_or_default();
            Some(Mount {
                root,
                target,
                fstype,
                super_options,
            })
        })
        .collect()
}

/// Decodes the `\ooo` escapes the kernel writes for space, tab, newline and backslash in paths.
fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let digits = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        if let (b'\\', Some(digits)) = (bytes[i], digits) {
            let value = digits
                .iter()
                .fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
            if let Ok(byte) = u8::try_from(value) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where a process's cgroup is, in one hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Located {
    /// Where its hierarchy is mounted (the mount that shows it).
    pub mount: PathBuf,
    /// The path inside the hierarchy, as `/proc/<pid>/cgroup` writes it (`/process_api/abc`).
    pub rel: String,
    /// The directory of that cgroup on the host (`/sys/fs/cgroup/memory/process_api/abc`).
    pub dir: PathBuf,
}

/// Finds the directory of our cgroup in `hierarchy`: the cgroup's path from `/proc/self/cgroup`,
/// under a mount of that hierarchy whose root contains it. The error says what is missing.
pub(crate) fn locate(
    lines: &[ProcCgroupLine<'_>],
    mounts: &[Mount],
    hierarchy: Hierarchy,
) -> Result<Located, String> {
    let what = match hierarchy {
        Hierarchy::V1(controller) => format!("the cgroup v1 {controller} controller"),
        Hierarchy::V2 => "cgroup v2".to_owned(),
    };
    let Some(rel) = cgroup_path(lines, hierarchy) else {
        return Err(format!("/proc/self/cgroup names no cgroup of {what}"));
    };
    let candidates = mounts.iter().filter(|m| match hierarchy {
        Hierarchy::V2 => m.fstype == "cgroup2",
        Hierarchy::V1(controller) => {
            m.fstype == "cgroup" && m.super_options.iter().any(|o| o == controller)
        }
    });
    let mut seen_mount = false;
    for mount in candidates {
        seen_mount = true;
        if let Some(dir) = dir_under_mount(mount, rel) {
            return Ok(Located {
                mount: mount.target.clone(),
                rel: rel.to_owned(),
                dir,
            });
        }
    }
    if seen_mount {
        Err(format!(
            "our cgroup {rel} of {what} is not visible under any of its mounts"
        ))
    } else {
        Err(format!("{what} is not mounted"))
    }
}

/// The host directory of cgroup `rel` under `mount`, if the mount's root contains it (compared by
/// whole components: root `/a` contains `/a/b`, not `/ab`).
fn dir_under_mount(mount: &Mount, rel: &str) -> Option<PathBuf> {
    let root = mount.root.trim_end_matches('/');
    let rest = rel.strip_prefix(root)?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    let rest = rest.trim_start_matches('/');
    if rest.split('/').any(|c| c == "..") {
        return None;
    }
    Some(if rest.is_empty() {
        mount.target.clone()
    } else {
        mount.target.join(rest)
    })
}

/// The hierarchy path of a child cgroup `name` of `rel`.
pub(crate) fn child_rel(rel: &str, name: &str) -> String {
    format!("{}/{name}", rel.trim_end_matches('/'))
}

/// The value of `key` in a flat-keyed cgroup file (`memory.events`, `pids.events`,
/// `memory.oom_control`): lines of `key value`.
pub(crate) fn flat_keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// The pids in a `cgroup.procs` file, one a line. A line that is not a positive pid is an error:
/// the kill loop must not skip a process it could not read.
pub(crate) fn parse_procs(text: &str) -> Result<Vec<i32>, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| match l.trim().parse::<i32>() {
            Ok(pid) if pid > 0 => Ok(pid),
            _ => Err(format!("unexpected line {l:?} in cgroup.procs")),
        })
        .collect()
}

/// The CFS quota for `cpu_percent` of one CPU over `period_us`: `800%` over `100000` is `800000`.
/// The kernel's minimum quota is 1 ms, so smaller results are raised to it.
pub(crate) fn cfs_quota_us(cpu_percent: u32, period_us: u64) -> Option<u64> {
    let quota = u64::from(cpu_percent).checked_mul(period_us)? / 100;
    Some(quota.max(1000))
}

/// The period spear writes for cgroup v2 `cpu.max` (the kernel's default, 100 ms).
pub(crate) const CPU_PERIOD_US: u64 = 100_000;

/// The cgroup v2 files and values that enforce `limits`, in the order they are written.
pub(crate) fn v2_limit_writes(limits: &CgroupLimits) -> Option<Vec<(&'static str, String)>> {
    let quota = cfs_quota_us(limits.cpu_percent, CPU_PERIOD_US)?;
    Some(vec![
        ("memory.max", limits.memory_max_bytes.to_string()),
        ("memory.swap.max", limits.swap_max_bytes.to_string()),
        ("pids.max", limits.tasks_max.to_string()),
        ("cpu.max", format!("{quota} {CPU_PERIOD_US}")),
    ])
}

/// How cgroup v1 keeps swap within the limit on this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum V1Swap {
    /// `memory.memsw.limit_in_bytes` exists (swap accounting is on): memory + swap is capped.
    Memsw,
    /// No memsw files (kernel without swap accounting, `swapaccount=0`): only
    /// `memory.swappiness=0` is available, which keeps the cgroup's reclaim from swapping.
    SwappinessOnly,
}

/// The cgroup v1 memory-controller files and values that enforce `limits`, in order (the memory
/// limit first: memsw may never be below it). `None` when swap above zero is asked for and the host
/// cannot account swap, or on overflow.
pub(crate) fn v1_memory_writes(
    limits: &CgroupLimits,
    swap: V1Swap,
) -> Option<Vec<(&'static str, String)>> {
    let mut writes = vec![("memory.limit_in_bytes", limits.memory_max_bytes.to_string())];
    match swap {
        V1Swap::Memsw => {
            let memsw = limits.memory_max_bytes.checked_add(limits.swap_max_bytes)?;
            writes.push(("memory.memsw.limit_in_bytes", memsw.to_string()));
        }
        V1Swap::SwappinessOnly if limits.swap_max_bytes == 0 => {
            writes.push(("memory.swappiness", "0".to_owned()));
        }
        V1Swap::SwappinessOnly => return None,
    }
    Some(writes)
}

/// The cgroup v1 files and values of a session's directories, as (controller, file, value) in
/// the order they are written: in `pids` the task budget, in `memory` the memory budget (with swap
/// capped as one command's is: memory + the command's swap limit with swap accounting, else
/// `memory.swappiness=0`); the freezer and cpu directories get nothing (the session has no CPU
/// budget; each command keeps its own quota). `None` as for [`v1_memory_writes`].
pub(crate) fn v1_session_writes(
    budget: &SessionBudget,
    command: &CgroupLimits,
    swap: V1Swap,
) -> Option<Vec<(&'static str, &'static str, String)>> {
    let memory = CgroupLimits {
        memory_max_bytes: budget.memory_max_bytes,
        ..*command
    };
    let mut writes = vec![("pids", "pids.max", budget.tasks_max.to_string())];
    writes.extend(
        v1_memory_writes(&memory, swap)?
            .into_iter()
            .map(|(file, value)| ("memory", file, value)),
    );
    Some(writes)
}

/// The cgroup v2 files and values of a session's directory, in the order they are written: its
/// budget (`pids.max`, `memory.max`, and `memory.swap.max` at one command's swap limit), then the
/// controllers its commands' cgroups need enabled for them (`cgroup.subtree_control`; the session
/// holds no process itself, so the "no internal processes" rule allows it).
pub(crate) fn v2_session_writes(
    budget: &SessionBudget,
    command: &CgroupLimits,
) -> Vec<(&'static str, String)> {
    vec![
        ("pids.max", budget.tasks_max.to_string()),
        ("memory.max", budget.memory_max_bytes.to_string()),
        ("memory.swap.max", command.swap_max_bytes.to_string()),
        ("cgroup.subtree_control", "+memory +pids +cpu".to_owned()),
    ]
}

/// Whether `name` can name a per-command cgroup (and a systemd unit): one path component of
/// `[A-Za-z0-9_.-]`, starting with a letter or digit, at most 100 bytes, and not the name spear
/// reserves for its own leaf in a cgroup v2 subtree.
pub(crate) fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        && name != SUPERVISOR_LEAF
}

/// The leaf cgroup v2 spear moves itself into, so that its own cgroup holds no process and may
/// enable controllers for its children (the v2 "no internal processes" rule).
pub(crate) const SUPERVISOR_LEAF: &str = "spear-supervisor";

/// Whether `/proc/swaps` lists any swap area.
pub(crate) fn swaps_listed(text: &str) -> bool {
    text.lines().skip(1).any(|l| !l.trim().is_empty())
}

/// The path of `abs` under `root` (`/` in production; a scratch directory in tests).
pub(crate) fn under_root(root: &Path, abs: &Path) -> PathBuf {
    match abs.strip_prefix("/") {
        Ok(rest) => root.join(rest),
        Err(_) => root.join(abs),
    }
}

/// The pid of the spear process a cgroup named `name` belongs to: `spear-<pid>-<n>`,
/// `spear-warm-<pid>-<n>`, `spear-session-<pid>-<n>` or `spear-beside-<pid>-0` (the names spear
/// gives); `None` for any other name. Pure.
pub(crate) fn spear_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("spear-")?;
    let rest = rest
        .strip_prefix("warm-")
        .or_else(|| rest.strip_prefix("session-"))
        .or_else(|| rest.strip_prefix("beside-"))
        .unwrap_or(rest);
    let (pid, n) = rest.split_once('-')?;
    let digits = |t: &str| !t.is_empty() && t.len() <= 20 && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(n) {
        return None;
    }
    pid.parse().ok().filter(|&p| p > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID_CGROUP: &str = "9:name=systemd:/\n8:pids:/\n7:blkio:/\n6:freezer:/\n5:devices:/\n\
        4:memory:/process_api/7c7a\n3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n0::/\n";

    const HYBRID_MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn proc_cgroup_lines() {
        let lines = parse_proc_cgroup(
            "2:cpu,cpuacct:/a:b\n0::/user.slice/x.scope\ngarbage\n1:name=systemd:/\n",
        );
        assert_eq!(
            lines,
            vec![
                ProcCgroupLine {
                    hierarchy: "2",
                    controllers: vec!["cpu", "cpuacct"],
                    path: "/a:b"
                },
                ProcCgroupLine {
                    hierarchy: "0",
                    controllers: vec![],
                    path: "/user.slice/x.scope"
                },
                ProcCgroupLine {
                    hierarchy: "1",
                    controllers: vec!["name=systemd"],
                    path: "/"
                },
            ]
        );
        assert_eq!(cgroup_path(&lines, Hierarchy::V1("cpuacct")), Some("/a:b"));
        assert_eq!(cgroup_path(&lines, Hierarchy::V1("memory")), None);
        assert_eq!(cgroup_path(&lines, Hierarchy::V1("systemd")), None);
        assert_eq!(
            cgroup_path(&lines, Hierarchy::V2),
            Some("/user.slice/x.scope")
        );
    }

    #[test]
    fn mountinfo_lines() {
        let text = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 master:2 - cgroup2 cgroup2 rw,nsdelegate\n\
                    50 31 0:40 /sub /mnt/with\\040space rw - cgroup cgroup rw,cpu,cpuacct\n\
                    short line\n";
        assert_eq!(
            parse_mountinfo(text),
            vec![
                Mount {
                    root: "/".into(),
                    target: "/sys/fs/cgroup/unified".into(),
                    fstype: "cgroup2".into(),
                    super_options: vec!["rw".into(), "nsdelegate".into()],
                },
                Mount {
                    root: "/sub".into(),
                    target: "/mnt/with space".into(),
                    fstype: "cgroup".into(),
                    super_options: vec!["rw".into(), "cpu".into(), "cpuacct".into()],
                },
            ]
        );
        assert_eq!(unescape_octal(r"a\134b\011c\0"), "a\\b\tc\\0");
    }

    #[test]
    fn locate_on_a_hybrid_host() {
        type Want = Result<(&'static str, &'static str, &'static str), &'static str>;
        let lines = parse_proc_cgroup(HYBRID_CGROUP);
        let mounts = parse_mountinfo(HYBRID_MOUNTINFO);
        let table: &[(Hierarchy, Want)] = &[
            (
                Hierarchy::V1("memory"),
                Ok((
                    "/sys/fs/cgroup/memory",
                    "/process_api/7c7a",
                    "/sys/fs/cgroup/memory/process_api/7c7a",
                )),
            ),
            (
                Hierarchy::V1("pids"),
                Ok(("/sys/fs/cgroup/pids", "/", "/sys/fs/cgroup/pids")),
            ),
            (
                Hierarchy::V1("cpu"),
                Ok(("/sys/fs/cgroup/cpu", "/", "/sys/fs/cgroup/cpu")),
            ),
            (
                Hierarchy::V1("freezer"),
                Ok(("/sys/fs/cgroup/freezer", "/", "/sys/fs/cgroup/freezer")),
            ),
            (
                Hierarchy::V2,
                Ok(("/sys/fs/cgroup/unified", "/", "/sys/fs/cgroup/unified")),
            ),
            (
                Hierarchy::V1("blkio"),
                Err("the cgroup v1 blkio controller is not mounted"),
            ),
            (
                Hierarchy::V1("hugetlb"),
                Err("/proc/self/cgroup names no cgroup of the cgroup v1 hugetlb controller"),
            ),
        ];
        for (hierarchy, want) in table {
            let got = locate(&lines, &mounts, *hierarchy);
            let want = want
                .map(|(mount, rel, dir)| Located {
                    mount: mount.into(),
                    rel: rel.into(),
                    dir: dir.into(),
                })
                .map_err(str::to_owned);
            assert_eq!(got, want, "{hierarchy:?}");
        }
    }

    #[test]
    fn locate_respects_the_mount_root() {
        let lines = parse_proc_cgroup("0::/user.slice/u.service/app\n5:memory:/docker/abc/inner\n");
        let mounts = parse_mountinfo(
            "1 0 0:1 /user.slice/u.service /c2 rw - cgroup2 cgroup2 rw\n\
             2 0 0:2 /docker/ab /m1 rw - cgroup cgroup rw,memory\n\
             3 0 0:2 /docker/abc /m2 rw - cgroup cgroup rw,memory\n",
        );
        assert_eq!(
            locate(&lines, &mounts, Hierarchy::V2),
            Ok(Located {
                mount: "/c2".into(),
                rel: "/user.slice/u.service/app".into(),
                dir: "/c2/app".into()
            })
        );
        // `/docker/ab` is not a component prefix of `/docker/abc/inner`; the second mount is.
        assert_eq!(
            locate(&lines, &mounts, Hierarchy::V1("memory")),
            Ok(Located {
                mount: "/m2".into(),
                rel: "/docker/abc/inner".into(),
                dir: "/m2/inner".into()
            })
        );
        let hidden = parse_mountinfo("2 0 0:2 /other /m1 rw - cgroup cgroup rw,memory\n");
        assert_eq!(
            locate(&lines, &hidden, Hierarchy::V1("memory")),
            Err("our cgroup /docker/abc/inner of the cgroup v1 memory controller is not visible under any of its mounts"
                .into())
        );
    }

    #[test]
    fn child_paths() {
        assert_eq!(child_rel("/", "spear-1"), "/spear-1");
        assert_eq!(child_rel("/a/b", "spear-1"), "/a/b/spear-1");
    }

    #[test]
    fn flat_keyed_files() {
        let table: &[(&str, &str, Option<u64>)] = &[
            ("max 3\n", "max", Some(3)),
            ("max 0\n", "max", Some(0)),
            (
                "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n",
                "oom_kill",
                Some(1),
            ),
            (
                "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n",
                "max",
                Some(12),
            ),
            (
                "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
                "oom_kill",
                Some(2),
            ),
            ("oom_kill_disable 0\nunder_oom 0\n", "oom_kill", None),
            ("max_x 3\n", "max", None),
            ("", "max", None),
        ];
        for (text, key, want) in table {
            assert_eq!(flat_keyed(text, key), *want, "{key} in {text:?}");
        }
    }

    #[test]
    fn procs_files() {
        assert_eq!(parse_procs(""), Ok(vec![]));
        assert_eq!(parse_procs("12\n345\n"), Ok(vec![12, 345]));
        assert!(parse_procs("12\nx\n").is_err());
        assert!(parse_procs("0\n").is_err());
    }

    #[test]
    fn cpu_quota_arithmetic() {
        let table: &[(u32, u64, Option<u64>)] = &[
            (800, 100_000, Some(800_000)),
            (100, 100_000, Some(100_000)),
            (50, 100_000, Some(50_000)),
            (150, 250_000, Some(375_000)),
            (1, 10_000, Some(1000)),
            (u32::MAX, u64::MAX, None),
        ];
        for (percent, period, want) in table {
            assert_eq!(
                cfs_quota_us(*percent, *period),
                *want,
                "{percent}% of {period}"
            );
        }
    }

    #[test]
    fn v2_writes_for_the_defaults() {
        assert_eq!(
            v2_limit_writes(&CgroupLimits::default()),
            Some(vec![
                ("memory.max", "2147483648".to_owned()),
                ("memory.swap.max", "0".to_owned()),
                ("pids.max", "256".to_owned()),
                ("cpu.max", "800000 100000".to_owned()),
            ])
        );
    }

    #[test]
    fn v1_memory_writes() {
        let defaults = CgroupLimits::default();
        let with_swap = CgroupLimits {
            swap_max_bytes: 1 << 30,
            ..defaults
        };
        assert_eq!(
            super::v1_memory_writes(&defaults, V1Swap::Memsw),
            Some(vec![
                ("memory.limit_in_bytes", "2147483648".to_owned()),
                ("memory.memsw.limit_in_bytes", "2147483648".to_owned()),
            ])
        );
        assert_eq!(
            super::v1_memory_writes(&with_swap, V1Swap::Memsw),
            Some(vec![
                ("memory.limit_in_bytes", "2147483648".to_owned()),
                ("memory.memsw.limit_in_bytes", "3221225472".to_owned()),
            ])
        );
        assert_eq!(
            super::v1_memory_writes(&defaults, V1Swap::SwappinessOnly),
            Some(vec![
                ("memory.limit_in_bytes", "2147483648".to_owned()),
                ("memory.swappiness", "0".to_owned())
            ])
        );
        assert_eq!(
            super::v1_memory_writes(&with_swap, V1Swap::SwappinessOnly),
            None
        );
        let overflow = CgroupLimits {
            memory_max_bytes: u64::MAX,
            swap_max_bytes: 1,
            ..defaults
        };
        assert_eq!(super::v1_memory_writes(&overflow, V1Swap::Memsw), None);
    }

    #[test]
    fn session_writes() {
        fn owned(
            w: Vec<(&'static str, &'static str, &str)>,
        ) -> Vec<(&'static str, &'static str, String)> {
            w.into_iter()
                .map(|(c, f, v)| (c, f, v.to_owned()))
                .collect()
        }
        let command = CgroupLimits::default();
        let budget = SessionBudget {
            tasks_max: 1024,
            memory_max_bytes: 8 << 30,
        };
        assert_eq!(
            super::v1_session_writes(&budget, &command, V1Swap::Memsw),
            Some(owned(vec![
                ("pids", "pids.max", "1024"),
                ("memory", "memory.limit_in_bytes", "8589934592"),
                ("memory", "memory.memsw.limit_in_bytes", "8589934592"),
            ]))
        );
        let with_swap = CgroupLimits {
            swap_max_bytes: 1 << 30,
            ..command
        };
        assert_eq!(
            super::v1_session_writes(&budget, &with_swap, V1Swap::Memsw),
            Some(owned(vec![
                ("pids", "pids.max", "1024"),
                ("memory", "memory.limit_in_bytes", "8589934592"),
                ("memory", "memory.memsw.limit_in_bytes", "9663676416"),
            ]))
        );
        assert_eq!(
            super::v1_session_writes(&budget, &command, V1Swap::SwappinessOnly),
            Some(owned(vec![
                ("pids", "pids.max", "1024"),
                ("memory", "memory.limit_in_bytes", "8589934592"),
                ("memory", "memory.swappiness", "0"),
            ]))
        );
        assert_eq!(
            super::v1_session_writes(&budget, &with_swap, V1Swap::SwappinessOnly),
            None
        );
        assert_eq!(
            super::v2_session_writes(
                &SessionBudget {
                    tasks_max: 300,
                    memory_max_bytes: 1 << 30
                },
                &with_swap
            ),
            vec![
                ("pids.max", "300".to_owned()),
                ("memory.max", "1073741824".to_owned()),
                ("memory.swap.max", "1073741824".to_owned()),
                ("cgroup.subtree_control", "+memory +pids +cpu".to_owned()),
            ]
        );
    }

    #[test]
    fn names() {
        for good in ["spear-1234-7", "a", "x.y_z-1"] {
            assert!(is_valid_name(good), "{good}");
        }
        let long = "a".repeat(101);
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "-x",
            "a/b",
            "a b",
            "spear-supervisor",
            "é",
            long.as_str(),
        ] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn swaps() {
        assert!(!swaps_listed(
            "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
        ));
        assert!(swaps_listed(
            "Filename Type Size Used Priority\n/swapfile file 1024 0 -2\n"
        ));
    }

    #[test]
    fn paths_under_a_root() {
        assert_eq!(
            under_root(Path::new("/"), Path::new("/sys/fs/cgroup")),
            PathBuf::from("/sys/fs/cgroup")
        );
        assert_eq!(
            under_root(Path::new("/tmp/x"), Path::new("/sys/fs")),
            PathBuf::from("/tmp/x/sys/fs")
        );
    }

    #[test]
    fn spear_owner_table() {
        let cases = [
            ("spear-123-4", Some(123)),
            ("spear-warm-77-0", Some(77)),
            ("spear-session-9-12", Some(9)),
            ("spear-beside-41-0", Some(41)),
            ("spear-0-1", None),
            ("spear-123", None),
            ("spear-x-1", None),
            ("spear-warm-77-", None),
            ("spear-session--1", None),
            ("spear-test", None),
            ("spear-other-1-2", None),
            ("notspear-1-2", None),
            ("spear-1-2-3", None),
            ("spear-99999999999999999999999-1", None),
        ];
        for (name, want) in cases {
            assert_eq!(spear_owner(name), want, "{name}");
        }
    }
}
