//! A real workspace on disk for the decision-layer tests: the red-team layout
//! ([`spear_testkit::layout`], shared with the fuzz targets) in a temporary directory, and a policy
//! over it.

// Test fixtures fail loudly: a broken fixture is a failed test, not a value to handle.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use spear_core::{CommandAssessment, CommandClass};
use spear_policy::{CommandPolicy, PolicyConfig};
use spear_testkit::layout::Layout;
use spear_workspace::{Workspace, WorkspaceConfig};

pub mod staged;

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub ws: PathBuf,
    pub home: PathBuf,
    pub canary: PathBuf,
    pub layout: Layout,
    pub policy: CommandPolicy,
}

impl Fixture {
    pub fn new() -> Self {
        Self::with_config(|c| c)
    }

    pub fn with_config(adjust: impl FnOnce(PolicyConfig) -> PolicyConfig) -> Self {
        // Outside /tmp, which is the sandbox's private place: a canary there would be a private
        // write, not one that lands on the host. (/var/tmp also keeps the paths free of a leading
        // `/w`, which sed would read as its `w` flag in the red-team sed cases.)
        let base_dir = if Path::new("/var/tmp").is_dir() {
            PathBuf::from("/var/tmp")
        } else {
            PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        };
        let dir = tempfile::tempdir_in(base_dir).expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical");
        let layout = Layout::build(&base);
        let ws = layout.ws.clone();
        let workspace = Workspace::open(&WorkspaceConfig::new(&ws)).expect("workspace");
        let config = adjust(PolicyConfig::new(Some(layout.home.clone())));
        let policy = CommandPolicy::new(Arc::new(workspace), config);
        Fixture {
            _dir: dir,
            ws,
            home: layout.home.clone(),
            canary: layout.canary.clone(),
            layout,
            policy,
        }
    }

    /// Substitutes the red-team placeholders.
    pub fn sub(&self, template: &str) -> String {
        self.layout.substitute(template)
    }

    pub fn classify(&self, script: &str) -> CommandAssessment {
        self.policy.classify_script(&self.sub(script), &self.ws)
    }

    pub fn class(&self, script: &str) -> CommandClass {
        self.classify(script).class
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.ws.join(rel)
    }
}

/// The restriction order used by the invariants: a DANGEROUS script is the most restricted.
pub fn rank(class: CommandClass) -> u8 {
    match class {
        CommandClass::ReadOnly => 0,
        CommandClass::WorkspaceMutating => 1,
        CommandClass::ShellComplex => 2,
        CommandClass::Dangerous => 3,
    }
}

/// Folds `.` components so `ws/.` and `ws` compare equal.
pub fn normalise(p: &Path) -> PathBuf {
    p.components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect()
}
