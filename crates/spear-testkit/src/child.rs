//! A test run again in a child process, for what reads the environment (`SSL_CERT_FILE` at
//! `Fetcher::new`, the proxy variables): setting variables in the test's own process is unsafe
//! while other tests run in threads.

/// The environment variable that tells a re-executed test binary which test it is to run as the
/// child (see [`run_child`]).
pub const CHILD: &str = "SPEAR_WEB_TEST_CHILD";

/// Whether this process is the child [`run_child`] started for `test`.
pub fn is_child(test: &str) -> bool {
    std::env::var(CHILD).is_ok_and(|v| v == test)
}

/// Runs the test `test` of this binary again in a child process with `set` added to this
/// process's environment and `remove` removed, and fails unless that one test ran and passed.
/// For what reads the environment (`SSL_CERT_FILE` at `Fetcher::new`, the proxy variables):
/// setting variables in this process is unsafe while other tests run in threads.
pub fn run_child(test: &str, set: &[(&str, &str)], remove: &[&str]) {
    let exe = std::env::current_exe().unwrap();
    let mut command = std::process::Command::new(exe);
    command.args([test, "--exact", "--nocapture", "--test-threads=1"]);
    command.env(CHILD, test);
    for (name, value) in set {
        command.env(name, value);
    }
    for name in remove {
        command.env_remove(name);
    }
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed") && stdout.contains(&child_mark(test)),
        "the child running {test} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

/// What a child prints once its test's body has run (so that the parent knows it did).
pub fn child_mark(test: &str) -> String {
    format!("child ran {test} to the end")
}

/// Prints [`child_mark`].
pub fn child_done(test: &str) {
    println!("{}", child_mark(test));
}
