//! What the operator (and, only to narrow, the workspace) configures for the decision layer.
//!
//! Configuration that widens access comes from the operator: flags and
//! `~/.config/spear/config.toml`. The workspace's own `.spear/policy.toml` may only add protected
//! or generated paths, and guarantees every command requires; it has no key that could take one
//! away.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use spear_core::{GuaranteeSet, SandboxView};

use crate::target_policy::TargetRules;

/// The operator's configuration file (`~/.config/spear/config.toml`).
///
/// ```toml
/// [workspace]
/// roots = ["/src/shared-lib"]        # extra workspace roots
///
/// [paths]
/// read = ["/opt/datasets"]           # host paths outside the project the agent may read and search
///
/// [targets]
/// protect = ["deploy/"]              # more entries no tool may write (a trailing / means a tree)
/// unprotect = []                     # built-in protected entries to allow again (`.spear/`)
/// generated = ["gen/"]               # more generated trees
/// not_generated = []                 # built-in generated trees to allow again
///
/// [limits]                           # see crate::limits for the keys and their bounds
/// memory = "4G"
///
/// [sandbox]
/// require = ["resource_limits"]      # guarantees every command must get, or it does not run
/// backend = "auto"                   # "auto" (default), "bubblewrap" or "landlock"
/// gpu = "all"                        # GPUs every sandbox gets ("0,1"); --gpu wins
///
/// [policy]
/// allow_host_config = ["vscode"]     # host-run configuration written without asking
///
/// [web]                              # see crate::web for every key
/// enabled = true                     # fetch_url and search_internet (the default)
/// ports = [8080]                     # ports fetch_url may use besides 80 and 443
///
/// [web.search]                       # search_internet's backend: searxng, brave or bing
/// backend = "searxng"
/// url = "http://127.0.0.1:8888"
///
/// [serve.oauth]                      # see crate::serve: OAuth access tokens spear mcp --listen
/// issuer = "https://auth.example.com" # accepts besides the operator's tokens
/// audience = "https://node.example.com/mcp"
/// jwks_file = "/etc/spear/jwks.json"
/// [serve.oauth.scopes]
/// "spear:read" = { mode = "safe" }
/// ```
// Not `Eq`: `[limits]` holds CPU and timeout values as floats.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorConfig {
    /// `[workspace]`.
    #[serde(default)]
    pub workspace: OperatorWorkspace,
    /// `[paths]`.
    #[serde(default)]
    pub paths: OperatorPaths,
    /// `[targets]`.
    #[serde(default)]
    pub targets: OperatorTargets,
    /// `[network]`: what networked commands may reach beyond the default egress policy.
    #[serde(default)]
    pub network: OperatorNetwork,
    /// `[env]`: host variables passed into every sandbox.
    #[serde(default)]
    pub env: OperatorEnv,
    /// `[limits]`: memory, tasks, CPU, output cap and default timeout of commands
    /// ([`crate::limits`]).
    #[serde(default)]
    pub limits: crate::limits::OperatorLimits,
    /// `[sandbox]`: guarantees every command requires, and which backend confines them.
    #[serde(default)]
    pub sandbox: OperatorSandbox,
    /// `[web]`: the web pair (`fetch_url`, `search_internet`) and its search backend
    /// ([`crate::web`]).
    #[serde(default)]
    pub web: crate::web::OperatorWeb,
    /// `[state]`: quotas on spear's own state (checkpoints, stored outputs, audit log, free-space
    /// floor) ([`crate::quotas`]).
    #[serde(default)]
    pub state: crate::quotas::OperatorState,
    /// `[policy]`: what the operator lets through without asking.
    #[serde(default)]
    pub policy: OperatorPolicy,
    /// `[serve]`: whom a listening spear admits besides the operator's tokens (OAuth access
    /// tokens of the issuer it names, [`crate::serve`]). The operator's alone: the workspace's
    /// policy file has no `[serve]`.
    #[serde(default)]
    pub serve: crate::serve::OperatorServe,
}

/// `[policy]` of the operator's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorPolicy {
    /// Host-run configuration entries ([`crate::host_config::CATALOGUE`] ids: `vscode`,
    /// `git-hooks`, ...) that are written without asking. Every other write to host-run
    /// configuration is asked about in ASK and AUTO. An unknown id is a configuration error.
    #[serde(default)]
    pub allow_host_config: Vec<String>,
}

/// `[sandbox]` of the operator's configuration, and of the workspace's policy file (which can
/// only add to the operator's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxRequirements {
    /// Guarantees (`process_boundary`, `resource_limits`, `network_filtered`, ...) that every
    /// command requires: one the host cannot give refuses the command before anything is
    /// spawned. An unknown name is a configuration error that lists the known ones.
    #[serde(default)]
    pub require: GuaranteeSet,
}

/// `[sandbox]` of the operator's configuration: the guarantees every command requires (as the
/// workspace's `[sandbox]` in [`WorkspacePolicyFile`], which only adds to them), and the backend
/// and GPUs, which only the operator chooses (a workspace choosing its own confinement, or a
/// device, would widen it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorSandbox {
    /// Guarantees every command requires; `None` when the key is absent. Unset, no command
    /// requires anything in particular, and `backend = "auto"` asks of a backend every guarantee
    /// bubblewrap gives: without the operator's word spear refuses rather than confining less.
    #[serde(default)]
    pub require: Option<GuaranteeSet>,
    /// Which backend confines commands.
    #[serde(default)]
    pub backend: SandboxBackend,
    /// GPUs every sandbox of every session gets (`"all"`, or indices such as `"0,1"`), as
    /// `--gpu` gives them (which wins over this): their device nodes and the driver's files,
    /// nothing else of `/dev`. The operator's grant alone; no mode, model or workspace gives a
    /// GPU. A host without them refuses every session at its start, naming what is missing.
    #[serde(default)]
    pub gpu: Option<String>,
}

/// `[sandbox] backend`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxBackend {
    /// bubblewrap where it can make its namespaces; else Landlock, only if it gives every
    /// guarantee of `require` (unset: every guarantee bubblewrap gives); else every command is
    /// refused, naming what is missing.
    #[default]
    Auto,
    /// bubblewrap only.
    Bubblewrap,
    /// The landlock backend only (read-only, closed commands; see `spear doctor`).
    Landlock,
}

/// `[env]` of the operator's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorEnv {
    /// Host variables passed into every sandbox: exact names (`DJANGO_SETTINGS_MODULE`), passed
    /// even if they look like secrets, and prefix globs (`MY_APP_*`), which never pass a
    /// secret-looking variable. Names that change how programs load code are refused when the
    /// configuration is used (the sandbox layer checks them).
    #[serde(default)]
    pub pass: Vec<String>,
}

/// `[network]` of the operator's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorNetwork {
    /// Destinations allowed despite the refused ranges: IPv4 prefixes (`203.0.113.0/24`) or
    /// `host:port` (`203.0.113.10:8080`). Only the operator can widen egress; a workspace cannot.
    #[serde(default)]
    pub allow: Vec<String>,
}

/// `[workspace]` of the operator's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorWorkspace {
    /// Extra workspace roots.
    #[serde(default)]
    pub roots: Vec<PathBuf>,
}

/// `[paths]` of the operator's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorPaths {
    /// Host paths outside the project that commands may read and search.
    #[serde(default)]
    pub read: Vec<PathBuf>,
}

/// `[targets]` of the operator's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorTargets {
    /// Entries to protect in addition to the built-in ones.
    #[serde(default)]
    pub protect: Vec<String>,
    /// Built-in protected entries to allow again.
    #[serde(default)]
    pub unprotect: Vec<String>,
    /// Generated trees in addition to the built-in ones.
    #[serde(default)]
    pub generated: Vec<String>,
    /// Built-in generated or snapshot trees to allow again.
    #[serde(default)]
    pub not_generated: Vec<String>,
}

/// The workspace's `.spear/policy.toml`: it can only add.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspacePolicyFile {
    /// `[targets]`.
    #[serde(default)]
    pub targets: WorkspaceTargets,
    /// `[sandbox]`: more guarantees every command requires (added to the operator's).
    #[serde(default)]
    pub sandbox: SandboxRequirements,
}

/// `[targets]` of the workspace's policy file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceTargets {
    /// Entries to protect in addition.
    #[serde(default)]
    pub protect: Vec<String>,
    /// Generated trees in addition.
    #[serde(default)]
    pub generated: Vec<String>,
}

/// A configuration file that could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Unreadable.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not valid TOML, or a key spear does not know.
    #[error("{path} is not a valid spear configuration: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
}

impl OperatorConfig {
    /// Checks what the decision layer's part of the file names: every `[policy]
    /// allow_host_config` id is a catalogue entry, and `[targets] unprotect` names no host-run
    /// configuration (which is allowed by `[policy] allow_host_config`, and no longer a
    /// protected entry). Called at startup: a file that does not say what the operator meant is
    /// refused before anything runs.
    pub fn check_policy(&self) -> Result<(), String> {
        crate::host_config::check_allowed(&self.policy.allow_host_config)?;
        for name in &self.targets.unprotect {
            let rel = Path::new(name);
            let entry = crate::host_config::by_name(rel, false)
                .map(|e| e.id)
                .or_else(|| crate::git_layout::control_by_name(rel).map(|i| i.entry));
            if let Some(entry) = entry {
                return Err(format!(
                    "`{name}` in [targets] unprotect is host-run configuration (entry `{entry}`), \
                     which spear asks about rather than refuses; to let it be written without \
                     asking, list `{entry}` in [policy] allow_host_config instead"
                ));
            }
        }
        Ok(())
    }

    /// Parses the text of an operator configuration file.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })
    }

    /// Reads `path`; a file that does not exist is the empty configuration.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => OperatorConfig::parse(&text, path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(OperatorConfig::default()),
            Err(source) => Err(ConfigError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// The default location: `$XDG_CONFIG_HOME/spear/config.toml`, else
    /// `$HOME/.config/spear/config.toml`.
    pub fn default_path(xdg_config_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
        xdg_config_home
            .filter(|p| p.is_absolute())
            .map(Path::to_path_buf)
            .or_else(|| home.map(|h| h.join(".config")))
            .map(|dir| dir.join("spear").join("config.toml"))
    }
}

impl WorkspacePolicyFile {
    /// Where the file lives, relative to the primary root.
    pub const PATH: &'static str = ".spear/policy.toml";

    /// Reads the primary root's `.spear/policy.toml` through [`spear_workspace::WorkspaceFs`], so a
    /// symlink cannot point it outside the workspace. `None` when there is none.
    pub fn load(workspace: &spear_workspace::Workspace) -> Result<Option<Self>, ConfigError> {
        let path = workspace.primary().host_path().join(Self::PATH);
        let read_error = |e: &dyn std::fmt::Display| ConfigError::Read {
            path: path.clone(),
            source: std::io::Error::other(e.to_string()),
        };
        let fs = workspace.fs().map_err(|e| read_error(&e))?;
        let loc = spear_workspace::Location {
            root: 0,
            rel: PathBuf::from(Self::PATH),
        };
        let resolved = spear_workspace::ResolvedPath {
            as_written: Self::PATH.to_owned(),
            entry: loc.clone(),
            target: loc,
            exists: true,
        };
        match fs.read(&resolved, 1 << 20) {
            Ok(out) => {
                let text = String::from_utf8(out.bytes).map_err(|e| read_error(&e))?;
                Self::parse(&text, &path).map(Some)
            }
            Err(spear_workspace::FsError::NotFound { .. }) => Ok(None),
            Err(e) => Err(read_error(&e)),
        }
    }

    /// Parses the text of a workspace policy file.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })
    }
}

/// Everything the decision layer is configured with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyConfig {
    /// The operator's real home directory: `~` and `$HOME` expand to it, and what the host has
    /// under it outside the project is out of scope unless the sandbox shows it or it is named.
    pub home: Option<PathBuf>,
    /// Host paths outside the project the operator named: readable (with `host:read`) and
    /// searchable.
    pub named_paths: Vec<PathBuf>,
    /// Generated, snapshot and protected entries.
    pub targets: TargetRules,
    /// What every sandbox shows of the host and keeps private: the runtime's view
    /// (`spear_runtime::sandbox_view`), or [`SandboxView::conservative`] until it is given.
    pub sandbox: SandboxView,
    /// Guarantees every command requires: the operator's `[sandbox] require` and the workspace
    /// file's, together (a workspace can add, never remove).
    pub required: GuaranteeSet,
    /// spear's own state directory (audit log, checkpoints, the `spear approve` sockets): no
    /// command may read or search in it, whatever the mode and whatever the operator named.
    pub state_dir: Option<PathBuf>,
    /// Host files of the operator's that no command may read or search, whatever the mode and
    /// whatever the operator named: the private key of a listening server's TLS certificate.
    /// Attack stopped: an agent given `host:read` (AUTO) reading the node's key.
    pub secrets: Vec<PathBuf>,
    /// The operator's `XDG_CONFIG_HOME` (absolute, or `None`): where git's global configuration
    /// may live besides `~/.gitconfig`, for [`crate::GitIndirections`].
    pub xdg_config_home: Option<PathBuf>,
    /// Host-run configuration entries written without asking (the operator's `[policy]
    /// allow_host_config`, checked).
    pub allow_host_config: Vec<String>,
}

impl PolicyConfig {
    /// Every setting of the decision layer, as text: what a grant binds of the rules a command is
    /// judged by (the host paths named, the target rules, what the sandbox shows, the guarantees
    /// required, spear's state directory, and any setting added later: the text is the whole
    /// configuration's `Debug`, which holds no map and so is the same for the same settings).
    /// Attack stopped: a grant issued under rules that protect an entry run under a
    /// configuration that does not.
    pub fn fingerprint(&self) -> String {
        format!("{self:?}")
    }

    /// The built-in policy for an operator whose home is `home`.
    pub fn new(home: Option<PathBuf>) -> Self {
        PolicyConfig {
            sandbox: SandboxView::conservative(home.clone()),
            home,
            named_paths: Vec::new(),
            targets: TargetRules::default(),
            required: GuaranteeSet::EMPTY,
            state_dir: None,
            secrets: Vec::new(),
            xdg_config_home: None,
            allow_host_config: Vec::new(),
        }
    }

    /// Applies the operator's configuration (which may widen or narrow).
    #[must_use]
    pub fn with_operator(mut self, operator: &OperatorConfig) -> Self {
        self.named_paths.extend(operator.paths.read.iter().cloned());
        let t = &operator.targets;
        self.targets =
            self.targets
                .adjusted(&t.protect, &t.unprotect, &t.generated, &t.not_generated);
        self.required = self
            .required
            .union(operator.sandbox.require.unwrap_or_default());
        self.allow_host_config
            .clone_from(&operator.policy.allow_host_config);
        self
    }

    /// Applies the workspace's policy file, which can only add.
    #[must_use]
    pub fn with_workspace(mut self, file: &WorkspacePolicyFile) -> Self {
        self.targets =
            self.targets
                .adjusted(&file.targets.protect, &[], &file.targets.generated, &[]);
        self.required = self.required.union(file.sandbox.require);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_file_parses_and_rejects_unknown_keys() {
        let cfg = OperatorConfig::parse(
            "[workspace]\nroots = [\"/src/lib\"]\n[paths]\nread = [\"/opt/data\"]\n[targets]\nunprotect = [\".vscode/\"]\n",
            Path::new("c.toml"),
        )
        .unwrap();
        assert_eq!(cfg.workspace.roots, vec![PathBuf::from("/src/lib")]);
        assert!(OperatorConfig::parse("[paths]\nwrite = [\"/\"]\n", Path::new("c.toml")).is_err());
    }

    #[test]
    fn workspace_file_cannot_widen() {
        assert!(
            WorkspacePolicyFile::parse("[targets]\nunprotect = [\".envrc\"]\n", Path::new("p"))
                .is_err()
        );
        assert!(WorkspacePolicyFile::parse("[paths]\nread = [\"/\"]\n", Path::new("p")).is_err());
        let f = WorkspacePolicyFile::parse("[targets]\nprotect = [\"deploy/\"]\n", Path::new("p"))
            .unwrap();
        let cfg = PolicyConfig::new(None).with_workspace(&f);
        assert!(cfg.targets.check(Path::new("deploy/prod.yaml")).is_err());
        assert!(
            cfg.targets.check(Path::new(".spear/policy.toml")).is_err(),
            "built-ins stay"
        );
        assert!(
            WorkspacePolicyFile::parse(
                "[policy]\nallow_host_config = [\"vscode\"]\n",
                Path::new("p")
            )
            .is_err(),
            "only the operator lets host-run configuration through"
        );
    }

    #[test]
    fn operator_can_unprotect() {
        let op = OperatorConfig::parse("[targets]\nunprotect = [\".spear/\"]\n", Path::new("c"))
            .unwrap();
        assert_eq!(op.check_policy(), Ok(()));
        let cfg = PolicyConfig::new(None).with_operator(&op);
        assert!(cfg.targets.check(Path::new(".spear/policy.toml")).is_ok());
    }

    /// Host-run configuration is let through by its catalogue id in `[policy]`, never by
    /// `[targets] unprotect` (which would have meant "allow without asking" before it was asked
    /// about); an unknown id is refused at startup with the known ones.
    #[test]
    fn host_run_configuration_is_allowed_by_its_entry() {
        let op = OperatorConfig::parse(
            "[policy]\nallow_host_config = [\"vscode\", \"git-hooks\"]\n",
            Path::new("c"),
        )
        .unwrap();
        assert_eq!(op.check_policy(), Ok(()));
        let cfg = PolicyConfig::new(None).with_operator(&op);
        assert_eq!(cfg.allow_host_config, vec!["vscode", "git-hooks"]);
        for (text, says) in [
            ("[policy]\nallow_host_config = [\"vs-code\"]\n", "vs-code"),
            (
                "[targets]\nunprotect = [\".vscode/\"]\n",
                "allow_host_config",
            ),
            ("[targets]\nunprotect = [\".git/hooks/\"]\n", "git-hooks"),
            ("[targets]\nunprotect = [\".envrc\"]\n", "direnv"),
        ] {
            let op = OperatorConfig::parse(text, Path::new("c")).unwrap();
            let e = op.check_policy().unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn sandbox_requirements_only_add() {
        use spear_core::Guarantee as G;
        let op = OperatorConfig::parse(
            "[sandbox]\nrequire = [\"resource_limits\", \"network_filtered\"]\n",
            Path::new("c"),
        )
        .unwrap();
        let cfg = PolicyConfig::new(None).with_operator(&op);
        assert_eq!(
            cfg.required,
            GuaranteeSet::of(&[G::ResourceLimits, G::NetworkFiltered])
        );
        let e = OperatorConfig::parse("[sandbox]\nrequire = [\"limits\"]\n", Path::new("c"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown guarantee \"limits\"") && e.contains("process_boundary"),
            "names the valid ones: {e}"
        );
        // The workspace adds; an empty list (or none) removes nothing of the operator's.
        let ws = WorkspacePolicyFile::parse("[sandbox]\nrequire = []\n", Path::new("p")).unwrap();
        assert_eq!(cfg.clone().with_workspace(&ws).required, cfg.required);
        let ws = WorkspacePolicyFile::parse(
            "[sandbox]\nrequire = [\"process_boundary\"]\n",
            Path::new("p"),
        )
        .unwrap();
        assert_eq!(
            cfg.with_workspace(&ws).required,
            GuaranteeSet::of(&[G::ProcessBoundary, G::ResourceLimits, G::NetworkFiltered])
        );
        assert!(
            WorkspacePolicyFile::parse("[sandbox]\nunrequire = [\"x\"]\n", Path::new("p")).is_err()
        );
    }

    #[test]
    fn the_backend_is_the_operator_s_alone_and_require_remembers_whether_it_was_set() {
        use spear_core::Guarantee as G;
        let op = OperatorConfig::parse("", Path::new("c")).unwrap();
        assert_eq!(op.sandbox.backend, SandboxBackend::Auto);
        assert_eq!(op.sandbox.require, None, "unset: auto asks for everything");
        let op = OperatorConfig::parse(
            "[sandbox]\nbackend = \"landlock\"\nrequire = []\n",
            Path::new("c"),
        )
        .unwrap();
        assert_eq!(op.sandbox.backend, SandboxBackend::Landlock);
        assert_eq!(op.sandbox.require, Some(GuaranteeSet::EMPTY));
        let op = OperatorConfig::parse(
            "[sandbox]\nbackend = \"bubblewrap\"\nrequire = [\"write_boundary\"]\n",
            Path::new("c"),
        )
        .unwrap();
        assert_eq!(op.sandbox.backend, SandboxBackend::Bubblewrap);
        assert_eq!(
            op.sandbox.require,
            Some(GuaranteeSet::of(&[G::WriteBoundary]))
        );
        assert!(
            OperatorConfig::parse("[sandbox]\nbackend = \"chroot\"\n", Path::new("c")).is_err()
        );
        // A workspace cannot choose its own confinement.
        assert!(
            WorkspacePolicyFile::parse("[sandbox]\nbackend = \"landlock\"\n", Path::new("p"))
                .is_err()
        );
    }

    /// `[sandbox] gpu` is the operator's: a workspace's policy file naming it is refused (it
    /// would hand its own commands a device), the operator's is read.
    #[test]
    fn gpus_are_the_operator_s_alone() {
        let op = OperatorConfig::parse("[sandbox]\ngpu = \"0,1\"\n", Path::new("c")).unwrap();
        assert_eq!(op.sandbox.gpu.as_deref(), Some("0,1"));
        assert_eq!(
            OperatorConfig::parse("", Path::new("c"))
                .unwrap()
                .sandbox
                .gpu,
            None
        );
        let e = WorkspacePolicyFile::parse("[sandbox]\ngpu = \"all\"\n", Path::new("p"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("gpu"), "{e}");
    }

    #[test]
    fn default_path() {
        assert_eq!(
            OperatorConfig::default_path(None, Some(Path::new("/home/u"))),
            Some(PathBuf::from("/home/u/.config/spear/config.toml"))
        );
        assert_eq!(
            OperatorConfig::default_path(Some(Path::new("/x")), Some(Path::new("/home/u"))),
            Some(PathBuf::from("/x/spear/config.toml"))
        );
        assert_eq!(
            OperatorConfig::default_path(Some(Path::new("rel")), None),
            None
        );
    }
}
