//! What the CLI's test binaries share: a workspace, and a HOME and state directory beside it
//! (never inside: spear refuses a workspace that holds either).

#![allow(dead_code)]

use std::path::PathBuf;

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

/// A tempdir holding `ws/` (the workspace), `home/` and `state/` (for `XDG_STATE_HOME`).
pub struct Dirs {
    _tmp: tempfile::TempDir,
    /// The tempdir itself, canonical.
    pub base: PathBuf,
    /// The workspace.
    pub ws: PathBuf,
    /// A HOME for spear.
    pub home: PathBuf,
    /// spear's state directory (`XDG_STATE_HOME`); made by spear.
    pub state: PathBuf,
}

impl Dirs {
    /// The directories, with `files` (path under the workspace, content) written.
    pub fn with(files: &[(&str, &str)]) -> Dirs {
        Dirs::make(tempfile::tempdir().unwrap(), files)
    }

    /// [`Dirs::with`], in a new directory under `parent` (a tmpfs such as `/dev/shm`, for a test
    /// that measures spear's own work rather than the host disk's).
    pub fn within(parent: &std::path::Path, files: &[(&str, &str)]) -> Dirs {
        Dirs::make(tempfile::tempdir_in(parent).unwrap(), files)
    }

    fn make(tmp: tempfile::TempDir, files: &[(&str, &str)]) -> Dirs {
        let base = tmp.path().canonicalize().unwrap();
        let ws = base.join("ws");
        let home = base.join("home");
        let state = base.join("state");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        for (name, content) in files {
            std::fs::write(ws.join(name), content).unwrap();
        }
        Dirs {
            _tmp: tmp,
            base,
            ws,
            home,
            state,
        }
    }

    /// `program` run from the workspace with HOME and the state directory here and no operator
    /// configuration: nothing it does reaches the real HOME's spear state.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
        let mut cmd = std::process::Command::new(program);
        cmd.current_dir(&self.ws)
            .env("HOME", &self.home)
            .env("XDG_STATE_HOME", &self.state)
            .env_remove("XDG_CONFIG_HOME");
        cmd
    }

    /// `spear ARGS` as [`Dirs::command`] runs it.
    pub fn spear(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = self.command(env!("CARGO_BIN_EXE_spear"));
        cmd.args(args);
        cmd
    }

    /// `name` beside the workspace.
    pub fn path(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }

    /// `spear mcp FLAGS --workspace WS`, with HOME and the state directory here and no operator
    /// configuration; stdio as the caller sets it.
    pub fn spear_mcp(&self, flags: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_spear"));
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

    /// What a server started by a test logged (its stderr, kept in `server.log`).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.base.join("server.log")).unwrap_or_default()
    }
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
