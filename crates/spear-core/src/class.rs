//! The class of a command: what the decision layer concluded it would do.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a shell script would do, from least to most restricted. Classes are ordered, so the class
/// of a script is the maximum over everything it can run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CommandClass {
    /// Every program is known and changes nothing.
    ReadOnly,
    /// Every program is known; what it writes lies inside the workspace roots.
    WorkspaceMutating,
    /// Something runs whose effects cannot be known before it runs (unknown programs, interpreters,
    /// `eval`, words known only at run time). Only the sandbox confines it.
    ShellComplex,
    /// Refused in every mode: privilege change, mounts, kernel and devices, remote and container
    /// tools, writes outside the roots, credential stores.
    Dangerous,
}

impl CommandClass {
    /// The upper-case name used in JSON and the CLI (`READ_ONLY`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            CommandClass::ReadOnly => "READ_ONLY",
            CommandClass::WorkspaceMutating => "WORKSPACE_MUTATING",
            CommandClass::ShellComplex => "SHELL_COMPLEX",
            CommandClass::Dangerous => "DANGEROUS",
        }
    }
}

impl fmt::Display for CommandClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::CommandClass::*;

    #[test]
    fn ordered_by_restriction() {
        assert!(ReadOnly < WorkspaceMutating);
        assert!(WorkspaceMutating < ShellComplex);
        assert!(ShellComplex < Dangerous);
        assert_eq!(
            serde_json::to_string(&WorkspaceMutating).unwrap(),
            "\"WORKSPACE_MUTATING\""
        );
        assert_eq!(Dangerous.to_string(), "DANGEROUS");
    }
}
