//! The host state one call of spear depends on, read once and passed explicitly.
//!
//! A front end takes a [`HostSnapshot`] of its process in `main` (or receives one with a call it
//! serves for another process) and every decision that depends on the host's environment or
//! current directory reads it from there. Nothing below the front end reads `std::env` for a
//! call: the same snapshot gives the same workspace, configuration and sandbox whichever process
//! evaluates it.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The environment and the current directory of the process a call comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSnapshot {
    env: Vec<(OsString, OsString)>,
    cwd: Result<PathBuf, String>,
}

impl HostSnapshot {
    /// This process's environment and current directory, as they are now.
    pub fn of_process() -> Self {
        HostSnapshot {
            env: std::env::vars_os().collect(),
            cwd: std::env::current_dir().map_err(|e| e.to_string()),
        }
    }

    /// A snapshot of the given environment and current directory (`Err` holds why the
    /// directory is unusable).
    pub fn new(env: Vec<(OsString, OsString)>, cwd: Result<PathBuf, String>) -> Self {
        HostSnapshot { env, cwd }
    }

    /// The environment, in the order it was read.
    pub fn env(&self) -> &[(OsString, OsString)] {
        &self.env
    }

    /// The value of `name`, as `getenv` would give it (the first entry of that name).
    pub fn var_os(&self, name: &str) -> Option<&OsStr> {
        self.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_os_str())
    }

    /// The value of `name` when it is set and valid UTF-8.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.var_os(name).and_then(OsStr::to_str)
    }

    /// The current directory, or why it cannot be used.
    pub fn cwd(&self) -> Result<&Path, &str> {
        self.cwd.as_deref().map_err(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_is_its_first_entry_and_unset_is_none() {
        let snap = HostSnapshot::new(
            vec![
                ("A".into(), "1".into()),
                ("B".into(), "2".into()),
                ("A".into(), "3".into()),
            ],
            Ok(PathBuf::from("/w")),
        );
        assert_eq!(snap.var("A"), Some("1"));
        assert_eq!(snap.var("B"), Some("2"));
        assert_eq!(snap.var("C"), None);
        assert_eq!(snap.cwd(), Ok(Path::new("/w")));
        let gone = HostSnapshot::new(Vec::new(), Err("deleted".into()));
        assert_eq!(gone.cwd(), Err("deleted"));
    }
}
