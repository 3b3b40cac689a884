//! The set of roots and the lexical mapping between spellings.

use std::path::{Path, PathBuf};

use crate::{
    MountScheme, ResolveError, ResolvedPath, WorkspaceConfig, WorkspaceError, WorkspaceFs,
};

/// One workspace root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub(crate) name: String,
    pub(crate) host_path: PathBuf,
    pub(crate) mount_path: PathBuf,
    pub(crate) primary: bool,
}

impl Root {
    /// A short unique name (the directory's base name, made unique with `-2`, `-3`...), used in
    /// audit labels and fixed mount paths.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The canonical host path.
    pub fn host_path(&self) -> &Path {
        &self.host_path
    }

    /// Where the sandbox sees this root.
    pub fn mount_path(&self) -> &Path {
        &self.mount_path
    }

    /// Whether this is the primary root (the one holding the launch directory).
    pub fn is_primary(&self) -> bool {
        self.primary
    }
}

/// A place inside a root: the root's index in [`Workspace::roots`] and a normalised relative path
/// (no `.`, no `..`, no leading `/`; empty for the root itself).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Location {
    /// Index into [`Workspace::roots`].
    pub root: usize,
    /// Normalised path relative to the root.
    pub rel: PathBuf,
}

/// The roots of one session and how paths map onto them.
///
/// Invariants: `roots()[0]` is the primary root and contains the launch directory; roots are
/// canonical, distinct and never nested (a root inside another is merged into the outer one; if the
/// launch directory lies inside an extra root such as the enclosing build tree, that root becomes
/// the primary and the launch directory stays where relative paths resolve).
#[derive(Debug, Clone)]
pub struct Workspace {
    pub(crate) roots: Vec<Root>,
    pub(crate) launch_dir: PathBuf,
    pub(crate) scheme: MountScheme,
    pub(crate) allow_absolute_paths: bool,
    pub(crate) dropped: Vec<(PathBuf, String)>,
}

impl Workspace {
    /// Opens the workspace described by `config`.
    ///
    /// Roots: the launch directory; unless `single_root`, the operator's extra roots and the build
    /// tree enclosing the launch directory (the nearest ancestor holding both `env.sh` and
    /// `scripts/build.sh`). Each is canonicalised; duplicates and nested roots are merged; an extra
    /// root that does not exist (or is not a directory) is dropped and reported by
    /// [`Workspace::dropped_roots`], not fatal. A launch directory that cannot be canonicalised is
    /// an error.
    pub fn open(config: &WorkspaceConfig) -> Result<Workspace, WorkspaceError> {
        let _ = config;
        todo!("spear-workspace helper")
    }

    /// The roots, primary first.
    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    /// The primary root.
    pub fn primary(&self) -> &Root {
        &self.roots[0]
    }

    /// Canonical host path of the launch directory (where relative paths resolve).
    pub fn launch_dir(&self) -> &Path {
        &self.launch_dir
    }

    /// The launch directory as the sandbox sees it (its working directory).
    pub fn launch_mount_dir(&self) -> PathBuf {
        todo!("spear-workspace helper")
    }

    /// The addressing scheme in use.
    pub fn mount_scheme(&self) -> MountScheme {
        self.scheme
    }

    /// Roots that were configured but dropped, with why (for `spear doctor`).
    pub fn dropped_roots(&self) -> &[(PathBuf, String)] {
        &self.dropped
    }

    /// Where the roots appear inside the sandbox, primary first (each root's mount path).
    pub fn mount_points(&self) -> Vec<PathBuf> {
        self.roots.iter().map(|r| r.mount_path.clone()).collect()
    }

    /// Lexical only, no filesystem access: maps an absolute path in either spelling (host or
    /// mount) to the root holding it and the normalised relative path, after folding `.` and `..`
    /// lexically. `None` if it is relative or lies under no root (including `..` climbing above a
    /// root). Mount spelling is tried first.
    pub fn locate(&self, path: &Path) -> Option<Location> {
        let _ = path;
        todo!("spear-workspace helper")
    }

    /// The host path of a location.
    pub fn host_path(&self, loc: &Location) -> PathBuf {
        self.roots[loc.root].host_path.join(&loc.rel)
    }

    /// The mount path of a location.
    pub fn mount_path(&self, loc: &Location) -> PathBuf {
        self.roots[loc.root].mount_path.join(&loc.rel)
    }

    /// Translates an absolute path in mount spelling to host spelling; any other path is returned
    /// unchanged (lexically normalised).
    pub fn to_host(&self, path: &Path) -> PathBuf {
        let _ = path;
        todo!("spear-workspace helper")
    }

    /// Physical: the host path `path` (absolute, either spelling) really names: mount spelling
    /// translated, every symlink in the existing prefix followed (a link into a mount spelling is
    /// translated too), the non-existent rest appended lexically. Never fails; a loop or an
    /// unreadable component stops resolution there and the rest is appended. Used for checks
    /// "on the resolved spelling".
    pub fn realpath(&self, path: &Path) -> PathBuf {
        let _ = path;
        todo!("spear-workspace helper")
    }

    /// Resolves a path given by a caller (a file tool's argument) to a place inside a root.
    ///
    /// Relative paths start at the launch directory. Absolute paths are accepted in mount spelling;
    /// in host spelling only when it is also the mount spelling (identity scheme) or with
    /// `--allow-absolute-paths`. Every component is resolved physically, symlinks included, also
    /// the parent chain of a leaf that does not exist yet; `..` that climbs out of every root, a
    /// symlink leading outside every root (the leaf included), and magic paths such as
    /// `/proc/self/...` are refused.
    pub fn resolve(&self, path: &str) -> Result<ResolvedPath, ResolveError> {
        let _ = path;
        todo!("spear-workspace helper")
    }

    /// The audit label of a location: `rel/path` in the primary root, `name:rel/path` in another
    /// (`.` and `name:.` for the roots themselves).
    pub fn label(&self, loc: &Location) -> String {
        let _ = loc;
        todo!("spear-workspace helper")
    }

    /// Opens a directory fd on every root, for [`WorkspaceFs`].
    pub fn fs(&self) -> Result<WorkspaceFs, crate::FsError> {
        todo!("spear-workspace helper")
    }
}
