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
