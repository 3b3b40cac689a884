//! The bubblewrap argv, built from a [`BwrapSpec`] by a pure function.
//!
//! Order matters, and it is this:
//! 1. Isolation flags: every namespace unshared (`--unshare-all --unshare-user`), no nested user
//!    namespaces (`--disable-userns`), killed with spear (`--die-with-parent`), a new session so
//!    the command cannot push keystrokes into the operator's terminal with TIOCSTI
//!    (`--new-session`), no capabilities, and an empty environment (`--clearenv`).
//! 2. The system: `/usr` read-only and the host's `/bin`, `/lib*`, `/sbin` as it lays them out;
//!    `--proc`, remounted read-only at once, a minimal `--dev` with a size-capped `/dev/shm`; the
//!    curated `/etc` entries. `/sys` is not there at all. A read-only `/proc` is what keeps a
//!    sandbox that runs as the host's uid 0 (spear run as root) from the host-global files there
//!    that only check the owner (`/proc/sys/kernel/core_pattern`, `/proc/sysrq-trigger`, ...):
//!    every write under `/proc` is refused with EROFS, whatever the uid.
//! 3. spear's git configuration (the host's identity only) read-only at
//!    [`crate::GIT_CONFIG_PATH`]. Then the private places: size-capped tmpfs mounts for `/tmp`,
//!    `/var/tmp` and the home directory, or, in a session, the session's own host directories
//!    bound read-write there ([`crate::ScratchDirs`]). They come before every bind below, so that
//!    a toolchain under the home directory or a root under `/tmp` is visible on top of them
//!    rather than hidden by them.
//! 4. Toolchains, then declared host-read paths, read-only (`--ro-bind-try`: one that vanished is
//!    simply absent). They come before the workspace so that a root nested under one of them keeps
//!    its own access (a writable root under a read-only `/opt` stays writable).
//! 5. The workspace roots, read-write only when the profile grants workspace writes, and then only
//!    as the staged view (see [`crate::Overlay`]): the overlay is mounted before bwrap starts, so
//!    the bind shows it, and every write lands in its upper layer, not on the host.
//! 6. Credential stores inside any bound directory masked. These come after every bind, so
//!    nothing bound later can uncover them.
//! 7. `--remount-ro /`: the root tmpfs itself is read-only, so nothing can be created at `/x`.
//! 8. The working directory, the environment, the seccomp program; then, apart from the options,
//!    the command. The spawner hands the options to bwrap on a file descriptor (`--args`), so
//!    their number and length never make bwrap fail to start.
//!
//! In network mode the sandbox's `/etc/resolv.conf` names slirp4netns's resolver, and bwrap reports
//! its child on `--info-fd`, and the command runs behind [`crate::spec::NETWORK_HOLD`], which says when
//! the sandbox is set up and waits for spear's "go" (see `network.rs`).
//!
//! The builder refuses, before anything runs: granted capabilities the sandbox does not implement
//! ([`spear_core::Capability::is_implemented_by_sandbox`]), the network
//! without a network path, a bind of a credential store or of a directory that
//! would cover the sandbox's own mount points, a root that holds the home directory, relative
//! paths, a writable root that is not staged (or a staging layer inside a root), a session
//! directory that overlaps anything else bound, and a secret-looking environment variable the
//! operator did not name exactly.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use spear_core::credentials::is_credential_store;

use crate::env::{SPEAR_OWNS, looks_secret};
use crate::spec::{
    BwrapSpec, Etc, GIT_CONFIG_PATH, INFO_CHILD_FD, Mask, NETWORK_HOLD, SpecError, SystemDir,
};

/// The bubblewrap invocation of a spec: its options, and the command they confine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BwrapArgv {
    /// Every option, in order (passed on a file descriptor with `--args`).
    pub options: Vec<OsString>,
    /// What runs after `--`: the network hold, if any, then the command.
    pub command: Vec<OsString>,
}

impl BwrapArgv {
    /// The options, `--`, and the command: the argv bwrap would get if it all were on its
    /// command line (for tests and logs).
    pub fn flat(&self) -> Vec<OsString> {
        let mut all = self.options.clone();
        all.push("--".into());
        all.extend(self.command.iter().cloned());
        all
    }
}

/// The sandbox's own mount points: a bind at or above one of them would replace or expose it.
const RESERVED: &[&str] = &[
    "/",
    "/usr",
    "/etc",
    "/proc",
    "/dev",
    "/tmp",
    "/var/tmp",
    "/run/spear",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
];

/// Builds the bubblewrap argv (without the bwrap program itself) for `spec`. Pure: no I/O.
pub fn build_argv(spec: &BwrapSpec) -> Result<BwrapArgv, SpecError> {
    validate(spec)?;
    let mut a = Argv::default();

    a.flags(&["--unshare-all", "--unshare-user", "--disable-userns"]);
    a.flags(&[
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--clearenv",
    ]);

    for dir in &spec.system {
        match dir {
            SystemDir::Bind(p) => a.pair("--ro-bind", p, p),
            SystemDir::Symlink { path, target } => a.pair("--symlink", target, path),
        }
    }
    a.flags(&["--proc", "/proc", "--remount-ro", "/proc", "--dev", "/dev"]);
    if let Some(gpu) = &spec.gpu {
        gpu_binds(&mut a, gpu);
    }
    a.tmpfs(spec.tmpfs.shm, Path::new("/dev/shm"));
    match &spec.etc {
        Etc::View { files, dirs } => {
            a.pair("--ro-bind", files, Path::new("/etc"));
            for dir in dirs {
                a.pair("--ro-bind-try", dir, dir);
            }
        }
        Etc::Entries(entries) => {
            for entry in entries {
                a.pair("--ro-bind-try", entry, entry);
            }
        }
    }

    if let (true, Some(net)) = (spec.profile.network(), &spec.network) {
        a.pair("--ro-bind", &net.resolv_conf, Path::new("/etc/resolv.conf"));
    }

    if let Some(file) = &spec.git_config {
        a.pair("--ro-bind", file, Path::new(GIT_CONFIG_PATH));
    }

    match &spec.scratch {
        None => {
            a.tmpfs(spec.tmpfs.tmp, Path::new("/tmp"));
            a.tmpfs(spec.tmpfs.tmp, Path::new("/var/tmp"));
            a.tmpfs(spec.tmpfs.home, &spec.home);
        }
        Some(dirs) => {
            a.pair("--bind", &dirs.tmp, Path::new("/tmp"));
            a.pair("--bind", &dirs.var_tmp, Path::new("/var/tmp"));
            a.pair("--bind", &dirs.home, &spec.home);
        }
    }

    for dir in spec.toolchains.iter().chain(spec.profile.host_read_paths()) {
        a.pair("--ro-bind-try", dir, dir);
    }

    let root_bind = if spec.profile.workspace_write() {
        "--bind"
    } else {
        "--ro-bind"
    };
    for root in &spec.roots {
        a.pair(root_bind, &root.host, &root.mount);
    }

    for mask in &spec.masks {
        match mask {
            Mask::File(p) => a.pair("--ro-bind", spec.mask_source(), p),
            Mask::Dir(p) => {
                a.one("--tmpfs", p);
                a.one("--remount-ro", p);
            }
        }
    }
    a.one("--remount-ro", Path::new("/"));

    if spec.profile.network() {
        a.0.push("--info-fd".into());
        a.0.push(INFO_CHILD_FD.to_string().into());
    }
    a.one("--chdir", &spec.cwd);
    for (name, value) in &spec.env {
        a.0.push("--setenv".into());
        a.0.push(name.clone());
        a.0.push(value.clone());
    }
    a.0.push("--seccomp".into());
    a.0.push(spec.seccomp_fd.to_string().into());
    let mut command: Vec<OsString> = Vec::new();
    if spec.profile.network() {
        command.extend(
            ["/bin/sh", "-c", NETWORK_HOLD, "spear-network-hold"]
                .iter()
                .map(OsString::from),
        );
    }
    command.extend(spec.command.iter().cloned());
    Ok(BwrapArgv {
        options: a.0,
        command,
    })
}

/// Every refusal of [`build_argv`], checked before any argument is written.
pub(crate) fn validate(spec: &BwrapSpec) -> Result<(), SpecError> {
    // Attack stopped: a capability granted but silently dropped, so that a command runs in a
    // sandbox other than the one the decision named (and a capability added later is refused
    // here until the sandbox implements it).
    let unimplemented = spec.profile.unimplemented();
    if !unimplemented.is_empty() {
        return Err(SpecError::Unimplemented(unimplemented));
    }
    if spec.profile.network() {
        let Some(net) = &spec.network else {
            return Err(SpecError::NetworkUnavailable);
        };
        absolute("the resolver file", &net.resolv_conf)?;
    }
    if spec.command.is_empty() {
        return Err(SpecError::EmptyCommand);
    }
    crate::exec_limits::check(&spec.command, &spec.env).map_err(SpecError::TooLarge)?;
    if spec.seccomp_fd < 3 {
        return Err(SpecError::SeccompFd(spec.seccomp_fd));
    }
    absolute("the working directory", &spec.cwd)?;
    absolute("the home directory", &spec.home)?;
    for dir in &spec.system {
        let (SystemDir::Bind(p) | SystemDir::Symlink { path: p, .. }) = dir;
        absolute("a system directory", p)?;
    }
    let entries = match &spec.etc {
        Etc::View { files, dirs } => {
            absolute("the /etc view", files)?;
            no_credentials(files)?;
            not_covering(files, &[])?;
            dirs.as_slice()
        }
        Etc::Entries(entries) => entries.as_slice(),
    };
    for entry in entries {
        absolute("an /etc entry", entry)?;
        if !entry.starts_with("/etc") || entry == Path::new("/etc") {
            return Err(SpecError::Reserved {
                path: entry.clone(),
                covers: PathBuf::from("/etc"),
            });
        }
        no_credentials(entry)?;
    }
    let reserved_home = [spec.home.as_path()];
    for dir in spec.toolchains.iter().chain(spec.profile.host_read_paths()) {
        absolute("a read-only bind", dir)?;
        no_credentials(dir)?;
        not_covering(dir, &reserved_home)?;
    }
    for root in &spec.roots {
        absolute("a workspace root", &root.host)?;
        absolute("a workspace mount point", &root.mount)?;
        for p in [&root.host, &root.mount] {
            no_credentials(p)?;
            if spec.home.starts_with(p) {
                return Err(SpecError::RootCoversHome(p.clone()));
            }
            not_covering(p, &[])?;
        }
    }
    let bound: Vec<&Path> = spec
        .roots
        .iter()
        .map(|r| r.mount.as_path())
        .chain(spec.toolchains.iter().map(PathBuf::as_path))
        .chain(spec.profile.host_read_paths().iter().map(PathBuf::as_path))
        .chain(spec.system.iter().filter_map(|d| match d {
            SystemDir::Bind(p) => Some(p.as_path()),
            SystemDir::Symlink { .. } => None,
        }))
        .collect();
    staging(spec)?;
    scratch(spec)?;
    if let Some(file) = &spec.git_config {
        absolute("the git configuration", file)?;
        no_credentials(file)?;
    }
    if let Some(file) = &spec.empty_file {
        absolute("the empty file of masks", file)?;
        no_credentials(file)?;
    }
    for entry in spec.masks.iter().map(Mask::path) {
        absolute("a mask", entry)?;
        // A mask may hide a bind whole: a host-read file that holds a secret.
        if !bound.iter().any(|b| entry.starts_with(b)) {
            return Err(SpecError::Unbound(entry.to_path_buf()));
        }
    }
    // What spear sets itself (paths it chose: the sandbox's home, the working directory) is not
    // judged by its shape: a directory of random-looking name is no secret, and refusing every
    // command run there would be a refusal no mechanism needs.
    if let Some((name, _)) = spec.env.iter().find(|(n, v)| {
        looks_secret(n, v)
            && !spec.env_named.contains(n)
            && !n.to_str().is_some_and(|n| SPEAR_OWNS.contains(&n))
    }) {
        return Err(SpecError::SecretInEnvironment(
            name.to_string_lossy().into_owned(),
        ));
    }
    Ok(())
}

/// Attack stopped: a write that reaches the host before it is judged. A writable profile binds
/// every root only as its staged view, one overlay per root, whose layers lie outside every root
/// (a layer inside a root would let the command write its own staging); a read-only profile
/// stages nothing.
/// An operator's GPU grant: exactly the chosen device nodes, on bwrap's minimal /dev, and the
/// driver's files read-only (already bound when under a system directory; a second read-only
/// bind changes nothing).
fn gpu_binds(a: &mut Argv, gpu: &crate::GpuBinds) {
    for node in &gpu.devices {
        a.pair("--dev-bind", node, node);
    }
    for file in &gpu.driver {
        a.pair("--ro-bind-try", file, file);
    }
}

fn staging(spec: &BwrapSpec) -> Result<(), SpecError> {
    if !spec.profile.workspace_write() {
        return match spec.staged.first() {
            Some(o) => Err(SpecError::Staging(format!(
                "`{}` is staged in a read-only profile",
                o.lower.display()
            ))),
            None => Ok(()),
        };
    }
    for root in &spec.roots {
        let n = spec.staged.iter().filter(|o| o.lower == root.host).count();
        if n != 1 {
            return Err(SpecError::Staging(format!(
                "the writable root `{}` has {n} staging layers, not one",
                root.host.display()
            )));
        }
    }
    for o in &spec.staged {
        absolute("a staged root", &o.lower)?;
        absolute("a staging layer", &o.upper)?;
        absolute("a staging layer", &o.work)?;
        if !spec.roots.iter().any(|r| r.host == o.lower) {
            return Err(SpecError::Staging(format!(
                "`{}` is staged but is not a root",
                o.lower.display()
            )));
        }
        for layer in [&o.upper, &o.work] {
            if let Some(r) = spec
                .roots
                .iter()
                .find(|r| layer.starts_with(&r.host) || r.host.starts_with(layer))
            {
                return Err(SpecError::Staging(format!(
                    "the staging layer `{}` overlaps the root `{}`",
                    layer.display(),
                    r.host.display()
                )));
            }
        }
    }
    Ok(())
}

/// Attack stopped: a write to the host that is never judged. A session directory is bound
/// read-write without staging, so it must hold nothing but the session's own files: it may not
/// lie inside, or hold, a root, a staging layer, a toolchain, a host-read path, the `/etc` view or
/// another session directory, and never a credential store.
fn scratch(spec: &BwrapSpec) -> Result<(), SpecError> {
    let Some(dirs) = &spec.scratch else {
        return Ok(());
    };
    let own = [&dirs.tmp, &dirs.var_tmp, &dirs.home];
    let mut others: Vec<&Path> = Vec::new();
    for root in &spec.roots {
        others.push(&root.host);
    }
    for o in &spec.staged {
        others.extend([o.upper.as_path(), o.work.as_path(), o.lower.as_path()]);
    }
    others.extend(spec.toolchains.iter().map(PathBuf::as_path));
    others.extend(spec.profile.host_read_paths().iter().map(PathBuf::as_path));
    if let Etc::View { files, .. } = &spec.etc {
        others.push(files);
    }
    if let Some(file) = &spec.git_config {
        others.push(file);
    }
    if let Some(file) = &spec.empty_file {
        others.push(file);
    }
    if let Some(net) = &spec.network {
        others.push(&net.resolv_conf);
    }
    for (i, dir) in own.iter().enumerate() {
        absolute("a session directory", dir)?;
        no_credentials(dir)?;
        let siblings = own
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, d)| d.as_path());
        if let Some(other) = others
            .iter()
            .copied()
            .chain(siblings)
            .find(|o| dir.starts_with(o) || o.starts_with(dir))
        {
            return Err(SpecError::ScratchOverlap {
                path: (*dir).clone(),
                other: other.to_path_buf(),
            });
        }
    }
    Ok(())
}

/// Attack stopped: a relative or `..` path binds something other than what was checked.
fn absolute(what: &'static str, path: &Path) -> Result<(), SpecError> {
    let normal = path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if normal {
        Ok(())
    } else {
        Err(SpecError::NotAbsolute {
            what,
            path: path.to_path_buf(),
        })
    }
}

/// Attack stopped: key and token theft through a bind of `~/.ssh`, `/etc/shadow`, ...
fn no_credentials(path: &Path) -> Result<(), SpecError> {
    if is_credential_store(path) {
        Err(SpecError::CredentialStore(path.to_path_buf()))
    } else {
        Ok(())
    }
}

/// Attack stopped: a bind of `/`, `/etc` or an ancestor of a mount point, which would expose the
/// whole host or replace the sandbox's own view of it.
fn not_covering(path: &Path, extra: &[&Path]) -> Result<(), SpecError> {
    let hit = RESERVED
        .iter()
        .map(Path::new)
        .chain(extra.iter().copied())
        .find(|r| r.starts_with(path));
    match hit {
        Some(covers) => Err(SpecError::Reserved {
            path: path.to_path_buf(),
            covers: covers.to_path_buf(),
        }),
        None => Ok(()),
    }
}

/// An argv under construction.
#[derive(Default)]
struct Argv(Vec<OsString>);

impl Argv {
    fn flags(&mut self, flags: &[&str]) {
        self.0.extend(flags.iter().map(OsString::from));
    }

    fn one(&mut self, flag: &str, path: &Path) {
        self.0.push(flag.into());
        self.0.push(path.into());
    }

    fn pair(&mut self, flag: &str, from: &Path, to: &Path) {
        self.0.push(flag.into());
        self.0.push(from.into());
        self.0.push(to.into());
    }

    fn tmpfs(&mut self, size: u64, path: &Path) {
        self.0.push("--size".into());
        self.0.push(size.to_string().into());
        self.one("--tmpfs", path);
    }
}

#[cfg(test)]
mod tests;
