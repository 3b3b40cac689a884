//! Where roots appear inside the sandbox.
//!
//! Host paths and mount paths are one addressing scheme: by default each root is mounted at its own
//! host path (identity), so a path means the same thing inside and outside the sandbox. Where that
//! is unsafe for some root, or the operator sets `SPEAR_SANDBOX_IDENTITY_MOUNT=0`, every root moves
//! to the fixed scheme: the primary at [`FIXED_PRIMARY_MOUNT`], the others under
//! [`FIXED_SECONDARY_MOUNTS`]`/<name>`. Both spellings are accepted everywhere and translated back
//! to host paths before containment is checked.

use std::path::{Path, PathBuf};

use crate::MountSchemeChoice;

/// Mount path of the primary root in the fixed scheme.
pub const FIXED_PRIMARY_MOUNT: &str = "/workspace";
/// Parent of the secondary roots' mount paths in the fixed scheme.
pub const FIXED_SECONDARY_MOUNTS: &str = "/workspaces";

/// The addressing scheme a workspace uses for all of its roots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MountScheme {
    /// Each root at its own host path.
    Identity,
    /// `/workspace` and `/workspaces/<name>`.
    Fixed,
}

/// Whether a root at canonical host path `root` can be mounted at its own path inside the sandbox.
///
/// Unsafe (so the fixed scheme is used) when the root is `/`, is or lies under a directory the
/// sandbox provides itself (`/usr`, `/bin`, `/sbin`, `/lib*`, `/etc`, `/proc`, `/dev`, `/sys`,
/// `/run`, `/boot`, `/workspace`, `/workspaces`), or is an ancestor of one of them: binding it
/// there would shadow or be shadowed by the sandbox's own mounts. Also unsafe when the path is not
/// valid UTF-8 or holds a control character, which bwrap argv and audit labels cannot carry
/// faithfully.
pub fn identity_mount_is_safe(root: &Path) -> bool {
    // Attack: a root whose name carries a newline or other control character could forge audit
    // lines or split a bwrap argument; a non-UTF-8 name cannot be shown faithfully at all.
    let Some(text) = root.to_str() else {
        return false;
    };
    if text.chars().any(char::is_control) {
        return false;
    }
    // Only canonical absolute paths qualify: no empty, `.` or `..` segment, no trailing slash.
    // Attack: `/home/u/../../etc` must not pass as a path "under /home".
    let Some(rest) = text.strip_prefix('/') else {
        return false;
    };
    if rest
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        // Includes `/` itself (one empty segment): binding a root at `/` would shadow the whole
        // sandbox.
        return false;
    }
    let top = rest.split('/').next().unwrap_or_default();
    // Attack: a root at (or under) a directory the sandbox provides itself would shadow the
    // sandbox's read-only system directories, or be shadowed by them.
    !is_sandbox_owned(top)
}

/// Whether a top-level directory name belongs to the sandbox's own layout.
fn is_sandbox_owned(top: &str) -> bool {
    const OWNED: &[&str] = &[
        "usr",
        "bin",
        "sbin",
        "etc",
        "proc",
        "dev",
        "sys",
        "run",
        "boot",
        "workspace",
        "workspaces",
    ];
    OWNED.contains(&top) || top.starts_with("lib")
}

/// The scheme for a set of canonical roots: fixed when the operator asks for it or when identity
/// mounting is unsafe for any root.
pub(crate) fn choose_scheme(choice: MountSchemeChoice, roots: &[PathBuf]) -> MountScheme {
    match choice {
        MountSchemeChoice::Fixed => MountScheme::Fixed,
        MountSchemeChoice::Auto => {
            if roots.iter().all(|r| identity_mount_is_safe(r)) {
                MountScheme::Identity
            } else {
                MountScheme::Fixed
            }
        }
    }
}

/// Where one root appears inside the sandbox under `scheme`.
pub(crate) fn mount_path_for(
    scheme: MountScheme,
    host_path: &Path,
    name: &str,
    primary: bool,
) -> PathBuf {
    match scheme {
        MountScheme::Identity => host_path.to_path_buf(),
        MountScheme::Fixed if primary => PathBuf::from(FIXED_PRIMARY_MOUNT),
        MountScheme::Fixed => Path::new(FIXED_SECONDARY_MOUNTS).join(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn identity_mount_is_safe_table() {
        let cases: &[(&str, bool)] = &[
            ("/home/u/project", true),
            ("/tmp/x", true),
            ("/srv/build", true),
            ("/opt/work", true),
            ("/home/u/usr", true),
            ("/home/u/workspace", true),
            ("/workspacesX", true),
            ("/li", true),
            ("/home/u/caf\u{e9}", true),
            ("/", false),
            ("", false),
            ("relative/dir", false),
            ("/usr", false),
            ("/usr/src/linux", false),
            ("/bin", false),
            ("/sbin/x", false),
            ("/lib", false),
            ("/lib64", false),
            ("/lib32/x", false),
            ("/libexec", false),
            ("/etc", false),
            ("/etc/nginx", false),
            ("/proc", false),
            ("/proc/self/cwd", false),
            ("/dev", false),
            ("/dev/shm/x", false),
            ("/sys", false),
            ("/run/user/1000", false),
            ("/boot", false),
            ("/workspace", false),
            ("/workspace/x", false),
            ("/workspaces", false),
            ("/workspaces/a", false),
            ("/home/u/../../etc", false),
            ("/home/./u", false),
            ("//home/u", false),
            ("/home/u/", false),
            ("/home/u\nx", false),
            ("/home/u\tx", false),
            ("/home/u\u{7f}x", false),
            ("/home/u\u{1b}[31m", false),
        ];
        for (path, want) in cases {
            assert_eq!(identity_mount_is_safe(Path::new(path)), *want, "{path:?}");
        }
    }

    #[test]
    fn identity_mount_is_unsafe_for_non_utf8() {
        let p = Path::new(OsStr::from_bytes(b"/home/u/\xff\xfe"));
        assert!(identity_mount_is_safe(Path::new("/home/u/ok")));
        assert!(!identity_mount_is_safe(p));
    }

    #[test]
    fn choose_scheme_table() {
        let safe = vec![PathBuf::from("/home/u/a"), PathBuf::from("/tmp/b")];
        let unsafe_one = vec![PathBuf::from("/home/u/a"), PathBuf::from("/usr/src")];
        let cases = [
            (MountSchemeChoice::Auto, &safe, MountScheme::Identity),
            (MountSchemeChoice::Auto, &unsafe_one, MountScheme::Fixed),
            (MountSchemeChoice::Fixed, &safe, MountScheme::Fixed),
            (MountSchemeChoice::Fixed, &unsafe_one, MountScheme::Fixed),
        ];
        for (choice, roots, want) in cases {
            assert_eq!(choose_scheme(choice, roots), want, "{choice:?} {roots:?}");
        }
    }

    #[test]
    fn mount_path_for_table() {
        let host = Path::new("/home/u/proj");
        let cases = [
            (MountScheme::Identity, true, "/home/u/proj"),
            (MountScheme::Identity, false, "/home/u/proj"),
            (MountScheme::Fixed, true, "/workspace"),
            (MountScheme::Fixed, false, "/workspaces/proj-2"),
        ];
        for (scheme, primary, want) in cases {
            assert_eq!(
                mount_path_for(scheme, host, "proj-2", primary),
                PathBuf::from(want),
                "{scheme:?} {primary}"
            );
        }
    }
}
