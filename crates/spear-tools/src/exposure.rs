//! Roles and what each sees: the exposure policy.
//!
//! A tool outside a caller's view does not exist for it: it is not listed, and a call to it is
//! answered as a call to an unknown tool.
//!
//! A tool the role sees but the session's mode cannot run (`write_file`, `patch`, `delete_file` in
//! SAFE) is not listed either: a model that sees a tool calls it, and a list of tools that always
//! refuse teaches it nothing. A call to one all the same (a client that remembers an earlier
//! list, a model that guesses) is answered with [`spear_core::Refusal::ToolNotInMode`]: what the mode is, and that the
//! user, not the model, can start spear in a mode that has it. Not "unknown tool": the model would
//! look for another spelling instead of telling the user.
//!
//! The web pair (`fetch_url`, `search_internet`) is listed only where the session has the web: the
//! operator's `[web] enabled` (on by default) and a fetcher that could be set up, and not
//! `--no-network`; `search_internet` also needs a search backend. That follows from the session
//! alone, for every mode and role, never from a request's wording ([`ToolExposurePolicy::withdrawn`]).
//! A call to one all the same is answered by why it is withdrawn: under `--no-network` with
//! [`spear_core::Refusal::NetworkRemoved`] (the user can give the network back, as with a mode),
//! otherwise as a tool this session does not have, naming the configuration that would add it.

use std::fmt;
use std::str::FromStr;

use spear_core::ExecutionMode;

use crate::{Effect, ToolSpec, WebTool};

/// Who is calling: the agent's role in the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Role {
    /// Changes the code: every coding tool.
    #[default]
    Implementation,
    /// Plans the work: read-only.
    Planning,
    /// Explores the code base: read-only.
    Explorer,
    /// Reviews changes: read-only.
    Reviewer,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 4] = [
        Role::Implementation,
        Role::Planning,
        Role::Explorer,
        Role::Reviewer,
    ];

    /// The role's name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Implementation => "implementation",
            Role::Planning => "planning",
            Role::Explorer => "explorer",
            Role::Reviewer => "reviewer",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role name that is not one of [`Role::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role `{0}`; the roles are implementation, planning, explorer and reviewer")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownRole(s.to_owned()))
    }
}

/// What of the web pair a session has, as the exposure policy sees it. Pure data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebExposure {
    /// `--no-network`: both tools are withdrawn, whatever else holds.
    pub no_network: bool,
    /// The pair itself.
    pub pair: PairState,
    /// A search backend is configured.
    pub search: bool,
}

/// Whether a session's web pair is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairState {
    /// It is: a fetcher was set up.
    On,
    /// The operator turned it off (`[web] enabled = false`), or the session was opened without it.
    Off,
    /// It is on, but its fetcher could not be set up (the TLS configuration); `spear doctor` says
    /// why.
    Unavailable,
}

impl WebExposure {
    /// No web pair.
    pub const OFF: WebExposure = WebExposure {
        no_network: false,
        pair: PairState::Off,
        search: false,
    };
}

/// Why a tool of the web pair is not offered in a session, in the order they are told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Withdrawn {
    /// `--no-network`.
    NoNetwork,
    /// `[web] enabled = false` (or a session opened without the web pair).
    Off,
    /// The fetcher could not be set up.
    Unavailable,
    /// `search_internet` without a search backend.
    NoBackend,
}

impl Withdrawn {
    /// Why `tool` is not offered, for an answer to a call to it. `detail` is the reason the
    /// fetcher could not be set up, when that is why.
    pub fn reason(self, tool: &str, detail: Option<&str>) -> String {
        match self {
            Withdrawn::NoNetwork => format!(
                "the tool `{tool}` is withdrawn: --no-network removed the web from this session"
            ),
            Withdrawn::Off => format!(
                "the tool `{tool}` is not offered in this session: the operator's configuration turns the web pair off (`[web] enabled = false`)"
            ),
            Withdrawn::Unavailable => format!(
                "the tool `{tool}` is not offered in this session: the web pair could not be set up ({}); `spear doctor` reports it",
                detail.unwrap_or("no reason was given")
            ),
            Withdrawn::NoBackend => format!(
                "the tool `{tool}` is not offered in this session: no search backend is configured (the operator adds one under `[web.search]` of spear's configuration; `spear doctor` shows how)"
            ),
        }
    }
}

/// Which tools a role sees, and the mode they run in for it. Pure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolExposurePolicy {
    role: Role,
    web: WebExposure,
}

impl ToolExposurePolicy {
    /// The policy of `role`, in a session without the web pair ([`WebExposure::OFF`]).
    pub const fn new(role: Role) -> Self {
        ToolExposurePolicy {
            role,
            web: WebExposure::OFF,
        }
    }

    /// The same policy in a session whose web pair is `web`.
    #[must_use]
    pub const fn with_web(self, web: WebExposure) -> Self {
        ToolExposurePolicy { web, ..self }
    }

    /// The role.
    pub const fn role(self) -> Role {
        self.role
    }

    /// Why `spec` is withdrawn from this session, if it is a tool of the web pair the session
    /// lacks. Follows from the session alone (`--no-network`, `[web]`, the backend), never from a
    /// call.
    pub fn withdrawn(self, spec: &ToolSpec) -> Option<Withdrawn> {
        let tool = spec.web?;
        if self.web.no_network {
            return Some(Withdrawn::NoNetwork);
        }
        match self.web.pair {
            PairState::Off => return Some(Withdrawn::Off),
            PairState::Unavailable => return Some(Withdrawn::Unavailable),
            PairState::On => {}
        }
        (tool == WebTool::Search && !self.web.search).then_some(Withdrawn::NoBackend)
    }

    /// Whether the role sees `spec`: implementation sees everything; the read-only roles see no
    /// tool that writes.
    pub fn exposes(self, spec: &ToolSpec) -> bool {
        match self.role {
            Role::Implementation => true,
            Role::Planning | Role::Explorer | Role::Reviewer => spec.effect != Effect::Write,
        }
    }

    /// Whether `spec` can act for this role in a session in `mode`: the mode it runs in for the
    /// role is one the tool declares.
    pub fn acts_in(self, spec: &ToolSpec, mode: ExecutionMode) -> bool {
        spec.modes.contains(&self.mode_for(spec, mode))
    }

    /// Whether `spec` is listed for this role in a session in `mode`: the role sees it, it can
    /// act in that mode, and it is not a tool of the web pair the session lacks.
    pub fn lists(self, spec: &ToolSpec, mode: ExecutionMode) -> bool {
        self.exposes(spec) && self.acts_in(spec, mode) && self.withdrawn(spec).is_none()
    }

    /// The mode a tool runs in for this role when the session runs in `mode`: the read-only roles
    /// run commands in SAFE whatever the session's mode (the workspace is mounted read-only).
    pub fn mode_for(self, spec: &ToolSpec, mode: ExecutionMode) -> ExecutionMode {
        self.mode_for_effect(spec.effect, mode)
    }

    /// The mode one call runs in: a call that names paths to write (`fetch_url`'s `save_as`) is a
    /// write whatever its tool's effect, so a read-only role's runs in SAFE, where it is refused
    /// like any write.
    pub fn mode_for_call(
        self,
        spec: &ToolSpec,
        writes: bool,
        mode: ExecutionMode,
    ) -> ExecutionMode {
        self.mode_for_effect(if writes { Effect::Write } else { spec.effect }, mode)
    }

    const fn mode_for_effect(self, effect: Effect, mode: ExecutionMode) -> ExecutionMode {
        match (self.role, effect) {
            (Role::Implementation, _) | (_, Effect::Read) => mode,
            (_, Effect::Run | Effect::Write) => ExecutionMode::Safe,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolRegistry;

    #[test]
    fn listing_table() {
        use ExecutionMode::{Ask, Auto, Safe};
        let registry = ToolRegistry::coding();
        let listed = |role: Role, mode: ExecutionMode| -> Vec<&str> {
            let policy = ToolExposurePolicy::new(role);
            registry
                .specs()
                .filter(|s| policy.lists(s, mode))
                .map(|s| s.name)
                .collect()
        };
        let readers = [
            "read_file",
            "read_output",
            "search_files",
            "terminal",
            "terminal_kill",
            "terminal_output",
        ];
        let all = [
            "delete_file",
            "patch",
            "read_file",
            "read_output",
            "search_files",
            "terminal",
            "terminal_kill",
            "terminal_output",
            "write_file",
        ];
        for (role, mode, expected) in [
            (Role::Implementation, Safe, &readers[..]),
            (Role::Implementation, Ask, &all[..]),
            (Role::Implementation, Auto, &all[..]),
            (Role::Reviewer, Safe, &readers[..]),
            (Role::Reviewer, Auto, &readers[..]),
            (Role::Planning, Ask, &readers[..]),
            (Role::Explorer, Auto, &readers[..]),
        ] {
            assert_eq!(listed(role, mode), expected, "{role} {mode:?}");
        }
    }

    /// The web pair's listing follows the session alone: `[web]`, the fetcher, `--no-network` and
    /// the backend, for every mode and role.
    #[test]
    fn the_web_pair_is_listed_iff_the_session_has_the_web() {
        let registry = ToolRegistry::coding();
        let fetch = registry.get("fetch_url").unwrap().spec();
        let search = registry.get("search_internet").unwrap().spec();
        for pair in [PairState::On, PairState::Off, PairState::Unavailable] {
            for no_network in [false, true] {
                for backend in [false, true] {
                    let web = WebExposure {
                        no_network,
                        pair,
                        search: backend,
                    };
                    let fetch_listed = pair == PairState::On && !no_network;
                    let search_listed = fetch_listed && backend;
                    let why = if no_network {
                        Some(Withdrawn::NoNetwork)
                    } else {
                        match pair {
                            PairState::Off => Some(Withdrawn::Off),
                            PairState::Unavailable => Some(Withdrawn::Unavailable),
                            PairState::On => None,
                        }
                    };
                    for role in Role::ALL {
                        let policy = ToolExposurePolicy::new(role).with_web(web);
                        assert_eq!(policy.withdrawn(fetch), why, "{web:?} {role}");
                        assert_eq!(
                            policy.withdrawn(search),
                            why.or((!backend).then_some(Withdrawn::NoBackend)),
                            "{web:?} {role}"
                        );
                        for mode in ExecutionMode::ALL {
                            let case = format!("{web:?} {role} {mode:?}");
                            assert_eq!(policy.lists(fetch, mode), fetch_listed, "{case}");
                            assert_eq!(policy.lists(search, mode), search_listed, "{case}");
                            // The rest of the listing does not move with the web.
                            let others = |p: ToolExposurePolicy| -> Vec<&str> {
                                registry
                                    .specs()
                                    .filter(|s| s.web.is_none() && p.lists(s, mode))
                                    .map(|s| s.name)
                                    .collect()
                            };
                            assert_eq!(
                                others(policy),
                                others(ToolExposurePolicy::new(role)),
                                "{case}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// Reading runs in the session's mode for every role; a call that saves runs as a write: in
    /// SAFE for the read-only roles, where it is refused like any write.
    #[test]
    fn a_call_that_saves_is_a_write() {
        use ExecutionMode::{Ask, Auto, Safe};
        let registry = ToolRegistry::coding();
        let fetch = registry.get("fetch_url").unwrap().spec();
        for mode in [Safe, Ask, Auto] {
            for role in Role::ALL {
                let policy = ToolExposurePolicy::new(role);
                assert_eq!(policy.mode_for_call(fetch, false, mode), mode);
                let saving = if role == Role::Implementation {
                    mode
                } else {
                    Safe
                };
                assert_eq!(policy.mode_for_call(fetch, true, mode), saving, "{role}");
                assert!(policy.exposes(fetch), "{role} reads the web");
            }
        }
    }

    #[test]
    fn a_withdrawn_tool_says_why_and_who_can_change_it() {
        let off = Withdrawn::Off.reason("fetch_url", None);
        assert!(off.contains("`[web] enabled = false`"), "{off}");
        let none = Withdrawn::NoBackend.reason("search_internet", None);
        assert!(
            none.contains("[web.search]") && none.contains("spear doctor"),
            "{none}"
        );
        let broken = Withdrawn::Unavailable.reason("fetch_url", Some("TLS: no provider"));
        assert!(broken.contains("TLS: no provider"), "{broken}");
        assert!(
            Withdrawn::NoNetwork
                .reason("fetch_url", None)
                .contains("--no-network")
        );
    }

    #[test]
    fn the_answer_names_the_modes_and_asks_the_user() {
        let text = spear_core::Refusal::tool_not_in_mode(
            "write_file",
            "a.txt",
            ExecutionMode::Safe,
            &[ExecutionMode::Ask, ExecutionMode::Auto],
        )
        .message();
        assert_eq!(
            text,
            "the tool `write_file` is not available in SAFE mode, in which nothing changes files; it exists in ASK (--ask) and AUTO (--auto). Ask the user to start spear in one of them if the change is needed, or continue with the tools that are listed"
        );
        assert!(!text.to_lowercase().contains("rerun"));
    }
}
