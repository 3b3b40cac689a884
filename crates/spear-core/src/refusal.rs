//! Refusals: why something may not run, and what to do instead.
//!
//! Every message is written here, once per rule, so the CLI, the MCP server and the tests see the
//! same words. A refusal names the rule, the thing as the caller wrote it, and the way forward.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::{Capability, CapabilityPolicy, ExecutionMode};

/// The rule behind a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalRule {
    /// The mode does not grant a capability that another mode would.
    ModeForbids,
    /// `--no-network` took the network away.
    NetworkRemoved,
    /// A capability that no mode grants (ssh, container-runtime, remote:write...).
    NoModeGrants,
    /// sudo, su, doas, pkexec, setpriv and the like.
    PrivilegeChange,
    /// `mount`, `umount`, `unshare`, `nsenter`, `chroot`, `pivot_root`.
    MountOrNamespace,
    /// Kernel modules, filesystems, raw devices, power state.
    KernelOrDevice,
    /// The system package manager changes the host, not the workspace.
    SystemPackages,
    /// A write that lands outside every workspace root.
    WriteOutsideRoots,
    /// A credential store (.ssh, .aws, shadow, ...), refused whatever the mode.
    CredentialStore,
    /// A path that is, or contains, one of the sandbox's own mount points.
    SandboxMountPoint,
    /// A search or read outside the project that the operator did not name.
    ProjectScope,
    /// A generated file; the source should change instead.
    GeneratedFile,
    /// A snapshot or third-party copy; the original should change instead.
    SnapshotCopy,
    /// An entry that makes other programs run code later, or configures an agent.
    ProtectedEntry,
    /// A check that could not be made (a file whose header cannot be read): refused, never passed.
    Unverifiable,
    /// The person asked declined.
    Declined,
    /// Nobody could be asked.
    NoConfirmer,
    /// The question went to the client; the call is made again with the answer.
    AwaitingConfirmation,
    /// A command found the sandbox missing or broken earlier in the turn; nothing written since
    /// could be checked.
    SandboxDown,
    /// The same refusal was asked for too many times; the turn is stopped.
    TurnStopped,
    /// A background job that may write is running or not yet collected: its changes are checked
    /// when it ends, so nothing else writes meanwhile.
    JobWriting,
}

/// Why something may not run. Build one with the constructor for its rule; read it with
/// [`Refusal::message`] or `Display`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    rule: RefusalRule,
    subject: String,
    detail: Detail,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Detail {
    None,
    Mode(ExecutionMode, Capability),
    Capability(Capability),
    Text(String),
}

impl Refusal {
    fn new(rule: RefusalRule, subject: impl Into<String>, detail: Detail) -> Self {
        Refusal {
            rule,
            subject: subject.into(),
            detail,
        }
    }

    /// `what` needs `cap`, which `mode` does not grant but another mode does.
    pub fn mode_forbids(mode: ExecutionMode, cap: Capability, what: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::ModeForbids, what, Detail::Mode(mode, cap))
    }

    /// `what` needs the network, which `--no-network` removed.
    pub fn network_removed(what: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::NetworkRemoved, what, Detail::None)
    }

    /// `what` needs `cap`, which no mode grants.
    pub fn no_mode_grants(cap: Capability, what: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::NoModeGrants, what, Detail::Capability(cap))
    }

    /// `program` changes privilege.
    pub fn privilege_change(program: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::PrivilegeChange, program, Detail::None)
    }

    /// `program` mounts filesystems or enters namespaces.
    pub fn mount_or_namespace(program: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::MountOrNamespace, program, Detail::None)
    }

    /// `what` touches the kernel or a device.
    pub fn kernel_or_device(what: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::KernelOrDevice, what, Detail::None)
    }

    /// `program` changes the host's installed packages.
    pub fn system_packages(program: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::SystemPackages, program, Detail::None)
    }

    /// A write to `path`, outside every workspace root.
    pub fn write_outside_roots(path: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::WriteOutsideRoots, path, Detail::None)
    }

    /// A read or write of `path`, a credential store.
    pub fn credential_store(path: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::CredentialStore, path, Detail::None)
    }

    /// `path` is one of the sandbox's own mount points or an ancestor of one.
    pub fn sandbox_mount_point(path: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::SandboxMountPoint, path, Detail::None)
    }

    /// `what` reaches outside the project (a search rooted elsewhere, or the home directory).
    pub fn project_scope(what: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::ProjectScope, what, Detail::None)
    }

    /// `path` is generated; `source` says what to change instead.
    pub fn generated_file(path: impl Into<String>, source: impl Into<String>) -> Self {
        Refusal::new(
            RefusalRule::GeneratedFile,
            path,
            Detail::Text(source.into()),
        )
    }

    /// `path` is a snapshot or third-party copy; `original` says what to change instead.
    pub fn snapshot_copy(path: impl Into<String>, original: impl Into<String>) -> Self {
        Refusal::new(
            RefusalRule::SnapshotCopy,
            path,
            Detail::Text(original.into()),
        )
    }

    /// `path` is a protected entry; `why` says what it would let run.
    pub fn protected_entry(path: impl Into<String>, why: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::ProtectedEntry, path, Detail::Text(why.into()))
    }

    /// A check of `path` could not be made, for the reason `why`.
    pub fn unverifiable(path: impl Into<String>, why: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::Unverifiable, path, Detail::Text(why.into()))
    }

    /// The person asked to confirm `what` declined.
    pub fn declined(what: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::Declined, what, Detail::None)
    }

    /// `what` needed a confirmation and nobody could be asked.
    pub fn no_confirmer(what: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::NoConfirmer, what, Detail::None)
    }

    /// `what` needs a confirmation that the client is asking for; it runs when the call comes back
    /// approved.
    pub fn awaiting_confirmation(what: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::AwaitingConfirmation, what, Detail::None)
    }

    /// `what` writes, and a command found the sandbox down (`why`) earlier in the turn.
    pub fn sandbox_down(what: impl Into<String>, why: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::SandboxDown, what, Detail::Text(why.into()))
    }

    /// The turn was stopped after `why` (the refusal asked for again and again).
    pub fn turn_stopped(what: impl Into<String>, why: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::TurnStopped, what, Detail::Text(why.into()))
    }

    /// `what` writes while the background job `job` may write too.
    pub fn job_writing(what: impl Into<String>, job: impl Into<String>) -> Self {
        Refusal::new(RefusalRule::JobWriting, what, Detail::Text(job.into()))
    }

    /// The rule behind this refusal.
    pub const fn rule(&self) -> RefusalRule {
        self.rule
    }

    /// The same refusal, about `subject` (the path as the audit log labels it).
    #[must_use]
    pub fn with_subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = subject.into();
        self
    }

    /// What was refused, as the caller wrote it (a path, a program, a command).
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The message for the model or the user: the rule, the subject, and what to do instead.
    pub fn message(&self) -> String {
        let s = &self.subject;
        match (&self.rule, &self.detail) {
            (RefusalRule::ModeForbids, Detail::Mode(mode, cap)) => {
                let others: Vec<ExecutionMode> = CapabilityPolicy::modes_granting(*cap)
                    .into_iter()
                    .filter(|m| m != mode)
                    .collect();
                let names: Vec<String> = others.iter().map(ToString::to_string).collect();
                let flags: Vec<&str> = others.iter().map(|m| m.flag()).collect();
                let what = match cap {
                    Capability::WorkspaceWrite => "changes files, and the workspace is read-only",
                    Capability::Network => "needs the network, which it does not have",
                    _ => "needs a capability it does not grant",
                };
                format!(
                    "{mode} mode refuses `{s}`: it {what} in {mode} mode ({cap}). Only the user can \
                     change the mode: if this step is needed, ask the user to run spear in {} mode \
                     ({}).",
                    names.join(" or "),
                    flags.join(" or ")
                )
            }
            (RefusalRule::NetworkRemoved, _) => format!(
                "`{s}` needs the network, and --no-network removed it from every mode. Only the \
                 user can give it back: if this step needs the network, ask the user to run spear \
                 without --no-network, in ASK or AUTO mode."
            ),
            (RefusalRule::NoModeGrants, Detail::Capability(cap)) => format!(
                "`{s}` needs {cap}, which no mode grants. spear cannot run it; do this step \
                 outside spear."
            ),
            (RefusalRule::PrivilegeChange, _) => format!(
                "`{s}` changes privilege, which no mode allows. Run the command without it, or \
                 ask the user to run it outside spear."
            ),
            (RefusalRule::MountOrNamespace, _) => {
                format!("`{s}` mounts filesystems or enters namespaces, which no mode allows.")
            }
            (RefusalRule::KernelOrDevice, _) => format!(
                "`{s}` touches the host's kernel or a device, which no mode allows. If it must \
                 change, ask the user to change it outside spear; reading the current state \
                 (`sysctl NAME`, `ip addr`, files under /proc and /sys) is allowed."
            ),
            (RefusalRule::SystemPackages, _) => format!(
                "`{s}` changes the host's installed packages, which no mode allows. Install into \
                 the workspace instead (a virtual environment, node_modules, a local prefix)."
            ),
            (RefusalRule::WriteOutsideRoots, _) => format!(
                "`{s}` is outside the workspace, and nothing may be written outside it in any \
                 mode. Write to a path inside the workspace instead, or to /tmp for scratch files \
                 (the sandbox's own, never the host's)."
            ),
            (RefusalRule::CredentialStore, _) => format!(
                "`{s}` is a credential store; spear never reads or writes credentials in any mode."
            ),
            (RefusalRule::SandboxMountPoint, _) => format!(
                "`{s}` is, or contains, one of the sandbox's own mount points and cannot be \
                 read from the host. Name a file or directory below it."
            ),
            (RefusalRule::ProjectScope, _) => format!(
                "`{s}` reaches outside the project. Search inside the workspace, or ask the \
                 operator to name that path in ~/.config/spear/config.toml."
            ),
            (RefusalRule::GeneratedFile, Detail::Text(source)) => {
                format!(
                    "`{s}` is generated and must not be edited by hand; change {source} instead."
                )
            }
            (RefusalRule::SnapshotCopy, Detail::Text(original)) => format!(
                "`{s}` is a snapshot or third-party copy and is never written; change {original} \
                 instead."
            ),
            (RefusalRule::ProtectedEntry, Detail::Text(why)) => format!(
                "`{s}` is protected: {why}. No mode writes it; ask the user to change it if it \
                 must change."
            ),
            (RefusalRule::Unverifiable, Detail::Text(why)) => format!(
                "spear cannot check `{s}` ({why}), so it is not written. Check the file's \
                 permissions, or write to another path."
            ),
            (RefusalRule::Declined, _) => {
                format!(
                    "The user declined `{s}`. Do not retry it unchanged; ask what to do instead."
                )
            }
            (RefusalRule::NoConfirmer, _) => format!(
                "`{s}` needs confirmation in ASK mode, and nobody could be asked. Ask the user to \
                 run spear in AUTO mode (--auto), or from a client that can ask them (an MCP \
                 client with elicitation)."
            ),
            (RefusalRule::AwaitingConfirmation, _) => format!(
                "`{s}` waits for the user's confirmation, asked through the client; it runs only \
                 when the call comes back approved."
            ),
            (RefusalRule::SandboxDown, Detail::Text(why)) => format!(
                "`{s}` is refused: the sandbox is down ({why}), so nothing written in this turn \
                 could be checked. Fix the sandbox (`spear doctor` says how) and start a new turn."
            ),
            (RefusalRule::TurnStopped, Detail::Text(why)) => format!(
                "spear stopped this turn, so `{s}` did not run: {}. Asking again will not change \
                 the answer: stop calling tools, and tell the user what you need and why. The \
                 next turn starts afresh.",
                why.trim_end_matches('.')
            ),
            (RefusalRule::JobWriting, Detail::Text(job)) => format!(
                "`{s}` is refused for now: the background job {job} may write to the workspace, \
                 and its changes are checked when it ends, so nothing else writes meanwhile. Read \
                 it with terminal_output until it has ended, or stop it with terminal_kill, then \
                 write."
            ),
            (rule, _) => format!("`{s}` is refused ({rule:?})."),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl Serialize for Refusal {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = serializer.serialize_struct("Refusal", 3)?;
        st.serialize_field("rule", &self.rule)?;
        st.serialize_field("subject", &self.subject)?;
        st.serialize_field("message", &self.message())?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_write_names_the_other_modes() {
        let r = Refusal::mode_forbids(ExecutionMode::Safe, Capability::WorkspaceWrite, "touch x");
        let m = r.message();
        assert!(m.contains("ASK or AUTO mode (--ask or --auto)"), "{m}");
        assert!(m.contains("ask the user"), "{m}");
        assert!(m.contains("touch x"), "{m}");
        assert_eq!(r.rule(), RefusalRule::ModeForbids);
    }

    #[test]
    fn network_in_ask_names_auto_only() {
        let m = Refusal::mode_forbids(ExecutionMode::Safe, Capability::Network, "curl x").message();
        assert!(m.contains("--ask or --auto"), "{m}");
    }

    /// A model cannot rerun spear: every refusal it cannot act on by itself sends it to the user.
    #[test]
    fn no_message_tells_the_model_to_rerun_spear() {
        let all = [
            Refusal::mode_forbids(ExecutionMode::Safe, Capability::WorkspaceWrite, "x"),
            Refusal::mode_forbids(ExecutionMode::Ask, Capability::Network, "x"),
            Refusal::network_removed("x"),
            Refusal::no_confirmer("x"),
        ];
        for r in &all {
            let m = r.message();
            assert!(!m.to_ascii_lowercase().contains("rerun"), "{m}");
            assert!(
                m.contains("ask the user") || m.contains("Ask the user"),
                "{m}"
            );
            assert!(!m.contains("/workspace"), "{m}");
        }
    }

    #[test]
    fn no_mode_grants_says_so() {
        let m = Refusal::no_mode_grants(Capability::Ssh, "ssh host").message();
        assert!(m.contains("no mode grants"), "{m}");
    }

    #[test]
    fn every_rule_has_its_own_message() {
        let all = [
            Refusal::network_removed("x"),
            Refusal::privilege_change("x"),
            Refusal::mount_or_namespace("x"),
            Refusal::kernel_or_device("x"),
            Refusal::system_packages("x"),
            Refusal::write_outside_roots("x"),
            Refusal::credential_store("x"),
            Refusal::sandbox_mount_point("x"),
            Refusal::project_scope("x"),
            Refusal::generated_file("x", "y"),
            Refusal::snapshot_copy("x", "y"),
            Refusal::protected_entry("x", "y"),
            Refusal::unverifiable("x", "y"),
            Refusal::declined("x"),
            Refusal::no_confirmer("x"),
        ];
        for r in &all {
            assert!(
                !r.message().contains("is refused ("),
                "{:?} fell through",
                r.rule()
            );
        }
        assert!(
            Refusal::generated_file("gen.rs", "gen.proto")
                .message()
                .contains("gen.proto")
        );
    }
}
