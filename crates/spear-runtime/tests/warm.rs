//! The warm path of a session, against the real sandbox: the next command's sandbox set up
//! before the command is known, and still a sandbox of its own.
//!
//! Whether a command ran warm is seen from inside: its PID namespace's init (bwrap's) started
//! well before the command was asked for. Every negative check has a positive control.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{Fixture, read_only};
use spear_core::ToolStatus;
use spear_runtime::{CommandLine, CommandRequest, ScratchMode};
use spear_testkit::process::processes_with;
use spear_testkit::serial::Turns;

/// The tests of this file look for warm sandboxes by their hold's name: one at a time.
static SERIAL: Turns = Turns::new();

fn warm_session() -> Fixture {
    Fixture::with(|c| {
        c.scratch = ScratchMode::Session;
        c.sandbox.warm = true;
    })
}

fn cold_session() -> Fixture {
    Fixture::with(|c| c.scratch = ScratchMode::Session)
}

/// Prints how many milliseconds before the command its sandbox's init started.
const INIT_AGE: &str = "init=$(cut -d' ' -f22 /proc/1/stat); now=$(cut -d' ' -f1 /proc/uptime); echo AGE $(( ${now%.*}${now#*.}0 - init * 10 ))";

/// The init's age that `INIT_AGE` printed, in ms.
fn init_age(stdout: &str) -> i64 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("AGE "))
        .unwrap_or_else(|| panic!("no AGE in {stdout:?}"))
        .trim()
        .parse()
        .unwrap()
}

/// Runs a SAFE command after the sandbox had `idle` to get ready.
fn after(f: &Fixture, idle: Duration, script: &str) -> spear_core::ToolResult {
    std::thread::sleep(idle);
    f.safe(script)
}

#[test]
fn the_next_command_runs_in_a_sandbox_set_up_before_it_and_cold_sessions_do_not() {
    let _serial = SERIAL.take();
    let warm = warm_session();
    let cold = cold_session();
    for f in [&warm, &cold] {
        let r = f.safe("true");
        assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    }
    let w = after(&warm, Duration::from_millis(600), INIT_AGE);
    let c = after(&cold, Duration::from_millis(600), INIT_AGE);
    assert_eq!(w.status, ToolStatus::Ok, "{w:?}");
    assert!(init_age(&w.stdout) >= 300, "not warm: {w:?}");
    // Positive control: the measure tells a cold sandbox apart.
    assert!(init_age(&c.stdout) < 300, "the measure is wrong: {c:?}");
}

#[test]
fn a_warm_command_cannot_see_or_signal_what_the_previous_command_left() {
    let _serial = SERIAL.take();
    let f = warm_session();
    let marker = format!("3{}.5", std::process::id());
    // Counts the processes whose argv holds the marker, without holding it in its own argv.
    let count = format!(
        "m=3{}; m=$m.5; n=0; for c in /proc/[0-9]*/cmdline; do [[ \"$(tr '\\0' ' ' < $c 2>/dev/null)\" == *\"$m\"* ]] && n=$((n+1)); done; echo $n",
        std::process::id()
    );
    let r = f.safe(&format!(
        "sleep {marker} & echo PID $!; readlink /proc/self/ns/pid; {count}; kill -0 $! && echo CAN-SIGNAL"
    ));
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    let lines: Vec<&str> = r.stdout.lines().collect();
    let pid = lines[0].strip_prefix("PID ").unwrap().trim().to_owned();
    let first_ns = lines[1].to_owned();
    // Positive control: the probe sees a process that is there.
    assert_ne!(
        lines[2].trim(),
        "0",
        "the probe cannot see processes: {r:?}"
    );
    assert!(
        r.stdout.contains("CAN-SIGNAL"),
        "the signal probe is wrong: {r:?}"
    );
    assert!(
        processes_with(&marker).is_empty(),
        "the first command's sleep outlived it"
    );

    let r = after(
        &f,
        Duration::from_millis(600),
        &format!(
            "{INIT_AGE}; readlink /proc/self/ns/pid; {count}; kill -0 {pid} 2>/dev/null && echo SIGNALLED || echo NO-SUCH; ls /proc | grep -c '^[0-9]'"
        ),
    );
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(
        init_age(&r.stdout) >= 300,
        "not warm, so not this test: {r:?}"
    );
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_ne!(lines[1], first_ns, "the same PID namespace: {r:?}");
    assert_eq!(lines[2].trim(), "0", "it saw the earlier sleep: {r:?}");
    assert!(
        r.stdout.contains("NO-SUCH") && !r.stdout.contains("SIGNALLED"),
        "the earlier sleep's pid was signalled: {r:?}"
    );
    // bwrap's init, the command's bash and its children: nothing else.
    let count: usize = lines[4].trim().parse().unwrap();
    assert!(count <= 6, "{count} processes: {r:?}");
}

#[test]
fn a_warm_command_sees_the_sessions_tmp_as_a_cold_one_would() {
    let _serial = SERIAL.take();
    let f = warm_session();
    let r = f.safe("echo kept > /tmp/kept && echo in-home > ~/note");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    let r = after(
        &f,
        Duration::from_millis(600),
        &format!("{INIT_AGE}; cat /tmp/kept ~/note"),
    );
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(init_age(&r.stdout) >= 300, "{r:?}");
    assert!(r.stdout.ends_with("kept\nin-home\n"), "{r:?}");
}

#[test]
fn the_environment_and_shell_of_a_warm_command_are_a_cold_ones() {
    let _serial = SERIAL.take();
    let probe = "env | sort; echo \"0=$0 -=$-\"; set -o; shopt; ulimit -a; umask; trap -p; ls /proc/self/fd";
    let warm = warm_session();
    let cold = cold_session();
    warm.safe("true");
    let w = after(&warm, Duration::from_millis(600), probe);
    let c = cold.safe(probe);
    assert_eq!(w.status, ToolStatus::Ok, "{w:?}");
    let strip = |s: &str, f: &Fixture| s.replace(f.dirs.made_at().to_str().unwrap(), "BASE");
    assert_eq!(strip(&w.stdout, &warm), strip(&c.stdout, &cold));
}

#[test]
fn the_timeout_counts_from_the_command_not_from_the_set_up() {
    let _serial = SERIAL.take();
    let f = warm_session();
    f.safe("true");
    std::thread::sleep(Duration::from_millis(1500));
    let mut request = CommandRequest::new(
        CommandLine::Script(format!("{INIT_AGE}; sleep 0.5; echo done")),
        read_only(),
    );
    request.timeout = Some(Duration::from_secs(1));
    let r = f.runner.run(&request);
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(init_age(&r.stdout) >= 1000, "not warm: {r:?}");
    assert!(r.stdout.ends_with("done\n"), "{r:?}");
    // Positive control: the timeout does stop a command that outlives it.
    let mut request = CommandRequest::new(CommandLine::Script("sleep 3".into()), read_only());
    request.timeout = Some(Duration::from_secs(1));
    assert_eq!(f.runner.run(&request).status, ToolStatus::Timeout);
}

#[test]
fn a_sandbox_made_over_a_directory_replaced_since_is_not_used() {
    let _serial = SERIAL.take();
    let f = warm_session();
    let r = f.safe("cat README.md");
    assert_eq!(r.stdout, "hello\n", "{r:?}");
    std::thread::sleep(Duration::from_millis(600));
    // The workspace is replaced under the waiting sandbox: its bind shows the old directory.
    let old = f.ws.with_file_name("ws.old");
    std::fs::rename(&f.ws, &old).unwrap();
    std::fs::create_dir(&f.ws).unwrap();
    std::fs::write(f.ws.join("README.md"), "new\n").unwrap();
    let r = f.safe(&format!("{INIT_AGE}; cat README.md"));
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(
        r.stdout.ends_with("\nnew\n"),
        "the old directory shown: {r:?}"
    );
    assert!(
        init_age(&r.stdout) < 300,
        "a stale warm sandbox was used: {r:?}"
    );
    // Positive control: with the host unchanged since, the next one is warm again.
    let r = after(
        &f,
        Duration::from_millis(600),
        &format!("{INIT_AGE}; cat README.md"),
    );
    assert!(init_age(&r.stdout) >= 300, "{r:?}");
    assert!(r.stdout.ends_with("\nnew\n"), "{r:?}");
}

#[test]
fn no_waiting_sandbox_is_left_after_the_session() {
    let _serial = SERIAL.take();
    let f = warm_session();
    let r = f.safe("true");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    std::thread::sleep(Duration::from_millis(600));
    let area = f.runner.session_scratch().unwrap().area().to_path_buf();
    // Positive control: a sandbox waits, and it is seen by its hold's name.
    assert!(
        !processes_with("spear-warm-hold").is_empty(),
        "no warm sandbox waits"
    );
    drop(f);
    let left = processes_with("spear-warm-hold");
    assert!(left.is_empty(), "left after the session: {left:?}");
    assert!(!area.exists(), "the session's area is left");
}

/// Runs `words` as an argv (no shell), read-only.
fn argv(f: &Fixture, words: &[&str]) -> spear_core::ToolResult {
    common::run_committed(
        &f.runner,
        &CommandRequest::new(
            CommandLine::Argv(words.iter().map(Into::into).collect()),
            read_only(),
        ),
    )
}

/// How many ms before it read them its sandbox's init started, from `cat /proc/1/stat
/// /proc/uptime` (clock ticks of 10 ms).
fn init_age_of_cat(stdout: &str) -> i64 {
    let mut lines = stdout.lines();
    let proc_stat = lines.next().unwrap();
    let start: i64 = proc_stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let up = lines.next().unwrap().split_whitespace().next().unwrap();
    let (s, cs) = up.split_once('.').unwrap();
    s.parse::<i64>().unwrap() * 1000 + cs.parse::<i64>().unwrap() * 10 - start * 10
}

#[test]
fn a_program_runs_warm_with_a_cold_ones_environment_arguments_and_not_found() {
    let _serial = SERIAL.take();
    let warm = warm_session();
    let cold = cold_session();
    argv(&warm, &["/usr/bin/true"]);
    std::thread::sleep(Duration::from_millis(600));
    let r = argv(&warm, &["/bin/cat", "/proc/1/stat", "/proc/uptime"]);
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(init_age_of_cat(&r.stdout) >= 300, "not warm: {r:?}");
    // Positive control of the age: a cold session's program is in a sandbox of its own age.
    let c = argv(&cold, &["/bin/cat", "/proc/1/stat", "/proc/uptime"]);
    assert!(init_age_of_cat(&c.stdout) < 300, "{c:?}");

    // The same variables with the same values (bash's exec lists them in an order of its own,
    // which means nothing), and the same words.
    let strip = |s: &str, f: &Fixture| {
        let text = s.replace(f.dirs.made_at().to_str().unwrap(), "BASE");
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort_unstable();
        lines.join("\n")
    };
    for words in [
        &["/usr/bin/env"][..],
        &["/usr/bin/printf", "[%s]", "a b", "", "c=d", "-i", "--"][..],
    ] {
        std::thread::sleep(Duration::from_millis(600));
        let w = argv(&warm, words);
        let c = argv(&cold, words);
        assert_eq!(w.status, ToolStatus::Ok, "{w:?}");
        assert_eq!(
            strip(&w.stdout, &warm),
            strip(&c.stdout, &cold),
            "{words:?}"
        );
        assert_eq!(w.stderr, c.stderr, "{words:?}");
    }
    // A program that is not there is not found, as a cold one is (it runs cold).
    std::thread::sleep(Duration::from_millis(600));
    let w = argv(&warm, &["/usr/bin/no-such-program-of-spear"]);
    let c = argv(&cold, &["/usr/bin/no-such-program-of-spear"]);
    assert_eq!(w.status, ToolStatus::NotFound, "{w:?}");
    assert_eq!((w.status, w.exit_code), (c.status, c.exit_code));
}
