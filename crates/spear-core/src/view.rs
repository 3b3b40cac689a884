//! What every sandbox shows of the host, as the decision layer needs to know it.
//!
//! The runtime computes the real view from the same functions that build each sandbox
//! (`spear_runtime::sandbox_view`), so the decision layer and the mounts cannot disagree about
//! what a path names inside the sandbox. [`SandboxView::conservative`] is what a policy assumes
//! when nobody told it more.

use std::path::{Path, PathBuf};

/// The `TMPDIR` every sandbox starts with: its private `/tmp`. The sandbox's environment sets it
/// and no operator setting passes another, so the decision layer may expand `$TMPDIR` to it.
pub const SANDBOX_TMPDIR: &str = "/tmp";

/// The host paths a sandbox shows, the places it keeps private, and the environment it starts
/// with.
///
/// Guarantees: a path under [`SandboxView::shown`] is the host's own content, read-only, in every
/// sandbox (reading it binds nothing more); a path under [`SandboxView::private`] and under no
/// shown path is the sandbox's own writable place (a tmpfs): what is written there never reaches
/// the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxView {
    /// The operator's home directory: the sandbox mounts a private tmpfs at its real path.
    pub home: Option<PathBuf>,
    /// Host paths bound read-only at the same path in every sandbox: the system directories, the
    /// curated `/etc` entries, the toolchain binds (and `/proc`, the sandbox's own).
    pub shown: Vec<PathBuf>,
    /// Credential files and directories inside shown paths that the sandbox masks (an empty file
    /// or an empty directory at that path): a registry token in a toolchain's configuration,
    /// `.git-credentials` at any depth of a bound tree.
    pub masked: Vec<PathBuf>,
    /// The sandbox's private writable places: `/tmp`, `/dev/shm`, the home directory.
    pub private: Vec<PathBuf>,
    /// Names of the variables every sandbox's environment holds when a command starts.
    pub environment: Vec<String>,
}

/// The system directories that every sandbox shows (or its own `/proc`).
const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
];

/// The variables the sandbox's environment is built from (see `spear_sandbox::sandbox_env`).
const ENVIRONMENT: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "TERM",
    "PAGER",
    "GIT_PAGER",
    "GIT_OPTIONAL_LOCKS",
    "LANG",
    "LANGUAGE",
    "TZ",
    "USER",
    "LOGNAME",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "GOROOT",
    "GOPATH",
    "JAVA_HOME",
    "NVM_DIR",
];

impl SandboxView {
    /// What a policy assumes without the runtime's view: the system directories shown, `/tmp`,
    /// `/dev/shm` and the home directory private, the built-in environment names. Nothing under
    /// the home directory is shown, so toolchain trees there are out of scope until the runtime
    /// says they are bound.
    pub fn conservative(home: Option<PathBuf>) -> Self {
        let mut private = vec![PathBuf::from("/tmp"), PathBuf::from("/dev/shm")];
        private.extend(home.iter().cloned());
        SandboxView {
            home,
            shown: SYSTEM.iter().map(PathBuf::from).collect(),
            masked: Vec::new(),
            private,
            environment: ENVIRONMENT.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    /// Whether `path` (absolute, normalised) lies at or under a path the sandbox shows from the
    /// host.
    pub fn shows(&self, path: &Path) -> bool {
        self.shown.iter().any(|s| path.starts_with(s))
    }

    /// Whether `path` (absolute, normalised) is or lies in a credential file or directory the
    /// sandbox masks.
    pub fn masks(&self, path: &Path) -> bool {
        self.masked.iter().any(|m| path.starts_with(m))
    }

    /// Whether `path` (absolute, normalised) lies in one of the sandbox's private places and under
    /// no shown path: a write there lands in the sandbox's own tmpfs.
    pub fn is_private(&self, path: &Path) -> bool {
        self.private.iter().any(|p| path.starts_with(p)) && !self.shows(path)
    }

    /// Whether `path` lies in the private home directory (the home itself included).
    pub fn in_home(&self, path: &Path) -> bool {
        self.home.as_ref().is_some_and(|h| path.starts_with(h))
    }

    /// Whether a variable named `name` is in the environment a command starts with.
    pub fn has_variable(&self, name: &str) -> bool {
        self.environment.iter().any(|n| n == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conservative_view() {
        let v = SandboxView::conservative(Some(PathBuf::from("/home/u")));
        assert!(v.shows(Path::new("/usr/include/stdio.h")));
        assert!(!v.shows(Path::new("/home/u/.cargo")));
        assert!(v.is_private(Path::new("/tmp/x")));
        assert!(v.is_private(Path::new("/dev/shm/x")));
        assert!(v.is_private(Path::new("/home/u/x")));
        assert!(!v.is_private(Path::new("/var/tmp/x")));
        assert!(!v.is_private(Path::new("/tmpx")));
        assert!(v.has_variable("PATH"));
        assert!(!v.has_variable("LINE"));
    }

    #[test]
    fn a_shown_path_is_not_private() {
        let mut v = SandboxView::conservative(Some(PathBuf::from("/home/u")));
        v.shown.push(PathBuf::from("/home/u/.cargo"));
        assert!(!v.is_private(Path::new("/home/u/.cargo/registry/x")));
        assert!(v.is_private(Path::new("/home/u/.cargo-other")));
    }
}
