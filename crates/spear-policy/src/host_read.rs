//! Vetting of reads outside the workspace roots, against what the sandbox shows.
//!
//! The sandbox is the boundary: a read of what every sandbox already shows (the system
//! directories, the curated `/etc`, the toolchain binds, its own `/proc`, `/dev`, `/tmp` and home)
//! needs nothing and binds nothing. A command that names another absolute path under no root needs
//! `host:read`, which binds that path read-only into its sandbox. Refused whatever the mode:
//! - credential stores (`.ssh`, `.gnupg`, `.aws`, `shadow`, `id_*`, cargo's `credentials.toml`,
//!   ...), also under a shown toolchain tree, and every file the sandbox masks inside a shown tree
//!   (a configuration file that holds a token, `.git-credentials` at any depth,
//!   [`SandboxView::masked`]): attack stopped, key and token theft;
//! - another project: a host path under the home directory that the sandbox does not show and that
//!   exists on the host (`~/other-checkout/x`), unless the operator named it;
//! - device nodes other than the standard ones: raw disks and memory;
//! - spear's own state directory (its audit log, checkpoints, and the `spear approve` sockets,
//!   through which a command could otherwise approve its own pending calls).
//!
//! A mount point of the sandbox and its ancestors (`/`, `/etc`, `/home`, a root's parents) are
//! never bound: reading one reads the sandbox's own view of it, which needs nothing.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub(crate) use spear_core::credentials::{is_credential_store, names_credential_store};
use spear_core::{Refusal, SandboxView};

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

/// Whether something exists at a host path (not following a final link).
pub(crate) type Exists = fn(&Path) -> bool;

fn host_has(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// The host paths the decision layer knows about: what the sandbox shows and keeps private, the
/// paths the operator named, and the sandbox's own mount points.
#[derive(Debug, Clone)]
pub(crate) struct HostView {
    sandbox: SandboxView,
    named: Vec<PathBuf>,
    /// Mount points and all their ancestors.
    reserved: HashSet<PathBuf>,
    exists: Exists,
    /// spear's state directory, never read.
    state: Option<PathBuf>,
    /// The operator's secret files, never read.
    secrets: Vec<PathBuf>,
}

impl HostView {
    /// `mount_points` are the roots' host and mount paths; the fixed sandbox mount points are added.
    pub(crate) fn new(sandbox: SandboxView, named: Vec<PathBuf>, mount_points: &[PathBuf]) -> Self {
        Self::with_lookup(sandbox, named, mount_points, host_has)
    }

    /// As [`HostView::new`], with the host looked at through `exists` (a table in tests).
    pub(crate) fn with_lookup(
        sandbox: SandboxView,
        named: Vec<PathBuf>,
        mount_points: &[PathBuf],
        exists: Exists,
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
            .chain(sandbox.home.iter().cloned())
            .chain(sandbox.private.iter().cloned())
            .chain(mount_points.iter().cloned());
        for point in points {
            for ancestor in point.ancestors() {
                reserved.insert(ancestor.to_path_buf());
            }
        }
        HostView {
            sandbox,
            named,
            reserved,
            exists,
            state: None,
            secrets: Vec::new(),
        }
    }

    /// The same view, refusing every path inside spear's state directory `state`, and the
    /// operator's `secrets` (a listening server's TLS key).
    #[must_use]
    pub(crate) fn hiding(mut self, state: Option<PathBuf>, secrets: Vec<PathBuf>) -> Self {
        self.state = state;
        self.secrets = secrets;
        self
    }

    /// What the sandbox shows and keeps private.
    pub(crate) fn sandbox(&self) -> &SandboxView {
        &self.sandbox
    }

    /// Vets a read of `path`, an absolute, lexically normalised host path under no root.
    pub(crate) fn vet(&self, path: &Path, shown: &str) -> HostRead {
        if is_credential_store(path) || self.sandbox.masks(path) {
            return HostRead::Refused(Refusal::credential_store(shown));
        }
        if self.state.as_ref().is_some_and(|s| path.starts_with(s)) {
            return HostRead::Refused(Refusal::spear_state(shown));
        }
        // A directory that holds one is read as the sandbox shows it: the runner masks the
        // secret in every bind.
        if self.secrets.iter().any(|s| path.starts_with(s)) {
            return HostRead::Refused(Refusal::credential_store(shown));
        }
        if path.starts_with("/dev") {
            // `/dev` and `/dev/shm` themselves are the sandbox's own (listing them binds nothing).
            return if is_standard_device(path)
                || path == Path::new("/dev")
                || self.sandbox.is_private(path)
            {
                HostRead::Visible
            } else {
                HostRead::Refused(Refusal::kernel_or_device(shown))
            };
        }
        if self.is_named(path) {
            return HostRead::Needs;
        }
        // What every sandbox shows, and the directories leading to it (`~/.rustup` above a
        // shown `~/.rustup/toolchains`, `/home` above the home): nothing to bind.
        if self.sandbox.shows(path) || self.sandbox.shown.iter().any(|s| s.starts_with(path)) {
            return HostRead::Visible;
        }
        if self.sandbox.in_home(path) && self.other_project(path) {
            return HostRead::Refused(Refusal::project_scope(shown));
        }
        if self.sandbox.is_private(path) || self.reserved.contains(path) {
            return HostRead::Visible;
        }
        HostRead::Needs
    }

    /// Vets the root of a search (`find`, `grep -r`, `rg`) outside the roots: what the sandbox
    /// shows is searched as it is; elsewhere a search is refused unless the operator named the path.
    pub(crate) fn vet_search(&self, path: &Path, shown: &str) -> HostRead {
        match self.vet(path, shown) {
            HostRead::Refused(r) => HostRead::Refused(r),
            HostRead::Visible => HostRead::Visible,
            HostRead::Needs if self.is_named(path) => HostRead::Needs,
            HostRead::Needs => HostRead::Refused(Refusal::project_scope(shown)),
        }
    }

    /// Whether `path` under the home directory names something of the host that the sandbox does
    /// not show: its first component below the home exists on the host (`~/other-checkout`,
    /// `~/.cache`). The sandbox's home is a private tmpfs; naming one of those means the host's,
    /// which is another project.
    fn other_project(&self, path: &Path) -> bool {
        let Some(home) = &self.sandbox.home else {
            return false;
        };
        let Ok(rest) = path.strip_prefix(home) else {
            return false;
        };
        match rest.components().next() {
            Some(first) => (self.exists)(&home.join(first)),
            None => false,
        }
    }

    /// Whether the operator named `path` (or a directory holding it) as a host-read path.
    pub(crate) fn is_named_path(&self, path: &Path) -> bool {
        self.is_named(path)
    }

    /// Whether something exists at `path` on the host.
    pub(crate) fn host_has(&self, path: &Path) -> bool {
        (self.exists)(path)
    }

    fn is_named(&self, path: &Path) -> bool {
        self.named.iter().any(|n| path.starts_with(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spear_core::RefusalRule;

    /// What exists on the fake host under the home directory.
    fn exists(path: &Path) -> bool {
        [
            "/home/u/other",
            "/home/u/.cache",
            "/home/u/.cargo",
            "/home/u/notes",
        ]
        .iter()
        .any(|p| path == Path::new(p))
    }

    fn view() -> HostView {
        let mut sandbox = SandboxView::conservative(Some("/home/u".into()));
        sandbox.shown.extend([
            PathBuf::from("/home/u/.cargo"),
            PathBuf::from("/home/u/.rustup/toolchains"),
            PathBuf::from("/etc/passwd"),
        ]);
        HostView::with_lookup(
            sandbox,
            vec!["/opt/data".into(), "/home/u/notes".into()],
            &["/home/u/proj".into(), "/workspace".into()],
            exists,
        )
    }

    fn outcome(path: &str) -> Result<bool, RefusalRule> {
        match view().vet(Path::new(path), path) {
            HostRead::Visible => Ok(false),
            HostRead::Needs => Ok(true),
            HostRead::Refused(r) => Err(r.rule()),
        }
    }

    fn search(path: &str) -> Result<bool, RefusalRule> {
        match view().vet_search(Path::new(path), path) {
            HostRead::Visible => Ok(false),
            HostRead::Needs => Ok(true),
            HostRead::Refused(r) => Err(r.rule()),
        }
    }

    /// spear's state directory is refused even inside a path the operator named, for reads and
    /// searches; what is beside it stays as it was.
    #[test]
    fn the_operators_secrets_are_never_read() {
        let v = view().hiding(None, vec!["/opt/data/tls/node.key".into()]);
        for (path, refused) in [
            ("/opt/data/tls/node.key", true),
            // Positive controls: its certificate beside it, its directory (bound with the key
            // masked in it), and a name that only starts the same.
            ("/opt/data/tls/node.crt", false),
            ("/opt/data/tls", false),
            ("/opt/data/tls/node.key.pub", false),
        ] {
            for got in [
                v.vet(Path::new(path), path),
                v.vet_search(Path::new(path), path),
            ] {
                match got {
                    HostRead::Refused(r) => {
                        assert!(refused, "{path}: {r:?}");
                        assert_eq!(r.rule(), RefusalRule::CredentialStore, "{path}");
                    }
                    other => assert!(!refused, "{path}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn the_state_directory_is_never_read() {
        let v = view().hiding(Some("/opt/data/state/spear".into()), Vec::new());
        for (path, refused) in [
            ("/opt/data/state/spear", true),
            ("/opt/data/state/spear/audit.jsonl", true),
            ("/opt/data/state/spear/approve/12.sock", true),
            // Positive controls: beside it, and a name that only starts the same.
            ("/opt/data/state/other", false),
            ("/opt/data/state/spearx", false),
            ("/opt/data/x.csv", false),
        ] {
            for got in [
                v.vet(Path::new(path), path),
                v.vet_search(Path::new(path), path),
            ] {
                match got {
                    HostRead::Refused(r) => {
                        assert!(refused, "{path}: {r:?}");
                        assert_eq!(r.rule(), RefusalRule::SpearState, "{path}");
                        assert_eq!(r.subject(), path);
                    }
                    other => assert!(!refused, "{path}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn table() {
        use RefusalRule::{CredentialStore as C, KernelOrDevice as K, ProjectScope as P};
        for (path, expected) in [
            ("/etc/os-release", Ok(true)),
            ("/etc/passwd", Ok(false)),
            ("/etc/shadow", Err(C)),
            ("/etc/gshadow", Err(C)),
            ("/etc/sudoers.d/x", Err(C)),
            ("/etc/ssh/ssh_host_ed25519_key", Err(C)),
            ("/home/u/.ssh/id_rsa", Err(C)),
            ("/root/.aws/credentials", Err(C)),
            ("/srv/x/.git-credentials", Err(C)),
            ("/home/u/.config/gh/hosts.yml", Err(C)),
            ("/home/u/.cargo/credentials.toml", Err(C)),
            ("/home/u/.cargo/registry/src/x/lib.rs", Ok(false)),
            ("/home/u/.rustup/toolchains", Ok(false)),
            ("/home/u/.rustup", Ok(false)),
            // The sandbox's own view of its mount points binds nothing.
            ("/", Ok(false)),
            ("/etc", Ok(false)),
            ("/usr", Ok(false)),
            ("/proc", Ok(false)),
            ("/dev", Ok(false)),
            ("/tmp", Ok(false)),
            ("/home", Ok(false)),
            ("/home/u", Ok(false)),
            ("/workspace", Ok(false)),
            ("/workspaces", Ok(false)),
            ("/usr/include/stdio.h", Ok(false)),
            ("/proc/cpuinfo", Ok(false)),
            ("/dev/null", Ok(false)),
            ("/dev/urandom", Ok(false)),
            ("/dev/fd/0", Ok(false)),
            ("/dev/shm", Ok(false)),
            ("/dev/shm/x", Ok(false)),
            ("/dev/sda", Err(K)),
            ("/dev/mem", Err(K)),
            ("/home/u/other/x.txt", Err(P)),
            ("/home/u/.cache/pip/x", Err(P)),
            ("/home/u/new-scratch/x", Ok(false)),
            ("/home/u/notes/todo.md", Ok(true)),
            ("/opt/data/x.csv", Ok(true)),
            ("/opt/other", Ok(true)),
            ("/tmp/out.txt", Ok(false)),
            ("/var/tmp/out.txt", Ok(true)),
        ] {
            assert_eq!(outcome(path), expected, "{path}");
        }
    }

    /// What the sandbox masks inside a shown tree (a configuration file that holds a token, a
    /// credential file at any depth) is refused as a credential store, for reads and searches; a
    /// file beside it, and the same file when the sandbox does not mask it (the positive
    /// control), is read with no capability.
    #[test]
    fn masked_files_are_credential_stores() {
        let masked = [
            "/home/u/.cargo/config.toml",
            "/home/u/.cargo/registry/src/i/x/.git-credentials",
            "/home/u/.cargo/registry/src/i/x/.cargo/config.toml",
            "/home/u/.cargo/git/.docker",
        ];
        let with = |masked: &[&str]| {
            let mut v = view();
            let mut sandbox = v.sandbox().clone();
            sandbox.masked = masked.iter().map(PathBuf::from).collect();
            v.sandbox = sandbox;
            v
        };
        let v = with(&masked);
        let plain = with(&[]);
        for (path, refused) in [
            ("/home/u/.cargo/config.toml", true),
            ("/home/u/.cargo/registry/src/i/x/.git-credentials", true),
            ("/home/u/.cargo/registry/src/i/x/.cargo/config.toml", true),
            ("/home/u/.cargo/git/.docker/config.json", true),
            ("/home/u/.cargo/config.toml.orig", false),
            ("/home/u/.cargo/registry/src/i/x/lib.rs", false),
            ("/home/u/.cargo/git/other", false),
        ] {
            for got in [
                v.vet(Path::new(path), path),
                v.vet_search(Path::new(path), path),
            ] {
                match got {
                    HostRead::Refused(r) => {
                        assert!(refused, "{path}: {r:?}");
                        assert_eq!(r.rule(), RefusalRule::CredentialStore, "{path}");
                    }
                    HostRead::Visible => assert!(!refused, "{path}"),
                    HostRead::Needs => panic!("{path}: shown, nothing to bind"),
                }
            }
            // Stores refused by their names need no mask to be refused; the rest do.
            if !is_credential_store(Path::new(path)) {
                assert_eq!(
                    plain.vet(Path::new(path), path),
                    HostRead::Visible,
                    "positive control: {path}"
                );
            }
        }
    }

    #[test]
    fn searches() {
        use RefusalRule::{CredentialStore as C, ProjectScope as P};
        for (path, expected) in [
            ("/opt/data/sub", Ok(true)),
            ("/usr/lib", Ok(false)),
            ("/usr/include", Ok(false)),
            ("/etc", Ok(false)),
            ("/", Ok(false)),
            ("/home/u", Ok(false)),
            ("/home/u/.cargo/registry", Ok(false)),
            ("/home/u/.ssh", Err(C)),
            ("/home/u/other", Err(P)),
            ("/srv", Err(P)),
            ("/var/tmp", Err(P)),
        ] {
            assert_eq!(search(path), expected, "{path}");
        }
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
