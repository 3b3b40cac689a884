//! What a grant binds: everything about a prepared command that an approval was given for.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use spear_core::authority::GrantError;
use spear_workspace::{EntryIdentity, EntryKind};

/// Who minted a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Issuer {
    /// A person's answer inside a running server (sealed with the server's own key).
    Session,
    /// An operator ahead of time (`spear grant`, sealed with the per-user key).
    Operator,
}

/// The network a command gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkRoute {
    /// No network: a closed namespace.
    Closed,
    /// slirp4netns with the egress policy.
    Filtered,
}

/// An entry's identity, as a grant records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// `file`, `dir`, `symlink` or `other`.
    pub kind: char,
}

impl From<EntryIdentity> for Identity {
    fn from(id: EntryIdentity) -> Self {
        Identity {
            dev: id.dev,
            ino: id.ino,
            kind: match id.kind {
                EntryKind::File => 'f',
                EntryKind::Dir => 'd',
                EntryKind::Symlink => 'l',
                EntryKind::Other => 'o',
            },
        }
    }
}

/// One write target: its label and its identity (`None`: it did not exist).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetBinding {
    /// The target as the workspace labels it.
    pub label: String,
    /// Its identity then.
    pub identity: Option<Identity>,
}

/// What a grant binds of the sandbox beyond its profile: everything that widens what the command
/// can see or do (issue 31: a grant issued without `--env` ran with it; one ran under a
/// `--config` adding a writable root). The names and settings are kept plainly, so that a
/// refusal says what changed; the values are only in `digest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxBinding {
    /// The variables of the command's environment, by name, sorted (`--env`, `[env] pass`, the
    /// allowlist).
    pub env: Vec<String>,
    /// The workspace roots, `HOST -> MOUNT`, in order (`[workspace] roots`, `--workspace`,
    /// `--single-root`).
    pub roots: Vec<String>,
    /// The limits, `name=value` (`[limits]` and the limit flags: time, output, changes,
    /// memory, tasks, CPU, the session's budget, rlimits, tmpfs sizes).
    pub limits: Vec<String>,
    /// The egress allowances of a networked command (`[network] allow`); none for a closed one.
    pub egress: Vec<String>,
    /// SHA-256 of the rules it is judged by (the decision layer's configuration: `[paths]`,
    /// `[targets]`, the workspace's policy, ...), hex.
    pub rules: String,
    /// SHA-256 of all of the above and of what is only a value (each passed variable's value,
    /// the toolchain directories bound, the home directory, the working directory as the sandbox
    /// sees it, the tmpfs sizes), hex; in a grant, keyed with the grant's key (so that a grant,
    /// which anyone holding it can read, tells nothing of a value).
    pub digest: String,
}

impl SandboxBinding {
    /// Whether `now` is this sandbox; the first difference, as the failure it is.
    pub fn check(&self, now: &SandboxBinding) -> Result<(), GrantError> {
        let other = |why: String| Err(GrantError::OtherProfile { why });
        if self.env != now.env {
            return other(changes(
                "the variables passed into the sandbox",
                &self.env,
                &now.env,
            ));
        }
        if self.roots != now.roots {
            return other(changes("the workspace roots", &self.roots, &now.roots));
        }
        if self.limits != now.limits {
            return other(changes("the limits", &self.limits, &now.limits));
        }
        if self.egress != now.egress {
            return other(changes(
                "the network's egress allowances",
                &self.egress,
                &now.egress,
            ));
        }
        if self.rules != now.rules {
            return other(
                "other rules for what it may read or write ([paths], [targets] and the other rules of the configuration, the workspace's policy)"
                    .into(),
            );
        }
        if self.digest != now.digest {
            return other(
                "another value of a variable passed, other toolchain directories, another home directory"
                    .into(),
            );
        }
        Ok(())
    }
}

/// `what: X added, Y removed` (what `now` has that `approved` has not, and the reverse).
fn changes(what: &str, approved: &[String], now: &[String]) -> String {
    let added: Vec<&str> = now
        .iter()
        .filter(|n| !approved.contains(n))
        .map(String::as_str)
        .collect();
    let removed: Vec<&str> = approved
        .iter()
        .filter(|a| !now.contains(a))
        .map(String::as_str)
        .collect();
    let mut parts = Vec::new();
    if !added.is_empty() {
        parts.push(format!("now {}", added.join(", ")));
    }
    if !removed.is_empty() {
        parts.push(format!("approved with {}", removed.join(", ")));
    }
    if parts.is_empty() {
        parts.push("in another order".to_owned());
    }
    format!("{what} changed: {}", parts.join("; "))
}

/// Everything a grant is bound to. Two bindings are the same approval only if every field is
/// equal, but for `execution`, which an operator's grant leaves open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// The execution (a session's call) the approval was for; `None` for an operator's grant,
    /// which is for the command wherever it is run.
    pub execution: Option<String>,
    /// SHA-256 of the command exactly as it runs ([`command_digest`]), hex.
    pub command: String,
    /// The working directory's host path.
    pub cwd: String,
    /// Its identity (read without following links).
    pub cwd_identity: Option<Identity>,
    /// SHA-256 of the execution profile (capabilities, host paths, required guarantees), hex.
    pub profile: String,
    /// The network route.
    pub network: NetworkRoute,
    /// The guarantees the command requires, by name, sorted.
    pub guarantees: Vec<String>,
    /// The class the classifier gave it.
    pub class: Option<String>,
    /// The write targets and their identities.
    pub targets: Vec<TargetBinding>,
    /// The sandbox beyond its profile: environment, roots, limits, egress, the rules writes are
    /// judged by.
    pub sandbox: SandboxBinding,
}

/// The digest a grant binds for a command: the kind (argv or script) and every byte, each part
/// length-prefixed so that no two commands share one (`["a b"]` is not `["a", "b"]`).
pub fn command_digest(argv: Option<&[std::ffi::OsString]>, script: Option<&str>) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut h = Sha256::new();
    match (argv, script) {
        (Some(words), _) => {
            h.update(b"argv\0");
            for w in words {
                h.update((w.len() as u64).to_le_bytes());
                h.update(w.as_bytes());
            }
        }
        (None, script) => {
            let s = script.unwrap_or("");
            h.update(b"script\0");
            h.update((s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        }
    }
    hex(&h.finalize())
}

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

impl Binding {
    /// A digest of everything bound but the execution: what a question shows a person is
    /// approved for, across the rounds of one exchange (each round is another execution).
    pub fn place(&self) -> String {
        use sha2::Digest as _;
        let mut open = self.clone();
        open.execution = None;
        hex(&Sha256::digest(
            serde_json::to_vec(&open).unwrap_or_default(),
        ))
    }

    /// Whether `now` (what is about to run) is what this grant was approved for; the first
    /// difference, as the failure it is.
    pub fn check(&self, now: &Binding) -> Result<(), GrantError> {
        if let Some(approved) = &self.execution
            && now.execution.as_ref() != Some(approved)
        {
            return Err(GrantError::OtherExecution);
        }
        if self.command != now.command {
            return Err(GrantError::OtherCommand);
        }
        if self.cwd != now.cwd {
            return Err(GrantError::OtherDirectory {
                why: format!("approved for {}, running in {}", self.cwd, now.cwd),
            });
        }
        if self.cwd_identity != now.cwd_identity {
            return Err(GrantError::OtherDirectory {
                why: format!(
                    "{} was replaced since the approval (another directory, or a link)",
                    self.cwd
                ),
            });
        }
        if self.class != now.class {
            return Err(GrantError::OtherProfile {
                why: format!(
                    "approved as {}, classified {} now",
                    self.class.as_deref().unwrap_or("unclassified"),
                    now.class.as_deref().unwrap_or("unclassified")
                ),
            });
        }
        if self.profile != now.profile {
            return Err(GrantError::OtherProfile {
                why: "other capabilities or host paths".into(),
            });
        }
        if self.network != now.network {
            return Err(GrantError::OtherProfile {
                why: "another network route".into(),
            });
        }
        if self.guarantees != now.guarantees {
            return Err(GrantError::OtherProfile {
                why: "other required guarantees".into(),
            });
        }
        self.sandbox.check(&now.sandbox)?;
        for target in &now.targets {
            match self.targets.iter().find(|t| t.label == target.label) {
                Some(approved) if approved.identity == target.identity => {}
                _ => {
                    return Err(GrantError::TargetChanged {
                        target: target.label.clone(),
                    });
                }
            }
        }
        if let Some(gone) = self
            .targets
            .iter()
            .find(|t| !now.targets.iter().any(|n| n.label == t.label))
        {
            return Err(GrantError::TargetChanged {
                target: gone.label.clone(),
            });
        }
        Ok(())
    }
}
