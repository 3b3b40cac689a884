//! The set of roots and the lexical mapping between spellings.

use std::io;
use std::path::{Path, PathBuf};

use crate::label::format_label;
use crate::lexical::{lexical_normalize, normalize_absolute};
use crate::merge::{forbidden_root, merge_roots, nearest_build_tree};
use crate::mount::{choose_scheme, mount_path_for};
use crate::naming::unique_names;
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
    ///
    /// A relative extra root is taken relative to the launch directory. The launch directory
    /// itself may not be `/` or lie in `/proc`, `/sys` or `/dev` (an error); an extra root there is
    /// dropped.
    pub fn open(config: &WorkspaceConfig) -> Result<Workspace, WorkspaceError> {
        let launch_error = |source: io::Error| WorkspaceError::LaunchDir {
            path: config.launch_dir.clone(),
            source,
        };
        let launch = canonical_dir(&config.launch_dir).map_err(launch_error)?;
        if let Some(why) = forbidden_root(&launch) {
            return Err(launch_error(io::Error::new(
                io::ErrorKind::InvalidInput,
                why,
            )));
        }

        let mut extras = Vec::new();
        let mut dropped = Vec::new();
        if !config.single_root {
            let configured = config
                .extra_roots
                .iter()
                .map(|p| (p.clone(), launch.join(p)));
            let build_tree = nearest_build_tree(&launch, is_build_tree).map(|t| (t.clone(), t));
            for (as_configured, path) in configured.chain(build_tree) {
                match canonical_dir(&path) {
                    Ok(canonical) => match forbidden_root(&canonical) {
                        Some(why) => dropped.push((as_configured, why)),
                        None => extras.push(canonical),
                    },
                    Err(e) => dropped.push((as_configured, e.to_string())),
                }
            }
        }

        let hosts = merge_roots(&launch, &extras);
        let names = unique_names(&hosts);
        let scheme = choose_scheme(config.mount_scheme, &hosts);
        let roots = hosts
            .into_iter()
            .zip(names)
            .enumerate()
            .map(|(i, (host_path, name))| Root {
                mount_path: mount_path_for(scheme, &host_path, &name, i == 0),
                name,
                host_path,
                primary: i == 0,
            })
            .collect();
        Ok(Workspace {
            roots,
            launch_dir: launch,
            scheme,
            allow_absolute_paths: config.allow_absolute_paths,
            dropped,
        })
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
        self.mount_path(&self.launch_location())
    }

    /// The launch directory as a location in the primary root.
    pub(crate) fn launch_location(&self) -> Location {
        // `open` guarantees the primary root holds the launch directory.
        let rel = self
            .launch_dir
            .strip_prefix(&self.roots[0].host_path)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        Location { root: 0, rel }
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
        let path = normalize_absolute(path)?;
        self.locate_under(&path, Spelling::Mount)
            .or_else(|| self.locate_under(&path, Spelling::Host))
    }

    /// The root whose path in `spelling` holds the normalised absolute `path`.
    fn locate_under(&self, path: &Path, spelling: Spelling) -> Option<Location> {
        self.roots.iter().enumerate().find_map(|(root, r)| {
            let base = match spelling {
                Spelling::Mount => &r.mount_path,
                Spelling::Host => &r.host_path,
            };
            path.strip_prefix(base).ok().map(|rel| Location {
                root,
                rel: rel.to_path_buf(),
            })
        })
    }

    /// The host path of a location.
    pub fn host_path(&self, loc: &Location) -> PathBuf {
        join_rel(&self.roots[loc.root].host_path, &loc.rel)
    }

    /// The mount path of a location.
    pub fn mount_path(&self, loc: &Location) -> PathBuf {
        join_rel(&self.roots[loc.root].mount_path, &loc.rel)
    }

    /// Translates an absolute path in mount spelling to host spelling; any other path is returned
    /// unchanged (lexically normalised).
    pub fn to_host(&self, path: &Path) -> PathBuf {
        let path = lexical_normalize(path);
        match self.locate_under(&path, Spelling::Mount) {
            Some(loc) if path.is_absolute() => self.host_path(&loc),
            _ => path,
        }
    }

    /// Physical: the host path `path` (absolute, either spelling) really names: mount spelling
    /// translated, every symlink in the existing prefix followed (a link into a mount spelling is
    /// translated too), the non-existent rest appended lexically. Never fails; a loop or an
    /// unreadable component stops resolution there and the rest is appended. Used for checks
    /// "on the resolved spelling". A relative path starts at the launch directory.
    pub fn realpath(&self, path: &Path) -> PathBuf {
        crate::realpath::realpath(self, path)
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
        crate::resolve::resolve(self, path, true)
    }

    /// Resolves as [`Workspace::resolve`] does, except that a symlink at the caller's last
    /// component is not followed: the result is the link itself (`entry` and `target` alike),
    /// wherever it points. For operations on the entry, never its target (removing a link).
    pub fn resolve_entry(&self, path: &str) -> Result<ResolvedPath, ResolveError> {
        crate::resolve::resolve(self, path, false)
    }

    /// The audit label of a location: `rel/path` in the primary root, `name:rel/path` in another
    /// (`.` and `name:.` for the roots themselves).
    pub fn label(&self, loc: &Location) -> String {
        format_label(self.label_name(loc.root), &loc.rel)
    }

    /// The name a root carries in labels: none for the primary.
    pub(crate) fn label_name(&self, root: usize) -> Option<&str> {
        let r = &self.roots[root];
        (!r.primary).then_some(r.name.as_str())
    }

    /// Opens a directory fd on every root, for [`WorkspaceFs`].
    pub fn fs(&self) -> Result<WorkspaceFs, crate::FsError> {
        WorkspaceFs::open(self)
    }
}

/// Which spelling of a root's path to match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spelling {
    Mount,
    Host,
}

/// `base` joined with `rel`, without the trailing slash `join("")` would add.
fn join_rel(base: &Path, rel: &Path) -> PathBuf {
    if rel.as_os_str().is_empty() {
        base.to_path_buf()
    } else {
        base.join(rel)
    }
}

/// The canonical form of `path`, which must be a directory.
fn canonical_dir(path: &Path) -> io::Result<PathBuf> {
    let canonical = std::fs::canonicalize(path)?;
    if std::fs::metadata(&canonical)?.is_dir() {
        Ok(canonical)
    } else {
        Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{} is not a directory", canonical.display()),
        ))
    }
}

/// Whether `dir` is the top of a build tree: it holds the files `env.sh` and `scripts/build.sh`.
fn is_build_tree(dir: &Path) -> bool {
    dir.join("env.sh").is_file() && dir.join("scripts/build.sh").is_file()
}
