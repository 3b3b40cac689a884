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
//! ```

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

        Ok(Limits {
            memory_bytes: memory,
            tasks,
            cpu_percent,
            output_cap_bytes: output_cap,
            timeout_secs: timeout,
        })
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
    fn flags_win_over_the_configuration() {
        let config = OperatorLimits {
            memory: Some(Size::Text("4G".into())),
            tasks: Some(100),
            cpu: Some(2.0),
            output_cap: Some(Size::Bytes(1 << 20)),
            timeout: Some(60.0),
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
            }
        );
        let f = LimitFlags {
            memory: Some("512M".into()),
            tasks: Some(64),
            cpu: Some(0.5),
            output_cap: Some("64K".into()),
            timeout: Some(5.0),
        };
        assert_eq!(
            Limits::resolve(&config, "c.toml", &f).unwrap(),
            Limits {
                memory_bytes: Some(512 << 20),
                tasks: Some(64),
                cpu_percent: Some(50),
                output_cap_bytes: Some(64 << 10),
                timeout_secs: Some(5.0),
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
        ];
        for (config, f, source, text) in cases {
            let e = Limits::resolve(&config, "c.toml", &f).unwrap_err();
            assert_eq!(e.source_name, source, "{e}");
            assert!(e.to_string().contains(text), "{e}");
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
        };
        let l = Limits::resolve(&OperatorLimits::default(), "c.toml", &f).unwrap();
        assert_eq!(l.memory_bytes, Some(32 << 20));
        assert_eq!(l.tasks, Some(65_536));
        assert_eq!(l.cpu_percent, Some(10));
        assert_eq!(l.output_cap_bytes, Some(64 << 20));
    }

    #[test]
    fn the_section_parses_from_toml() {
        let text = "memory = \"4G\"\ntasks = 512\ncpu = 2.5\noutput_cap = 65536\ntimeout = 120\n";
        let parsed: OperatorLimits = toml::from_str(text).unwrap();
        assert_eq!(parsed.memory, Some(Size::Text("4G".into())));
        assert_eq!(parsed.output_cap, Some(Size::Bytes(65_536)));
        assert!(toml::from_str::<OperatorLimits>("memroy = 1").is_err());
    }
}
