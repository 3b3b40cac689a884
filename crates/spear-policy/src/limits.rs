//! The operator's resource limits: `[limits]` of `~/.config/spear/config.toml` and the CLI flags
//! that override it, checked against fixed bounds.
//!
//! Only the operator sets limits (a workspace file has no `[limits]`). A value out of bounds is an
//! error at startup, never clamped silently: a memory limit of 0 would stop every command before it
//! starts, one of a petabyte would be no limit at all.
//!
//! ```toml
//! [limits]
//! memory = "4G"        # memory of one command's process tree (cgroup memory.max)
//! tasks = 512          # processes and threads of one command's tree at once
//! cpu = 2.5            # CPUs' worth of CPU time per wall-clock second
//! output_cap = "2M"    # bytes kept per output stream (the first and the last half)
//! timeout = 120        # default wall-clock limit of a command, in seconds
//! session_tasks = 2048 # processes and threads of all of a session's commands and jobs together
//! session_memory = "16G" # memory of all of a session's commands and jobs together
//! changes = 250000     # changes one command may make that spear commits (past it, none)
//! ```
//!
//! A session (a `spear mcp` server, one `spear exec` or `spear tool` call, one sandbox
//! configuration of `spear serve`) holds all its commands and background jobs within its budget,
//! each command still within its own limits. A budget below one command's limit is an error at
//! startup; an unset one is spear's default (1024 tasks, 8 GiB) or one command's limit, whichever
//! is larger ([`Limits::resolve_session`]).

use serde::Deserialize;

/// `[limits]` of the operator configuration, as written. Every key is optional: a missing one
/// keeps spear's built-in default.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorLimits {
    /// Memory of one command's tree: bytes, or a size such as `"512M"`, `"4G"`.
    #[serde(default)]
    pub memory: Option<Size>,
    /// Tasks (processes and threads) of one command's tree.
    #[serde(default)]
    pub tasks: Option<u64>,
    /// CPUs' worth of CPU time (`0.5`, `2`, `8`).
    #[serde(default)]
    pub cpu: Option<f64>,
    /// Bytes kept per output stream: bytes, or a size such as `"256K"`, `"4M"`.
    #[serde(default)]
    pub output_cap: Option<Size>,
    /// Default wall-clock limit of a command, in seconds.
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Tasks of all of a session's commands and background jobs together.
    #[serde(default)]
    pub session_tasks: Option<u64>,
    /// Memory of all of a session's commands and background jobs together.
    #[serde(default)]
    pub session_memory: Option<Size>,
    /// Changes (files, directories, links, removals) one command may make that spear judges and
    /// commits; past it, nothing of the command's is committed and the result says why.
    #[serde(default)]
    pub changes: Option<u64>,
}

/// A size as written: a number of bytes, or a string with an optional `K`, `M`, `G` or `T`
/// suffix (powers of 1024; `KiB`, `MB`... are read the same).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Size {
    /// A plain number of bytes.
    Bytes(u64),
    /// A size with a unit.
    Text(String),
}

/// The limits one invocation runs with, every value checked against [`Bounds`]. `None` keeps the
/// built-in default of the layer that owns it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    /// Memory of one command's tree, in bytes.
    pub memory_bytes: Option<u64>,
    /// Tasks of one command's tree.
    pub tasks: Option<u32>,
    /// CPU time, in percent of one CPU (`250` is 2.5 CPUs).
    pub cpu_percent: Option<u32>,
    /// Bytes kept per output stream.
    pub output_cap_bytes: Option<u64>,
    /// Default wall-clock limit, in seconds.
    pub timeout_secs: Option<f64>,
    /// Tasks of a session's commands together; after [`Limits::resolve_session`], the value the
    /// session runs with.
    pub session_tasks: Option<u32>,
    /// Memory of a session's commands together, in bytes; after [`Limits::resolve_session`],
    /// the value the session runs with.
    pub session_memory_bytes: Option<u64>,
    /// Changes one command may make that spear commits.
    pub changes: Option<u64>,
}

/// The built-in values of the layers that own the limits, for the checks that compare limits
/// with each other ([`Limits::resolve_session`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltIn {
    /// One command's tasks.
    pub tasks: u32,
    /// One command's memory, in bytes.
    pub memory_bytes: u64,
    /// A session's tasks.
    pub session_tasks: u32,
    /// A session's memory, in bytes.
    pub session_memory_bytes: u64,
}

/// The bounds every limit must lie within (inclusive).
pub struct Bounds;

impl Bounds {
    /// Memory: 32 MiB to 1 TiB.
    pub const MEMORY: (u64, u64) = (32 << 20, 1 << 40);
    /// Tasks: 8 to 65536.
    pub const TASKS: (u64, u64) = (8, 65_536);
    /// CPU: a tenth of a CPU to 1024 CPUs.
    pub const CPU: (f64, f64) = (0.1, 1024.0);
    /// Output cap: 4 KiB to 64 MiB per stream (a larger capture belongs in a file).
    pub const OUTPUT_CAP: (u64, u64) = (4 << 10, 64 << 20);
    /// Timeout: 1 second to a day.
    pub const TIMEOUT: (f64, f64) = (1.0, 86_400.0);
    /// A session's tasks: 8 to 262144.
    pub const SESSION_TASKS: (u64, u64) = (8, 262_144);
    /// A session's memory: 32 MiB to 4 TiB.
    pub const SESSION_MEMORY: (u64, u64) = (32 << 20, 4 << 40);
    /// Changes one command may make that spear commits: 1 to 2,000,000 (what the staging layer
    /// is ever read up to).
    pub const CHANGES: (u64, u64) = (1, 2_000_000);
}

/// A limit that is malformed or out of bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {message}")]
pub struct LimitError {
    /// Where the value came from (`--memory`, `[limits] memory in /path/config.toml`).
    pub source_name: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

/// Values from the command line; each overrides the configuration's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LimitFlags {
    /// `--memory SIZE`.
    pub memory: Option<String>,
    /// `--tasks N`.
    pub tasks: Option<u64>,
    /// `--cpu CPUS`.
    pub cpu: Option<f64>,
    /// `--output-cap SIZE`.
    pub output_cap: Option<String>,
    /// `--timeout SECONDS`.
    pub timeout: Option<f64>,
    /// `--session-tasks N`.
    pub session_tasks: Option<u64>,
    /// `--session-memory SIZE`.
    pub session_memory: Option<String>,
}

/// Parses a size: `4096`, `512K`, `64M`, `4G`, `1T` (powers of 1024, case-insensitive, an
/// optional `B`, `iB`; spaces allowed before the unit). Overflow and fractions are errors.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits_end);
    let bad = || {
        format!("`{text}` is not a size; write a number of bytes or one with K, M, G or T (`512M`)")
    };
    if number.is_empty() {
        return Err(bad());
    }
    let n: u64 = number.parse().map_err(|_| bad())?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(bad()),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("`{text}` is too large"))
}

fn size_of(size: &Size) -> Result<u64, String> {
    match size {
        Size::Bytes(n) => Ok(*n),
        Size::Text(t) => parse_size(t),
    }
}

fn within_u64(
    value: u64,
    (lo, hi): (u64, u64),
    show: &dyn Fn(u64) -> String,
) -> Result<u64, String> {
    if value < lo || value > hi {
        Err(format!(
            "{} is out of bounds; it must be between {} and {}",
            show(value),
            show(lo),
            show(hi)
        ))
    } else {
        Ok(value)
    }
}

fn within_f64(value: f64, (lo, hi): (f64, f64), unit: &str) -> Result<f64, String> {
    if value.is_finite() && value >= lo && value <= hi {
        Ok(value)
    } else {
        Err(format!(
            "{value} is out of bounds; it must be between {lo} and {hi} {unit}"
        ))
    }
}

/// A byte count as a person reads it (`512 MiB`, `4 GiB`, `1000 bytes`).
pub fn show_bytes(n: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{} {unit}", n >> shift);
        }
    }
    format!("{n} bytes")
}

/// `[limits] changes`, within [`Bounds::CHANGES`] (no flag sets it).
fn changes_of(config: &OperatorLimits, config_path: &str) -> Result<Option<u64>, LimitError> {
    config
        .changes
        .map(|n| {
            within_u64(n, Bounds::CHANGES, &|v| v.to_string()).map_err(|message| LimitError {
                source_name: format!("[limits] changes in {config_path}"),
                message,
            })
        })
        .transpose()
}

impl Limits {
    /// Merges the configuration's `[limits]` (`config_path` names it in errors) and the flags
    /// (which win), and checks every value against [`Bounds`].
    pub fn resolve(
        config: &OperatorLimits,
        config_path: &str,
        flags: &LimitFlags,
    ) -> Result<Limits, LimitError> {
        let from_config = |key: &str| format!("[limits] {key} in {config_path}");
        let err = |source_name: String| {
            move |message: String| LimitError {
                source_name,
                message,
            }
        };

        let memory = match (&flags.memory, &config.memory) {
            (Some(text), _) => Some(parse_size(text).map_err(err("--memory".into()))).map(|r| {
                r.and_then(|v| {
                    within_u64(v, Bounds::MEMORY, &show_bytes).map_err(err("--memory".into()))
                })
            }),
            (None, Some(size)) => Some(
                size_of(size)
                    .and_then(|v| within_u64(v, Bounds::MEMORY, &show_bytes))
                    .map_err(err(from_config("memory"))),
            ),
            (None, None) => None,
        }
        .transpose()?;

        let tasks = match (flags.tasks, config.tasks) {
            (Some(n), _) => Some(("--tasks".to_owned(), n)),
            (None, Some(n)) => Some((from_config("tasks"), n)),
            (None, None) => None,
        }
        .map(|(name, n)| {
            within_u64(n, Bounds::TASKS, &|v| v.to_string())
                .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
                .map_err(err(name))
        })
        .transpose()?;

        let cpu_percent = match (flags.cpu, config.cpu) {
            (Some(c), _) => Some(("--cpu".to_owned(), c)),
            (None, Some(c)) => Some((from_config("cpu"), c)),
            (None, None) => None,
        }
        .map(|(name, c)| {
            within_f64(c, Bounds::CPU, "CPUs")
                .map(cpu_percent)
                .map_err(err(name))
        })
        .transpose()?;

        let output_cap = match (&flags.output_cap, &config.output_cap) {
            (Some(text), _) => Some(
                parse_size(text)
                    .and_then(|v| within_u64(v, Bounds::OUTPUT_CAP, &show_bytes))
                    .map_err(err("--output-cap".into())),
            ),
            (None, Some(size)) => Some(
                size_of(size)
                    .and_then(|v| within_u64(v, Bounds::OUTPUT_CAP, &show_bytes))
                    .map_err(err(from_config("output_cap"))),
            ),
            (None, None) => None,
        }
        .transpose()?;

        let timeout = match (flags.timeout, config.timeout) {
            (Some(t), _) => Some(("--timeout".to_owned(), t)),
            (None, Some(t)) => Some((from_config("timeout"), t)),
            (None, None) => None,
        }
        .map(|(name, t)| within_f64(t, Bounds::TIMEOUT, "seconds").map_err(err(name)))
        .transpose()?;

        let session_tasks = match (flags.session_tasks, config.session_tasks) {
            (Some(n), _) => Some(("--session-tasks".to_owned(), n)),
            (None, Some(n)) => Some((from_config("session_tasks"), n)),
            (None, None) => None,
        }
        .map(|(name, n)| {
            within_u64(n, Bounds::SESSION_TASKS, &|v| v.to_string())
                .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
                .map_err(err(name))
        })
        .transpose()?;

        let session_memory = match (&flags.session_memory, &config.session_memory) {
            (Some(text), _) => Some(
                parse_size(text)
                    .and_then(|v| within_u64(v, Bounds::SESSION_MEMORY, &show_bytes))
                    .map_err(err("--session-memory".into())),
            ),
            (None, Some(size)) => Some(
                size_of(size)
                    .and_then(|v| within_u64(v, Bounds::SESSION_MEMORY, &show_bytes))
                    .map_err(err(from_config("session_memory"))),
            ),
            (None, None) => None,
        }
        .transpose()?;

        Ok(Limits {
            memory_bytes: memory,
            tasks,
            cpu_percent,
            output_cap_bytes: output_cap,
            timeout_secs: timeout,
            session_tasks,
            session_memory_bytes: session_memory,
            changes: changes_of(config, config_path)?,
        })
    }

    /// Sets the session's budget to what the session runs with, and checks it holds one command:
    /// a budget set (by `flags`, or in `[limits]` of `config_path`) below one command's limit
    /// (set, or `built_in`) is an error naming both and what to change; an unset one is the built-in
    /// budget, or one command's limit where that is larger (so raising `tasks` or `memory` alone
    /// never makes a session that cannot run one command).
    pub fn resolve_session(
        &mut self,
        config_path: &str,
        flags: &LimitFlags,
        built_in: &BuiltIn,
    ) -> Result<(), LimitError> {
        let tasks = self.tasks.unwrap_or(built_in.tasks);
        let memory = self.memory_bytes.unwrap_or(built_in.memory_bytes);
        let below = |key: &str, flag: bool, budget: String, limit: String, what: &str| {
            let source_name = if flag {
                format!("--{}", key.replace('_', "-"))
            } else {
                format!("[limits] {key} in {config_path}")
            };
            LimitError {
                message: format!(
                    "the session's budget of {budget} is below one command's {what} limit of {limit}: \
                     raise {source_name} to at least {limit}, or lower the command's limit ({})",
                    if what == "task" {
                        "[limits] tasks, --tasks"
                    } else {
                        "[limits] memory, --memory"
                    }
                ),
                source_name,
            }
        };
        match self.session_tasks {
            Some(budget) if budget < tasks => {
                return Err(below(
                    "session_tasks",
                    flags.session_tasks.is_some(),
                    format!("{budget} tasks"),
                    tasks.to_string(),
                    "task",
                ));
            }
            Some(_) => {}
            None => self.session_tasks = Some(built_in.session_tasks.max(tasks)),
        }
        match self.session_memory_bytes {
            Some(budget) if budget < memory => {
                return Err(below(
                    "session_memory",
                    flags.session_memory.is_some(),
                    show_bytes(budget),
                    show_bytes(memory),
                    "memory",
                ));
            }
            Some(_) => {}
            None => self.session_memory_bytes = Some(built_in.session_memory_bytes.max(memory)),
        }
        Ok(())
    }
}

/// CPUs (within [`Bounds::CPU`]) as percent of one CPU, rounded.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "the value is within Bounds::CPU, so its percent fits a u32"
)]
fn cpu_percent(cpus: f64) -> u32 {
    (cpus * 100.0).round() as u32
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn sizes() {
        for (text, bytes) in [
            ("4096", Some(4096)),
            ("512K", Some(512 << 10)),
            ("512k", Some(512 << 10)),
            ("64M", Some(64 << 20)),
            ("64 MiB", Some(64 << 20)),
            ("4G", Some(4 << 30)),
            ("4GB", Some(4 << 30)),
            ("1T", Some(1 << 40)),
            ("10B", Some(10)),
            ("", None),
            ("M", None),
            ("1.5G", None),
            ("-1", None),
            ("4X", None),
            ("99999999999999999999", None),
            ("20000000T", None),
        ] {
            assert_eq!(parse_size(text).ok(), bytes, "{text:?}");
        }
    }

    fn flags() -> LimitFlags {
        LimitFlags::default()
    }

    #[test]
    fn nothing_set_keeps_every_default() {
        assert_eq!(
            Limits::resolve(&OperatorLimits::default(), "c.toml", &flags()).unwrap(),
            Limits::default()
        );
    }

    #[test]
    fn changes_are_bounded() {
        for (n, ok) in [(0, false), (1, true), (2_000_000, true), (2_000_001, false)] {
            let config = OperatorLimits {
                changes: Some(n),
                ..OperatorLimits::default()
            };
            let r = Limits::resolve(&config, "c.toml", &flags());
            assert_eq!(r.is_ok(), ok, "{n}: {r:?}");
            if let Err(e) = r {
                assert_eq!(e.source_name, "[limits] changes in c.toml");
            }
        }
    }

    #[test]
    fn flags_win_over_the_configuration() {
        let config = OperatorLimits {
            memory: Some(Size::Text("4G".into())),
            tasks: Some(100),
            cpu: Some(2.0),
            output_cap: Some(Size::Bytes(1 << 20)),
            timeout: Some(60.0),
            session_tasks: Some(2048),
            session_memory: Some(Size::Text("16G".into())),
            changes: Some(1000),
        };
        let from_config = Limits::resolve(&config, "c.toml", &flags()).unwrap();
        assert_eq!(
            from_config,
            Limits {
                memory_bytes: Some(4 << 30),
                tasks: Some(100),
                cpu_percent: Some(200),
                output_cap_bytes: Some(1 << 20),
                timeout_secs: Some(60.0),
                session_tasks: Some(2048),
                session_memory_bytes: Some(16 << 30),
                changes: Some(1000),
            }
        );
        let f = LimitFlags {
            memory: Some("512M".into()),
            tasks: Some(64),
            cpu: Some(0.5),
            output_cap: Some("64K".into()),
            timeout: Some(5.0),
            session_tasks: None,
            session_memory: None,
        };
        assert_eq!(
            Limits::resolve(&config, "c.toml", &f).unwrap(),
            Limits {
                memory_bytes: Some(512 << 20),
                tasks: Some(64),
                cpu_percent: Some(50),
                output_cap_bytes: Some(64 << 10),
                timeout_secs: Some(5.0),
                session_tasks: Some(2048),
                session_memory_bytes: Some(16 << 30),
                changes: Some(1000),
            }
        );
    }

    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a table: one case per limit out of bounds, from a flag or the configuration"
    )]
    fn out_of_bounds_is_an_error_naming_the_source_and_the_bounds() {
        let cases: Vec<(OperatorLimits, LimitFlags, &str, &str)> = vec![
            (
                OperatorLimits::default(),
                LimitFlags {
                    memory: Some("1M".into()),
                    ..flags()
                },
                "--memory",
                "between 32 MiB and 1 TiB",
            ),
            (
                OperatorLimits::default(),
                LimitFlags {
                    memory: Some("lots".into()),
                    ..flags()
                },
                "--memory",
                "is not a size",
            ),
            (
                OperatorLimits {
                    memory: Some(Size::Text("2T".into())),
                    ..Default::default()
                },
                flags(),
                "[limits] memory in c.toml",
                "out of bounds",
            ),
            (
                OperatorLimits::default(),
                LimitFlags {
                    tasks: Some(0),
                    ..flags()
                },
                "--tasks",
                "between 8 and 65536",
            ),
            (
                OperatorLimits {
                    tasks: Some(1 << 20),
                    ..Default::default()
                },
                flags(),
                "[limits] tasks in c.toml",
                "between 8 and 65536",
            ),
            (
                OperatorLimits::default(),
                LimitFlags {
                    cpu: Some(0.0),
                    ..flags()
                },
                "--cpu",
                "between 0.1 and 1024 CPUs",
            ),
            (
                OperatorLimits::default(),
                LimitFlags {
                    cpu: Some(f64::NAN),
                    ..flags()
                },
                "--cpu",
                "out of bounds",
            ),
            (
                OperatorLimits {
                    output_cap: Some(Size::Bytes(10)),
                    ..Default::default()
                },
                flags(),
                "[limits] output_cap in c.toml",
                "between 4 KiB and 64 MiB",
            ),
            (
                OperatorLimits::default(),
                LimitFlags {
                    output_cap: Some("1G".into()),
                    ..flags()
                },
                "--output-cap",
                "between 4 KiB and 64 MiB",
            ),
            (
                OperatorLimits {
                    timeout: Some(0.5),
                    ..Default::default()
                },
                flags(),
                "[limits] timeout in c.toml",
                "between 1 and 86400 seconds",
            ),
            (
                OperatorLimits::default(),
                LimitFlags {
                    timeout: Some(1e9),
                    ..flags()
                },
                "--timeout",
                "between 1 and 86400 seconds",
            ),
            (
                OperatorLimits {
                    session_tasks: Some(4),
                    ..Default::default()
                },
                flags(),
                "[limits] session_tasks in c.toml",
                "between 8 and 262144",
            ),
            (
                OperatorLimits {
                    session_memory: Some(Size::Text("8T".into())),
                    ..Default::default()
                },
                flags(),
                "[limits] session_memory in c.toml",
                "between 32 MiB and 4 TiB",
            ),
            (
                OperatorLimits::default(),
                LimitFlags {
                    session_tasks: Some(1 << 30),
                    ..flags()
                },
                "--session-tasks",
                "between 8 and 262144",
            ),
        ];
        for (config, f, source, text) in cases {
            let e = Limits::resolve(&config, "c.toml", &f).unwrap_err();
            assert_eq!(e.source_name, source, "{e}");
            assert!(e.to_string().contains(text), "{e}");
        }
    }

    const BUILT_IN: BuiltIn = BuiltIn {
        tasks: 256,
        memory_bytes: 2 << 30,
        session_tasks: 1024,
        session_memory_bytes: 8 << 30,
    };

    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a table: one case per way a session's budget is set"
    )]
    fn the_session_budget_holds_one_command() {
        // (config, flags, the session's tasks and memory, or the error's source and text)
        type Want = Result<(u32, u64), (&'static str, &'static str)>;
        let cases: Vec<(OperatorLimits, LimitFlags, Want)> = vec![
            (OperatorLimits::default(), flags(), Ok((1024, 8 << 30))),
            (
                OperatorLimits {
                    session_tasks: Some(300),
                    session_memory: Some(Size::Text("3G".into())),
                    ..Default::default()
                },
                flags(),
                Ok((300, 3 << 30)),
            ),
            // Equal to one command's limit is enough.
            (
                OperatorLimits {
                    session_tasks: Some(256),
                    session_memory: Some(Size::Text("2G".into())),
                    ..Default::default()
                },
                flags(),
                Ok((256, 2 << 30)),
            ),
            // Unset, the budget follows a command's limit raised above the built-in budget.
            (
                OperatorLimits::default(),
                LimitFlags {
                    tasks: Some(4096),
                    memory: Some("16G".into()),
                    ..flags()
                },
                Ok((4096, 16 << 30)),
            ),
            (
                OperatorLimits {
                    session_tasks: Some(100),
                    ..Default::default()
                },
                flags(),
                Err((
                    "[limits] session_tasks in c.toml",
                    "the session's budget of 100 tasks is below one command's task limit of 256: raise [limits] session_tasks in c.toml to at least 256, or lower the command's limit ([limits] tasks, --tasks)",
                )),
            ),
            (
                OperatorLimits {
                    session_tasks: Some(300),
                    ..Default::default()
                },
                LimitFlags {
                    tasks: Some(512),
                    ..flags()
                },
                Err((
                    "[limits] session_tasks in c.toml",
                    "below one command's task limit of 512",
                )),
            ),
            // The flags win over the file, and are named when too small.
            (
                OperatorLimits {
                    session_tasks: Some(100),
                    ..Default::default()
                },
                LimitFlags {
                    session_tasks: Some(2000),
                    session_memory: Some("9G".into()),
                    ..flags()
                },
                Ok((2000, 9 << 30)),
            ),
            (
                OperatorLimits::default(),
                LimitFlags {
                    session_memory: Some("1G".into()),
                    ..flags()
                },
                Err((
                    "--session-memory",
                    "raise --session-memory to at least 2 GiB",
                )),
            ),
            (
                OperatorLimits {
                    session_memory: Some(Size::Text("1G".into())),
                    ..Default::default()
                },
                flags(),
                Err((
                    "[limits] session_memory in c.toml",
                    "the session's budget of 1 GiB is below one command's memory limit of 2 GiB: raise [limits] session_memory in c.toml to at least 2 GiB, or lower the command's limit ([limits] memory, --memory)",
                )),
            ),
        ];
        for (config, f, want) in cases {
            let mut limits = Limits::resolve(&config, "c.toml", &f).unwrap();
            let got = limits.resolve_session("c.toml", &f, &BUILT_IN).map(|()| {
                (
                    limits.session_tasks.unwrap(),
                    limits.session_memory_bytes.unwrap(),
                )
            });
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{config:?} {f:?}"),
                (Err(e), Err((source, text))) => {
                    assert_eq!(e.source_name, source, "{e}");
                    assert!(e.message.contains(text), "{e}");
                }
                (got, want) => panic!("{config:?} {f:?}: {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn bounds_themselves_are_accepted() {
        let f = LimitFlags {
            memory: Some("32M".into()),
            tasks: Some(65_536),
            cpu: Some(0.1),
            output_cap: Some("64M".into()),
            timeout: Some(86_400.0),
            session_tasks: Some(262_144),
            session_memory: Some("4T".into()),
        };
        let l = Limits::resolve(&OperatorLimits::default(), "c.toml", &f).unwrap();
        assert_eq!(l.memory_bytes, Some(32 << 20));
        assert_eq!(l.tasks, Some(65_536));
        assert_eq!(l.cpu_percent, Some(10));
        assert_eq!(l.output_cap_bytes, Some(64 << 20));
        assert_eq!(l.session_tasks, Some(262_144));
        assert_eq!(l.session_memory_bytes, Some(4 << 40));
    }

    #[test]
    fn the_section_parses_from_toml() {
        let text = "memory = \"4G\"\ntasks = 512\ncpu = 2.5\noutput_cap = 65536\ntimeout = 120\n\
                    session_tasks = 2048\nsession_memory = \"16G\"\n";
        let parsed: OperatorLimits = toml::from_str(text).unwrap();
        assert_eq!(parsed.session_tasks, Some(2048));
        assert_eq!(parsed.session_memory, Some(Size::Text("16G".into())));
        assert_eq!(parsed.memory, Some(Size::Text("4G".into())));
        assert_eq!(parsed.output_cap, Some(Size::Bytes(65_536)));
        assert!(toml::from_str::<OperatorLimits>("memroy = 1").is_err());
    }
}
