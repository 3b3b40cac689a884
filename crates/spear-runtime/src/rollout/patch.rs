//! The session's patch: git's binary diff between two small trees, the template's and the
//! session's versions of only the paths the upper layer nominated.
//!
//! git runs as the system's program (found in [`spear_sandbox::SYSTEM_BIN_DIRS`]) with an empty
//! environment: no system or global configuration (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL`
//! `/dev/null`, `HOME` an empty directory), no system attributes, and a repository of spear's
//! own whose `info/attributes` (which outranks every `.gitattributes` in the trees) unsets every
//! attribute that changes what is read or written (`text`, `eol`, `filter`, `ident`,
//! `working-tree-encoding`, `diff`): the patch holds the bytes of the files, whatever the
//! template's attributes say. Each tree is added to an index of its own (`add -A -f`: ignored
//! files too) and written as a tree; `diff-tree -p --binary --full-index -M` between the two is
//! the patch (renames found, binary files as literals or deltas, modes, links).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::error::RolloutError;

/// The attributes every path of both trees gets: none that changes bytes or hides a diff.
const NEUTRAL_ATTRIBUTES: &str =
    "* !text !eol !filter !ident !working-tree-encoding !diff !merge\n";

/// git's diff, as a patch `git apply` takes, from the tree `old` to the tree `new`; `scratch` is
/// an empty directory of spear's for git's repository and home.
pub(super) fn diff(old: &Path, new: &Path, scratch: &Path) -> Result<Vec<u8>, RolloutError> {
    let git = spear_sandbox::SYSTEM_BIN_DIRS
        .iter()
        .map(|d| Path::new(d).join("git"))
        .find(|p| p.is_file())
        .ok_or_else(|| RolloutError::Git {
            step: "finding git",
            detail: "not installed".to_owned(),
        })?;
    let home = scratch.join("home");
    let repo = scratch.join("repo");
    let io_err = |step: &'static str| {
        move |e: std::io::Error| RolloutError::Git {
            step,
            detail: e.to_string(),
        }
    };
    std::fs::create_dir(&home).map_err(io_err("making its home"))?;
    let env = Git {
        program: git,
        home,
        repo: repo.clone(),
    };
    env.run(&["init", "-q", "--bare", "--template="], None, None, "init")?;
    std::fs::create_dir_all(repo.join("info")).map_err(io_err("writing attributes"))?;
    std::fs::write(repo.join("info/attributes"), NEUTRAL_ATTRIBUTES)
        .map_err(io_err("writing attributes"))?;
    let mut trees = Vec::new();
    for (side, tree) in [("old", old), ("new", new)] {
        let index = scratch.join(format!("index-{side}"));
        env.run(
            &["add", "-A", "-f", "--", "."],
            Some(tree),
            Some(&index),
            "add",
        )?;
        let id = env.run(&["write-tree"], Some(tree), Some(&index), "write-tree")?;
        trees.push(String::from_utf8_lossy(&id).trim().to_owned());
    }
    env.run(
        &[
            "diff-tree",
            "-r",
            "-p",
            "--binary",
            "--full-index",
            "-M",
            "--no-color",
            &trees[0],
            &trees[1],
        ],
        None,
        None,
        "diff-tree",
    )
}

/// git, run in a clean environment on spear's own repository.
struct Git {
    program: PathBuf,
    home: PathBuf,
    repo: PathBuf,
}

impl Git {
    /// Runs `args` (with `tree` as the work tree and `index` as the index, where given) and
    /// returns its output; any exit but 0 is an error.
    fn run(
        &self,
        args: &[&str],
        tree: Option<&Path>,
        index: Option<&Path>,
        step: &'static str,
    ) -> Result<Vec<u8>, RolloutError> {
        let mut cmd = Command::new(&self.program);
        cmd.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_ATTR_NOSYSTEM", "1")
            .env("LC_ALL", "C")
            .env("GIT_DIR", &self.repo)
            .args([
                "-c",
                "core.autocrlf=false",
                "-c",
                "core.safecrlf=false",
                "-c",
                "core.fileMode=true",
                "-c",
                "core.symlinks=true",
            ])
            .args(args)
            .stdin(Stdio::null())
            .current_dir(tree.unwrap_or(&self.home));
        if let Some(tree) = tree {
            cmd.env("GIT_WORK_TREE", tree);
        }
        if let Some(index) = index {
            cmd.env("GIT_INDEX_FILE", index);
        }
        let out = cmd.output().map_err(|e| RolloutError::Git {
            step,
            detail: e.to_string(),
        })?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(RolloutError::Git {
                step,
                detail: format!(
                    "{}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            })
        }
    }
}
