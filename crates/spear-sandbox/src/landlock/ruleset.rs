//! The plan handed to the kernel: a Landlock ruleset created in spear's process (the child only
//! calls `landlock_restrict_self` on it, between fork and exec, where nothing may allocate), and
//! the record of what was really handled and added ([`Applied`]), from which the guarantees are
//! computed.
//!
//! Every right the ABI knows is handled, so none is left allowed by being unnamed; each is a hard
//! requirement (`CompatLevel::HardRequirement`): a right the kernel does not take fails the
//! command before it runs rather than being dropped.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope,
};
use rustix::fs::{Mode, OFlags};

use super::plan::{Rights, Rule};

/// The highest ABI this backend knows how to use; a newer kernel is used at this one (the rights
/// it adds stay unhandled, which the seccomp filter covers: see the module doc).
pub(crate) const MAX_ABI: u32 = 9;

/// What was really handed to the kernel for one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    /// The ABI the ruleset was built for (the kernel's, at most [`MAX_ABI`]).
    pub abi: u32,
    /// `truncate(2)` and `O_TRUNC` are handled (ABI 3).
    pub truncate_handled: bool,
    /// TCP bind and connect are handled, and no port is granted (ABI 4).
    pub tcp_refused: bool,
    /// Signals and abstract unix sockets are scoped to the command's own domain (ABI 6).
    pub scoped: bool,
    /// The rules added, each with the rights the kernel took for it.
    pub rules: Vec<(PathBuf, Rights)>,
}

/// Why a ruleset could not be made. Nothing runs.
#[derive(Debug, thiserror::Error)]
pub enum RulesetError {
    /// The kernel refused the ruleset or a rule.
    #[error("the kernel refused the Landlock ruleset for `{}`: {source}; nothing ran", path.display())]
    Kernel {
        /// The rule's path (empty: the ruleset itself).
        path: PathBuf,
        /// Why.
        #[source]
        source: landlock::RulesetError,
    },
    /// A path to grant could not be opened.
    #[error("cannot open `{}` to grant it to the landlock sandbox: {source}; nothing ran", path.display())]
    Open {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The kernel gave no ruleset.
    #[error("Landlock gave no ruleset (is it enabled? `spear doctor` says); nothing ran")]
    NoRuleset,
}

/// The ruleset of `rules` for `abi`, and what it holds. A path of a rule that does not exist is
/// skipped when `optional` says so (a curated `/etc` entry, a device node), else an error; a
/// symlink opened without following gets no rule.
pub(crate) fn create(
    abi: u32,
    rules: &[Rule],
    optional: &dyn Fn(&Path) -> bool,
) -> Result<(OwnedFd, Applied), RulesetError> {
    let abi_n = abi.min(MAX_ABI);
    let version = ABI::from(i32::try_from(abi_n).unwrap_or(1));
    let kernel = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RulesetError::Kernel { path, source }
    };
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(version))
        .map_err(kernel(Path::new("")))?;
    let tcp_refused = abi_n >= 4;
    if tcp_refused {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(version))
            .map_err(kernel(Path::new("")))?;
    }
    let scoped = abi_n >= 6;
    if scoped {
        ruleset = ruleset
            .scope(Scope::from_all(version))
            .map_err(kernel(Path::new("")))?;
    }
    let mut created = ruleset.create().map_err(kernel(Path::new("")))?;
    let mut added = Vec::with_capacity(rules.len());
    for rule in rules {
        let Some((fd, is_dir)) = open(rule, optional)? else {
            continue;
        };
        let access = access(rule.rights, version, is_dir);
        created = created
            .add_rule(PathBeneath::new(fd.as_fd(), access))
            .map_err(kernel(&rule.path))?;
        added.push((rule.path.clone(), rule.rights));
    }
    let fd: Option<OwnedFd> = created.into();
    let fd = fd.ok_or(RulesetError::NoRuleset)?;
    Ok((
        fd,
        Applied {
            abi: abi_n,
            truncate_handled: abi_n >= 3,
            tcp_refused,
            scoped,
            rules: added,
        },
    ))
}

/// `rule.path` opened `O_PATH` (following a final symlink only when the rule says), and whether
/// it is a directory; `None` for a symlink not followed, or a missing optional path.
fn open(
    rule: &Rule,
    optional: &dyn Fn(&Path) -> bool,
) -> Result<Option<(OwnedFd, bool)>, RulesetError> {
    let mut flags = OFlags::PATH | OFlags::CLOEXEC;
    if !rule.follow {
        flags |= OFlags::NOFOLLOW;
    }
    let fd = match rustix::fs::open(&rule.path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) if optional(&rule.path) => return Ok(None),
        Err(e) => {
            return Err(RulesetError::Open {
                path: rule.path.clone(),
                source: e.into(),
            });
        }
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| RulesetError::Open {
        path: rule.path.clone(),
        source: e.into(),
    })?;
    let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
    if kind == rustix::fs::FileType::Symlink {
        return Ok(None);
    }
    Ok(Some((fd, kind == rustix::fs::FileType::Directory)))
}

/// Landlock's rights for `rights` at `version`, on a directory or on a file (which takes only the
/// file rights). `WRITE_TREE` is every write right of the ABI but making device nodes.
pub(crate) fn access(rights: Rights, version: ABI, is_dir: bool) -> BitFlags<AccessFs> {
    let all = AccessFs::from_all(version);
    let mut out = BitFlags::<AccessFs>::empty();
    if rights.contains(Rights::READ_FILE) {
        out |= AccessFs::ReadFile;
    }
    if rights.contains(Rights::READ_DIR) {
        out |= AccessFs::ReadDir;
    }
    if rights.contains(Rights::EXECUTE) {
        out |= AccessFs::Execute;
    }
    if rights.contains(Rights::WRITE_FILE) {
        out |= AccessFs::WriteFile | AccessFs::Truncate;
    }
    if rights.contains(Rights::WRITE_TREE) {
        out |= AccessFs::from_write(version) & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    }
    out &= all;
    if !is_dir {
        out &= AccessFs::from_file(version);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rights_map_to_the_abi_s_rights_and_files_take_only_file_rights() {
        let rx = access(Rights::READ_EXEC, ABI::V7, true);
        assert_eq!(
            rx,
            AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute
        );
        assert_eq!(
            access(Rights::READ_EXEC, ABI::V7, false),
            AccessFs::ReadFile | AccessFs::Execute
        );
        // ABI 1 has no truncate right: a device node gets write only.
        assert_eq!(
            access(Rights::READ.union(Rights::WRITE_FILE), ABI::V1, false),
            AccessFs::ReadFile | AccessFs::WriteFile
        );
        let private = access(Rights::PRIVATE, ABI::V7, true);
        assert!(private.contains(AccessFs::Refer | AccessFs::Truncate | AccessFs::MakeReg));
        assert!(!private.intersects(AccessFs::MakeChar | AccessFs::MakeBlock));
        // Nothing outside the ABI.
        assert_eq!(
            access(Rights::PRIVATE, ABI::V1, true) & !AccessFs::from_all(ABI::V1),
            BitFlags::empty()
        );
    }
}
