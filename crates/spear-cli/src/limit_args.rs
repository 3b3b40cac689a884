//! The limit flags of the subcommands that run commands: `--memory`, `--tasks`, `--cpu`,
//! `--output-cap`, `--timeout`, `--session-tasks`, `--session-memory`. Each overrides `[limits]` of the operator configuration; the
//! bounds are checked at startup ([`spear_policy::limits`]).

use spear_policy::limits::LimitFlags;

/// Resource limits of the commands this invocation runs.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LimitArgs {
    /// Memory of one command's process tree (`512M`, `4G`; default 2G).
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// Processes and threads of one command's tree at once (default 256).
    #[arg(long, value_name = "N")]
    pub tasks: Option<u64>,
    /// CPUs' worth of CPU time a command may use (`0.5`, `2`; default 8).
    #[arg(long, value_name = "CPUS")]
    pub cpu: Option<f64>,
    /// Bytes kept of each output stream, its first and last half (`256K`, `4M`; default 1M).
    #[arg(long, value_name = "SIZE")]
    pub output_cap: Option<String>,
    /// Wall-clock limit of a command in seconds (default 45 for `spear exec`, 180 for a
    /// terminal call).
    #[arg(long, value_name = "S")]
    pub timeout: Option<f64>,
    /// Processes and threads of all of the session's commands and background jobs together
    /// (default 1024, or --tasks when larger; never below it).
    #[arg(long, value_name = "N")]
    pub session_tasks: Option<u64>,
    /// Memory of all of the session's commands and background jobs together (default 8G, or
    /// --memory when larger; never below it).
    #[arg(long, value_name = "SIZE")]
    pub session_memory: Option<String>,
}

impl LimitArgs {
    /// The flags as the policy layer reads them.
    pub fn flags(&self) -> LimitFlags {
        LimitFlags {
            memory: self.memory.clone(),
            tasks: self.tasks,
            cpu: self.cpu,
            output_cap: self.output_cap.clone(),
            timeout: self.timeout,
            session_tasks: self.session_tasks,
            session_memory: self.session_memory.clone(),
        }
    }
}
