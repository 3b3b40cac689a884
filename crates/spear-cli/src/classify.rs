//! `spear classify`: what a script would do, and what each mode would decide. Runs nothing.

use crate::out::outln;
use std::io::Read;
use std::path::PathBuf;

use serde::Serialize;
use spear_core::{CommandAssessment, ExecutionMode};
use spear_policy::{Decision, decide};

use crate::context::{Context, ContextError, WorkspaceArgs};
use crate::mode_args::ModeArgs;

/// `spear classify [--json] [--workspace DIR] SCRIPT`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// The mode to mark in the text output (every mode's decision is shown).
    #[command(flatten)]
    mode: ModeArgs,
    /// Read the script from this file instead of the command line.
    #[arg(long, value_name = "FILE", conflicts_with = "script")]
    file: Option<PathBuf>,
    #[command(flatten)]
    workspace: WorkspaceArgs,
    /// The script, as an agent would send it to the terminal tool (`-` reads standard input).
    #[arg(required_unless_present = "file")]
    script: Option<String>,
}

/// A failure of `spear classify`.
#[derive(Debug, thiserror::Error)]
pub enum ClassifyError {
    /// The workspace or configuration could not be opened.
    #[error(transparent)]
    Context(#[from] ContextError),
    /// The script could not be read.
    #[error("cannot read the script from {from}: {source}")]
    Input {
        /// Where it was read from.
        from: String,
        /// Why.
        source: std::io::Error,
    },
}

#[derive(Serialize)]
struct Modes {
    safe: &'static str,
    ask: &'static str,
    auto: &'static str,
}

#[derive(Serialize)]
struct Report<'a> {
    class: spear_core::CommandClass,
    capabilities: spear_core::CapabilitySet,
    write_targets: &'a [PathBuf],
    host_reads: &'a [PathBuf],
    reason: &'a str,
    modes: Modes,
}

/// Runs `spear classify`; returns the exit status.
pub fn run(args: &Args, host: &spear_runtime::HostSnapshot) -> Result<i32, ClassifyError> {
    let script = read_script(args)?;
    let ctx = Context::open(&args.workspace, host)?;
    let cwd = ctx.policy.workspace().launch_dir().to_path_buf();
    let assessment = ctx.policy.classify_script(&script, &cwd);
    let decisions: Vec<(ExecutionMode, Decision)> = ExecutionMode::ALL
        .into_iter()
        .map(|mode| {
            (
                mode,
                decide(&assessment, args.mode.policy_for(mode), &script),
            )
        })
        .collect();
    if args.json {
        let word = |m: ExecutionMode| {
            decisions
                .iter()
                .find(|(x, _)| *x == m)
                .map_or("deny", |(_, d)| decision_word(d))
        };
        let report = Report {
            class: assessment.class,
            capabilities: assessment.capabilities,
            write_targets: &assessment.write_targets,
            host_reads: &assessment.host_reads,
            reason: &assessment.reason,
            modes: Modes {
                safe: word(ExecutionMode::Safe),
                ask: word(ExecutionMode::Ask),
                auto: word(ExecutionMode::Auto),
            },
        };
        outln!("{}", serde_json::to_string(&report).unwrap_or_default());
    } else {
        print_text(&assessment, &decisions, args.mode.mode());
    }
    Ok(0)
}

fn read_script(args: &Args) -> Result<String, ClassifyError> {
    let (from, bytes) = match (&args.file, args.script.as_deref()) {
        (Some(path), _) => (path.display().to_string(), std::fs::read(path)),
        (None, Some("-")) => {
            let mut buf = Vec::new();
            (
                "standard input".to_owned(),
                std::io::stdin().read_to_end(&mut buf).map(|_| buf),
            )
        }
        (None, Some(s)) => return Ok(s.to_owned()),
        (None, None) => ("nowhere".to_owned(), Ok(Vec::new())),
    };
    let bytes = bytes.map_err(|source| ClassifyError::Input {
        from: from.clone(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| ClassifyError::Input {
        from,
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
    })
}

fn decision_word(d: &Decision) -> &'static str {
    match d {
        Decision::Allow(_) => "allow",
        Decision::Confirm(_) => "confirm",
        Decision::Deny(_) => "deny",
    }
}

fn print_text(
    a: &CommandAssessment,
    decisions: &[(ExecutionMode, Decision)],
    selected: ExecutionMode,
) {
    let list = |v: &[PathBuf]| {
        if v.is_empty() {
            "-".to_owned()
        } else {
            v.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let caps: Vec<&str> = a
        .capabilities
        .iter()
        .map(spear_core::Capability::as_str)
        .collect();
    outln!("class:        {}", a.class);
    outln!("capabilities: {}", caps.join(", "));
    outln!("writes:       {}", list(&a.write_targets));
    outln!("host reads:   {}", list(&a.host_reads));
    outln!("reason:       {}", a.reason);
    for (mode, d) in decisions {
        let detail = match d {
            Decision::Allow(_) => "allowed".to_owned(),
            Decision::Confirm(_) => "allowed after the user confirms".to_owned(),
            Decision::Deny(r) => format!("denied: {}", r.message()),
        };
        let mark = if *mode == selected { " (selected)" } else { "" };
        outln!("{:<13} {detail}{mark}", format!("{}:", mode.as_str()));
    }
}
