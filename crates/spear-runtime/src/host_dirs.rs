//! The host directories spear reads from a call's environment ([`HostSnapshot`]) (`HOME`, `XDG_STATE_HOME`,
//! `XDG_CONFIG_HOME`), read in one place and in one normal form.
//!
//! Attack (and accident) stopped: a `HOME` spelled `/root/../root` or `/home/u/.` compared
//! lexically with a workspace root. `Path::starts_with` sees `/tmp/w/..` as inside `/tmp/w`, so one
//! check called a workspace "the holder of the home" while another refused the home as "not
//! absolute", and a credential mask computed from the raw spelling could miss the real directory.
//! Every caller gets the same answer: the plain absolute path, or one error that says what to do.
//!
//! A spelling with `.` or `..` is resolved as the kernel resolves it (symlinks included: the
//! parent of a symlink's target is what `cd "$HOME"` reaches), never folded lexically, which
//! could name another directory.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use crate::host::HostSnapshot;

/// A host directory variable that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostDirError {
    /// The variable names a relative path.
    #[error(
        "{name} is `{}`, which is not an absolute path; set {name} to the absolute path of the directory",
        value.display()
    )]
    Relative {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: PathBuf,
    },
    /// The variable is spelled with `.` or `..` and could not be resolved.
    #[error(
        "{name} is `{}`, spelled with `.` or `..`, and it cannot be resolved ({why}); set {name} to the directory's absolute path without `.` or `..`",
        value.display()
    )]
    Unresolvable {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: PathBuf,
        /// Why it could not be resolved.
        why: String,
    },
}

/// How a variable's value is spelled: what to do with it. Pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spelling {
    /// Empty or unset: no directory.
    Unset,
    /// Absolute, without `.`, `..`, doubled or trailing slashes: used as it is.
    Plain(PathBuf),
    /// Absolute, with `.`, `..` or redundant slashes: resolved on the host before any use.
    NeedsResolving(PathBuf),
    /// Not absolute.
    Relative(PathBuf),
}

/// Classifies `value` (pure).
pub fn spelling(value: Option<&OsStr>) -> Spelling {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return Spelling::Unset;
    };
    let path = PathBuf::from(value);
    if !path.is_absolute() {
        return Spelling::Relative(path);
    }
    let rebuilt: PathBuf = path.components().collect();
    let has_dots = path
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir));
    // `components()` drops a trailing `/.` and doubled slashes: compare the spelling itself.
    if has_dots || rebuilt.as_os_str() != path.as_os_str() {
        Spelling::NeedsResolving(path)
    } else {
        Spelling::Plain(path)
    }
}

/// The directory `value` of variable `name` names, in normal form: `None` when unset or empty.
/// `required_absolute` says whether a relative value is an error (`HOME`) or ignored (the XDG
/// variables, as the XDG specification says).
pub fn host_dir(
    name: &'static str,
    value: Option<&OsStr>,
    required_absolute: bool,
) -> Result<Option<PathBuf>, HostDirError> {
    match spelling(value) {
        Spelling::Plain(p) => Ok(Some(p)),
        Spelling::Relative(value) if required_absolute => {
            Err(HostDirError::Relative { name, value })
        }
        Spelling::Unset | Spelling::Relative(_) => Ok(None),
        Spelling::NeedsResolving(value) => match std::fs::canonicalize(&value) {
            Ok(resolved) => Ok(Some(resolved)),
            Err(e) => Err(HostDirError::Unresolvable {
                name,
                value,
                why: e.to_string(),
            }),
        },
    }
}

/// The snapshot's `HOME`, in normal form (`host_dir`).
pub fn host_home(host: &HostSnapshot) -> Result<Option<PathBuf>, HostDirError> {
    host_dir("HOME", host.var_os("HOME"), true)
}

/// The snapshot's `XDG_STATE_HOME`, in normal form; a relative one is ignored.
pub fn host_xdg_state_home(host: &HostSnapshot) -> Result<Option<PathBuf>, HostDirError> {
    host_dir("XDG_STATE_HOME", host.var_os("XDG_STATE_HOME"), false)
}

/// The snapshot's `XDG_CONFIG_HOME`, in normal form; a relative one is ignored.
pub fn host_xdg_config_home(host: &HostSnapshot) -> Result<Option<PathBuf>, HostDirError> {
    host_dir("XDG_CONFIG_HOME", host.var_os("XDG_CONFIG_HOME"), false)
}

/// spear's state directory (audit log, checkpoints, stored outputs, staging, the approval
/// sockets) for these values of `XDG_STATE_HOME` and `HOME`: `$XDG_STATE_HOME/spear`, else
/// `$HOME/.local/state/spear`; `None` when neither is absolute. Pure.
pub fn spear_state_dir(xdg_state_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    crate::checkpoint::state_base(xdg_state_home, home).map(|b| b.join("spear"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn spelling_table() {
        let p = PathBuf::from;
        let cases: &[(&str, Spelling)] = &[
            ("", Spelling::Unset),
            ("/root", Spelling::Plain(p("/root"))),
            ("/home/u", Spelling::Plain(p("/home/u"))),
            ("/", Spelling::Plain(p("/"))),
            (
                "/root/../root",
                Spelling::NeedsResolving(p("/root/../root")),
            ),
            ("/home/u/.", Spelling::NeedsResolving(p("/home/u/."))),
            ("/home/./u", Spelling::NeedsResolving(p("/home/./u"))),
            ("/home/u/", Spelling::NeedsResolving(p("/home/u/"))),
            ("//home//u", Spelling::NeedsResolving(p("//home//u"))),
            ("home/u", Spelling::Relative(p("home/u"))),
            ("./u", Spelling::Relative(p("./u"))),
            ("~", Spelling::Relative(p("~"))),
        ];
        for (value, expected) in cases {
            assert_eq!(&spelling(Some(OsStr::new(value))), expected, "{value:?}");
        }
        assert_eq!(spelling(None), Spelling::Unset);
    }

    #[test]
    fn dotted_spellings_resolve_to_the_real_directory() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(real.join("sub")).unwrap();
        for spelled in [
            format!("{}/.", real.display()),
            format!("{}/sub/..", real.display()),
            format!("{}/", real.display()),
            format!("{}/./sub/../", real.display()),
        ] {
            assert_eq!(
                host_dir("HOME", Some(OsStr::new(&spelled)), true).unwrap(),
                Some(real.clone()),
                "{spelled}"
            );
        }
        // Through a symlink, `..` is the parent of the link's target, as the kernel says.
        let elsewhere = real.join("a").join("b");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, real.join("link")).unwrap();
        let spelled = format!("{}/link/..", real.display());
        assert_eq!(
            host_dir("HOME", Some(OsStr::new(&spelled)), true).unwrap(),
            Some(real.join("a"))
        );
    }

    #[test]
    fn the_state_directory() {
        let p = |s: &str| Some(PathBuf::from(s));
        for (xdg, home, want) in [
            (p("/x"), p("/h"), p("/x/spear")),
            (None, p("/h"), p("/h/.local/state/spear")),
            (p("rel"), p("/h"), p("/h/.local/state/spear")),
            (None, None, None),
            (None, p("rel"), None),
        ] {
            assert_eq!(
                spear_state_dir(xdg.as_deref(), home.as_deref()),
                want,
                "{xdg:?} {home:?}"
            );
        }
    }

    #[test]
    fn errors_say_what_to_set() {
        let e = host_dir("HOME", Some(OsStr::new("/no/such/../dir")), true).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("HOME is `/no/such/../dir`"), "{text}");
        assert!(text.contains("without `.` or `..`"), "{text}");
        let e = host_dir("HOME", Some(OsStr::new("rel/home")), true).unwrap_err();
        assert!(e.to_string().contains("not an absolute path"), "{e}");
        // XDG variables that are relative are ignored, as the XDG specification says.
        assert_eq!(
            host_dir("XDG_STATE_HOME", Some(OsStr::new("rel")), false).unwrap(),
            None
        );
        // A plain HOME that does not exist is used as it is (the sandbox's home is a tmpfs).
        assert_eq!(
            host_dir("HOME", Some(OsStr::new("/nonexistent-home")), true).unwrap(),
            Some(PathBuf::from("/nonexistent-home"))
        );
    }
}
