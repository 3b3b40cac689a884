//! The command policy: one workspace, one configuration, and the classifications made against them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use spear_core::{ChangeKind, CommandAssessment, CommandLine, Refusal};
use spear_workspace::{EntryKind, Location, TreeView, Workspace, WorkspaceFs};

use crate::PolicyConfig;
use crate::analysis::Analysis;
use crate::git_layout::GitIndirections;
use crate::host_read::HostView;
use crate::shell::word::Arg;
use crate::target_policy::{HEADER_BYTES, generated_header};

/// Classifies commands and scripts for one workspace.
#[derive(Debug)]
pub struct CommandPolicy {
    workspace: Arc<Workspace>,
    config: PolicyConfig,
    host_view: HostView,
    fs: OnceLock<Option<WorkspaceFs>>,
    user_homes: OnceLock<HashMap<String, PathBuf>>,
}

/// A command as it will run and the policy's judgement of exactly that
/// ([`CommandPolicy::prepare_script`], [`CommandPolicy::prepare_argv`]).
#[derive(Debug, Clone)]
pub struct PreparedCommand {
    /// What the classifier found in [`PreparedCommand::line`].
    pub assessment: CommandAssessment,
    /// What the sandbox executes.
    pub line: CommandLine,
}

impl CommandPolicy {
    /// A policy for `workspace` under `config`.
    pub fn new(workspace: Arc<Workspace>, config: PolicyConfig) -> Self {
        let mut points: Vec<_> = workspace.mount_points();
        points.extend(
            workspace
                .roots()
                .iter()
                .map(|r| r.host_path().to_path_buf()),
        );
        let host_view = HostView::new(config.sandbox.clone(), config.named_paths.clone(), &points)
            .hiding(config.state_dir.clone(), config.secrets.clone());
        CommandPolicy {
            workspace,
            config,
            host_view,
            fs: OnceLock::new(),
            user_homes: OnceLock::new(),
        }
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The workspace, shared (for the runner that executes what this policy allowed).
    pub fn shared_workspace(&self) -> Arc<Workspace> {
        Arc::clone(&self.workspace)
    }

    /// The configuration.
    pub fn config(&self) -> &PolicyConfig {
        &self.config
    }

    pub(crate) fn host_view(&self) -> &HostView {
        &self.host_view
    }

    /// File operations on the roots, opened once. `None` if a root cannot be opened, in which case
    /// header checks are skipped (the name checks still apply, and the file tools fail on their
    /// own).
    pub(crate) fn fs(&self) -> Option<&WorkspaceFs> {
        self.fs.get_or_init(|| self.workspace.fs().ok()).as_ref()
    }

    /// The home directory of `user` from `/etc/passwd`, for `~user` (read once).
    pub(crate) fn user_home(&self, user: &str) -> Option<&Path> {
        self.user_homes
            .get_or_init(|| {
                parse_passwd(&std::fs::read_to_string("/etc/passwd").unwrap_or_default())
            })
            .get(user)
            .map(PathBuf::as_path)
    }

    /// The one place an agent's script becomes what runs: its pipelines rewritten so that a
    /// producer a later stage stopped reading is no failure ([`crate::tolerate_sigpipe`]), as
    /// [`CommandLine::Script`], with the assessment of exactly that text, prelude included.
    ///
    /// Attack stopped: a classifier and a sandbox that see two different commands. The caller
    /// gets one value to judge and to run; the runner and the warm path execute its
    /// [`CommandLine::argv`] unchanged.
    pub fn prepare_script(&self, script: &str, cwd: &Path) -> PreparedCommand {
        let line = crate::script_to_run(script);
        PreparedCommand {
            assessment: self.classify_script(&line, cwd),
            line: CommandLine::Script(line),
        }
    }

    /// A program and its arguments as what runs (executed without a shell), with the
    /// assessment of exactly that argv.
    pub fn prepare_argv(&self, argv: &[String], cwd: &Path) -> PreparedCommand {
        PreparedCommand {
            assessment: self.classify(argv, cwd),
            line: CommandLine::Argv(argv.iter().map(std::ffi::OsString::from).collect()),
        }
    }

    /// Classifies a shell script run in `cwd` (host or mount spelling; relative to the launch
    /// directory if relative). A script that begins with spear's SIGPIPE prelude, byte for byte,
    /// is judged as the agent's script after it: the prelude only defines a function that
    /// computes a status.
    pub fn classify_script(&self, script: &str, cwd: &Path) -> CommandAssessment {
        let mut analysis = Analysis::new(self);
        // What spear itself put in front of the agent's script (the SIGPIPE prelude, byte for
        // byte) defines a function that only computes a status; the rest is the agent's.
        let script = match crate::shell::pipefail_prelude::after_prelude(script) {
            Some(rest) => {
                analysis.define_spear_pipefail();
                rest
            }
            None => script,
        };
        analysis.script = Some(script.to_owned());
        let mut dir = analysis.start_cwd(cwd);
        analysis.analyse_script(script, &mut dir);
        analysis.finish()
    }

    /// Classifies a program and its arguments, run directly without a shell.
    pub fn classify(&self, argv: &[String], cwd: &Path) -> CommandAssessment {
        let mut analysis = Analysis::new(self);
        let mut dir = analysis.start_cwd(cwd);
        let words: Vec<Arg> = argv.iter().map(|a| Arg::Lit(a.clone())).collect();
        analysis.found.runs.command(&words);
        analysis.run_words(words, &mut dir, crate::shell::walk::Stdin::Inherited);
        analysis.finish()
    }

    /// The target policy for a file tool's write to `loc` (already resolved inside a root): the
    /// name rules on the entry, the generated-file header of an existing file, and host-run
    /// configuration (by name, and git's indirections as the host shows them). A host-run refusal
    /// is askable ([`Refusal::is_askable`]): a person's approval may let the write through.
    pub fn check_write(&self, loc: &Location) -> Result<(), Refusal> {
        self.config.targets.check(&loc.rel)?;
        self.check_generated_header(loc, &loc.rel.display().to_string())?;
        self.host_config_at(loc)
    }

    /// What no removal may take, whatever the mode: a git repository's core as `host` shows it
    /// ([`crate::git_core`]). A protected-entry refusal, never askable.
    pub fn check_removal(&self, host: &dyn TreeView, loc: &Location) -> Result<(), Refusal> {
        match crate::git_core::removes_core(host, loc) {
            Some(what) => Err(Refusal::protected_entry(
                self.workspace.label(loc),
                format!(
                    "{what}, and removing it takes the repository's history, branches and stash, \
                     which no checkpoint keeps"
                ),
            )),
            None => Ok(()),
        }
    }

    /// Host-run configuration at `loc` as the host shows it now, for a write whose content is not
    /// known yet: by name, and git's indirections. An askable refusal ([`Refusal::is_askable`]) unless the operator allows the
    /// entry; a protected-entry refusal where what git would run cannot be known.
    pub fn host_config_at(&self, loc: &Location) -> Result<(), Refusal> {
        let git = match self.fs() {
            Some(fs) => self
                .git_indirections()
                .check_unknown_write(&self.workspace, fs, loc),
            None => Ok(()),
        };
        // git's own verdict first: a hard refusal (a repository that cannot be read) before any
        // askable one, and git's entry, which says more than a name would.
        git?;
        self.host_config_by_name(loc, false)
    }

    /// The name rules on a path as the caller wrote it, before any link on the way was followed
    /// (`write_file .git/hooks/pre-commit` where `.git/hooks` is a link to `../.githooks`): the
    /// protected names, host-run configuration by name and git's control files. `Ok` for a path
    /// that names no place in a root.
    ///
    /// Attack stopped: a protected entry or host-run configuration reached through a link, where
    /// only the resolved spelling would be judged.
    pub fn check_as_written(&self, written: &str) -> Result<(), Refusal> {
        let path = self.workspace.launch_dir().join(written);
        let Some(loc) = self.workspace.locate(&path) else {
            return Ok(());
        };
        let shown = self.workspace.label(&loc);
        self.config
            .targets
            .check_protected(&loc.rel, false)
            .map_err(|r| r.with_subject(&shown))?;
        self.host_config_by_name(&loc, false)?;
        match crate::git_layout::control_by_name(&loc.rel) {
            Some(ind) => self.host_run(&shown, ind.entry, ind.why),
            None => Ok(()),
        }
    }

    /// Host-run configuration found by its name ([`crate::host_config::by_name`]) at `loc` (a
    /// directory being made when `dir`): an askable refusal unless the operator allows the
    /// entry.
    pub fn host_config_by_name(&self, loc: &Location, dir: bool) -> Result<(), Refusal> {
        match crate::host_config::by_name(&loc.rel, dir) {
            Some(entry) => self.host_run(&self.workspace.label(loc), entry.id, entry.runs),
            None => Ok(()),
        }
    }

    /// The askable refusal of a write to `shown`, host-run configuration of `entry`; `Ok` when
    /// the operator allows the entry (`[policy] allow_host_config`).
    fn host_run(&self, shown: &str, entry: &str, why: &str) -> Result<(), Refusal> {
        if self.config.allow_host_config.iter().any(|a| a == entry) {
            Ok(())
        } else {
            Err(Refusal::host_run_config(shown, entry, why))
        }
    }

    /// A judge of git's indirections for this workspace's user (global configuration under the
    /// operator's home). Its cache lives as long as it does: make one per batch of changes.
    pub fn git_indirections(&self) -> GitIndirections {
        GitIndirections::new(
            self.config.home.clone(),
            self.config.xdg_config_home.clone(),
            self.config.allow_host_config.clone(),
        )
    }

    /// The target policy on one change a command staged (or a tool makes): the protected names,
    /// host-run configuration and git's indirections everywhere; for a tracked entry (not ignored
    /// build output, not in `.git`) also the generated, snapshot and vendored names and the
    /// generated-file header of what the host holds there now. A directory being made is refused
    /// only when it is such an entry or lies in one, not because it will hold one (`git init`
    /// makes `.git`). `staged` shows the workspace as the change would leave it, `host` as it is.
    /// A host-run refusal is askable ([`Refusal::is_askable`]); every other one is final.
    pub fn judge_change(
        &self,
        git: &GitIndirections,
        loc: &Location,
        change: ChangeKind<'_>,
        tracked: bool,
        staged: &dyn TreeView,
        host: &dyn TreeView,
    ) -> Result<(), Refusal> {
        let shown = self.workspace.label(loc);
        let host_kind = host.kind(loc);
        let container = change == ChangeKind::Dir
            || (change == ChangeKind::Mode && host_kind == Some(EntryKind::Dir));
        let targets = &self.config.targets;
        let by_name = match (tracked, container) {
            (true, true) => targets.check_dir(&loc.rel),
            (true, false) => targets.check(&loc.rel),
            (false, dir) => targets.check_protected(&loc.rel, dir),
        };
        by_name.map_err(|r| r.with_subject(&shown))?;
        if change == ChangeKind::Remove {
            self.check_removal(host, loc)?;
        }
        if tracked && host_kind == Some(EntryKind::File) {
            match host.read_head(loc, HEADER_BYTES) {
                Some(head) => {
                    if let Some(source) = generated_header(&head) {
                        return Err(Refusal::generated_file(shown, source));
                    }
                }
                // Attack: a header that cannot be read must not make the check pass.
                None => {
                    return Err(Refusal::unverifiable(
                        shown,
                        "its header cannot be read to tell whether it is generated",
                    ));
                }
            }
        }
        // git's own verdict first: a hard refusal (a repository that cannot be read) before any
        // askable one, and git's entry, which says more than a name would.
        git.check(&self.workspace, staged, host, loc, change)?;
        // Each staged entry is judged on its own, so a parent is never judged for what it will
        // hold (`mv sub moved` removes `sub/.git/...` entry by entry): names alone.
        self.host_config_by_name(loc, true)
    }
}

/// The home directories of `/etc/passwd` entries, by user name.
fn parse_passwd(text: &str) -> HashMap<String, PathBuf> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            let (name, home) = (fields.first()?, fields.get(5)?);
            (!name.is_empty() && home.starts_with('/'))
                .then(|| ((*name).to_owned(), PathBuf::from(home)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parse_passwd;

    #[test]
    fn passwd_homes() {
        let homes = parse_passwd(
            "root:x:0:0:root:/root:/bin/bash\nbad line\nu:x:1000:1000::/home/u:/bin/sh\nnohome:x:1:1:::/bin/sh\n",
        );
        assert_eq!(homes.get("root").map(|p| p.to_str()), Some(Some("/root")));
        assert_eq!(homes.get("u").map(|p| p.to_str()), Some(Some("/home/u")));
        assert!(!homes.contains_key("nohome"));
    }
}
