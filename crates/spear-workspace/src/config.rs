//! How a workspace is configured: by the launch directory, the operator, and the environment.

use std::path::PathBuf;

/// How the operator asked the roots to appear inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MountSchemeChoice {
    /// Identity mounts (each root at its own host path) unless that is unsafe for some root, then
    /// the fixed scheme.
    #[default]
    Auto,
    /// The fixed scheme: the primary root at `/workspace`, the others at `/workspaces/<name>`
    /// (`SPEAR_SANDBOX_IDENTITY_MOUNT=0`).
    Fixed,
}

/// Everything [`crate::Workspace::open`] needs. Only the operator (flags, the operator's config
/// file, the environment) fills this in; nothing in the workspace itself can widen it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceConfig {
    /// The directory spear was launched in (or `--workspace DIR`). Relative paths resolve here.
    pub launch_dir: PathBuf,
    /// Extra roots from the operator's configuration.
    pub extra_roots: Vec<PathBuf>,
    /// `--single-root`: drop the extra roots and the enclosing build tree.
    pub single_root: bool,
    /// `--allow-absolute-paths`: accept host absolute paths that are not mount paths.
    pub allow_absolute_paths: bool,
    /// How roots appear inside the sandbox.
    pub mount_scheme: MountSchemeChoice,
}

impl WorkspaceConfig {
    /// A configuration with only the launch directory and defaults.
    pub fn new(launch_dir: impl Into<PathBuf>) -> Self {
        WorkspaceConfig {
            launch_dir: launch_dir.into(),
            extra_roots: Vec::new(),
            single_root: false,
            allow_absolute_paths: false,
            mount_scheme: MountSchemeChoice::Auto,
        }
    }

    /// Reads `SPEAR_SANDBOX_IDENTITY_MOUNT` from `value` (the caller passes the environment's
    /// value): `0`, `false`, `no` or `off` choose [`MountSchemeChoice::Fixed`].
    #[must_use]
    pub fn with_identity_mount_env(mut self, value: Option<&str>) -> Self {
        if let Some(v) = value
            && matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "0" | "false" | "no" | "off"
            )
        {
            self.mount_scheme = MountSchemeChoice::Fixed;
        }
        self
    }
}
