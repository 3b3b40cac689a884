//! The seccomp filter under the real bubblewrap.
//!
//! Every refusal is checked against a positive control: the same probe, in the same sandbox
//! without `--seccomp`, must succeed or fail differently, so a pass proves the filter did the
//! refusing and not the sandbox, a missing feature or a broken probe. The probes are a small C
//! program compiled with gcc into a temporary directory (raw syscalls, so the exact arguments the
//! filter sees are the ones written here). The tests pass as root and as an unprivileged user: the
//! sandbox gets its own user namespace either way, and nothing is written outside `/tmp`.

// Helpers outside #[test] functions panic on purpose: a failed setup is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, PoisonError};

use rustix::io::FdFlags;
use spear_sandbox::{kernel_supports_seccomp, seccomp_program_fd};

const BWRAP: &str = "/usr/bin/bwrap";
const EPERM: i32 = 1;
const ENOSYS: i32 = 38;
const SIGSYS: i32 = 31;

/// Serialises spawning: the program fd is inheritable between clearing its close-on-exec flag and
/// the spawn, and must not leak into a sandbox another test is starting at the same moment.
static SPAWN: Mutex<()> = Mutex::new(());

/// Whether the sandbox keeps its capabilities (inside its own user namespace). Probes of calls
/// that need `CAP_SYS_ADMIN` (mount, setns, new mount and network namespaces) run with them, so the
/// control succeeds and only the filter can refuse. They also run as uid 0 in the sandbox: for an
/// unprivileged caller bwrap otherwise nests a second user namespace to give back the caller's
/// uid, and the command's capabilities would then not reach the mount namespace, which belongs to
/// the outer one.
#[derive(Clone, Copy, Debug)]
enum Caps {
    Dropped,
    Kept,
}

/// Runs `argv` in a minimal bubblewrap sandbox, under the filter when `filtered`.
fn sandbox(filtered: bool, caps: Caps, argv: &[&str]) -> Output {
    let mut command = Command::new(BWRAP);
    command.args([
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
    ]);
    match caps {
        Caps::Dropped => command.args(["--cap-drop", "ALL"]),
        Caps::Kept => command.args(["--uid", "0", "--gid", "0", "--cap-add", "ALL"]),
    };
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = if filtered {
        let fd = seccomp_program_fd().expect("the filter's memfd");
        let spawning = SPAWN.lock().unwrap_or_else(PoisonError::into_inner);
        rustix::io::fcntl_setfd(&fd, FdFlags::empty()).expect("clear FD_CLOEXEC");
        command.args(["--seccomp", &fd.as_raw_fd().to_string(), "--"]);
        command.args(argv);
        let child = command.spawn();
        // bwrap holds its own copy now; close ours before another test may spawn.
        drop(fd);
        drop(spawning);
        child
    } else {
        command.arg("--").args(argv);
        let _spawning = SPAWN.lock().unwrap_or_else(PoisonError::into_inner);
        command.spawn()
    };
    child
        .expect("spawn bwrap")
        .wait_with_output()
        .expect("wait for bwrap")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

fn describe(output: &Output) -> String {
    format!(
        "status {:?}, stdout {:?}, stderr {:?}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The probe program, compiled for this test into its own temporary directory.
struct Probe {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Probe {
    fn build() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("spear-seccomp-probe")
            .tempdir_in("/tmp")
            .expect("tempdir in /tmp");
        let source = dir.path().join("probe.c");
        std::fs::File::create(&source)
            .and_then(|mut file| file.write_all(PROBE_C.as_bytes()))
            .expect("write probe.c");
        let path = dir.path().join("probe");
        let gcc = Command::new("gcc")
            .args(["-O1", "-Wall", "-Wextra", "-Werror", "-pthread", "-o"])
            .arg(&path)
            .arg(&source)
            .output()
            .expect("run gcc (the probes need a C compiler)");
        assert!(gcc.status.success(), "gcc failed: {}", describe(&gcc));
        Self { _dir: dir, path }
    }

    fn path(&self) -> &str {
        path_str(&self.path)
    }

    fn argv<'a>(&'a self, call: &[&'a str]) -> Vec<&'a str> {
        std::iter::once(self.path())
            .chain(call.iter().copied())
            .collect()
    }

    /// Runs one probe with and without the filter: (control, filtered) result lines.
    fn run(&self, caps: Caps, call: &[&str]) -> (String, String) {
        let [control, filtered] = [false, true].map(|filtered| self.result(filtered, caps, call));
        (control, filtered)
    }

    /// One run of a probe that must return from its call: its result line.
    fn result(&self, filtered: bool, caps: Caps, call: &[&str]) -> String {
        let output = sandbox(filtered, caps, &self.argv(call));
        let line = stdout(&output);
        assert!(
            output.status.success() && (line == "ok" || line.starts_with("errno ")),
            "probe {call:?} (filtered: {filtered}) did not run: {}",
            describe(&output)
        );
        line
    }

    /// The filter refuses the probed call with `errno`; without the filter it gets further.
    fn assert_refused(&self, caps: Caps, call: &[&str], errno: i32) {
        let (control, filtered) = self.run(caps, call);
        assert_eq!(
            filtered,
            format!("errno {errno}"),
            "probe {call:?} under the filter"
        );
        assert_ne!(
            control, filtered,
            "probe {call:?}: the control fails the same way, so it proves nothing"
        );
    }

    /// The probed call works under the filter as it works without it.
    fn assert_allowed(&self, caps: Caps, call: &[&str]) {
        let (control, filtered) = self.run(caps, call);
        assert_eq!(control, "ok", "probe {call:?} without the filter");
        assert_eq!(filtered, "ok", "probe {call:?} under the filter");
    }

    /// The probed call kills the probe with SIGSYS under the filter, and not without it.
    #[cfg(target_arch = "x86_64")]
    fn assert_killed(&self, call: &[&str]) {
        // Without the filter the call returns, whatever its result.
        self.result(false, Caps::Dropped, call);
        let filtered = sandbox(true, Caps::Dropped, &self.argv(call));
        // bwrap reports a command killed by signal N as exit status 128 + N.
        assert_eq!(
            filtered.status.code(),
            Some(128 + SIGSYS),
            "probe {call:?} under the filter: {}",
            describe(&filtered)
        );
        assert_eq!(stdout(&filtered), "", "the probe returned from the call");
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}

/// The tests, in a module whose path names seccomp so that `cargo test seccomp` runs them.
mod seccomp_under_bwrap {
    use super::*;

    #[test]
    fn the_kernel_supports_the_filter() {
        kernel_supports_seccomp().unwrap();
    }

    #[test]
    fn the_command_and_the_sandbox_init_both_run_under_the_filter() {
        // Seccomp_filters counts the filters a process runs under; bwrap's pid 1 in the sandbox
        // (the reaper) must carry it too, or a process could ptrace it and make unfiltered
        // syscalls. bwrap's pid 1 loads its filter just after it forks the command, so the
        // command can look first: it waits (at most 2 s) for pid 1 to have as many as itself.
        let script = "n() { sed -n 's/^Seccomp_filters:[[:space:]]*//p' \"$1\"; }; \
            i=0; while [ \"$(n /proc/1/status)\" -lt \"$(n /proc/self/status)\" ] && [ $i -lt 200 ]; \
            do sleep 0.01; i=$((i+1)); done; \
            grep ^Seccomp_filters: /proc/self/status /proc/1/status";
        let count = |filtered| {
            let output = sandbox(filtered, Caps::Dropped, &["sh", "-c", script]);
            assert!(output.status.success(), "{}", describe(&output));
            stdout(&output)
                .lines()
                .map(|line| {
                    let count = line.rsplit('\t').next().unwrap_or_default();
                    count.trim().parse::<u32>().expect("a filter count")
                })
                .collect::<Vec<_>>()
        };
        let (control, filtered) = (count(false), count(true));
        assert_eq!(control.len(), 2);
        assert_eq!(
            filtered,
            control.iter().map(|n| n + 1).collect::<Vec<_>>(),
            "self and pid 1: one more filter each"
        );
    }

    #[test]
    fn tiocsti_is_refused() {
        Probe::build().assert_refused(Caps::Dropped, &["tty-ioctl", "0x5412"], EPERM);
    }

    #[test]
    fn tiocsti_with_high_bits_in_the_request_is_refused() {
        // The kernel reads the request as 32 bits: without the filter this injects like TIOCSTI.
        let probe = Probe::build();
        let (control, filtered) = probe.run(Caps::Dropped, &["tty-ioctl", "0x100005412"]);
        assert_eq!(control, "ok", "the high bits change nothing for the kernel");
        assert_eq!(filtered, format!("errno {EPERM}"));
        probe.assert_refused(Caps::Dropped, &["tty-ioctl", "0xffffffff00005412"], EPERM);
    }

    #[test]
    fn tioclinux_is_refused() {
        Probe::build().assert_refused(Caps::Dropped, &["tty-ioctl", "0x541C"], EPERM);
    }

    #[test]
    fn other_terminal_ioctls_still_work() {
        // TIOCGWINSZ on the pty.
        Probe::build().assert_allowed(Caps::Dropped, &["tty-ioctl", "0x5413"]);
    }

    #[test]
    fn keyrings_are_refused() {
        let probe = Probe::build();
        for call in ["keyctl", "add_key", "request_key"] {
            probe.assert_refused(Caps::Dropped, &[call], EPERM);
        }
    }

    #[test]
    fn io_uring_is_refused() {
        Probe::build().assert_refused(Caps::Dropped, &["io_uring_setup"], EPERM);
    }

    #[test]
    fn userfaultfd_and_perf_event_open_are_refused() {
        let probe = Probe::build();
        probe.assert_refused(Caps::Dropped, &["userfaultfd"], EPERM);
        probe.assert_refused(Caps::Dropped, &["perf_event_open"], EPERM);
    }

    #[test]
    fn new_namespaces_are_refused() {
        let probe = Probe::build();
        // CLONE_NEWUSER needs no capability: this is how a process would regain them.
        probe.assert_refused(Caps::Dropped, &["unshare", "0x10000000"], EPERM);
        probe.assert_refused(Caps::Dropped, &["clone", "0x10000000"], EPERM);
        // CLONE_NEWNET and CLONE_NEWNS, with the capabilities that would otherwise allow them.
        probe.assert_refused(Caps::Kept, &["clone", "0x40000000"], EPERM);
        probe.assert_refused(Caps::Kept, &["clone", "0x20000"], EPERM);
        probe.assert_refused(Caps::Kept, &["setns-mnt"], EPERM);
    }

    #[test]
    fn unshare_the_command_fails() {
        // `-r` maps root, which needs CAP_SETFCAP when the caller is root (Linux 5.12), and `-n`
        // alone needs CAP_SYS_ADMIN: those two run with the sandbox's capabilities kept, so that
        // without the filter every case succeeds.
        let cases: [(Caps, &[&str]); 4] = [
            (Caps::Dropped, &["unshare", "-U", "true"]),
            (Caps::Dropped, &["unshare", "-Un", "true"]),
            (Caps::Kept, &["unshare", "-Ur", "true"]),
            (Caps::Kept, &["unshare", "-n", "true"]),
        ];
        for (caps, argv) in cases {
            let control = sandbox(false, caps, argv);
            assert!(
                control.status.success(),
                "control {argv:?}: {}",
                describe(&control)
            );
            let filtered = sandbox(true, caps, argv);
            assert!(!filtered.status.success(), "{argv:?} ran under the filter");
            assert!(
                String::from_utf8_lossy(&filtered.stderr).contains("Operation not permitted"),
                "{}",
                describe(&filtered)
            );
        }
    }

    #[test]
    fn clone3_returns_enosys_and_threads_fall_back_to_clone() {
        let probe = Probe::build();
        probe.assert_refused(Caps::Dropped, &["clone3", "0"], ENOSYS);
        probe.assert_refused(Caps::Dropped, &["clone3", "0x10000000"], ENOSYS);
        // glibc's pthread_create tries clone3 first and falls back to clone on ENOSYS.
        probe.assert_allowed(Caps::Dropped, &["threads"]);
    }

    #[test]
    fn the_mount_view_cannot_be_changed() {
        let probe = Probe::build();
        for call in ["mount", "umount2", "fsopen", "open_tree"] {
            probe.assert_refused(Caps::Kept, &[call], EPERM);
        }
    }

    #[test]
    fn ordinary_work_still_runs() {
        let probe = Probe::build();
        for call in ["fork", "exec", "threads", "ptrace"] {
            probe.assert_allowed(Caps::Dropped, &[call]);
        }
        let threads = "import threading\n\
                       out = []\n\
                       ts = [threading.Thread(target=out.append, args=(i,)) for i in range(8)]\n\
                       [t.start() for t in ts]\n\
                       [t.join() for t in ts]\n\
                       print(sorted(out) == list(range(8)))";
        let cases: [(&[&str], &str); 3] = [
            (&["sh", "-c", "echo hi | cat"], "hi"),
            (&["/usr/bin/python3", "-c", threads], "True"),
            (&["git", "--version"], "git version"),
        ];
        for (argv, expected) in cases {
            let output = sandbox(true, Caps::Dropped, argv);
            assert!(
                output.status.success() && stdout(&output).starts_with(expected),
                "{argv:?} under the filter: {}",
                describe(&output)
            );
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_x32_abi_kills_the_process() {
        // Without the filter: ENOSYS where the kernel lacks x32, the pid where it has it.
        Probe::build().assert_killed(&["x32-getpid"]);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_i386_abi_kills_the_process() {
        // `int 0x80` from a 64-bit process: the kernel reports AUDIT_ARCH_I386.
        Probe::build().assert_killed(&["i386-getpid"]);
    }
}

/// The probes: `probe NAME [ARG]` makes one call and prints `ok` or `errno N`.
const PROBE_C: &str = r#"#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/perf_event.h>

/* One line on stdout: "ok", or "errno N" when the probed call failed with N. */
static int report(long ret) {
    if (ret < 0)
        printf("errno %d\n", errno);
    else
        printf("ok\n");
    fflush(stdout);
    return 0;
}

/* A failure before the probed call: not a result, so the test cannot mistake it for one. */
static void setup_failed(const char *step) {
    printf("setup %s failed: errno %d\n", step, errno);
    fflush(stdout);
    _exit(2);
}

/* After a raw clone or clone3 without CLONE_VM: the child leaves at once, the parent reaps it. */
static int report_clone(long ret) {
    if (ret == 0)
        _exit(0);
    if (ret > 0 && waitpid((pid_t)ret, NULL, __WALL) < 0)
        setup_failed("waitpid");
    return report(ret);
}

/* ioctl(request) on a pty that is the caller's controlling terminal, made in a new session. */
static int tty_ioctl(unsigned long request) {
    pid_t pid = fork();
    if (pid < 0)
        setup_failed("fork");
    if (pid == 0) {
        if (setsid() < 0)
            setup_failed("setsid");
        int master = posix_openpt(O_RDWR | O_NOCTTY);
        if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0)
            setup_failed("posix_openpt");
        int slave = open(ptsname(master), O_RDWR);
        if (slave < 0)
            setup_failed("open pts");
        if (ioctl(slave, TIOCSCTTY, 0) < 0)
            setup_failed("TIOCSCTTY");
        char c = 'x';
        report(syscall(SYS_ioctl, slave, request, &c));
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
        setup_failed("waitpid");
    return WEXITSTATUS(status);
}

static void *thread_main(void *arg) { return arg; }

int main(int argc, char **argv) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    if (argc < 2)
        return 2;
    const char *probe = argv[1];
    unsigned long arg = argc > 2 ? strtoul(argv[2], NULL, 0) : 0;

    if (!strcmp(probe, "tty-ioctl"))
        return tty_ioctl(arg);
    if (!strcmp(probe, "keyctl")) /* KEYCTL_GET_KEYRING_ID, KEY_SPEC_PROCESS_KEYRING, create */
        return report(syscall(SYS_keyctl, 0, -2, 1));
    if (!strcmp(probe, "add_key"))
        return report(syscall(SYS_add_key, "user", "spear-probe", "x", 1, -2));
    if (!strcmp(probe, "request_key"))
        return report(syscall(SYS_request_key, "user", "spear-probe-absent", NULL, 0));
    if (!strcmp(probe, "io_uring_setup")) {
        char params[120] = {0};
        return report(syscall(SYS_io_uring_setup, 4, params));
    }
    if (!strcmp(probe, "userfaultfd")) /* UFFD_USER_MODE_ONLY: allowed unprivileged since 5.11 */
        return report(syscall(SYS_userfaultfd, O_CLOEXEC | 1));
    if (!strcmp(probe, "perf_event_open")) {
        struct perf_event_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.type = PERF_TYPE_SOFTWARE;
        attr.size = sizeof attr;
        attr.config = PERF_COUNT_SW_TASK_CLOCK;
        attr.exclude_kernel = 1;
        attr.exclude_hv = 1;
        return report(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
    }
    if (!strcmp(probe, "unshare"))
        return report(syscall(SYS_unshare, arg));
    if (!strcmp(probe, "setns-mnt")) {
        int fd = open("/proc/self/ns/mnt", O_RDONLY);
        if (fd < 0)
            setup_failed("open ns");
        return report(syscall(SYS_setns, fd, CLONE_NEWNS));
    }
    if (!strcmp(probe, "clone"))
        return report_clone(syscall(SYS_clone, arg | SIGCHLD, 0, 0, 0, 0));
    if (!strcmp(probe, "clone3")) {
        uint64_t args[8] = {0};
        args[0] = arg;     /* flags */
        args[4] = SIGCHLD; /* exit_signal */
        return report_clone(syscall(SYS_clone3, args, sizeof args));
    }
    if (!strcmp(probe, "mount"))
        return report(syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, NULL));
    if (!strcmp(probe, "umount2"))
        return report(syscall(SYS_umount2, "/proc", 2 /* MNT_DETACH */));
    if (!strcmp(probe, "fsopen"))
        return report(syscall(SYS_fsopen, "tmpfs", 0));
    if (!strcmp(probe, "open_tree")) /* OPEN_TREE_CLONE */
        return report(syscall(SYS_open_tree, AT_FDCWD, "/tmp", 1));
    if (!strcmp(probe, "fork")) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(7);
        int status = 0;
        if (pid > 0 && (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status)
                        || WEXITSTATUS(status) != 7))
            setup_failed("wait for the forked child");
        return report(pid);
    }
    if (!strcmp(probe, "exec")) {
        pid_t pid = fork();
        if (pid == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int status = 0;
        if (pid > 0 && (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status)
                        || WEXITSTATUS(status) != 0))
            setup_failed("exec /bin/true");
        return report(pid);
    }
    if (!strcmp(probe, "threads")) {
        pthread_t threads[4];
        for (int i = 0; i < 4; i++) {
            int err = pthread_create(&threads[i], NULL, thread_main, NULL);
            if (err) {
                errno = err;
                return report(-1);
            }
        }
        for (int i = 0; i < 4; i++)
            pthread_join(threads[i], NULL);
        return report(0);
    }
    if (!strcmp(probe, "ptrace")) {
        pid_t pid = fork();
        if (pid == 0) {
            for (;;)
                pause();
        }
        if (pid < 0)
            setup_failed("fork");
        long ret = ptrace(PTRACE_ATTACH, pid, 0, 0);
        if (ret == 0) {
            waitpid(pid, NULL, 0);
            ptrace(PTRACE_DETACH, pid, 0, 0);
        }
        int saved = errno;
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        errno = saved;
        return report(ret);
    }
#ifdef __x86_64__
    if (!strcmp(probe, "x32-getpid"))
        return report(syscall(0x40000000 | SYS_getpid));
    if (!strcmp(probe, "i386-getpid")) {
        long ret;
        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
        if (ret < 0) {
            errno = (int)-ret;
            return report(-1);
        }
        return report(0);
    }
#endif
    printf("unknown probe %s\n", probe);
    return 2;
}
"#;
