//! spear's decision layer: what a shell command would do, and whether a mode allows it.
//!
//! What this crate guarantees:
//! - Every script is parsed with brush-parser and every simple command it can run is analysed:
//!   pipelines, lists, subshells, groups, functions, loops, substitutions, here-documents,
//!   assignment prefixes and wrappers (`env`, `xargs`, `bash -c`...), recursively.
//! - Nothing is `READ_ONLY` by default: a script that cannot be parsed, a word known only at run
//!   time in a place that matters, or a program spear does not know is `SHELL_COMPLEX` or worse.
//! - Every write target is checked against the workspace roots and the target policy, on the path
//!   as written and on its resolved spelling; a write to host-run configuration
//!   ([`host_config`]) is never allowed without asking (SAFE writes nothing; ASK and AUTO ask)
//!   unless the operator allows its entry.
//! - [`decide`] is pure; [`authorize`] only adds the call to a [`Confirmer`], and never makes it
//!   for a call no mode would allow.
//!
//! ```
//! use std::sync::Arc;
//! use spear_core::{CapabilityPolicy, CommandClass, ExecutionMode};
//! use spear_policy::{CommandPolicy, Decision, PolicyConfig, decide};
//! use spear_workspace::{Workspace, WorkspaceConfig};
//!
//! let dir = std::env::temp_dir();
//! let workspace = Arc::new(Workspace::open(&WorkspaceConfig::new(&dir)).unwrap());
//! let policy = CommandPolicy::new(workspace, PolicyConfig::new(None));
//! let a = policy.classify_script("grep -rn TODO . | head", &dir);
//! assert_eq!(a.class, CommandClass::ReadOnly);
//! let safe = CapabilityPolicy::for_mode(ExecutionMode::Safe);
//! assert!(matches!(decide(&a, safe, "grep -rn TODO . | head"), Decision::Allow(_)));
//! ```

mod analysis;
mod authorize;
mod commands;
mod config;
pub mod domains;
mod env_rules;
mod executable;
pub mod git_core;
mod git_layout;
mod git_worktree;
pub mod host_config;
mod host_read;
pub mod limits;
mod paths;
mod policy;
pub mod quotas;
pub mod serve;
mod shell;
mod target_policy;
pub mod web;

pub use authorize::{
    Authorization, ConfirmRequest, Confirmation, Confirmer, Decision, Escalation, access_for,
    authorize, authorize_secret_request, confirm_escalation, decide, decide_escalation,
    escalation_access, escalation_capabilities, escalation_request, make_visible,
};
pub use config::{
    ConfigError, OperatorConfig, OperatorNetwork, OperatorPaths, OperatorPolicy, OperatorSandbox,
    OperatorTargets, OperatorWorkspace, PolicyConfig, SandboxBackend, WorkspacePolicyFile,
    WorkspaceTargets,
};
pub use git_layout::{GitIndirections, Indirection, control_by_name};
pub use policy::{CommandPolicy, PreparedCommand};
pub use shell::pipe_status::{script_to_run, tolerate_sigpipe};
pub use target_policy::{HEADER_BYTES, Pattern, TargetRules, generated_header};

/// A workspace on disk and a policy over it, for the unit tests of the analysers.
#[cfg(test)]
mod tests_support {
    use std::path::PathBuf;
    use std::sync::Arc;

    pub(crate) struct Fixture {
        _dir: tempfile::TempDir,
        pub ws: PathBuf,
        pub policy: crate::CommandPolicy,
    }

    pub(crate) fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let workspace =
            spear_workspace::Workspace::open(&spear_workspace::WorkspaceConfig::new(&ws)).unwrap();
        let home = dir.path().join("home");
        let policy =
            crate::CommandPolicy::new(Arc::new(workspace), crate::PolicyConfig::new(Some(home)));
        Fixture {
            _dir: dir,
            ws,
            policy,
        }
    }
}
