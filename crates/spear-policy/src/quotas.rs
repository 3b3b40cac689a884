//! The operator's quotas on spear's own state: `[state]` of `~/.config/spear/config.toml`.
//!
//! spear keeps checkpoints (for `spear undo`), stored outputs (for `result_ref`s) and an audit log
//! under `$XDG_STATE_HOME/spear`. Each is bounded, so that a model writing without pause cannot
//! fill the user's disk through spear (attack: 200 one-MiB writes a turn, kept up, grew the
//! checkpoint store until the filesystem was full). Only the operator sets quotas; a value out of
//! bounds is an error at startup, never clamped.
//!
//! ```toml
//! [state]
//! checkpoints = "100M"      # checkpoint store of one workspace (oldest turns evicted first)
//! checkpoints_all = "1G"    # checkpoint stores of every workspace of this user together
//! results = "64M"           # stored outputs of one session (oldest evicted; refs then "expired")
//! audit = "64M"             # audit log size at which it is rotated (one older file kept)
//! free_floor = "512M"       # free space kept on the state's filesystem: below it, mutating
//!                           # calls are refused before they write
//! ```

use serde::Deserialize;

use crate::limits::{LimitError, Size, parse_size, show_bytes};

/// `[state]` of the operator configuration, as written. Every key is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorState {
    /// Checkpoint store of one workspace.
    #[serde(default)]
    pub checkpoints: Option<Size>,
    /// Checkpoint stores of every workspace of the user together.
    #[serde(default)]
    pub checkpoints_all: Option<Size>,
    /// Stored outputs of one session.
    #[serde(default)]
    pub results: Option<Size>,
    /// Audit log size at which it is rotated.
    #[serde(default)]
    pub audit: Option<Size>,
    /// Free space kept on the state's filesystem.
    #[serde(default)]
    pub free_floor: Option<Size>,
}

/// The quotas one invocation runs with, each within [`QuotaBounds`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quotas {
    /// Bytes the checkpoint store of one workspace may hold.
    pub checkpoints_bytes: u64,
    /// Bytes the checkpoint stores of all the user's workspaces may hold together.
    pub checkpoints_all_bytes: u64,
    /// Bytes of stored outputs one session may hold.
    pub results_bytes: u64,
    /// Size at which the audit log is rotated.
    pub audit_bytes: u64,
    /// Free bytes kept on the filesystem of spear's state.
    pub free_floor_bytes: u64,
}

impl Quotas {
    /// Default checkpoint store of one workspace: 100 MiB.
    pub const DEFAULT_CHECKPOINTS: u64 = 100 << 20;
    /// Default of all checkpoint stores together: 1 GiB.
    pub const DEFAULT_CHECKPOINTS_ALL: u64 = 1 << 30;
    /// Default stored outputs of one session: 64 MiB.
    pub const DEFAULT_RESULTS: u64 = 64 << 20;
    /// Default audit rotation size: 64 MiB.
    pub const DEFAULT_AUDIT: u64 = 64 << 20;
    /// Default free-space floor: 512 MiB.
    pub const DEFAULT_FREE_FLOOR: u64 = 512 << 20;

    /// Merges `[state]` (`config_path` names it in errors) over the defaults and checks every
    /// value against [`QuotaBounds`]; `checkpoints_all` must be at least `checkpoints`.
    pub fn resolve(config: &OperatorState, config_path: &str) -> Result<Quotas, LimitError> {
        let value = |key: &str, size: &Option<Size>, default: u64, bounds: (u64, u64)| {
            let err = |message: String| LimitError {
                source_name: format!("[state] {key} in {config_path}"),
                message,
            };
            let Some(size) = size else {
                return Ok(default);
            };
            let n = match size {
                Size::Bytes(n) => *n,
                Size::Text(t) => parse_size(t).map_err(err)?,
            };
            if n < bounds.0 || n > bounds.1 {
                return Err(err(format!(
                    "{} is out of bounds; it must be between {} and {}",
                    show_bytes(n),
                    show_bytes(bounds.0),
                    show_bytes(bounds.1)
                )));
            }
            Ok(n)
        };
        let quotas = Quotas {
            checkpoints_bytes: value(
                "checkpoints",
                &config.checkpoints,
                Self::DEFAULT_CHECKPOINTS,
                QuotaBounds::CHECKPOINTS,
            )?,
            checkpoints_all_bytes: value(
                "checkpoints_all",
                &config.checkpoints_all,
                Self::DEFAULT_CHECKPOINTS_ALL,
                QuotaBounds::CHECKPOINTS,
            )?,
            results_bytes: value(
                "results",
                &config.results,
                Self::DEFAULT_RESULTS,
                QuotaBounds::RESULTS,
            )?,
            audit_bytes: value(
                "audit",
                &config.audit,
                Self::DEFAULT_AUDIT,
                QuotaBounds::AUDIT,
            )?,
            free_floor_bytes: value(
                "free_floor",
                &config.free_floor,
                Self::DEFAULT_FREE_FLOOR,
                QuotaBounds::FREE_FLOOR,
            )?,
        };
        if quotas.checkpoints_all_bytes < quotas.checkpoints_bytes {
            return Err(LimitError {
                source_name: format!("[state] checkpoints_all in {config_path}"),
                message: format!(
                    "{} is less than one workspace's quota ({}); it must be at least that",
                    show_bytes(quotas.checkpoints_all_bytes),
                    show_bytes(quotas.checkpoints_bytes)
                ),
            });
        }
        Ok(quotas)
    }
}

impl Default for Quotas {
    fn default() -> Self {
        Quotas {
            checkpoints_bytes: Self::DEFAULT_CHECKPOINTS,
            checkpoints_all_bytes: Self::DEFAULT_CHECKPOINTS_ALL,
            results_bytes: Self::DEFAULT_RESULTS,
            audit_bytes: Self::DEFAULT_AUDIT,
            free_floor_bytes: Self::DEFAULT_FREE_FLOOR,
        }
    }
}

/// The bounds every quota must lie within (inclusive).
pub struct QuotaBounds;

impl QuotaBounds {
    /// A checkpoint store: 1 MiB to 1 TiB.
    pub const CHECKPOINTS: (u64, u64) = (1 << 20, 1 << 40);
    /// Stored outputs of a session: 1 MiB to 64 GiB.
    pub const RESULTS: (u64, u64) = (1 << 20, 64 << 30);
    /// Audit rotation: 64 KiB to 64 GiB.
    pub const AUDIT: (u64, u64) = (64 << 10, 64 << 30);
    /// Free-space floor: none to 1 TiB.
    pub const FREE_FLOOR: (u64, u64) = (0, 1 << 40);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(toml_text: &str) -> Result<Quotas, LimitError> {
        #[derive(Deserialize)]
        struct Doc {
            #[serde(default)]
            state: OperatorState,
        }
        let doc: Doc = toml::from_str(toml_text).unwrap();
        Quotas::resolve(&doc.state, "/c.toml")
    }

    #[test]
    fn nothing_set_keeps_every_default() {
        assert_eq!(parse("").unwrap(), Quotas::default());
        assert_eq!(Quotas::default().checkpoints_bytes, 100 << 20);
    }

    #[test]
    fn values_are_read_and_checked() {
        let q = parse(
            "[state]\ncheckpoints = \"10M\"\ncheckpoints_all = \"20M\"\nresults = 2097152\n\
             audit = \"1M\"\nfree_floor = 0\n",
        )
        .unwrap();
        assert_eq!(
            q,
            Quotas {
                checkpoints_bytes: 10 << 20,
                checkpoints_all_bytes: 20 << 20,
                results_bytes: 2 << 20,
                audit_bytes: 1 << 20,
                free_floor_bytes: 0,
            }
        );
        let cases = [
            (
                "[state]\ncheckpoints = \"1K\"",
                "[state] checkpoints in /c.toml",
            ),
            ("[state]\nresults = \"2T\"", "[state] results in /c.toml"),
            ("[state]\naudit = \"lots\"", "[state] audit in /c.toml"),
            (
                "[state]\ncheckpoints = \"2G\"",
                "[state] checkpoints_all in /c.toml",
            ),
        ];
        for (text, source) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!(e.source_name, source, "{text}");
        }
        assert!(
            parse("[state]\ncheckpoints = \"2G\"")
                .unwrap_err()
                .message
                .contains("at least")
        );
    }

    #[test]
    fn unknown_keys_are_errors() {
        let doc: Result<OperatorState, _> = toml::from_str("chekpoints = 1");
        assert!(doc.is_err());
    }
}
