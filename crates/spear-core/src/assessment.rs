//! What the decision layer concluded about a command.

use std::path::PathBuf;

use serde::Serialize;

use crate::{CapabilitySet, CommandClass, Refusal};

/// What a command or script would do: its class, the capabilities it needs, where it writes and
/// what it reads outside the workspace, and why. Produced by the decision layer; consumed by
/// `authorize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandAssessment {
    /// The overall class: the most restricted class of anything the script can run.
    pub class: CommandClass,
    /// The capabilities it needs to do what it says.
    pub capabilities: CapabilitySet,
    /// Host paths it is known to write, in the order they appear.
    pub write_targets: Vec<PathBuf>,
    /// Host paths outside the workspace roots it reads (each needs `host:read`).
    pub host_reads: Vec<PathBuf>,
    /// Host-run configuration it is known to write: never written without a person's approval
    /// (ASK and AUTO ask; SAFE runs no write), unless the operator allows the entry.
    pub host_config: Vec<HostConfigWrite>,
    /// One sentence on why it has this class.
    pub reason: String,
    /// Set when no mode may run it (always for [`CommandClass::Dangerous`]).
    pub refusal: Option<Refusal>,
    /// What it runs, as the audit log shows it: the first program of its top level and how many
    /// arguments it gets, with `+ N more` for the others (`cargo (2 args) + 1 more`), never an
    /// argument's text; made from the decision layer's own reading of the command.
    pub executable: String,
}

/// A write to host-run configuration: a file whose contents a tool on the host runs or obeys
/// without the user asking (git's hooks, configuration and includes, an editor's tasks, an
/// agent's MCP servers, ...). What a person is shown when asked, and what the approval covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct HostConfigWrite {
    /// The path, as the workspace labels it.
    pub path: String,
    /// The catalogue entry (`git-hooks`, `vscode`, ...), as `[policy] allow_host_config` names
    /// it.
    pub entry: String,
    /// What runs or obeys it on the host.
    pub why: String,
}

impl HostConfigWrite {
    /// The write a host-run-configuration refusal stands for; `None` for any other refusal.
    pub fn of_refusal(refusal: &Refusal) -> Option<Self> {
        match refusal {
            Refusal::HostRunConfig { path, entry, why } => Some(HostConfigWrite {
                path: path.clone(),
                entry: entry.clone(),
                why: why.clone(),
            }),
            _ => None,
        }
    }

    /// One line for a question or a reason: `` `path` (entry): why ``.
    pub fn describe(&self) -> String {
        format!("`{}` ({}): {}", self.path, self.entry, self.why)
    }
}

impl CommandAssessment {
    /// Whether the command is known or suspected to change files.
    pub fn mutates(&self) -> bool {
        self.capabilities
            .contains(crate::Capability::WorkspaceWrite)
    }
}
