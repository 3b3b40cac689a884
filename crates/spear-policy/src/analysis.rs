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
    /// Functions spear itself defined in front of the script (its SIGPIPE prelude) that the
    /// script has not defined again: a call to one is spear's own work, not a command of the
    /// agent's, and the executable summary leaves it out.
    pub spear_functions: Vec<&'static str>,
    /// Whether `$HOME` still names the operator's home (no assignment to HOME seen).
    pub home_intact: bool,
    /// Whether `$TMPDIR` still names the sandbox's private /tmp (no assignment to TMPDIR seen).
    pub tmpdir_intact: bool,
    /// Whether `set -a` may be on: every later assignment is exported.
    pub allexport: bool,
    /// The script being classified, as sent (`None` for a command run without a shell): what
    /// [`crate::shell::scratch::assigned_once`] reads.
    pub script: Option<String>,
    /// Variables known to hold a path in the sandbox's private /tmp (`d=$(mktemp -d)`), with
    /// that path (its random part as `X`s).
    pub scratch_vars: HashMap<String, String>,
    /// Remotes the script adds with `git remote add NAME URL` (literal words, no options), each
    /// with the configuration file it lands in: what a later push or fetch to `NAME` reaches
    /// when the file on disk has no such remote (with one, `remote add` fails and changes
    /// nothing).
    pub git_remotes_added: Vec<(PathBuf, String, String)>,
    /// How many places the walk is inside where an assignment may not reach the commands after
    /// it: a branch, a loop, a subshell, a pipeline, what runs after `&&`/`||` or in the
    /// background.
    pub branch: usize,
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
            spear_functions: Vec::new(),
            home_intact: true,
            tmpdir_intact: true,
            allexport: false,
            script: None,
            scratch_vars: HashMap::new(),
            git_remotes_added: Vec::new(),
            branch: 0,
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

    /// `NAME=value` with no command, in the script's own sequence: `NAME` holds a scratch path
    /// from now on when `value` is a normal path below the sandbox's private /tmp that holds no
    /// root, and nothing else in the script can have set `NAME` ([`crate::shell::scratch`]).
    /// Any other assignment forgets what `NAME` held.
    pub(crate) fn track_scratch(&mut self, name: &str, value: Option<&Arg>) {
        self.scratch_vars.remove(name);
        let Some(Arg::Lit(path)) = value else {
            return;
        };
        let in_sequence = self.depth == 0
            && self.substitutions == 0
            && self.branch == 0
            && self.defining.is_empty();
        if in_sequence
            && self.is_scratch_path(path)
            && self
                .script
                .as_deref()
                .is_some_and(|s| crate::shell::scratch::assigned_once(s, name))
        {
            self.scratch_vars.insert(name.to_owned(), path.clone());
        }
    }

    /// Whether `path` is a normal absolute path strictly below the sandbox's private /tmp, in no
    /// path the operator named and holding no root: a write there stays in the sandbox.
    pub(crate) fn is_scratch_path(&self, path: &str) -> bool {
        use std::path::Component;
        let p = Path::new(path);
        let tmp = Path::new(spear_core::SANDBOX_TMPDIR);
        let normal = p
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        let view = self.policy.host_view();
        let holds_root = self
            .policy
            .workspace()
            .roots()
            .iter()
            .any(|r| r.host_path().starts_with(p) || r.mount_path().starts_with(p));
        normal
            && p.starts_with(tmp)
            && p != tmp
            && view.sandbox().is_private(p)
            && !view.is_named_path(p)
            && !holds_root
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
