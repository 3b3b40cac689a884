//! Whether bubblewrap can make its namespaces on this host: one real `bwrap --unshare-all ...
//! /bin/true`, for `spear doctor` and for `[sandbox] backend = "auto"`.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::layout::system_dirs;
use crate::spec::SystemDir;

/// The bwraps that made their namespaces here once: the kernel's answer does not change while
/// spear runs, so a success is not asked again (every session's sandbox asks at its first use).
static USABLE: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// Tries a real user namespace through bwrap, and reads the sysctls that commonly forbid it. A
/// success is remembered for the process; a failure is asked again next time.
///
/// The probe binds only the system directories `/bin/true` needs (as a sandbox does), never `/`
/// itself: a recursive bind of `/` remounts every mount of the host one by one, and one that
/// goes meanwhile (a template session's copy unmounted as its session ends) fails it, which
/// would have a busy node's next session find "no sandbox backend" and run nothing.
pub(crate) fn probe(bwrap: &Path) -> Result<String, (String, String)> {
    let max = read("/proc/sys/user/max_user_namespaces");
    let known = USABLE
        .lock()
        .is_ok_and(|set| set.as_ref().is_some_and(|s| s.contains(bwrap)));
    if known {
        return Ok(usable(max.as_deref()));
    }
    let out = Command::new(bwrap)
        .args(probe_args(Path::new("/")))
        .output();
    if out.as_ref().is_ok_and(|o| o.status.success())
        && let Ok(mut set) = USABLE.lock()
    {
        set.get_or_insert_with(HashSet::new)
            .insert(bwrap.to_owned());
    }
    match out {
        Ok(o) if o.status.success() => Ok(usable(max.as_deref())),
        Ok(o) => {
            let said = String::from_utf8_lossy(&o.stderr).trim().to_owned();
            // Which of the host's settings (a container runtime's, often) is the cause, and
            // the line that fixes it.
            Err(crate::container::diagnose(
                &said,
                &crate::container::HostFacts::read(),
            ))
        }
        Err(e) => Err((
            format!("bwrap could not be run: {e}"),
            "install bubblewrap".to_owned(),
        )),
    }
}

/// A sysctl's value, trimmed.
fn read(path: &str) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_owned())
}

/// What a working probe reports.
fn usable(max: Option<&str>) -> String {
    format!(
        "a user namespace can be created (user.max_user_namespaces = {})",
        max.unwrap_or("?")
    )
}

/// The probe's bwrap arguments for the host whose root is `root`: the namespaces every sandbox
/// has, the system directories read-only (no recursive bind of `/`), a fresh `/proc` and `/dev`,
/// and `/bin/true`. Pure but
/// for reading which of `root`'s system entries are links.
fn probe_args(root: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["--unshare-all", "--unshare-user", "--disable-userns"]
        .iter()
        .map(OsString::from)
        .collect();
    for dir in system_dirs(root) {
        match dir {
            SystemDir::Bind(path) => {
                args.extend(["--ro-bind".into(), path.clone().into(), path.into()]);
            }
            SystemDir::Symlink { path, target } => {
                args.extend(["--symlink".into(), target.into(), path.into()]);
            }
        }
    }
    // A fresh /proc and /dev, as every sandbox has: a masked /proc refuses the first.
    args.extend(["--proc", "/proc", "--dev", "/dev"].map(OsString::from));
    args.extend(["--".into(), "/bin/true".into()]);
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_binds_the_system_directories_and_never_the_whole_root() {
        let args = probe_args(Path::new("/"));
        let text: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(
            text.windows(3).any(|w| w == ["--ro-bind", "/usr", "/usr"]),
            "{text:?}"
        );
        for (i, arg) in text.iter().enumerate() {
            if arg == "--ro-bind" || arg == "--bind" {
                assert_ne!(text[i + 1], "/", "the whole root is bound: {text:?}");
            }
        }
        assert_eq!(&text[text.len() - 2..], ["--", "/bin/true"]);
    }

    #[test]
    fn the_probe_runs_on_this_host_and_its_success_is_remembered() {
        let bwrap = Path::new("/usr/bin/bwrap");
        let first = probe(bwrap);
        assert!(first.is_ok(), "{first:?}");
        assert!(USABLE.lock().unwrap().as_ref().unwrap().contains(bwrap));
        assert_eq!(probe(bwrap), first);
        // A bwrap that cannot run is never remembered as usable.
        let missing = Path::new("/nonexistent/bwrap");
        assert!(probe(missing).is_err());
        assert!(!USABLE.lock().unwrap().as_ref().unwrap().contains(missing));
    }
}
