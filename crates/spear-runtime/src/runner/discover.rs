//! Looking at the host once: what it offers every sandbox over a workspace
//! ([`HostOffer::discover`]), the runner's own view of it (`HostView`), and the view the decision
//! layer is told ([`sandbox_view`]), computed with the functions that build each sandbox's spec.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use spear_core::SandboxView;
use spear_sandbox::{
    SystemDir, ToolchainInputs, Toolchains, etc_entries, host_list, sandbox_env, secret_masks,
    system_dirs, toolchains, user_private_dir,
};
use spear_workspace::Workspace;

use super::config::{HostOffer, RunnerConfig};

impl HostOffer {
    /// Looks at the host: system directories, `/etc`, the toolchains of `config`'s environment
    /// that lie outside `workspace`'s roots, and every credential file inside what those bind
    /// (each directory's stamp checked against the scan kept in `config.scan_cache`).
    pub fn discover(workspace: &Workspace, config: &RunnerConfig) -> Self {
        let roots = root_hosts(workspace);
        let system = system_dirs(Path::new("/"));
        let toolchains = host_toolchains(workspace, config);
        let trees = bound_trees(&system, &toolchains);
        let (secrets, _) = secret_masks(
            &trees,
            &roots,
            config.scan_cache.as_deref(),
            spear_sandbox::Depth::Full,
            config.watch_trees,
        );
        HostOffer {
            roots,
            system,
            etc: etc_entries(Path::new("/etc")),
            toolchains,
            secrets,
        }
    }

    /// `config`'s offer when it was discovered for `workspace`'s roots, else a fresh look.
    pub(super) fn for_runner<'a>(
        workspace: &Workspace,
        config: &'a RunnerConfig,
    ) -> std::borrow::Cow<'a, HostOffer> {
        match &config.discovered {
            Some(offer) if offer.roots == root_hosts(workspace) => {
                std::borrow::Cow::Borrowed(&**offer)
            }
            _ => std::borrow::Cow::Owned(HostOffer::discover(workspace, config)),
        }
    }
}

/// The host trees every sandbox binds read-only at their own path: the toolchains, then the
/// system directories bound as they are (`/usr`; last, so that the user's own trees are the
/// first to be watched in a session).
pub(super) fn bound_trees(system: &[SystemDir], toolchains: &Toolchains) -> Vec<PathBuf> {
    toolchains
        .binds
        .iter()
        .cloned()
        .chain(system.iter().filter_map(|d| match d {
            SystemDir::Bind(p) => Some(p.clone()),
            SystemDir::Symlink { .. } => None,
        }))
        .collect()
}

/// The host paths of `workspace`'s roots.
pub(super) fn root_hosts(workspace: &Workspace) -> Vec<PathBuf> {
    workspace
        .roots()
        .iter()
        .map(|r| r.host_path().to_path_buf())
        .collect()
}

/// What the host offers every sandbox of a runner, looked up once.
#[derive(Debug, Clone)]
pub(super) struct HostView {
    /// The trees every sandbox binds read-only at their own path, whose credential files are
    /// masked ([`bound_trees`]).
    pub(super) trees: Vec<PathBuf>,
    pub(super) system: Vec<SystemDir>,
    pub(super) etc: Vec<PathBuf>,
    /// Where `/etc` views are prepared, when a private directory could be made.
    pub(super) etc_views: Option<PathBuf>,
    /// The resolver file of networked sandboxes, when it could be written.
    pub(super) resolv_conf: Option<PathBuf>,
    pub(super) toolchains: Toolchains,
    /// spear's git configuration file (the host's identity), when there is one.
    pub(super) git_config: Option<PathBuf>,
    /// The empty file masked files are bound from, when one could be made.
    pub(super) empty_file: Option<PathBuf>,
    /// The user's name in the password database.
    pub(super) user: Option<OsString>,
}

/// The toolchain directories and PATH of every sandbox of a runner over `workspace` with
/// `config` (the host's PATH and toolchain variables, looked at now).
fn host_toolchains(workspace: &Workspace, config: &RunnerConfig) -> Toolchains {
    let roots = root_hosts(workspace);
    let path_var = config
        .host_env
        .iter()
        .find(|(n, _)| n == "PATH")
        .map(|(_, v)| v.clone());
    let env = config.host_env.clone();
    let var = move |name: &str| {
        env.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| PathBuf::from(v))
            .filter(|p| p.is_absolute())
    };
    let is_dir = |p: &Path| p.is_dir();
    toolchains(&ToolchainInputs {
        path: path_var.as_deref(),
        var: &var,
        home: &config.home,
        roots: &roots,
        is_dir: &is_dir,
        list: &host_list,
    })
}

/// What every sandbox of a runner over `workspace` with `config` shows of the host, for the
/// decision layer (`PolicyConfig::sandbox`): computed with the functions that build each
/// sandbox's spec (system directories, curated `/etc`, toolchain binds, environment), so the
/// policy and the mounts cannot disagree. Private: `/tmp`, `/dev/shm` and the home directory,
/// each a tmpfs of the sandbox's own.
pub fn sandbox_view(workspace: &Workspace, config: &RunnerConfig) -> SandboxView {
    let offer = HostOffer::for_runner(workspace, config);
    let toolchains = &offer.toolchains;
    let mut shown: Vec<PathBuf> = offer
        .system
        .iter()
        .map(|d| match d {
            SystemDir::Bind(p) | SystemDir::Symlink { path: p, .. } => p.clone(),
        })
        .collect();
    shown.push(PathBuf::from("/proc"));
    shown.extend(offer.etc.iter().cloned());
    shown.extend(toolchains.binds.iter().cloned());
    let mut environment: Vec<String> = sandbox_env(spear_sandbox::EnvInputs {
        host: &config.host_env,
        home: &config.home,
        path: &toolchains.path,
        toolchain_vars: &toolchains.vars,
        user: passwd_name(rustix::process::geteuid().as_raw()).as_deref(),
        pass: &config.env_pass,
    })
    .into_iter()
    .filter_map(|(name, _)| name.into_string().ok())
    .collect();
    // The runner names its git configuration when it can write one (see `HostView::git_config`).
    if config.git_identity.config_text().is_some() && user_private_dir("git").is_some() {
        environment.retain(|n| n != "GIT_CONFIG_SYSTEM");
        environment.push("GIT_CONFIG_SYSTEM".to_owned());
        environment.sort();
    }
    SandboxView {
        home: Some(config.home.clone()),
        shown,
        masked: offer
            .secrets
            .iter()
            .map(|m| m.path().to_path_buf())
            .collect(),
        private: vec![
            PathBuf::from("/tmp"),
            PathBuf::from("/var/tmp"),
            PathBuf::from("/dev/shm"),
            config.home.clone(),
        ],
        environment,
    }
}

/// Writes the resolver file of networked sandboxes (slirp4netns's forwarder) into the user's
/// private directory.
pub(super) fn resolver_file() -> Option<PathBuf> {
    let dir = user_private_dir("net")?;
    let path = dir.join("resolv.conf");
    let text = format!("nameserver {}\n", spear_sandbox::SLIRP_DNS);
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(&path, text).ok()?;
    }
    Some(path)
}

/// The name of user `uid` in `/etc/passwd`.
pub(super) fn passwd_name(uid: u32) -> Option<OsString> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id: u32 = fields.nth(1)?.parse().ok()?;
        (id == uid && !name.is_empty()).then(|| OsString::from(name))
    })
}
