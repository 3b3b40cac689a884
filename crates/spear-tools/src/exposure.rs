//! Roles and what each sees: the exposure policy.
//!
//! A tool outside a caller's view does not exist for it: it is not listed, and a call to it is
//! answered as a call to an unknown tool.
//!
//! A tool the role sees but the session's mode cannot run (`write_file`, `patch`, `delete_file` in
//! SAFE) is not listed either: a model that sees a tool calls it, and a list of tools that always
//! refuse teaches it nothing. A call to one all the same (a client that remembers an earlier
//! list, a model that guesses) is answered with [`spear_core::Refusal::ToolNotInMode`]: what the mode is, and that the
//! user, not the model, can start spear in a mode that has it. Not "unknown tool": the model would
//! look for another spelling instead of telling the user.

use std::fmt;
use std::str::FromStr;

use spear_core::ExecutionMode;

use crate::{Effect, ToolSpec};

/// Who is calling: the agent's role in the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Role {
    /// Changes the code: every coding tool.
    #[default]
    Implementation,
    /// Plans the work: read-only.
    Planning,
    /// Explores the code base: read-only.
    Explorer,
    /// Reviews changes: read-only.
    Reviewer,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 4] = [
        Role::Implementation,
        Role::Planning,
        Role::Explorer,
        Role::Reviewer,
    ];

    /// The role's name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Implementation => "implementation",
            Role::Planning => "planning",
            Role::Explorer => "explorer",
            Role::Reviewer => "reviewer",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role name that is not one of [`Role::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role `{0}`; the roles are implementation, planning, explorer and reviewer")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownRole(s.to_owned()))
    }
}

/// Which tools a role sees, and the mode they run in for it. Pure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolExposurePolicy {
    role: Role,
}

impl ToolExposurePolicy {
    /// The policy of `role`.
    pub const fn new(role: Role) -> Self {
        ToolExposurePolicy { role }
    }

    /// The role.
    pub const fn role(self) -> Role {
        self.role
    }

    /// Whether the role sees `spec`: implementation sees everything; the read-only roles see no
    /// tool that writes.
    pub fn exposes(self, spec: &ToolSpec) -> bool {
        match self.role {
            Role::Implementation => true,
            Role::Planning | Role::Explorer | Role::Reviewer => spec.effect != Effect::Write,
        }
    }

    /// Whether `spec` can act for this role in a session in `mode`: the mode it runs in for the
    /// role is one the tool declares.
    pub fn acts_in(self, spec: &ToolSpec, mode: ExecutionMode) -> bool {
        spec.modes.contains(&self.mode_for(spec, mode))
    }

    /// Whether `spec` is listed for this role in a session in `mode`: the role sees it and it can
    /// act in that mode.
    pub fn lists(self, spec: &ToolSpec, mode: ExecutionMode) -> bool {
        self.exposes(spec) && self.acts_in(spec, mode)
    }

    /// The mode a tool runs in for this role when the session runs in `mode`: the read-only roles
    /// run commands in SAFE whatever the session's mode (the workspace is mounted read-only).
    pub fn mode_for(self, spec: &ToolSpec, mode: ExecutionMode) -> ExecutionMode {
        match (self.role, spec.effect) {
            (Role::Implementation, _) | (_, Effect::Read) => mode,
            (_, Effect::Run | Effect::Write) => ExecutionMode::Safe,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolRegistry;

    #[test]
    fn listing_table() {
        use ExecutionMode::{Ask, Auto, Safe};
        let registry = ToolRegistry::coding();
        let listed = |role: Role, mode: ExecutionMode| -> Vec<&str> {
            let policy = ToolExposurePolicy::new(role);
            registry
                .specs()
                .filter(|s| policy.lists(s, mode))
                .map(|s| s.name)
                .collect()
        };
        let readers = [
            "read_file",
            "read_output",
            "search_files",
            "terminal",
            "terminal_kill",
            "terminal_output",
        ];
        let all = [
            "delete_file",
            "patch",
            "read_file",
            "read_output",
            "search_files",
            "terminal",
            "terminal_kill",
            "terminal_output",
            "write_file",
        ];
        for (role, mode, expected) in [
            (Role::Implementation, Safe, &readers[..]),
            (Role::Implementation, Ask, &all[..]),
            (Role::Implementation, Auto, &all[..]),
            (Role::Reviewer, Safe, &readers[..]),
            (Role::Reviewer, Auto, &readers[..]),
            (Role::Planning, Ask, &readers[..]),
            (Role::Explorer, Auto, &readers[..]),
        ] {
            assert_eq!(listed(role, mode), expected, "{role} {mode:?}");
        }
    }

    #[test]
    fn the_answer_names_the_modes_and_asks_the_user() {
        let text = spear_core::Refusal::tool_not_in_mode(
            "write_file",
            "a.txt",
            ExecutionMode::Safe,
            &[ExecutionMode::Ask, ExecutionMode::Auto],
        )
        .message();
        assert_eq!(
            text,
            "the tool `write_file` is not available in SAFE mode, in which nothing changes files; it exists in ASK (--ask) and AUTO (--auto). Ask the user to start spear in one of them if the change is needed, or continue with the tools that are listed"
        );
        assert!(!text.to_lowercase().contains("rerun"));
    }
}
