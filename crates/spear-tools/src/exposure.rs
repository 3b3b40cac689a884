//! Roles and what each sees: the exposure policy.
//!
//! A tool outside a caller's view does not exist for it: it is not listed, and a call to it is
//! answered as a call to an unknown tool.

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

    /// The mode a tool runs in for this role when the session runs in `mode`: the read-only roles
    /// run commands in SAFE whatever the session's mode (the workspace is mounted read-only).
    pub fn mode_for(self, spec: &ToolSpec, mode: ExecutionMode) -> ExecutionMode {
        match (self.role, spec.effect) {
            (Role::Implementation, _) | (_, Effect::Read) => mode,
            (_, Effect::Run | Effect::Write) => ExecutionMode::Safe,
        }
    }
}
