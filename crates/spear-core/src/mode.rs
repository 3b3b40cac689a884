//! Execution modes: how much the operator lets the agent do without asking.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How much the operator lets the agent do. SAFE is the default.
///
/// - SAFE: reads and confined commands only; the workspace is read-only and nothing that is known
///   to mutate runs.
/// - ASK: mutating or networked work runs after a person confirms exactly what will run.
/// - AUTO: everything the capability matrix grants runs without asking, confined by the sandbox.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionMode {
    /// Read-only; the default.
    #[default]
    Safe,
    /// Confirm mutating and networked work.
    Ask,
    /// Grant what the matrix allows without asking.
    Auto,
}

impl ExecutionMode {
    /// Every mode, from the most to the least restrictive.
    pub const ALL: [ExecutionMode; 3] =
        [ExecutionMode::Safe, ExecutionMode::Ask, ExecutionMode::Auto];

    /// The lower-case name used on the command line and in JSON (`safe`, `ask`, `auto`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ExecutionMode::Safe => "safe",
            ExecutionMode::Ask => "ask",
            ExecutionMode::Auto => "auto",
        }
    }

    /// The command-line flag that selects this mode (`--safe`, `--ask`, `--auto`).
    pub const fn flag(self) -> &'static str {
        match self {
            ExecutionMode::Safe => "--safe",
            ExecutionMode::Ask => "--ask",
            ExecutionMode::Auto => "--auto",
        }
    }
}

impl fmt::Display for ExecutionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str().to_ascii_uppercase())
    }
}

/// A mode name that is not `safe`, `ask` or `auto`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode {0:?}: expected safe, ask or auto")]
pub struct UnknownMode(pub String);

impl FromStr for ExecutionMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "safe" => Ok(ExecutionMode::Safe),
            "ask" => Ok(ExecutionMode::Ask),
            "auto" => Ok(ExecutionMode::Auto),
            _ => Err(UnknownMode(s.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_safe() {
        assert_eq!(ExecutionMode::default(), ExecutionMode::Safe);
    }

    #[test]
    fn names_round_trip() {
        for mode in ExecutionMode::ALL {
            assert_eq!(mode.as_str().parse::<ExecutionMode>(), Ok(mode));
            assert_eq!(mode.to_string().parse::<ExecutionMode>(), Ok(mode));
            assert_eq!(mode.flag(), format!("--{}", mode.as_str()));
        }
        assert!("yolo".parse::<ExecutionMode>().is_err());
    }
}
