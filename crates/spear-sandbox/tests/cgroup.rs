//! The cgroupfs backends against the real kernel: limits hold, `kill_all` ends a whole tree, and
//! nothing is left behind.
//!
//! Runs as root (a cgroup v1 host: the v1 backend), and as the unprivileged user through
//! `scripts/test-unprivileged.sh`, which first delegates a v1 subtree to that user
//! (`scripts/delegate-cgroup.sh`). A host where no cgroupfs backend is usable fails these tests:
//! an unavailable mechanism is a failure, never a skip. Every negative probe has a positive
//! control next to it.
//!
//! Children join their cgroups the way the spawner makes them: by writing `0` to the
//! `cgroup.procs` fds of [`CommandCgroup::join_fds`], here from a shell that got the fds as its
//! standard streams (the rest, past three, by path).

#[cfg(test)]
mod cgroup {
    use std::os::fd::OwnedFd;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, ExitStatus, Stdio};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    use std::sync::Arc;

    use spear_testkit::process::processes_with;
    use spear_testkit::wait::wait_for;

    use spear_sandbox::{
        BackendKind, CgroupBackend, CgroupError, CgroupHostPaths as HostPaths, CgroupLimits,
        CommandCgroup, LimitsHit, RESOURCE_CONTROL_ENV, SessionBudget, SessionCgroup,
        detect_cgroup_backend as detect, detect_cgroup_backend_with as detect_with,
    };

    /// The cgroupfs backend of this host (`SPEAR_RESOURCE_CONTROL=cgroupfs`).
    fn backend() -> Box<dyn CgroupBackend> {
        let env = |key: &str| {
            if key == RESOURCE_CONTROL_ENV {
                Some("cgroupfs".to_owned())
            } else {
                std::env::var(key).ok()
            }
        };
        match detect_with(&env, &HostPaths::default()) {
            Ok(backend) => backend,
            Err(e) => panic!(
                "no cgroupfs backend on this host (run as root, or through scripts/test-unprivileged.sh): {e}"
            ),
        }
    }

    fn unique_name() -> String {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        format!(
            "spear-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        )
    }

    fn prepare(limits: &CgroupLimits) -> CommandCgroup {
        backend().prepare(limits, &unique_name()).unwrap()
    }

    /// Spawns `sh -c script` inside `cgroup`: a wrapper shell joins through the join fds (given to
    /// it as stdin, stdout and stderr; any past three by path), exits 99 if a join fails, and execs
    /// the script with its streams on /dev/null. Returns once the child is in the cgroup (or has
    /// exited), as the spawner does once exec has happened.
    fn spawn_in(cgroup: &CommandCgroup, script: &str) -> Child {
        let fds = cgroup.join_fds();
        assert!(!fds.is_empty(), "a cgroupfs command has join fds");
        let mut joins: Vec<String> = Vec::new();
        let mut streams: Vec<OwnedFd> = Vec::new();
        for (i, fd) in fds.iter().enumerate() {
            if i < 3 {
                streams.push(fd.try_clone_to_owned().unwrap());
                joins.push(format!("echo 0 >&{i}"));
            } else {
                let procs = cgroup.dirs()[i].join("cgroup.procs");
                joins.push(format!("echo 0 > '{}'", procs.display()));
            }
        }
        let wrapper = format!(
            "{} || exit 99; exec sh -c \"$1\" </dev/null >/dev/null 2>/dev/null",
            joins.join(" && ")
        );
        let mut streams = streams.into_iter();
        let mut stream = || streams.next().map_or_else(Stdio::null, Stdio::from);
        let (stdin, stdout, stderr) = (stream(), stream(), stream());
        let mut child = Command::new("sh")
            .args(["-c", &wrapper, "sh", script])
            .stdin(stdin)
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .unwrap();
        let pid = child.id();
        let joined = wait_for(Duration::from_secs(5), || {
            cgroup.contains_pid(pid).unwrap() || child.try_wait().unwrap().is_some()
        });
        assert!(joined, "the child neither joined nor exited");
        assert_ne!(
            child.try_wait().unwrap().and_then(|s| s.code()),
            Some(99),
            "the child could not join"
        );
        child
    }

    /// How many live processes have `marker` (a word without spaces) in their command line.
    fn marked(marker: &str) -> usize {
        processes_with(marker).len()
    }

    fn wait_exit(child: &mut Child, timeout: Duration) -> ExitStatus {
        let mut status = None;
        assert!(
            wait_for(timeout, || {
                status = child.try_wait().unwrap();
                status.is_some()
            }),
            "child did not exit"
        );
        status.unwrap()
    }

    fn procs_of(dir: &Path) -> String {
        std::fs::read_to_string(dir.join("cgroup.procs")).unwrap()
    }

    /// The directory of `cgroup` that holds `file` (v1 has one per controller).
    fn dir_with(cgroup: &CommandCgroup, file: &str) -> PathBuf {
        cgroup
            .dirs()
            .into_iter()
            .find(|d| d.join(file).exists())
            .map(Path::to_owned)
            .unwrap()
    }

    fn read_number(path: &Path) -> i64 {
        std::fs::read_to_string(path)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    }

    #[test]
    fn detects_a_cgroupfs_backend() {
        let backend = backend();
        assert!(
            matches!(
                backend.kind(),
                BackendKind::CgroupV1 | BackendKind::CgroupV2
            ),
            "{backend:?}"
        );
        // A hybrid host (memory bound to v1) must get v1.
        let hybrid = std::fs::read_to_string("/proc/self/cgroup")
            .unwrap()
            .lines()
            .any(|l| l.contains(":memory:"));
        if hybrid {
            assert_eq!(backend.kind(), BackendKind::CgroupV1);
            let describe = backend.describe();
            for controller in ["freezer at /", "pids at /", "memory at /", "cpu at /"] {
                assert!(describe.contains(controller), "{describe}");
            }
        }
        // The real environment finds a backend too (this one, or systemd where it is usable).
        assert!(detect().is_ok());
    }

    #[test]
    fn the_limits_are_written() {
        let cgroup = prepare(&CgroupLimits::default());
        match cgroup.kind() {
            BackendKind::CgroupV1 => {
                let memory = dir_with(&cgroup, "memory.limit_in_bytes");
                assert_eq!(read_number(&memory.join("memory.limit_in_bytes")), 2 << 30);
                if memory.join("memory.memsw.limit_in_bytes").exists() {
                    assert_eq!(
                        read_number(&memory.join("memory.memsw.limit_in_bytes")),
                        2 << 30
                    );
                } else {
                    assert_eq!(read_number(&memory.join("memory.swappiness")), 0);
                }
                assert_eq!(
                    read_number(&dir_with(&cgroup, "pids.max").join("pids.max")),
                    256
                );
                let cpu = dir_with(&cgroup, "cpu.cfs_quota_us");
                let period = read_number(&cpu.join("cpu.cfs_period_us"));
                assert_eq!(read_number(&cpu.join("cpu.cfs_quota_us")), 8 * period);
                assert_eq!(cgroup.dirs().len(), 4);
                assert_eq!(cgroup.join_fds().len(), 4);
            }
            BackendKind::CgroupV2 => {
                let dir = cgroup.dirs()[0].to_owned();
                assert_eq!(read_number(&dir.join("memory.max")), 2 << 30);
                assert_eq!(read_number(&dir.join("pids.max")), 256);
                assert_eq!(
                    std::fs::read_to_string(dir.join("cpu.max")).unwrap().trim(),
                    "800000 100000"
                );
                assert_eq!(cgroup.join_fds().len(), 1);
            }
            other => panic!("not a cgroupfs backend: {other}"),
        }
        assert!(cgroup.argv_prefix().is_empty());
        assert_eq!(cgroup.limits_hit(), LimitsHit::default());
        cgroup.remove().unwrap();
    }

    #[test]
    fn a_child_joins_through_the_fds() {
        let cgroup = prepare(&CgroupLimits::default());
        let marker = "3141.51";
        let mut child = spawn_in(&cgroup, &format!("sleep {marker}"));
        let pid = child.id();
        assert!(
            wait_for(Duration::from_secs(5), || cgroup.contains_pid(pid).unwrap()),
            "the child joined"
        );
        for dir in cgroup.dirs() {
            assert!(
                procs_of(dir).lines().any(|l| l == pid.to_string()),
                "{pid} in {}",
                dir.display()
            );
        }
        // Positive control of contains_pid: this test process is not in the cgroup.
        assert!(!cgroup.contains_pid(std::process::id()).unwrap());
        let dirs: Vec<PathBuf> = cgroup.dirs().into_iter().map(Path::to_owned).collect();
        cgroup.remove().unwrap();
        let status = wait_exit(&mut child, Duration::from_secs(5));
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9)
        );
        assert_eq!(marked(marker), 0);
        for dir in dirs {
            assert!(!dir.exists(), "{} is left behind", dir.display());
        }
    }

    #[test]
    fn a_fork_bomb_stops_at_the_task_limit() {
        // Positive control: with room for them, 300 processes do start.
        let roomy = prepare(&CgroupLimits {
            tasks_max: 1024,
            ..CgroupLimits::default()
        });
        let marker = "3141.52";
        let bomb = |n: u32| format!("for i in $(seq {n}); do sleep {marker} & done; wait");
        let mut child = spawn_in(&roomy, &bomb(300));
        assert!(
            wait_for(Duration::from_secs(20), || marked(marker) >= 300),
            "300 sleeps started"
        );
        assert!(!roomy.limits_hit().tasks);
        roomy.kill_all().unwrap();
        wait_exit(&mut child, Duration::from_secs(5));
        assert_eq!(marked(marker), 0);
        roomy.remove().unwrap();

        let limited = prepare(&CgroupLimits::default());
        let pids = dir_with(&limited, "pids.current");
        let mut child = spawn_in(&limited, &bomb(400));
        let mut most_tasks = 0;
        let mut most_marked = 0;
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(3) {
            most_tasks = most_tasks.max(read_number(&pids.join("pids.current")));
            most_marked = most_marked.max(marked(marker));
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(most_tasks <= 256, "{most_tasks} tasks");
        assert!(most_marked <= 256, "{most_marked} processes");
        assert!(
            most_marked >= 200,
            "the bomb filled the cgroup ({most_marked} processes)"
        );
        assert!(limited.limits_hit().tasks);
        assert!(!limited.limits_hit().memory);
        limited.kill_all().unwrap();
        wait_exit(&mut child, Duration::from_secs(5));
        assert_eq!(marked(marker), 0);
        limited.remove().unwrap();
    }

    #[test]
    fn a_memory_hog_is_oom_killed() {
        let limits = CgroupLimits {
            memory_max_bytes: 64 << 20,
            ..CgroupLimits::default()
        };
        // `tail` keeps all of an input without newlines in memory.
        let hog = |bytes: u64| format!("head -c {bytes} /dev/zero | tail >/dev/null");

        // Positive control: 16 MiB fits in 64 MiB.
        let cgroup = prepare(&limits);
        let mut child = spawn_in(&cgroup, &hog(16 << 20));
        let status = wait_exit(&mut child, Duration::from_secs(30));
        assert_eq!(status.code(), Some(0), "{status}");
        assert_eq!(cgroup.limits_hit(), LimitsHit::default());
        cgroup.remove().unwrap();

        let cgroup = prepare(&limits);
        let mut child = spawn_in(&cgroup, &hog(3 << 30));
        let status = wait_exit(&mut child, Duration::from_secs(60));
        assert_eq!(status.code(), Some(128 + 9), "tail was SIGKILLed: {status}");
        assert!(cgroup.limits_hit().memory);
        assert!(!cgroup.limits_hit().tasks);
        cgroup.remove().unwrap();
    }

    #[test]
    fn kill_all_ends_the_whole_tree() {
        let marker = "3141.53";
        let tree = format!(
            "setsid sleep {marker} &
             (sleep {marker} &) &
             sh -c 'trap \"\" TERM HUP INT; sleep {marker}' &
             sh -c 'kill -STOP $$; echo {marker}' &
             nohup sleep {marker} >/dev/null 2>&1 &
             while :; do sleep {marker} & sleep 0.05; done"
        );
        let cgroup = prepare(&CgroupLimits::default());
        let mut child = spawn_in(&cgroup, &tree);
        assert!(
            wait_for(Duration::from_secs(5), || marked(marker) >= 8),
            "the tree started"
        );

        // Positive control: killing the top of the tree leaves the rest running.
        let pidfd = rustix::process::pidfd_open(
            rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap(),
            rustix::process::PidfdFlags::empty(),
        )
        .unwrap();
        rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL).unwrap();
        wait_exit(&mut child, Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(100));
        let survivors = marked(marker);
        assert!(survivors >= 6, "{survivors} of the tree outlive its top");

        cgroup.kill_all().unwrap();
        assert_eq!(marked(marker), 0);
        for dir in cgroup.dirs() {
            assert_eq!(procs_of(dir), "", "{} is empty", dir.display());
        }
        // Killing an empty cgroup is fine.
        cgroup.kill_all().unwrap();
        cgroup.remove().unwrap();
    }

    #[test]
    fn a_dead_spears_empty_cgroups_are_swept_and_nothing_else() {
        let probe = prepare(&CgroupLimits::default());
        let own = dir_with(&probe, "pids.max").parent().unwrap().to_owned();
        drop(probe);
        // A spear that is gone: a pid no process has now.
        let mut gone = Command::new("true").spawn().unwrap();
        let dead = gone.id();
        gone.wait().unwrap();
        assert!(!Path::new("/proc").join(dead.to_string()).exists());
        let stale = own.join(format!("spear-session-{dead}-1"));
        std::fs::create_dir(&stale).unwrap();
        std::fs::create_dir(stale.join(format!("spear-{dead}-2"))).unwrap();
        // Its cgroup still holding a process: left (nothing is killed by a sweep).
        let busy = own.join(format!("spear-{dead}-3"));
        std::fs::create_dir(&busy).unwrap();
        let mut sleeper = Command::new("sleep").arg("2718.28").spawn().unwrap();
        std::fs::write(busy.join("cgroup.procs"), sleeper.id().to_string()).unwrap();
        // A spear alive in another PID namespace: its pid is in no `/proc` of ours, but it holds
        // its (empty, between two commands) session cgroup's lock. Left.
        let alive = own.join(format!("spear-session-{dead}-4"));
        std::fs::create_dir(&alive).unwrap();
        let held = std::fs::File::open(&alive).unwrap();
        rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
        // A spear that is gone, whose pid another process has now: nobody holds its lock.
        let reused = own.join(format!("spear-warm-{}-5", sleeper.id()));
        std::fs::create_dir(&reused).unwrap();

        assert!(backend().sweep_stale() >= 2);
        assert!(
            !stale.exists(),
            "a dead spear's empty session and command cgroups are gone"
        );
        assert!(
            !reused.exists(),
            "a dead spear's cgroup under a reused pid is gone"
        );
        assert!(busy.exists(), "a cgroup holding a process is left");
        assert!(alive.exists(), "a live spear's cgroup is left");
        assert!(
            procs_of(&busy).contains(&sleeper.id().to_string()),
            "and its process is not touched"
        );

        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        assert!(wait_for(Duration::from_secs(5), || procs_of(&busy)
            .trim()
            .is_empty()));
        std::fs::remove_dir(&busy).unwrap();
        // Positive control: once its spear is gone (its lock with it), it is swept too.
        drop(held);
        assert!(backend().sweep_stale() >= 1);
        assert!(!alive.exists());
    }

    #[test]
    fn remove_and_drop_leave_nothing_behind() {
        let marker = "3141.54";
        let cgroup = prepare(&CgroupLimits::default());
        let mut child = spawn_in(&cgroup, &format!("sleep {marker} & sleep {marker} & wait"));
        assert!(wait_for(Duration::from_secs(5), || marked(marker) >= 2));
        let dirs: Vec<PathBuf> = cgroup.dirs().into_iter().map(Path::to_owned).collect();
        assert!(dirs.iter().all(|d| d.is_dir()));
        cgroup.remove().unwrap();
        wait_exit(&mut child, Duration::from_secs(5));
        assert_eq!(marked(marker), 0);
        assert!(dirs.iter().all(|d| !d.exists()));

        let cgroup = prepare(&CgroupLimits::default());
        let mut child = spawn_in(&cgroup, &format!("sleep {marker}"));
        assert!(wait_for(Duration::from_secs(5), || marked(marker) >= 1));
        let dirs: Vec<PathBuf> = cgroup.dirs().into_iter().map(Path::to_owned).collect();
        drop(cgroup);
        wait_exit(&mut child, Duration::from_secs(5));
        assert_eq!(marked(marker), 0);
        assert!(dirs.iter().all(|d| !d.exists()));
    }

    #[test]
    fn a_name_is_never_reused_or_escaped() {
        let backend = backend();
        let name = unique_name();
        let first = backend.prepare(&CgroupLimits::default(), &name).unwrap();
        let second = backend.prepare(&CgroupLimits::default(), &name);
        assert!(
            matches!(second, Err(CgroupError::AlreadyExists(_))),
            "{second:?}"
        );
        // The failed attempt removed nothing of the first.
        assert!(first.dirs().iter().all(|d| d.is_dir()));
        first.remove().unwrap();

        for bad in ["../escape", "a/b", "", ".hidden"] {
            let result = backend.prepare(&CgroupLimits::default(), bad);
            assert!(
                matches!(result, Err(CgroupError::InvalidName(_))),
                "{bad:?}: {result:?}"
            );
        }
        let zero = CgroupLimits {
            memory_max_bytes: 0,
            ..CgroupLimits::default()
        };
        assert!(matches!(
            backend.prepare(&zero, &unique_name()),
            Err(CgroupError::InvalidLimits(_))
        ));
    }

    fn session(budget: SessionBudget, command: &CgroupLimits) -> Arc<SessionCgroup> {
        Arc::new(
            backend()
                .prepare_session(&budget, command, &unique_name())
                .unwrap(),
        )
    }

    fn prepare_in(session: &Arc<SessionCgroup>, limits: &CgroupLimits) -> CommandCgroup {
        backend()
            .prepare_in(Some(session), limits, &unique_name())
            .unwrap()
    }

    #[test]
    fn a_session_holds_its_commands_within_its_budget() {
        let limits = CgroupLimits {
            tasks_max: 100,
            ..CgroupLimits::default()
        };
        let budget = SessionBudget {
            tasks_max: 150,
            memory_max_bytes: 3 << 30,
        };
        let session = session(budget, &limits);
        let session_dirs: Vec<PathBuf> = session.dirs().into_iter().map(Path::to_owned).collect();
        // The budget is written, and each command's directories are inside the session's.
        let pids = session_dirs
            .iter()
            .find(|d| d.join("pids.max").exists())
            .unwrap()
            .clone();
        assert_eq!(read_number(&pids.join("pids.max")), 150);
        let memory_file = match session.kind() {
            BackendKind::CgroupV1 => "memory.limit_in_bytes",
            _ => "memory.max",
        };
        let memory = session_dirs
            .iter()
            .find(|d| d.join(memory_file).exists())
            .unwrap();
        assert_eq!(read_number(&memory.join(memory_file)), 3 << 30);
        let marker = "3141.55";
        let bomb = format!("for i in $(seq 400); do sleep {marker} & done; wait");

        // Positive control: one command alone stops at its own limit, well within the budget.
        let first = prepare_in(&session, &limits);
        for dir in first.dirs() {
            assert!(
                session_dirs.iter().any(|s| dir.parent() == Some(s)),
                "{} is inside the session",
                dir.display()
            );
        }
        assert_eq!(
            read_number(&dir_with(&first, "pids.max").join("pids.max")),
            100
        );
        let mut one = spawn_in(&first, &bomb);
        assert!(wait_for(Duration::from_secs(20), || marked(marker) >= 95));
        std::thread::sleep(Duration::from_millis(300));
        assert!(marked(marker) <= 100);
        assert!(first.limits_hit().tasks);
        assert_eq!(first.session_limits_hit(), LimitsHit::default());
        assert!(session.tasks_current().unwrap() <= 100);

        // A second one gets only what the session has left.
        let second = prepare_in(&session, &limits);
        let mut two = spawn_in(&second, &bomb);
        let start = Instant::now();
        let mut most = 0;
        while start.elapsed() < Duration::from_secs(3) {
            most = most.max(session.tasks_current().unwrap());
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(most <= 150, "{most} tasks in a session of 150");
        assert!(most >= 148, "the two filled the session ({most})");
        assert!(marked(marker) < 150);
        let second_tasks = read_number(&dir_with(&second, "pids.current").join("pids.current"));
        assert!(
            second_tasks < 100,
            "the second stopped below its own limit ({second_tasks})"
        );
        assert!(second.limits_hit().tasks);
        assert!(
            second.session_limits_hit().tasks,
            "the session's budget stopped the second"
        );
        assert!(!second.session_limits_hit().memory);

        let second_dirs: Vec<PathBuf> = second.dirs().into_iter().map(Path::to_owned).collect();
        second.remove().unwrap();
        first.remove().unwrap();
        wait_exit(&mut one, Duration::from_secs(5));
        wait_exit(&mut two, Duration::from_secs(5));
        assert_eq!(marked(marker), 0);
        assert!(second_dirs.iter().all(|d| !d.exists()));
        // The commands are gone; the session is not until its last holder lets it go.
        assert!(session_dirs.iter().all(|d| d.is_dir()));
        // (Orphans outside a PID namespace are reaped by the host's init: a task counts until then.)
        assert!(wait_for(Duration::from_secs(5), || session.tasks_current()
            == Some(0)));
        Arc::try_unwrap(session).unwrap().remove().unwrap();
        assert!(session_dirs.iter().all(|d| !d.exists()));
    }

    #[test]
    fn a_session_ends_what_is_left_inside_it() {
        let marker = "3141.56";
        let session = session(SessionBudget::default(), &CgroupLimits::default());
        let session_dirs: Vec<PathBuf> = session.dirs().into_iter().map(Path::to_owned).collect();
        // What a command whose removal failed would leave: directories inside the session, one
        // and two levels down, each with a process that joined every hierarchy's.
        let mut children = Vec::new();
        let mut left_dirs = Vec::new();
        for rel in ["x", "y/z"] {
            let dirs: Vec<PathBuf> = session_dirs.iter().map(|d| d.join(rel)).collect();
            for dir in &dirs {
                std::fs::create_dir_all(dir).unwrap();
            }
            let child = Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "for d in \"$@\"; do echo 0 > \"$d/cgroup.procs\" || exit 99; done; sleep {marker} & exec sleep {marker}"
                ))
                .arg("sh")
                .args(&dirs)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            children.push(child);
            left_dirs.extend(dirs);
        }
        // Positive control: they run, inside the session.
        assert!(wait_for(Duration::from_secs(5), || marked(marker) >= 4));
        assert!(wait_for(Duration::from_secs(5), || session
            .tasks_current()
            .unwrap()
            >= 4));
        Arc::try_unwrap(session).unwrap().remove().unwrap();
        for child in &mut children {
            let status = wait_exit(child, Duration::from_secs(5));
            assert_ne!(status.code(), Some(99), "a process could not join");
        }
        assert!(wait_for(Duration::from_secs(5), || marked(marker) == 0));
        for dir in left_dirs.iter().chain(&session_dirs) {
            assert!(!dir.exists(), "{} is left behind", dir.display());
        }
    }

    #[test]
    fn a_session_budget_below_a_command_is_refused() {
        let backend = backend();
        let small = SessionBudget {
            tasks_max: 100,
            ..SessionBudget::default()
        };
        let name = unique_name();
        let result = backend.prepare_session(&small, &CgroupLimits::default(), &name);
        assert!(
            matches!(&result, Err(CgroupError::InvalidLimits(why)) if why.contains("below one command's task limit")),
            "{result:?}"
        );
        // Nothing was made for it.
        for root in ["/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory"] {
            let made = spear_testkit::cgroup::find(root, usize::MAX, |n| n == name);
            assert_eq!(made, Vec::<PathBuf>::new(), "{name} under {root}");
        }
        // Positive control: a budget that holds one command is made.
        backend
            .prepare_session(&SessionBudget::default(), &CgroupLimits::default(), &name)
            .unwrap()
            .remove()
            .unwrap();
    }

    #[test]
    fn a_sessions_commands_share_its_memory_budget() {
        let limits = CgroupLimits {
            memory_max_bytes: 64 << 20,
            ..CgroupLimits::default()
        };
        let session = session(
            SessionBudget {
                tasks_max: 1024,
                memory_max_bytes: 96 << 20,
            },
            &limits,
        );
        // `tail` keeps all of an input without newlines in memory until its end; the sleep keeps
        // the input open, so each holds 48 MiB.
        let marker = "3141.57";
        let hold = format!(
            "{{ head -c {} /dev/zero; sleep {marker}; }} | tail >/dev/null",
            48 << 20
        );
        let usage = |c: &CommandCgroup| match c.kind() {
            BackendKind::CgroupV1 => {
                read_number(&dir_with(c, "memory.usage_in_bytes").join("memory.usage_in_bytes"))
            }
            _ => read_number(&dir_with(c, "memory.current").join("memory.current")),
        };

        // Positive control: one alone holds its 48 MiB, within its own limit and the budget.
        let first = prepare_in(&session, &limits);
        let mut one = spawn_in(&first, &hold);
        assert!(
            wait_for(Duration::from_secs(20), || usage(&first) >= 48 << 20),
            "the first holds 48 MiB ({})",
            usage(&first)
        );
        assert_eq!(first.limits_hit(), LimitsHit::default());

        // Two cannot: 96 MiB and their shells are more than the session's budget, though each is
        // within its own limit; one of them is killed, and it says the session's budget did it.
        let second = prepare_in(&session, &limits);
        let mut two = spawn_in(&second, &hold);
        let stopped = wait_for(Duration::from_secs(30), || {
            first.session_limits_hit().memory || second.session_limits_hit().memory
        });
        let hits = [first.limits_hit(), second.limits_hit()];
        let session_hits = [first.session_limits_hit(), second.session_limits_hit()];
        assert!(
            stopped && session_hits.iter().any(|h| h.memory),
            "the session's budget stopped one: {hits:?} {session_hits:?}, usage {} and {}",
            usage(&first),
            usage(&second)
        );
        if session.kind() == BackendKind::CgroupV1 {
            for c in [&first, &second] {
                let dir = dir_with(c, "memory.max_usage_in_bytes");
                assert!(
                    read_number(&dir.join("memory.max_usage_in_bytes")) < 64 << 20,
                    "no command reached its own limit"
                );
            }
        }
        drop((first, second));
        wait_exit(&mut one, Duration::from_secs(5));
        wait_exit(&mut two, Duration::from_secs(5));
        assert!(wait_for(Duration::from_secs(5), || marked(marker) == 0));
        let dirs: Vec<PathBuf> = session.dirs().into_iter().map(Path::to_owned).collect();
        drop(session);
        assert!(dirs.iter().all(|d| !d.exists()));
    }
}
