//! The state of one analysis and how its findings become an assessment.
//!
//! Every path through the analysis ends in an explicit finding: a refusal, "complex" with a reason,
//! a write, a host read, a capability. Nothing is `READ_ONLY` by falling through: `READ_ONLY` is what
//! remains only when every program was recognised and none of them wrote, ran unknown code, or
//! reached outside.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use spear_core::{
    Capability, CapabilitySet, CommandAssessment, CommandClass, HostConfigWrite, Refusal,
};

use crate::CommandPolicy;
use crate::shell::word::Arg;

/// Deepest nesting of `bash -c`, `$(...)`, `eval` and the like that is analysed. Deeper scripts are
/// `SHELL_COMPLEX`, never `READ_ONLY`.
pub(crate) const MAX_DEPTH: usize = 12;

/// Most simple commands analysed in one script; beyond that the script is `SHELL_COMPLEX`.
pub(crate) const MAX_COMMANDS: usize = 4096;

/// The working directory of the shell at some point of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cwd {
    /// A host path (translated from mount spelling).
    Known(PathBuf),
    /// Changed by something whose target is known only at run time.
    Unknown,
}

impl Cwd {
    pub(crate) fn join(&self, rel: &str) -> Option<PathBuf> {
        match self {
            Cwd::Known(dir) => Some(dir.join(rel)),
            Cwd::Unknown => None,
        }
    }
}

/// What the analysis found so far. Only grows.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    pub refusal: Option<Refusal>,
    pub complex: Option<String>,
    pub mutation: Option<String>,
    /// A write to the sandbox's private `/tmp`, `/dev/shm` or home, which needs nothing.
    pub private_write: Option<String>,
    pub writes: Vec<PathBuf>,
    pub host_reads: Vec<PathBuf>,
    /// Host-run configuration among the writes: asked about before the command runs.
    pub host_config: Vec<HostConfigWrite>,
    pub caps: CapabilitySet,
    pub programs: Vec<String>,
    /// The script's top-level commands, for the executable summary.
    pub runs: crate::executable::Runs,
}

/// One analysis of one script.
pub(crate) struct Analysis<'p> {
    pub policy: &'p CommandPolicy,
    pub found: Findings,
    /// Functions the script defines, and whether calling one changes the directory. Calling one
    /// runs its body, which is analysed where it is defined.
    pub functions: HashMap<String, bool>,
    /// Functions whose bodies are being analysed (a call to one of them is recursion).
    pub defining: Vec<String>,
    /// Whether `$HOME` still names the operator's home (no assignment to HOME seen).
    pub home_intact: bool,
    /// Whether `$TMPDIR` still names the sandbox's private /tmp (no assignment to TMPDIR seen).
    pub tmpdir_intact: bool,
    /// Whether `set -a` may be on: every later assignment is exported.
    pub allexport: bool,
    pub depth: usize,
    /// Process substitutions being walked (their commands are not the script's top level).
    pub substitutions: usize,
    pub commands_seen: usize,
}

impl<'p> Analysis<'p> {
    pub(crate) fn new(policy: &'p CommandPolicy) -> Self {
        Analysis {
            policy,
            found: Findings::default(),
            functions: HashMap::new(),
            defining: Vec::new(),
            home_intact: true,
            tmpdir_intact: true,
            allexport: false,
            depth: 0,
            substitutions: 0,
            commands_seen: 0,
        }
    }

    /// Records a refusal. The first one is the one reported.
    pub(crate) fn refuse(&mut self, refusal: Refusal) {
        if self.found.refusal.is_none() {
            self.found.refusal = Some(refusal);
        }
    }

    /// Records that something runs whose effects cannot be known before it runs.
    pub(crate) fn complex(&mut self, why: impl Into<String>) {
        self.found.caps.insert(Capability::ShellComplex);
        if self.found.complex.is_none() {
            self.found.complex = Some(why.into());
        }
    }

    /// Records that something changes files, where exactly is not known (or not a path).
    pub(crate) fn mutates(&mut self, why: impl Into<String>) {
        self.found.caps.insert(Capability::WorkspaceWrite);
        if self.found.mutation.is_none() {
            self.found.mutation = Some(why.into());
        }
    }

    /// Records a known write inside the roots (already checked against the target policy).
    pub(crate) fn write_inside(&mut self, host: PathBuf, program: &str) {
        if self.found.mutation.is_none() {
            self.found.mutation = Some(format!("{program} writes {}", host.display()));
        }
        self.found.caps.insert(Capability::WorkspaceWrite);
        if !self.found.writes.contains(&host) {
            self.found.writes.push(host);
        }
    }

    /// Records that a known write inside the roots is host-run configuration (`refusal`, an
    /// askable one): the command runs only if a person approves (ASK and AUTO ask), and its
    /// commit lets that write through. Any other refusal refuses the command.
    pub(crate) fn host_config(&mut self, refusal: Refusal) {
        match HostConfigWrite::of_refusal(&refusal) {
            Some(write) => {
                if !self.found.host_config.contains(&write) {
                    self.found.host_config.push(write);
                }
            }
            None => self.refuse(refusal),
        }
    }

    /// Records a write that lands in the sandbox's private places (its `/tmp`, `/dev/shm` or
    /// home): it needs no capability, and the host never sees it.
    pub(crate) fn private_write(&mut self, program: &str, path: &Path) {
        if self.found.private_write.is_none() {
            self.found.private_write = Some(format!("{program} writes {}", path.display()));
        }
    }

    /// Records a read outside the roots that needs `host:read`.
    pub(crate) fn host_read(&mut self, host: PathBuf) {
        self.found.caps.insert(Capability::HostRead);
        if !self.found.host_reads.contains(&host) {
            self.found.host_reads.push(host);
        }
    }

    /// Records that the command needs `cap` (network, or one that no mode grants).
    pub(crate) fn needs(&mut self, cap: Capability) {
        self.found.caps.insert(cap);
    }

    /// A wrapper runs `words` in place of the command it analyses: the executable summary names
    /// that program when the wrapper is the script's first top-level command.
    pub(crate) fn runs_in_place(&mut self, words: &[Arg]) {
        if self.depth == 0 && self.substitutions == 0 {
            self.found.runs.runs_in_place(words);
        }
    }

    /// Records the name of a program that runs, for the reason line.
    pub(crate) fn runs(&mut self, program: &str) {
        if self.found.programs.len() < 8 && !self.found.programs.iter().any(|p| p == program) {
            self.found.programs.push(program.to_owned());
        }
    }

    /// The cwd to start from, translated to host spelling.
    pub(crate) fn start_cwd(&self, cwd: &Path) -> Cwd {
        if cwd.is_absolute() {
            Cwd::Known(self.policy.workspace().to_host(cwd))
        } else {
            Cwd::Known(self.policy.workspace().launch_dir().join(cwd))
        }
    }

    /// Turns the findings into the assessment.
    pub(crate) fn finish(self) -> CommandAssessment {
        let Findings {
            refusal,
            complex,
            mutation,
            private_write,
            writes,
            host_reads,
            host_config,
            mut caps,
            programs,
            runs,
        } = self.found;
        caps.insert(Capability::FilesystemRead);
        let (class, reason) = if let Some(r) = &refusal {
            (CommandClass::Dangerous, r.message())
        } else if let Some(why) = complex {
            (CommandClass::ShellComplex, why)
        } else if let Some(why) = mutation {
            (CommandClass::WorkspaceMutating, why)
        } else if let Some(what) = private_write {
            (
                CommandClass::ReadOnly,
                if programs.is_empty() {
                    format!(
                        "writes only the sandbox's private /tmp or home, which the host never \
                         sees ({what})"
                    )
                } else {
                    format!(
                        "writes only the sandbox's private /tmp or home, which the host never \
                         sees ({what}); otherwise only reads: {}",
                        programs.join(", ")
                    )
                },
            )
        } else if programs.is_empty() {
            (
                CommandClass::ReadOnly,
                "runs nothing that reads or writes files".to_owned(),
            )
        } else {
            (
                CommandClass::ReadOnly,
                format!("only reads: {}", programs.join(", ")),
            )
        };
        CommandAssessment {
            class,
            capabilities: caps,
            write_targets: writes,
            host_reads,
            host_config,
            reason,
            refusal,
            executable: runs.summary(),
        }
    }
}
