//! What the CLI's test binaries share besides the test kit: `spear` run over a test's directories
//! (a workspace, and a HOME and state directory beside it: [`Dirs`]) and the audit log it writes
//! there, the tools each mode lists, and operator configuration files.

#![allow(dead_code)]

use std::process::Command;

pub use spear_testkit::workspace::Dirs;

/// The tools the default role (implementation) sees in ASK and AUTO, sorted by name (with no
/// operator configuration: the web pair on, no search backend).
pub const TOOLS: [&str; 10] = [
    "delete_file",
    "fetch_url",
    "patch",
    "read_file",
    "read_output",
    "search_files",
    "terminal",
    "terminal_kill",
    "terminal_output",
    "write_file",
];

/// The tools a session in SAFE lists for the default role: none that writes (`fetch_url` reads
/// there; its `save_as` is refused).
pub const SAFE_TOOLS: [&str; 7] = [
    "fetch_url",
    "read_file",
    "read_output",
    "search_files",
    "terminal",
    "terminal_kill",
    "terminal_output",
];

/// `spear` run over a test's [`Dirs`]: with HOME and the state directory there and no operator
/// configuration, so that nothing it does reaches the real HOME's spear state.
pub trait SpearCommands {
    /// `spear ARGS`, run from the workspace as [`Dirs::command`] runs a program.
    fn spear(&self, args: &[&str]) -> Command;

    /// `spear mcp FLAGS --workspace WS`, run from beside the workspace; stdio as the caller sets
    /// it.
    fn spear_mcp(&self, flags: &[&str]) -> Command;
}

impl SpearCommands for Dirs {
    fn spear(&self, args: &[&str]) -> Command {
        let mut cmd = self.command(env!("CARGO_BIN_EXE_spear"));
        cmd.args(args);
        cmd
    }

    fn spear_mcp(&self, flags: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_spear"));
        cmd.arg("mcp")
            .args(flags)
            .arg("--workspace")
            .arg(&self.ws)
            .current_dir(&self.base)
            .env("HOME", &self.home)
            .env("XDG_STATE_HOME", &self.state)
            .env_remove("XDG_CONFIG_HOME");
        cmd
    }
}

/// The records of spear's audit log in `dirs`' state directory so far, one JSON value each (none
/// when there is no log).
pub fn audit_records(dirs: &Dirs) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dirs.state.join("spear/audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// An operator configuration file, in a directory of its own (removed when dropped); `--config`
/// names it.
pub struct Config {
    _dir: tempfile::TempDir,
    /// The file.
    pub path: String,
}

/// An operator configuration reading `text`.
pub fn config(text: &str) -> Config {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, text).unwrap();
    Config {
        path: path.to_str().unwrap().to_owned(),
        _dir: dir,
    }
}

/// The seccomp filter of a container runtime that refuses namespaces (as Docker's default profile
/// does): `unshare` and `clone` with any `CLONE_NEW*` flag return EPERM, `clone3` ENOSYS (so that
/// libc falls back to `clone`).
pub fn no_namespaces() -> [seccompiler::BpfProgram; 2] {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let arch = if cfg!(target_arch = "aarch64") {
        TargetArch::aarch64
    } else {
        TargetArch::x86_64
    };
    // CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET} (CLONE_NEWTIME is reachable only through clone3).
    let new_flags: u64 = 0x7e02_0000;
    let clone_rules = (0..32)
        .map(|bit| 1u64 << bit)
        .filter(|b| new_flags & b != 0)
        .map(|b| {
            SeccompRule::new(vec![
                SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(b), b)
                    .unwrap(),
            ])
            .unwrap()
        })
        .collect();
    let eperm = SeccompFilter::new(
        [(libc::SYS_unshare, vec![]), (libc::SYS_clone, clone_rules)]
            .into_iter()
            .collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM.cast_unsigned()),
        arch,
    )
    .unwrap();
    let enosys = SeccompFilter::new(
        [(libc::SYS_clone3, vec![])].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS.cast_unsigned()),
        arch,
    )
    .unwrap();
    [eperm.try_into().unwrap(), enosys.try_into().unwrap()]
}
