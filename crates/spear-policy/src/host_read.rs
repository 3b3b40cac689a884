//! Vetting of reads outside the workspace roots.
//!
//! A command that names an absolute path under no root needs `host:read`, which binds that path
//! read-only into its sandbox. Some paths are refused whatever the mode:
//! - credential stores (`.ssh`, `.gnupg`, `.aws`, `shadow`, `id_*`, ...): attack stopped, key and
//!   token theft;
//! - the sandbox's own mount points and their ancestors (`/`, `/proc`, `/dev`, `/usr`, `/etc`,
//!   `/tmp`, the home directory, `/workspace`, each root's parents): binding one would shadow the
//!   sandbox's own view or expose the whole host;
//! - device nodes other than the standard ones: raw disks and memory.
//!
//! Paths under `/usr`, `/bin`, `/lib*`, `/sbin` and `/proc`, and the standard devices, are visible in
//! every sandbox already and need nothing.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use spear_core::Refusal;
pub(crate) use spear_core::credentials::{is_credential_store, names_credential_store};

/// What a read of a host path outside the roots needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostRead {
    /// Visible in every sandbox; needs no capability.
    Visible,
    /// Needs `host:read` (the path is bound read-only).
    Needs,
    /// Refused in every mode.
    Refused(Refusal),
}

/// Standard devices every sandbox provides.
fn is_standard_device(path: &Path) -> bool {
    const DEVICES: &[&str] = &[
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/random",
        "/dev/urandom",
        "/dev/tty",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/ptmx",
    ];
    DEVICES.iter().any(|d| path == Path::new(d))
        || ["/dev/fd/", "/dev/pts/", "/dev/shm/"]
            .iter()
            .any(|p| path.starts_with(p) && path != Path::new(p.trim_end_matches('/')))
}

/// The host paths the decision layer knows about: home, named paths, and the sandbox's own mount
/// points.
#[derive(Debug, Clone)]
pub(crate) struct HostView {
    home: Option<PathBuf>,
    named: Vec<PathBuf>,
    /// Mount points and all their ancestors.
    reserved: HashSet<PathBuf>,
}

impl HostView {
    /// `mount_points` are the roots' host and mount paths; the fixed sandbox mount points are added.
    pub(crate) fn new(
        home: Option<PathBuf>,
        named: Vec<PathBuf>,
        mount_points: &[PathBuf],
    ) -> Self {
        let mut reserved = HashSet::new();
        let fixed = [
            "/",
            "/proc",
            "/dev",
            "/usr",
            "/etc",
            "/tmp",
            "/workspace",
            "/workspaces",
        ];
        let points = fixed
            .iter()
            .map(PathBuf::from)
            .chain(home.iter().cloned())
            .chain(mount_points.iter().cloned());
        for point in points {
            for ancestor in point.ancestors() {
                reserved.insert(ancestor.to_path_buf());
            }
        }
        HostView {
            home,
            named,
            reserved,
        }
    }

    /// Vets a read of `path`, an absolute, lexically normalised host path under no root.
    pub(crate) fn vet(&self, path: &Path, shown: &str) -> HostRead {
        if is_credential_store(path) {
            return HostRead::Refused(Refusal::credential_store(shown));
        }
        if self.reserved.contains(path) {
            return HostRead::Refused(Refusal::sandbox_mount_point(shown));
        }
        if path.starts_with("/dev") {
            return if is_standard_device(path) {
                HostRead::Visible
            } else {
                HostRead::Refused(Refusal::kernel_or_device(shown))
            };
        }
        let visible = [
            "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
        ];
        if visible.iter().any(|v| path.starts_with(v)) {
            return HostRead::Visible;
        }
        if self.is_named(path) {
            return HostRead::Needs;
        }
        if self.home.as_ref().is_some_and(|h| path.starts_with(h)) {
            return HostRead::Refused(Refusal::project_scope(shown));
        }
        HostRead::Needs
    }

    /// Vets the root of a search (`find`, `grep -r`, `rg`) outside the roots: refused unless the
    /// operator named the path.
    pub(crate) fn vet_search(&self, path: &Path, shown: &str) -> HostRead {
        match self.vet(path, shown) {
            HostRead::Refused(r) => HostRead::Refused(r),
            _ if self.is_named(path) => HostRead::Needs,
            _ => HostRead::Refused(Refusal::project_scope(shown)),
        }
    }

    fn is_named(&self, path: &Path) -> bool {
        self.named.iter().any(|n| path.starts_with(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spear_core::RefusalRule;

    fn view() -> HostView {
        HostView::new(
            Some("/home/u".into()),
            vec!["/opt/data".into(), "/home/u/notes".into()],
            &["/home/u/proj".into(), "/workspace".into()],
        )
    }

    fn outcome(path: &str) -> Result<bool, RefusalRule> {
        match view().vet(Path::new(path), path) {
            HostRead::Visible => Ok(false),
            HostRead::Needs => Ok(true),
            HostRead::Refused(r) => Err(r.rule()),
        }
    }

    #[test]
    fn table() {
        use RefusalRule::{
            CredentialStore as C, KernelOrDevice as K, ProjectScope as P, SandboxMountPoint as M,
        };
        for (path, expected) in [
            ("/etc/os-release", Ok(true)),
            ("/etc/shadow", Err(C)),
            ("/etc/gshadow", Err(C)),
            ("/etc/sudoers.d/x", Err(C)),
            ("/etc/ssh/ssh_host_ed25519_key", Err(C)),
            ("/home/u/.ssh/id_rsa", Err(C)),
            ("/root/.aws/credentials", Err(C)),
            ("/srv/x/.git-credentials", Err(C)),
            ("/home/u/.config/gh/hosts.yml", Err(C)),
            ("/", Err(M)),
            ("/etc", Err(M)),
            ("/usr", Err(M)),
            ("/proc", Err(M)),
            ("/dev", Err(M)),
            ("/tmp", Err(M)),
            ("/home", Err(M)),
            ("/home/u", Err(M)),
            ("/workspace", Err(M)),
            ("/workspaces", Err(M)),
            ("/usr/include/stdio.h", Ok(false)),
            ("/proc/cpuinfo", Ok(false)),
            ("/dev/null", Ok(false)),
            ("/dev/urandom", Ok(false)),
            ("/dev/fd/0", Ok(false)),
            ("/dev/sda", Err(K)),
            ("/dev/mem", Err(K)),
            ("/home/u/other/x.txt", Err(P)),
            ("/home/u/notes/todo.md", Ok(true)),
            ("/opt/data/x.csv", Ok(true)),
            ("/opt/other", Ok(true)),
            ("/tmp/out.txt", Ok(true)),
        ] {
            assert_eq!(outcome(path), expected, "{path}");
        }
    }

    #[test]
    fn searches_need_a_named_path() {
        let v = view();
        assert!(matches!(
            v.vet_search(Path::new("/opt/data/sub"), "x"),
            HostRead::Needs
        ));
        assert!(matches!(
            v.vet_search(Path::new("/usr/lib"), "x"),
            HostRead::Refused(_)
        ));
        assert!(matches!(
            v.vet_search(Path::new("/etc"), "x"),
            HostRead::Refused(_)
        ));
    }

    #[test]
    fn credential_names_in_patterns() {
        assert!(names_credential_store("link-*/.ssh/x"));
        assert!(names_credential_store("$D/id_rsa"));
        assert!(names_credential_store("$H/.config/gh/hosts.yml"));
        assert!(!names_credential_store("src/id_*.rs"));
        assert!(!names_credential_store("$OUT/main.rs"));
    }

    #[test]
    fn credential_components() {
        assert!(is_credential_store(Path::new("/x/.ssh")));
        assert!(is_credential_store(Path::new("/x/id_ed25519.pub")));
        assert!(!is_credential_store(Path::new("/x/ssh/config.txt")));
        assert!(!is_credential_store(Path::new("/x/identity.rs")));
    }
}
