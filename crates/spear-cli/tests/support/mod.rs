//! What the CLI's test binaries share: a workspace, and a HOME and state directory beside it
//! (never inside: spear refuses a workspace that holds either).

#![allow(dead_code)]

use std::path::PathBuf;

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
        let tmp = tempfile::tempdir().unwrap();
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

    /// `name` beside the workspace.
    pub fn path(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }

    /// What a server started by a test logged (its stderr, kept in `server.log`).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.base.join("server.log")).unwrap_or_default()
    }
}
