//! Refusals: why something may not run, and what to do instead.
//!
//! Every message is written here, once per rule, so the CLI, the MCP server and the tests see the
//! same words. A refusal names the rule, the thing as the caller wrote it, and the way forward.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize, Serializer};

use crate::authority::GrantError;
use crate::{Capability, CapabilityPolicy, CapabilitySet, ExecutionMode};

/// The rule behind a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
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
    /// An entry no tool and no command writes: spear's own configuration, one the operator or
    /// the workspace protects, a repository whose configuration cannot be read.
    ProtectedEntry,
    /// Host-run configuration (a file a tool on the host runs or obeys without the user asking:
    /// git's configuration, hooks and includes, editors' tasks, agents' configurations, ...):
    /// written only with the user's approval, or where the operator allows its entry.
    HostRunConfig,
    /// A check that could not be made (a file whose header cannot be read): refused, never passed.
    Unverifiable,
    /// The person asked declined.
    Declined,
    /// Nobody could be asked.
    NoConfirmer,
    /// The question waited for `spear approve` and nobody answered it in time.
    Unapproved,
    /// A path inside spear's own state directory (audit log, checkpoints, the approval channel).
    SpearState,
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
    /// The tool is not offered in the session's mode (a tool that writes, in SAFE).
    ToolNotInMode,
    /// A path is malformed or resolves outside the workspace.
    InvalidPath,
    /// A call came back with a `requestState` that is expired, replayed, forged or another
    /// call's.
    RequestStateRefused,
    /// A call came back with a `requestState` but no answer to the question.
    NoAnswer,
    /// A command needs a grant, or came with one that does not hold for it.
    GrantRefused,
    /// The user declined to run a command once with a wider sandbox than the session grants.
    EscalationDeclined,
    /// The question of an escalation was dismissed without a choice.
    EscalationUnanswered,
    /// An escalation needs the user's answer, and nobody could be asked.
    EscalationUnavailable,
    /// The user already declined an escalation of this command in this turn.
    EscalationRejectedBefore,
    /// An escalation asked for a command that needs nothing wider than the session grants.
    EscalationNotNeeded,
    /// `fetch_url`'s URL guard or address policy refused a URL, a redirect or an address.
    WebRefused,
    /// A request of spear's (a fetch, a redirect, a search) would have carried a secret value
    /// spear holds (its environment's, the operator's credentials).
    SecretInRequest,
}

impl RefusalRule {
    /// The rule's stable name, as JSON, MCP results and the audit log spell it.
    pub const fn as_str(self) -> &'static str {
        match self {
            RefusalRule::ModeForbids => "mode_forbids",
            RefusalRule::NetworkRemoved => "network_removed",
            RefusalRule::NoModeGrants => "no_mode_grants",
            RefusalRule::PrivilegeChange => "privilege_change",
            RefusalRule::MountOrNamespace => "mount_or_namespace",
            RefusalRule::KernelOrDevice => "kernel_or_device",
            RefusalRule::SystemPackages => "system_packages",
            RefusalRule::WriteOutsideRoots => "write_outside_roots",
            RefusalRule::CredentialStore => "credential_store",
            RefusalRule::SandboxMountPoint => "sandbox_mount_point",
            RefusalRule::ProjectScope => "project_scope",
            RefusalRule::GeneratedFile => "generated_file",
            RefusalRule::SnapshotCopy => "snapshot_copy",
            RefusalRule::ProtectedEntry => "protected_entry",
            RefusalRule::HostRunConfig => "host_run_config",
            RefusalRule::Unverifiable => "unverifiable",
            RefusalRule::Declined => "declined",
            RefusalRule::NoConfirmer => "no_confirmer",
            RefusalRule::Unapproved => "unapproved",
            RefusalRule::SpearState => "spear_state",
            RefusalRule::AwaitingConfirmation => "awaiting_confirmation",
            RefusalRule::SandboxDown => "sandbox_down",
            RefusalRule::TurnStopped => "turn_stopped",
            RefusalRule::JobWriting => "job_writing",
            RefusalRule::ToolNotInMode => "tool_not_in_mode",
            RefusalRule::InvalidPath => "invalid_path",
            RefusalRule::RequestStateRefused => "request_state_refused",
            RefusalRule::NoAnswer => "no_answer",
            RefusalRule::GrantRefused => "grant_refused",
            RefusalRule::EscalationDeclined => "escalation_declined",
            RefusalRule::EscalationUnanswered => "escalation_unanswered",
            RefusalRule::EscalationUnavailable => "escalation_unavailable",
            RefusalRule::EscalationRejectedBefore => "escalation_rejected_before",
            RefusalRule::EscalationNotNeeded => "escalation_not_needed",
            RefusalRule::WebRefused => "web_refused",
            RefusalRule::SecretInRequest => "secret_in_request",
        }
    }
}

impl fmt::Display for RefusalRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why something may not run: one variant per rule, each with its own data. Build one with the
/// constructor for its rule; read it with [`Refusal::message`] or `Display`, and act on it by
/// [`Refusal::rule`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// `what` needs `capability`, which `mode` does not grant but another mode does.
    ModeForbids {
        /// The session's mode.
        mode: ExecutionMode,
        /// The capability it needs.
        capability: Capability,
        /// The command.
        what: String,
    },
    /// `what` needs the network, which `--no-network` removed.
    NetworkRemoved {
        /// The command.
        what: String,
    },
    /// `what` needs `capability`, which no mode grants.
    NoModeGrants {
        /// The capability it needs.
        capability: Capability,
        /// The command.
        what: String,
    },
    /// `program` changes privilege.
    PrivilegeChange {
        /// The program.
        program: String,
    },
    /// `program` mounts filesystems or enters namespaces.
    MountOrNamespace {
        /// The program.
        program: String,
    },
    /// `what` touches the kernel or a device.
    KernelOrDevice {
        /// The command or path.
        what: String,
    },
    /// `program` changes the host's installed packages.
    SystemPackages {
        /// The program.
        program: String,
    },
    /// A write to `path`, outside every workspace root.
    WriteOutsideRoots {
        /// The path.
        path: String,
    },
    /// A read or write of `path`, a credential store.
    CredentialStore {
        /// The path.
        path: String,
    },
    /// `path` is one of the sandbox's own mount points or an ancestor of one.
    SandboxMountPoint {
        /// The path.
        path: String,
    },
    /// `what` reaches outside the project.
    ProjectScope {
        /// The command or path.
        what: String,
    },
    /// `path` is generated from `source`.
    GeneratedFile {
        /// The path.
        path: String,
        /// What to change instead.
        source: String,
    },
    /// `path` is a snapshot or third-party copy of `original`.
    SnapshotCopy {
        /// The path.
        path: String,
        /// What to change instead.
        original: String,
    },
    /// `path` is a protected entry; `why` says what it would let run.
    ProtectedEntry {
        /// The path.
        path: String,
        /// What writing it would let happen.
        why: String,
    },
    /// `path` is host-run configuration of the catalogue entry `entry`; `why` says which tool on
    /// the host runs or obeys it.
    HostRunConfig {
        /// The path.
        path: String,
        /// The catalogue entry (`git-hooks`, `vscode`, ...), as `[policy] allow_host_config`
        /// names it.
        entry: String,
        /// What runs or obeys it on the host.
        why: String,
    },
    /// A check of `path` could not be made, for the reason `why`.
    Unverifiable {
        /// The path.
        path: String,
        /// Why the check could not be made.
        why: String,
    },
    /// The person asked to confirm `what` declined.
    Declined {
        /// The command or call.
        what: String,
    },
    /// `what` needed a confirmation and nobody could be asked.
    NoConfirmer {
        /// The command or call.
        what: String,
    },
    /// `what` waited `wait_secs` for an answer through `spear approve`, and none came.
    Unapproved {
        /// The command or call.
        what: String,
        /// How long it waited, in seconds.
        wait_secs: u64,
    },
    /// `path` lies inside spear's own state directory.
    SpearState {
        /// The path as the caller wrote it.
        path: String,
    },
    /// `what` waits for a confirmation the client is asking for.
    AwaitingConfirmation {
        /// The command or call.
        what: String,
    },
    /// `what` writes, and a command found the sandbox down (`why`) earlier in the turn.
    SandboxDown {
        /// The command or tool.
        what: String,
        /// How the sandbox was found.
        why: String,
    },
    /// The turn was stopped after `why`.
    TurnStopped {
        /// The call refused.
        what: String,
        /// The refusal asked for again and again.
        why: String,
    },
    /// `what` writes while the background job `job` may write too.
    JobWriting {
        /// The command or tool.
        what: String,
        /// The job's id.
        job: String,
    },
    /// The tool `tool` is not offered in `mode`; it exists in `modes`.
    ToolNotInMode {
        /// The tool.
        tool: String,
        /// What the call would have acted on (its path or command): calls on different targets
        /// are different refusals.
        target: String,
        /// The session's mode.
        mode: ExecutionMode,
        /// The modes it exists in.
        modes: Vec<ExecutionMode>,
    },
    /// `path` is malformed or resolves outside the workspace (`why` says which).
    InvalidPath {
        /// The path as the caller wrote it.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// A call came back with a `requestState` spear does not accept (`why`).
    RequestStateRefused {
        /// The tool called.
        tool: String,
        /// Why the state was refused (expired, replayed, another call...).
        why: String,
    },
    /// A call came back with a `requestState` but no answer to spear's question.
    NoAnswer {
        /// The tool called.
        tool: String,
        /// Where the answer belongs (`inputResponses.spear_confirm`).
        field: String,
    },
    /// `what` was prepared, and the grant it needs is missing or does not hold for it.
    GrantRefused {
        /// The command.
        what: String,
        /// Which check failed.
        error: GrantError,
    },
    /// The user declined to run `what` once with `capabilities` added to the session's sandbox.
    EscalationDeclined {
        /// The command.
        what: String,
        /// What it asked for beyond the session.
        capabilities: CapabilitySet,
    },
    /// The question whether `what` may run once with `capabilities` was dismissed without a
    /// choice.
    EscalationUnanswered {
        /// The command.
        what: String,
        /// What it asked for beyond the session.
        capabilities: CapabilitySet,
    },
    /// `what` asked to run once with `capabilities`, and nobody could be asked (a client without
    /// elicitation, no terminal, a question the client could not put).
    EscalationUnavailable {
        /// The command.
        what: String,
        /// What it asked for beyond the session.
        capabilities: CapabilitySet,
    },
    /// The user declined an escalation of `what` earlier in this turn; it is not asked again.
    EscalationRejectedBefore {
        /// The command.
        what: String,
    },
    /// `what` asked for `capabilities`, and needs nothing the session does not grant already.
    EscalationNotNeeded {
        /// The command.
        what: String,
        /// What it asked for.
        capabilities: CapabilitySet,
    },
    /// `fetch_url` refused `url` (a scheme, userinfo, a port, a redirect from https to http, or
    /// an address of the host, its networks or a metadata service); `why` names the rule and
    /// the address.
    WebRefused {
        /// The URL, its query redacted.
        url: String,
        /// The guard's account: the rule and the address.
        why: String,
    },
    /// `what` (a fetch or a search, as the audit log shows it: the secret redacted) would have
    /// sent a secret value spear holds; `why` names whose and in what encoding, never the value.
    SecretInRequest {
        /// The call, redacted.
        what: String,
        /// Which known secret, where in the request, in what form.
        why: String,
    },
}

/// The field of each variant that holds its subject: one list for [`Refusal::subject`] and
/// `subject_mut` (the binding mode follows `$refusal`'s reference).
macro_rules! subject_of {
    ($refusal:expr) => {
        match $refusal {
            Refusal::ModeForbids { what, .. }
            | Refusal::NetworkRemoved { what }
            | Refusal::NoModeGrants { what, .. }
            | Refusal::KernelOrDevice { what }
            | Refusal::ProjectScope { what }
            | Refusal::Declined { what }
            | Refusal::NoConfirmer { what }
            | Refusal::Unapproved { what, .. }
            | Refusal::AwaitingConfirmation { what }
            | Refusal::SandboxDown { what, .. }
            | Refusal::TurnStopped { what, .. }
            | Refusal::JobWriting { what, .. }
            | Refusal::GrantRefused { what, .. }
            | Refusal::SecretInRequest { what, .. } => what,
            Refusal::EscalationDeclined { what, .. }
            | Refusal::EscalationUnanswered { what, .. }
            | Refusal::EscalationUnavailable { what, .. }
            | Refusal::EscalationRejectedBefore { what }
            | Refusal::EscalationNotNeeded { what, .. } => what,
            Refusal::PrivilegeChange { program }
            | Refusal::MountOrNamespace { program }
            | Refusal::SystemPackages { program } => program,
            Refusal::WriteOutsideRoots { path }
            | Refusal::CredentialStore { path }
            | Refusal::SpearState { path }
            | Refusal::SandboxMountPoint { path }
            | Refusal::GeneratedFile { path, .. }
            | Refusal::SnapshotCopy { path, .. }
            | Refusal::ProtectedEntry { path, .. }
            | Refusal::HostRunConfig { path, .. }
            | Refusal::Unverifiable { path, .. }
            | Refusal::InvalidPath { path, .. } => path,
            Refusal::ToolNotInMode { target, .. } => target,
            Refusal::WebRefused { url, .. } => url,
            Refusal::RequestStateRefused { tool, .. } | Refusal::NoAnswer { tool, .. } => tool,
        }
    };
}

impl Refusal {
    /// `what` needs `cap`, which `mode` does not grant but another mode does.
    pub fn mode_forbids(mode: ExecutionMode, cap: Capability, what: impl Into<String>) -> Self {
        Refusal::ModeForbids {
            mode,
            capability: cap,
            what: what.into(),
        }
    }

    /// `what` needs the network, which `--no-network` removed.
    pub fn network_removed(what: impl Into<String>) -> Self {
        Refusal::NetworkRemoved { what: what.into() }
    }

    /// `what` needs `cap`, which no mode grants.
    pub fn no_mode_grants(cap: Capability, what: impl Into<String>) -> Self {
        Refusal::NoModeGrants {
            capability: cap,
            what: what.into(),
        }
    }

    /// `program` changes privilege.
    pub fn privilege_change(program: impl Into<String>) -> Self {
        Refusal::PrivilegeChange {
            program: program.into(),
        }
    }

    /// `program` mounts filesystems or enters namespaces.
    pub fn mount_or_namespace(program: impl Into<String>) -> Self {
        Refusal::MountOrNamespace {
            program: program.into(),
        }
    }

    /// `what` touches the kernel or a device.
    pub fn kernel_or_device(what: impl Into<String>) -> Self {
        Refusal::KernelOrDevice { what: what.into() }
    }

    /// `program` changes the host's installed packages.
    pub fn system_packages(program: impl Into<String>) -> Self {
        Refusal::SystemPackages {
            program: program.into(),
        }
    }

    /// A write to `path`, outside every workspace root.
    pub fn write_outside_roots(path: impl Into<String>) -> Self {
        Refusal::WriteOutsideRoots { path: path.into() }
    }

    /// A read or write of `path`, a credential store.
    pub fn credential_store(path: impl Into<String>) -> Self {
        Refusal::CredentialStore { path: path.into() }
    }

    /// `path` is one of the sandbox's own mount points or an ancestor of one.
    pub fn sandbox_mount_point(path: impl Into<String>) -> Self {
        Refusal::SandboxMountPoint { path: path.into() }
    }

    /// `what` reaches outside the project (a search rooted elsewhere, or the home directory).
    pub fn project_scope(what: impl Into<String>) -> Self {
        Refusal::ProjectScope { what: what.into() }
    }

    /// `path` is generated; `source` says what to change instead.
    pub fn generated_file(path: impl Into<String>, source: impl Into<String>) -> Self {
        Refusal::GeneratedFile {
            path: path.into(),
            source: source.into(),
        }
    }

    /// `path` is a snapshot or third-party copy; `original` says what to change instead.
    pub fn snapshot_copy(path: impl Into<String>, original: impl Into<String>) -> Self {
        Refusal::SnapshotCopy {
            path: path.into(),
            original: original.into(),
        }
    }

    /// `path` is a protected entry; `why` says what it would let run.
    pub fn protected_entry(path: impl Into<String>, why: impl Into<String>) -> Self {
        Refusal::ProtectedEntry {
            path: path.into(),
            why: why.into(),
        }
    }

    /// `path` is host-run configuration of the catalogue entry `entry`, which `why` says what
    /// runs or obeys on the host.
    pub fn host_run_config(
        path: impl Into<String>,
        entry: impl Into<String>,
        why: impl Into<String>,
    ) -> Self {
        Refusal::HostRunConfig {
            path: path.into(),
            entry: entry.into(),
            why: why.into(),
        }
    }

    /// Whether a person's approval may let the refused write through (host-run configuration),
    /// where every other rule refuses whatever anyone answers.
    pub fn is_askable(&self) -> bool {
        matches!(self, Refusal::HostRunConfig { .. })
    }

    /// A check of `path` could not be made, for the reason `why`.
    pub fn unverifiable(path: impl Into<String>, why: impl Into<String>) -> Self {
        Refusal::Unverifiable {
            path: path.into(),
            why: why.into(),
        }
    }

    /// The person asked to confirm `what` declined.
    pub fn declined(what: impl Into<String>) -> Self {
        Refusal::Declined { what: what.into() }
    }

    /// `what` needed a confirmation and nobody could be asked.
    pub fn no_confirmer(what: impl Into<String>) -> Self {
        Refusal::NoConfirmer { what: what.into() }
    }

    /// `what` waited `wait_secs` for an answer through `spear approve`, and none came.
    pub fn unapproved(what: impl Into<String>, wait_secs: u64) -> Self {
        Refusal::Unapproved {
            what: what.into(),
            wait_secs,
        }
    }

    /// `path` lies inside spear's own state directory.
    pub fn spear_state(path: impl Into<String>) -> Self {
        Refusal::SpearState { path: path.into() }
    }

    /// `what` needs a confirmation that the client is asking for; it runs when the call comes back
    /// approved.
    pub fn awaiting_confirmation(what: impl Into<String>) -> Self {
        Refusal::AwaitingConfirmation { what: what.into() }
    }

    /// `what` writes, and a command found the sandbox down (`why`) earlier in the turn.
    pub fn sandbox_down(what: impl Into<String>, why: impl Into<String>) -> Self {
        Refusal::SandboxDown {
            what: what.into(),
            why: why.into(),
        }
    }

    /// The turn was stopped after `why` (the refusal asked for again and again).
    pub fn turn_stopped(what: impl Into<String>, why: impl Into<String>) -> Self {
        Refusal::TurnStopped {
            what: what.into(),
            why: why.into(),
        }
    }

    /// `what` writes while the background job `job` may write too.
    pub fn job_writing(what: impl Into<String>, job: impl Into<String>) -> Self {
        Refusal::JobWriting {
            what: what.into(),
            job: job.into(),
        }
    }

    /// The tool `tool`, called on `target`, is not offered in `mode`; it exists in `modes`.
    pub fn tool_not_in_mode(
        tool: impl Into<String>,
        target: impl Into<String>,
        mode: ExecutionMode,
        modes: &[ExecutionMode],
    ) -> Self {
        Refusal::ToolNotInMode {
            tool: tool.into(),
            target: target.into(),
            mode,
            modes: modes.to_vec(),
        }
    }

    /// `path` is malformed or resolves outside the workspace; `why` is the resolver's account.
    pub fn invalid_path(path: impl Into<String>, why: impl Into<String>) -> Self {
        Refusal::InvalidPath {
            path: path.into(),
            why: why.into(),
        }
    }

    /// A `requestState` of a call to `tool` was refused for the reason `why`.
    pub fn request_state_refused(tool: impl Into<String>, why: impl Into<String>) -> Self {
        Refusal::RequestStateRefused {
            tool: tool.into(),
            why: why.into(),
        }
    }

    /// A call to `tool` came back without an answer to spear's question in `field`.
    pub fn no_answer(tool: impl Into<String>, field: impl Into<String>) -> Self {
        Refusal::NoAnswer {
            tool: tool.into(),
            field: field.into(),
        }
    }

    /// `what` could not run under the grant it came with (or without one): `error` says which
    /// check failed.
    pub fn grant_refused(what: impl Into<String>, error: GrantError) -> Self {
        Refusal::GrantRefused {
            what: what.into(),
            error,
        }
    }

    /// The user declined to run `what` once with `capabilities` beyond the session's sandbox.
    pub fn escalation_declined(what: impl Into<String>, capabilities: CapabilitySet) -> Self {
        Refusal::EscalationDeclined {
            what: what.into(),
            capabilities,
        }
    }

    /// The question whether `what` may run once with `capabilities` was dismissed.
    pub fn escalation_unanswered(what: impl Into<String>, capabilities: CapabilitySet) -> Self {
        Refusal::EscalationUnanswered {
            what: what.into(),
            capabilities,
        }
    }

    /// `what` asked to run once with `capabilities`, and nobody could be asked.
    pub fn escalation_unavailable(what: impl Into<String>, capabilities: CapabilitySet) -> Self {
        Refusal::EscalationUnavailable {
            what: what.into(),
            capabilities,
        }
    }

    /// The user declined an escalation of `what` earlier in this turn.
    pub fn escalation_rejected_before(what: impl Into<String>) -> Self {
        Refusal::EscalationRejectedBefore { what: what.into() }
    }

    /// `what` asked for `capabilities` and needs nothing beyond what the session grants.
    pub fn escalation_not_needed(what: impl Into<String>, capabilities: CapabilitySet) -> Self {
        Refusal::EscalationNotNeeded {
            what: what.into(),
            capabilities,
        }
    }

    /// `fetch_url` refused `url` for `why` (the guard's account, naming the rule and the address).
    pub fn web_refused(url: impl Into<String>, why: impl Into<String>) -> Self {
        Refusal::WebRefused {
            url: url.into(),
            why: why.into(),
        }
    }

    /// `what` would have sent a known secret: `why` says whose, where and in what form (never
    /// the value).
    pub fn secret_in_request(what: impl Into<String>, why: impl Into<String>) -> Self {
        Refusal::SecretInRequest {
            what: what.into(),
            why: why.into(),
        }
    }

    /// The rule behind this refusal.
    pub const fn rule(&self) -> RefusalRule {
        match self {
            Refusal::ModeForbids { .. } => RefusalRule::ModeForbids,
            Refusal::NetworkRemoved { .. } => RefusalRule::NetworkRemoved,
            Refusal::NoModeGrants { .. } => RefusalRule::NoModeGrants,
            Refusal::PrivilegeChange { .. } => RefusalRule::PrivilegeChange,
            Refusal::MountOrNamespace { .. } => RefusalRule::MountOrNamespace,
            Refusal::KernelOrDevice { .. } => RefusalRule::KernelOrDevice,
            Refusal::SystemPackages { .. } => RefusalRule::SystemPackages,
            Refusal::WriteOutsideRoots { .. } => RefusalRule::WriteOutsideRoots,
            Refusal::CredentialStore { .. } => RefusalRule::CredentialStore,
            Refusal::SandboxMountPoint { .. } => RefusalRule::SandboxMountPoint,
            Refusal::ProjectScope { .. } => RefusalRule::ProjectScope,
            Refusal::GeneratedFile { .. } => RefusalRule::GeneratedFile,
            Refusal::SnapshotCopy { .. } => RefusalRule::SnapshotCopy,
            Refusal::ProtectedEntry { .. } => RefusalRule::ProtectedEntry,
            Refusal::HostRunConfig { .. } => RefusalRule::HostRunConfig,
            Refusal::Unverifiable { .. } => RefusalRule::Unverifiable,
            Refusal::Declined { .. } => RefusalRule::Declined,
            Refusal::NoConfirmer { .. } => RefusalRule::NoConfirmer,
            Refusal::Unapproved { .. } => RefusalRule::Unapproved,
            Refusal::SpearState { .. } => RefusalRule::SpearState,
            Refusal::AwaitingConfirmation { .. } => RefusalRule::AwaitingConfirmation,
            Refusal::SandboxDown { .. } => RefusalRule::SandboxDown,
            Refusal::TurnStopped { .. } => RefusalRule::TurnStopped,
            Refusal::JobWriting { .. } => RefusalRule::JobWriting,
            Refusal::ToolNotInMode { .. } => RefusalRule::ToolNotInMode,
            Refusal::InvalidPath { .. } => RefusalRule::InvalidPath,
            Refusal::RequestStateRefused { .. } => RefusalRule::RequestStateRefused,
            Refusal::NoAnswer { .. } => RefusalRule::NoAnswer,
            Refusal::GrantRefused { .. } => RefusalRule::GrantRefused,
            Refusal::EscalationDeclined { .. } => RefusalRule::EscalationDeclined,
            Refusal::EscalationUnanswered { .. } => RefusalRule::EscalationUnanswered,
            Refusal::EscalationUnavailable { .. } => RefusalRule::EscalationUnavailable,
            Refusal::EscalationRejectedBefore { .. } => RefusalRule::EscalationRejectedBefore,
            Refusal::EscalationNotNeeded { .. } => RefusalRule::EscalationNotNeeded,
            Refusal::WebRefused { .. } => RefusalRule::WebRefused,
            Refusal::SecretInRequest { .. } => RefusalRule::SecretInRequest,
        }
    }

    /// The same refusal, about `subject` (the path as the audit log labels it).
    #[must_use]
    pub fn with_subject(mut self, subject: impl Into<String>) -> Self {
        *self.subject_mut() = subject.into();
        self
    }

    /// What was refused, as the caller wrote it (a path, a program, a command, a tool).
    pub fn subject(&self) -> &str {
        subject_of!(self)
    }

    fn subject_mut(&mut self) -> &mut String {
        subject_of!(self)
    }

    /// The message for the model or the user: the rule, the subject, and what to do instead.
    /// The one place each rule's wording is written.
    #[allow(
        clippy::too_many_lines,
        reason = "a table: one arm per rule, each its own wording"
    )]
    pub fn message(&self) -> String {
        match self {
            Refusal::ModeForbids {
                mode,
                capability: cap,
                what: s,
            } => {
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
            Refusal::NetworkRemoved { what: s } => format!(
                "`{s}` needs the network, and --no-network removed it from every mode. Only the \
                 user can give it back: if this step needs the network, ask the user to run spear \
                 without --no-network, in ASK or AUTO mode."
            ),
            Refusal::NoModeGrants {
                capability: cap,
                what: s,
            } => format!(
                "`{s}` needs {cap}, which no mode grants. spear cannot run it; do this step \
                 outside spear."
            ),
            Refusal::PrivilegeChange { program: s } => format!(
                "`{s}` changes privilege, which no mode allows. Run the command without it, or \
                 ask the user to run it outside spear."
            ),
            Refusal::MountOrNamespace { program: s } => {
                format!("`{s}` mounts filesystems or enters namespaces, which no mode allows.")
            }
            Refusal::KernelOrDevice { what: s } => format!(
                "`{s}` touches the host's kernel or a device, which no mode allows. If it must \
                 change, ask the user to change it outside spear; reading the current state \
                 (`sysctl NAME`, `ip addr`, files under /proc and /sys) is allowed."
            ),
            Refusal::SystemPackages { program: s } => format!(
                "`{s}` changes the host's installed packages, which no mode allows. Install into \
                 the workspace instead (a virtual environment, node_modules, a local prefix)."
            ),
            Refusal::WriteOutsideRoots { path: s } => format!(
                "`{s}` is outside the workspace, and nothing may be written outside it in any \
                 mode. Write to a path inside the workspace instead, or to /tmp for scratch files \
                 (the sandbox's own, never the host's)."
            ),
            Refusal::CredentialStore { path: s } => format!(
                "`{s}` is a credential store; spear never reads or writes credentials in any mode."
            ),
            Refusal::SandboxMountPoint { path: s } => format!(
                "`{s}` is, or contains, one of the sandbox's own mount points and cannot be \
                 read from the host. Name a file or directory below it."
            ),
            Refusal::ProjectScope { what: s } => format!(
                "`{s}` reaches outside the project. Search inside the workspace, or ask the \
                 operator to name that path in ~/.config/spear/config.toml."
            ),
            Refusal::GeneratedFile { path: s, source } => {
                format!(
                    "`{s}` is generated and must not be edited by hand; change {source} instead."
                )
            }
            Refusal::SnapshotCopy { path: s, original } => format!(
                "`{s}` is a snapshot or third-party copy and is never written; change {original} \
                 instead."
            ),
            Refusal::ProtectedEntry { path: s, why } => format!(
                "`{s}` is protected: {why}. No mode writes it; ask the user to change it if it \
                 must change."
            ),
            Refusal::HostRunConfig {
                path: s,
                entry,
                why,
            } => format!(
                "`{s}` is host-run configuration: {why}, on the host, outside every sandbox. \
                 spear writes it only when the user approves that write (ASK and AUTO ask, \
                 through a client that can ask them or `spear approve` in another terminal; SAFE \
                 writes nothing), or when the operator lists `{entry}` in `[policy] \
                 allow_host_config`. Nobody approved this write, so it was not made; ask the user \
                 to make the change if it must be made."
            ),
            Refusal::Unverifiable { path: s, why } => format!(
                "spear cannot check `{s}` ({why}), so it is not written. Check the file's \
                 permissions, or write to another path."
            ),
            Refusal::Declined { what: s } => {
                format!(
                    "The user declined `{s}`. Do not retry it unchanged; ask what to do instead."
                )
            }
            Refusal::NoConfirmer { what: s } => format!(
                "`{s}` needs the user's confirmation, and nobody could be asked. Ask the user to \
                 run spear from a client that can ask them (an MCP client with elicitation), or \
                 to answer with `spear approve` in another terminal; in ASK mode, AUTO mode \
                 (--auto) asks only before host-run configuration is written."
            ),
            Refusal::Unapproved { what: s, wait_secs } => format!(
                "`{s}` needs confirmation in ASK mode; it waited {wait_secs} s for the user to \
                 approve it and nobody did, so nothing ran. Ask the user to run `spear approve` \
                 in another terminal (it lists what waits and approves it), then call again."
            ),
            Refusal::SpearState { path: s } => format!(
                "`{s}` is inside spear's own state directory (its audit log, checkpoints and \
                 approval channel), which no tool reads or writes in any mode. Ask the user if \
                 you need something from it."
            ),
            Refusal::AwaitingConfirmation { what: s } => format!(
                "`{s}` waits for the user's confirmation, asked through the client; it runs only \
                 when the call comes back approved."
            ),
            Refusal::SandboxDown { what: s, why } => format!(
                "`{s}` is refused: the sandbox is down ({why}), so nothing written in this turn \
                 could be checked. Fix the sandbox (`spear doctor` says how) and start a new turn."
            ),
            Refusal::TurnStopped { what: s, why } => format!(
                "spear stopped this turn, so `{s}` did not run: {}. Asking again will not change \
                 the answer: stop calling tools, and tell the user what you need and why. The \
                 next turn starts afresh.",
                why.trim_end_matches('.')
            ),
            Refusal::JobWriting { what: s, job } => format!(
                "`{s}` is refused for now: the background job {job} may write to the workspace, \
                 and its changes are checked when it ends, so nothing else writes meanwhile. Read \
                 it with terminal_output until it has ended, or stop it with terminal_kill, then \
                 write."
            ),
            Refusal::ToolNotInMode {
                tool, mode, modes, ..
            } => {
                let with: Vec<String> = modes
                    .iter()
                    .map(|m| format!("{} (--{})", m.as_str().to_uppercase(), m.as_str()))
                    .collect();
                format!(
                    "the tool `{tool}` is not available in {} mode{}; it exists in {}. Ask the user to start spear in {} if the change is needed, or continue with the tools that are listed",
                    mode.as_str().to_uppercase(),
                    if *mode == ExecutionMode::Safe {
                        ", in which nothing changes files"
                    } else {
                        ""
                    },
                    with.join(" and "),
                    if with.len() > 1 { "one of them" } else { "it" },
                )
            }
            Refusal::InvalidPath { why, .. } => why.clone(),
            Refusal::RequestStateRefused { tool, why } => format!(
                "{why}. Nothing ran. Call {tool} again without requestState to be asked afresh."
            ),
            Refusal::NoAnswer { tool, field } => format!(
                "the call came back without an answer to spear's question ({field}); nothing \
                 ran. Call {tool} again without requestState to be asked afresh."
            ),
            Refusal::GrantRefused { what, error } => {
                let next = match error {
                    GrantError::Denied { .. } => {
                        "Do it another way, or ask the user to start spear in a mode that gives it"
                    }
                    GrantError::Required { .. } => {
                        "Ask the user to approve it (in ASK mode, or with `spear approve`), or do it another way"
                    }
                    _ => "Nothing ran; the approval must be given again for exactly this command",
                };
                format!("`{what}` did not run: {error}. {next}.")
            }
            Refusal::EscalationDeclined {
                what: s,
                capabilities,
            } => format!(
                "The user declined to run `{s}` with a wider sandbox ({}); nothing ran. This is \
                 final for this command in this turn: do not ask again. Continue within the \
                 session's sandbox, or ask the user what to do instead.",
                names(*capabilities)
            ),
            Refusal::EscalationUnanswered {
                what: s,
                capabilities,
            } => format!(
                "Nobody answered whether `{s}` may run with a wider sandbox ({}): the question \
                 was dismissed without a choice, and nothing ran. Continue within the session's \
                 sandbox, or ask the user whether the step is needed.",
                names(*capabilities)
            ),
            Refusal::EscalationUnavailable {
                what: s,
                capabilities,
            } => format!(
                "`{s}` asks to run with a wider sandbox ({}), which only the user can allow, and \
                 nobody could be asked (a client without elicitation, no terminal, or the \
                 question could not be put); nothing ran. Continue within the session's sandbox, \
                 or ask the user to allow the step another way (another mode, or a client that \
                 can ask them).",
                names(*capabilities)
            ),
            Refusal::EscalationRejectedBefore { what: s } => format!(
                "The user already declined to run `{s}` with a wider sandbox in this turn, so \
                 spear does not ask again and nothing ran. Continue within the session's \
                 sandbox, or ask the user what to do instead."
            ),
            Refusal::EscalationNotNeeded {
                what: s,
                capabilities,
            } => format!(
                "`{s}` needs nothing beyond what this session grants, so asking for {} widens \
                 nothing and nothing ran. Call it without sandbox_permissions and justification; \
                 ask for them only after it failed for lack of one of them.",
                names(*capabilities)
            ),
            Refusal::WebRefused { url, why } => format!(
                "fetch_url refused `{url}`: {why}. No mode fetches it; nothing was connected to \
                 or written. Read a public page instead."
            ),
            Refusal::SecretInRequest { what, why } => format!(
                "`{what}` was not sent: {why}. spear never sends a secret it holds (a secret of its \
                 own environment, a credential the operator configured) in a request's URL, \
                 headers or body; nothing was resolved or connected to. Leave the value out of \
                 the request. If it must be sent, ask the user: in ASK mode they are asked."
            ),
        }
    }
}

/// `caps` as a message names them: `workspace:write, network`.
fn names(caps: CapabilitySet) -> String {
    caps.iter()
        .map(Capability::as_str)
        .collect::<Vec<_>>()
        .join(", ")
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
        st.serialize_field("rule", &self.rule())?;
        st.serialize_field("subject", self.subject())?;
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
            Refusal::unapproved("x", 300),
            Refusal::spear_state("x"),
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

    fn write() -> CapabilitySet {
        CapabilitySet::of(&[Capability::WorkspaceWrite])
    }

    /// Each escalation refusal says nothing ran, names what was asked for, and never sends the
    /// model to ask again once the user said no.
    #[test]
    fn escalation_refusals_say_nothing_ran_and_what_to_do() {
        let caps = CapabilitySet::of(&[Capability::WorkspaceWrite, Capability::Network]);
        for r in [
            Refusal::escalation_declined("touch a", caps),
            Refusal::escalation_unanswered("touch a", caps),
            Refusal::escalation_unavailable("touch a", caps),
            Refusal::escalation_not_needed("touch a", caps),
        ] {
            let m = r.message();
            assert!(m.contains("nothing ran"), "{m}");
            assert!(m.contains("workspace:write, network"), "{m}");
            assert!(!m.to_ascii_lowercase().contains("rerun"), "{m}");
        }
        let declined = Refusal::escalation_declined("touch a", caps).message();
        assert!(declined.contains("do not ask again"), "{declined}");
        let before = Refusal::escalation_rejected_before("touch a").message();
        assert!(before.contains("already declined") && before.contains("nothing ran"));
    }

    /// One of each rule, with `SUBJ` as its subject.
    fn one_of_each() -> Vec<Refusal> {
        vec![
            Refusal::mode_forbids(ExecutionMode::Safe, Capability::WorkspaceWrite, "SUBJ"),
            Refusal::network_removed("SUBJ"),
            Refusal::no_mode_grants(Capability::Ssh, "SUBJ"),
            Refusal::privilege_change("SUBJ"),
            Refusal::mount_or_namespace("SUBJ"),
            Refusal::kernel_or_device("SUBJ"),
            Refusal::system_packages("SUBJ"),
            Refusal::write_outside_roots("SUBJ"),
            Refusal::credential_store("SUBJ"),
            Refusal::sandbox_mount_point("SUBJ"),
            Refusal::project_scope("SUBJ"),
            Refusal::generated_file("SUBJ", "OTHER"),
            Refusal::snapshot_copy("SUBJ", "OTHER"),
            Refusal::protected_entry("SUBJ", "OTHER"),
            Refusal::unverifiable("SUBJ", "OTHER"),
            Refusal::declined("SUBJ"),
            Refusal::no_confirmer("SUBJ"),
            Refusal::unapproved("SUBJ", 7),
            Refusal::spear_state("SUBJ"),
            Refusal::awaiting_confirmation("SUBJ"),
            Refusal::sandbox_down("SUBJ", "OTHER"),
            Refusal::turn_stopped("SUBJ", "OTHER"),
            Refusal::job_writing("SUBJ", "OTHER"),
            Refusal::tool_not_in_mode("TOOL", "SUBJ", ExecutionMode::Safe, &[ExecutionMode::Ask]),
            Refusal::invalid_path("SUBJ", "`SUBJ` is outside the workspace"),
            Refusal::request_state_refused("SUBJ", "OTHER"),
            Refusal::no_answer("SUBJ", "inputResponses.OTHER"),
            Refusal::grant_refused("SUBJ", GrantError::Replayed),
            Refusal::escalation_declined("SUBJ", write()),
            Refusal::escalation_unanswered("SUBJ", write()),
            Refusal::escalation_unavailable("SUBJ", write()),
            Refusal::escalation_rejected_before("SUBJ"),
            Refusal::escalation_not_needed("SUBJ", write()),
            Refusal::web_refused("SUBJ", "OTHER"),
            Refusal::secret_in_request("SUBJ", "OTHER"),
        ]
    }

    #[test]
    fn every_rule_has_its_own_message_naming_its_subject() {
        let all = one_of_each();
        let mut rules: Vec<RefusalRule> = all.iter().map(Refusal::rule).collect();
        rules.sort_by_key(|r| r.as_str());
        rules.dedup();
        assert_eq!(rules.len(), all.len(), "one refusal per rule");
        let mut messages: Vec<String> = all.iter().map(Refusal::message).collect();
        for (r, m) in all.iter().zip(&messages) {
            assert_eq!(r.subject(), "SUBJ");
            // The message names what was refused (for a tool not in the mode: the tool).
            let named = if r.rule() == RefusalRule::ToolNotInMode {
                "TOOL"
            } else {
                "SUBJ"
            };
            assert!(m.contains(named), "{:?}: {m}", r.rule());
        }
        messages.sort();
        messages.dedup();
        assert_eq!(
            messages.len(),
            all.len(),
            "every rule words its own message"
        );
        assert!(
            Refusal::generated_file("gen.rs", "gen.proto")
                .message()
                .contains("gen.proto")
        );
    }

    /// The stable names clients act on: JSON spells each rule as `as_str` does.
    #[test]
    fn rule_names_are_stable_and_match_json() {
        for r in one_of_each() {
            let rule = r.rule();
            assert_eq!(serde_json::to_value(rule).unwrap(), rule.as_str());
            let json = serde_json::to_value(&r).unwrap();
            assert_eq!(json["rule"], rule.as_str());
            assert_eq!(json["subject"], "SUBJ");
            assert_eq!(json["message"], r.message());
            let back: RefusalRule = serde_json::from_value(json["rule"].clone()).unwrap();
            assert_eq!(back, rule);
        }
    }

    #[test]
    fn a_new_subject_keeps_the_rule_and_data() {
        let r =
            Refusal::protected_entry("./.git/hooks/x", "hooks run").with_subject(".git/hooks/x");
        assert_eq!(r.subject(), ".git/hooks/x");
        assert_eq!(r, Refusal::protected_entry(".git/hooks/x", "hooks run"));
    }
}
