//! A test's own directories on the host: a workspace, and a HOME and a state directory beside it
//! (never inside: spear refuses a workspace that holds either), in a temporary directory removed
//! when the test is done.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A temporary directory holding `ws/` (the workspace) and `home/`, both made, and the place of
/// `state/` (for `XDG_STATE_HOME`, made by whoever uses it). Every path is canonical. Removed,
/// with everything in it, when dropped.
pub struct Dirs {
    tmp: tempfile::TempDir,
    /// The temporary directory itself, canonical.
    pub base: PathBuf,
    /// The workspace.
    pub ws: PathBuf,
    /// A HOME for spear.
    pub home: PathBuf,
    /// spear's state directory (`XDG_STATE_HOME`); not made here.
    pub state: PathBuf,
}

impl Dirs {
    /// The directories, in the system's temporary directory, with `files` (path under the
    /// workspace, content) written, their directories made.
    pub fn with(files: &[(&str, &str)]) -> Dirs {
        Dirs::make(tempfile::tempdir().unwrap(), files)
    }

    /// [`Dirs::with`], in a new directory under `parent` (a tmpfs such as `/dev/shm`, for a test
    /// that measures spear's own work rather than the host disk's; or a place outside the
    /// sandbox's private ones).
    pub fn within(parent: &Path, files: &[(&str, &str)]) -> Dirs {
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
            let path = ws.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).unwrap();
            }
            std::fs::write(path, content).unwrap();
        }
        Dirs {
            tmp,
            base,
            ws,
            home,
            state,
        }
    }

    /// The temporary directory's path as it was made: [`Dirs::base`] before it was made
    /// canonical.
    pub fn made_at(&self) -> &Path {
        self.tmp.path()
    }

    /// `name` beside the workspace.
    pub fn path(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }

    /// `program` run from the workspace with HOME and the state directory here and no
    /// `XDG_CONFIG_HOME`: nothing it does reaches the real HOME's spear state or configuration.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.ws)
            .env("HOME", &self.home)
            .env("XDG_STATE_HOME", &self.state)
            .env_remove("XDG_CONFIG_HOME");
        cmd
    }

    /// What a server started by a test logged (its stderr, kept in `server.log` beside the
    /// workspace); empty when nothing was.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.base.join("server.log")).unwrap_or_default()
    }

    /// Where a server's log ([`Dirs::log`]) is kept.
    pub fn log_path(&self) -> PathBuf {
        self.base.join("server.log")
    }
}
