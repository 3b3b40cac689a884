//! `spear mcp --listen ADDR`: a node that remote clients reach with a credential. Its door is
//! its own token file, the operator's token store and the operator's OAuth issuer ([`NodeGate`]); each session is narrowed to what the credential
//! grants and never more than the server's own flags ([`narrow`], pure), and opened by
//! [`NodeOpener`].

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use spear_core::ExecutionMode;
use spear_mcp::{Admission, Grant, SessionAsk};

use crate::context::WorkspaceArgs;
use crate::mcp::Args;
use crate::mode_args::ModeArgs;

/// Binds, checks that a session with the server's own flags opens (so that a bad workspace,
/// configuration or GPU grant fails now, not at a client's first request), prints where it
/// listens, and serves until a signal.
pub fn listen(
    args: &Args,
    host: &spear_runtime::HostSnapshot,
    addr: &spear_mcp::ListenAddr,
) -> Result<i32, String> {
    let (args, key, token_path) = &hiding_node_secrets(args)?;
    // Read now: standard input is the server's only until it listens, and a bad file stops it
    // before anything is made.
    let file_tokens = args
        .token_file
        .as_deref()
        .map(spear_runtime::TokenFile::read)
        .transpose()
        .map_err(|e| e.to_string())?;
    let http = bind(args, addr)?;
    let url = http.url().to_owned();
    let state = crate::state_home::state_dir(host)?;
    let tokens = spear_runtime::TokenStore::at(&state);
    let (operator, config_name) = crate::gc::operator(host, args.workspace.config.as_deref())?;
    let oauth = operator
        .serve
        .oauth
        .as_ref()
        .map(spear_mcp::OAuthVerifier::new)
        .transpose()
        .map_err(|e| format!("{config_name}: [serve.oauth]: {e}"))?;
    let root = check_first_session(args, host)?;
    // What every session is narrowed within: the server's own workspace, mode and network.
    let served = Served {
        workspace: PathBuf::from(&root),
        mode: args.mode.mode(),
        no_network: args.mode.no_network,
        templates: canonical_templates(&args.templates)?,
    };
    for (what, path) in [("the TLS key", key), ("the token file", token_path)] {
        if let Some(path) = path {
            check_node_secret(what, path, &served)?;
        }
    }
    let file_tokens = file_tokens.map(|tokens| FileTokens::granting_served(tokens, &served));
    // Template sessions' copies live beside spear's state directory, never in it (no sandbox
    // sees that one); what a crashed server left there is swept now.
    let rollouts = state.parent().map_or_else(
        || state.join("rollouts"),
        |base| base.join("spear-rollouts"),
    );
    if !served.templates.is_empty() {
        let swept = spear_runtime::sweep_rollouts(&rollouts);
        if swept > 0 {
            eprintln!("spear mcp: removed {swept} template copy(ies) a stopped server left");
        }
    }
    eprintln!(
        "{}",
        crate::mcp::banner(
            served.mode,
            args.mode.no_network,
            args.role,
            &root,
            "one per MCP session"
        )
    );
    let count =
        tokens.list().map_or(0, |t| t.len()) + file_tokens.as_ref().map_or(0, |f| f.tokens.len());
    let issuer = oauth
        .as_ref()
        .map_or_else(String::new, |v| format!("; OAuth tokens of {}", v.issuer()));
    eprintln!(
        "spear mcp: listening on {url}{} ({count} token(s); add one with `spear token add NAME`{issuer}); sessions named in their URL: POST {url}{}",
        spear_mcp::MCP_PATH,
        spear_mcp::SESSIONS_PATH,
    );
    let limits = spear_mcp::NodeLimits {
        max_sessions: usize::try_from(args.max_sessions).unwrap_or(usize::MAX),
        calls_per_credential: usize::try_from(args.max_calls_per_token).unwrap_or(usize::MAX),
        session_idle: std::time::Duration::from_secs(args.session_idle),
    };
    // One `spear approve` channel for every session (each pending item names its session): ASK
    // asks through the client, and a client that cannot ask waits for the operator.
    let (channel, approvals) = if served.mode == ExecutionMode::Safe {
        (None, None)
    } else {
        crate::mcp::approval_channel(host, args.approval_wait)
    };
    let opener = Arc::new(NodeOpener(Arc::new(OpenerState {
        args: args.clone(),
        host: host.clone(),
        served,
        approvals,
        rollouts,
    })));
    let served = http
        .run(
            opener,
            Arc::new(NodeGate {
                tokens,
                file_tokens,
                oauth,
            }),
            limits,
        )
        .map_err(|e| e.to_string());
    // The socket goes with the server.
    drop(channel);
    served?;
    Ok(0)
}

/// The listening socket of `args` on `addr`, with TLS if it names a certificate.
fn bind(args: &Args, addr: &spear_mcp::ListenAddr) -> Result<spear_mcp::Http, String> {
    spear_mcp::Http::bind(&spear_mcp::HttpConfig {
        addr: addr.clone(),
        tls: match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(spear_mcp::TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
            }),
            _ => None,
        },
        insecure_http: args.insecure_http,
        public_hosts: args.public_hosts.clone(),
        allow_origins: args.allow_origins.clone(),
    })
    .map_err(|e| e.to_string())
}

/// Opens and drops a session with the server's own flags, so that a bad workspace,
/// configuration or GPU grant stops the server now: the workspace's root.
fn check_first_session(args: &Args, host: &spear_runtime::HostSnapshot) -> Result<String, String> {
    let (first, root) = crate::mcp::open_narrowed(args, host, &args.workspace, &args.mode, None)?;
    // That router only checked the server's own session and is no session: the store directory
    // it made, empty (it ran no call), goes with it, or every start would leave one behind.
    let first_results = crate::state_home::results_dir(host, first.session());
    drop(first);
    if let Ok(dir) = first_results
        && let Err(e) = std::fs::remove_dir(&dir)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("{} could not be removed: {e}", dir.display());
    }
    Ok(root)
}

/// `args` with its TLS key and its token file, canonical, among the files no session's command
/// reads and no sandbox shows (masked in every bind, as spear's state directory is); and those
/// two paths (none for standard input).
fn hiding_node_secrets(args: &Args) -> Result<(Args, Option<PathBuf>, Option<PathBuf>), String> {
    let mut args = args.clone();
    let canonical = |what: &str, path: &Path| {
        std::fs::canonicalize(path)
            .map_err(|e| format!("{what} {} cannot be used: {e}", path.display()))
    };
    let key = args
        .tls_key
        .as_deref()
        .map(|key| canonical("the TLS key", key))
        .transpose()?;
    let token_file = args
        .token_file
        .as_deref()
        .filter(|path| *path != Path::new("-"))
        .map(|path| canonical("the token file", path))
        .transpose()?;
    args.workspace.secrets.extend(key.iter().cloned());
    args.workspace.secrets.extend(token_file.iter().cloned());
    Ok((args, key, token_file))
}

/// Refuses a node secret (`what`: the TLS key, the token file) that lies in the served workspace
/// or a template, where every session's tools would reach it (attack stopped: an agent reading
/// the node's key and impersonating the node to its clients, or its tokens and opening sessions
/// of its own); warns of one that other users of the machine can read.
fn check_node_secret(what: &str, path: &Path, served: &Served) -> Result<(), String> {
    if let Some(tree) = std::iter::once(&served.workspace)
        .chain(&served.templates)
        .find(|tree| path.starts_with(tree))
    {
        return Err(format!(
            "{what} {} lies in {}, which this server's sessions work in: move it out (for \
             example to /etc/spear, mode 0600)",
            path.display(),
            tree.display()
        ));
    }
    let mode = std::fs::metadata(path)
        .map_err(|e| format!("{what} {} cannot be used: {e}", path.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        tracing::warn!(
            "{what} {} can be read by others than its owner (mode {:o}): chmod 600 it",
            path.display(),
            mode & 0o777
        );
    }
    Ok(())
}

/// The templates the server serves, canonical; one that is not a directory refuses the server.
fn canonical_templates(templates: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    templates
        .iter()
        .map(|t| {
            let dir = std::fs::canonicalize(t)
                .map_err(|e| format!("the template {} cannot be used: {e}", t.display()))?;
            if dir.is_dir() {
                Ok(dir)
            } else {
                Err(format!("the template {} is not a directory", t.display()))
            }
        })
        .collect()
}

/// The node's door: the server's own tokens (`--token-file`, for its life), the operator's
/// tokens (`spear_...`, read at each request, and again every
/// second for each token with sessions, so a revocation ends them), and OAuth access tokens of
/// the authorization server of `[serve.oauth]`, if any (checked likewise, so an expiry ends
/// their sessions). What a credential names becomes what its sessions may have.
struct NodeGate {
    tokens: spear_runtime::TokenStore,
    /// The tokens of `--token-file`, if any.
    file_tokens: Option<FileTokens>,
    oauth: Option<spear_mcp::OAuthVerifier>,
}

impl spear_mcp::Gatekeeper for NodeGate {
    fn admit(&self, bearer: Option<&str>) -> Result<Admission, spear_mcp::Denied> {
        use spear_mcp::Denied;
        let Some(presented) = bearer else {
            return Err(Denied::Unauthorized(
                "no bearer token: send `Authorization: Bearer TOKEN` with a token from `spear \
                 token add NAME`"
                    .to_owned(),
            ));
        };
        if let Some(file) = &self.file_tokens
            && let Some(index) = file.tokens.verify(presented)
        {
            return Ok(Admission {
                principal: format!("token-file:{index}"),
                grant: file.grant.clone(),
            });
        }
        if let Some(oauth) = self
            .oauth
            .as_ref()
            .filter(|_| !presented.starts_with(spear_runtime::TOKEN_PREFIX))
        {
            let grant = oauth.verify(presented, std::time::SystemTime::now())?;
            return Ok(Admission {
                principal: format!("oauth:{}", grant.subject),
                grant: Grant {
                    workspaces: grant.workspaces,
                    templates: grant.templates,
                    mode: grant.mode,
                    no_network: grant.no_network,
                    sessions: grant.sessions,
                    calls: None,
                },
            });
        }
        let info = self
            .tokens
            .verify(presented, std::time::SystemTime::now())
            .map_err(|refusal| match refusal {
                spear_runtime::TokenRefusal::Store { .. } => {
                    Denied::Unavailable(refusal.to_string())
                }
                _ => Denied::Unauthorized(refusal.to_string()),
            })?;
        Ok(Admission {
            principal: format!("token:{}", info.name),
            grant: Grant {
                workspaces: info.workspaces,
                templates: info.templates,
                mode: info.mode,
                no_network: info.no_network,
                sessions: info.sessions,
                calls: info.calls,
            },
        })
    }

    fn metadata(&self, resource: &str) -> serde_json::Value {
        match &self.oauth {
            Some(oauth) => spear_mcp::resource_metadata(
                resource,
                Some(oauth.issuer()),
                &oauth.scopes_supported(),
            ),
            None => spear_mcp::resource_metadata(resource, None, &[]),
        }
    }
}

/// The tokens of `--token-file` and what each grants: what the server serves.
struct FileTokens {
    tokens: spear_runtime::TokenFile,
    grant: Grant,
}

impl FileTokens {
    /// `tokens`, each granting what the server serves: its workspace and every template.
    fn granting_served(tokens: spear_runtime::TokenFile, served: &Served) -> Self {
        Self {
            tokens,
            grant: Grant {
                workspaces: vec![served.workspace.clone()],
                templates: served.templates.clone(),
                mode: None,
                no_network: false,
                sessions: None,
                calls: None,
            },
        }
    }
}

/// What the server itself gives, which no session exceeds.
#[derive(Debug, Clone)]
struct Served {
    /// Its workspace's first root, canonical.
    workspace: PathBuf,
    mode: ExecutionMode,
    /// Whether its sessions are without network (`--no-network`).
    no_network: bool,
    /// The templates it serves, canonical (`--template`).
    templates: Vec<PathBuf>,
}

/// Where a session works.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    /// The server's own workspace, opened with its flags.
    Served,
    /// A directory within it, alone (no enclosing roots: they could be wider than the grant).
    Within(PathBuf),
    /// A copy of its own of this template.
    Template(PathBuf),
}

/// A session as it will be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SessionPlan {
    place: Place,
    mode: ExecutionMode,
    no_network: bool,
}

/// The session a credential granting `grant` gets for `ask` on a server giving `served`, or
/// why it gets none. Each part is the narrower of the two: the mode the lower, the network only
/// if both give it, a workspace only within the server's and within one the grant names, a
/// template only one both name. Pure; `ask`'s workspace is canonical.
fn narrow(served: &Served, grant: &Grant, ask: &SessionAsk) -> Result<SessionPlan, String> {
    let mode = grant.mode.map_or(served.mode, |m| m.min(served.mode));
    let no_network = served.no_network || grant.no_network;
    let place = match (&ask.workspace, &ask.template) {
        (Some(_), Some(_)) => {
            return Err("ask for a workspace or a template, not both".to_owned());
        }
        (None, Some(name)) => Place::Template(template(served, grant, name)?),
        (Some(dir), None) => within(served, grant, dir)?,
        (None, None) => match (grant.workspaces.first(), grant.templates.first()) {
            (Some(dir), _) => within(served, grant, dir)?,
            // A credential for templates only never works in the server's own workspace.
            (None, Some(first)) => {
                Place::Template(template(served, grant, &first.display().to_string())?)
            }
            (None, None) => Place::Served,
        },
    };
    Ok(SessionPlan {
        place,
        mode,
        no_network,
    })
}

/// `dir` as a place, if the server serves it and the grant names it (or names no workspace and
/// no template).
fn within(served: &Served, grant: &Grant, dir: &Path) -> Result<Place, String> {
    if !dir.starts_with(&served.workspace) {
        return Err(format!(
            "{} is not within this server's workspace, {}",
            dir.display(),
            served.workspace.display()
        ));
    }
    let granted = if grant.workspaces.is_empty() {
        grant.templates.is_empty()
    } else {
        grant.workspaces.iter().any(|w| dir.starts_with(w))
    };
    if !granted {
        return Err(format!(
            "this credential does not grant {}: it grants {}",
            dir.display(),
            granted_list(grant)
        ));
    }
    Ok(if dir == served.workspace {
        Place::Served
    } else {
        Place::Within(dir.to_owned())
    })
}

/// The template `name` (its path, or its directory's name), if both the grant and the server
/// name it.
fn template(served: &Served, grant: &Grant, name: &str) -> Result<PathBuf, String> {
    let matches = |t: &&PathBuf| {
        t.as_os_str() == name
            || t.file_name()
                .is_some_and(|f| f == std::ffi::OsStr::new(name))
    };
    let Some(granted) = grant.templates.iter().find(matches) else {
        return Err(format!(
            "this credential does not grant the template {name}: it grants {}",
            granted_list(grant)
        ));
    };
    if !served.templates.contains(granted) {
        return Err(format!(
            "this server does not serve the template {}: start it with --template {}",
            granted.display(),
            granted.display()
        ));
    }
    Ok(granted.clone())
}

/// What a grant names, for a refusal.
fn granted_list(grant: &Grant) -> String {
    let workspaces = grant.workspaces.iter().map(|w| w.display().to_string());
    let templates = grant
        .templates
        .iter()
        .map(|t| format!("template {}", t.display()));
    let all: Vec<String> = workspaces.chain(templates).collect();
    if all.is_empty() {
        "the server's workspace".to_owned()
    } else {
        all.join(", ")
    }
}

/// What opens sessions for the node.
struct NodeOpener(Arc<OpenerState>);

struct OpenerState {
    args: Args,
    host: spear_runtime::HostSnapshot,
    served: Served,
    /// The node's `spear approve` registry, which every session's asking call waits on when its
    /// client cannot ask.
    approvals: Option<spear_mcp::ApprovalWait>,
    /// Where template sessions' copies are made.
    rollouts: PathBuf,
}

impl spear_mcp::Opener for NodeOpener {
    fn plan(&self, who: &Admission, ask: &SessionAsk) -> Result<spear_mcp::SessionFactory, String> {
        let mut ask = ask.clone();
        if let Some(dir) = &ask.workspace {
            ask.workspace =
                Some(std::fs::canonicalize(dir).map_err(|e| {
                    format!("the workspace {} cannot be opened: {e}", dir.display())
                })?);
        }
        let plan = narrow(&self.0.served, &who.grant, &ask)?;
        let state = Arc::clone(&self.0);
        let principal = who.principal.clone();
        Ok(Arc::new(move || state.open(&plan, &principal)))
    }
}

impl OpenerState {
    /// One session as `plan` says, for `principal`.
    fn open(&self, plan: &SessionPlan, principal: &str) -> Result<spear_mcp::Opened, String> {
        let args = &self.args;
        let mode = ModeArgs::of(plan.mode, plan.no_network || args.mode.no_network);
        let alone = |dir: &Path| WorkspaceArgs {
            workspace: Some(dir.to_owned()),
            single_root: true,
            ..args.workspace.clone()
        };
        let mut rollout = None;
        let workspace = match &plan.place {
            Place::Served => args.workspace.clone(),
            Place::Within(dir) => alone(dir),
            Place::Template(t) => {
                let copy = spear_runtime::RolloutWorkspace::open(t, &self.rollouts)
                    .map_err(|e| format!("a copy of the template {}: {e}", t.display()))?;
                let workspace = alone(copy.root());
                rollout = Some(Arc::new(Rollout {
                    copy: std::sync::Mutex::new(Some(copy)),
                    keep: args.keep_rollouts,
                }));
                workspace
            }
        };
        let (router, root) =
            crate::mcp::open_narrowed(args, &self.host, &workspace, &mode, Some(principal))?;
        // A template session's checkpoints are of its copy, which goes when it ends (a kept
        // copy is moved elsewhere): nothing could be undone through them after, so they go too.
        let checkpoints = rollout
            .as_ref()
            .and_then(|_| crate::state_home::checkpoints_dir(&self.host, router.workspace()).ok());
        // ASK asks through the client (elicitation, input-required results); a client that
        // cannot ask waits for `spear approve` on the node.
        let server = spear_mcp::SpearServer::with_approvals(
            router,
            std::time::Duration::from_secs(args.turn_gap),
            self.approvals.clone(),
        )
        .map_err(|e| e.to_string())?;
        // A node's session leaves nothing behind: its stored outputs go when it ends (after its
        // router, whose last calls may still store one).
        if let Ok(dir) = crate::state_home::results_dir(&self.host, server.session()) {
            server.hold(Box::new(RemovedAtEnd(dir)));
        }
        if let Some(dir) = checkpoints {
            server.hold(Box::new(RemovedAtEnd(dir)));
        }
        // A template's copy goes (or is kept) once the session and whoever asked for its patch
        // are done with it: after the router, whose jobs may still write in it.
        let changes = rollout.map(|r| {
            server.hold(Box::new(Arc::clone(&r)));
            r as Arc<dyn spear_mcp::Changes>
        });
        Ok(spear_mcp::Opened {
            server,
            workspace: root,
            changes,
        })
    }
}

/// A template session's copy: its patch while the session lives, and closed (removed, or kept
/// with `--keep-rollouts`) when the last holder lets it go.
struct Rollout {
    copy: std::sync::Mutex<Option<spear_runtime::RolloutWorkspace>>,
    keep: bool,
}

impl spear_mcp::Changes for Rollout {
    fn patch(&self) -> Result<Vec<u8>, String> {
        let copy = self
            .copy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match copy.as_ref() {
            Some(copy) => copy.patch().map_err(|e| e.to_string()),
            None => Err("the session's copy is gone".to_owned()),
        }
    }
}

impl Drop for Rollout {
    fn drop(&mut self) {
        let copy = self
            .copy
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(copy) = copy {
            match copy.close(self.keep) {
                Ok(Some(kept)) => {
                    tracing::info!("a template session's copy is kept at {}", kept.display());
                }
                Ok(None) => {}
                Err(e) => tracing::warn!("a template session's copy: {e}"),
            }
        }
    }
}

/// A directory removed, with what it holds, when this is dropped.
struct RemovedAtEnd(PathBuf);

impl Drop for RemovedAtEnd {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!("{} could not be removed: {e}", self.0.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ExecutionMode::{Ask, Auto, Safe};

    fn served() -> Served {
        Served {
            workspace: "/w".into(),
            mode: Ask,
            no_network: false,
            templates: vec!["/t/repo".into(), "/t/other".into()],
        }
    }

    fn ask(workspace: Option<&str>, template: Option<&str>) -> SessionAsk {
        SessionAsk {
            workspace: workspace.map(PathBuf::from),
            template: template.map(str::to_owned),
        }
    }

    /// Every part of a session is the narrower of the server's and the credential's.
    #[test]
    #[allow(clippy::too_many_lines)] // one table
    fn a_session_is_narrowed_to_the_server_and_the_credential() {
        let none = Grant::default();
        let grant = |edit: &dyn Fn(&mut Grant)| {
            let mut g = Grant::default();
            edit(&mut g);
            g
        };
        let plan = |place: Place, mode, no_network| {
            Ok::<_, &str>(SessionPlan {
                place,
                mode,
                no_network,
            })
        };
        let cases: Vec<(Grant, SessionAsk, Result<SessionPlan, &str>)> = vec![
            // Nothing named: the server's own.
            (
                none.clone(),
                ask(None, None),
                plan(Place::Served, Ask, false),
            ),
            // A mode: the lower of the two, never above the server's.
            (
                grant(&|g| g.mode = Some(Safe)),
                ask(None, None),
                plan(Place::Served, Safe, false),
            ),
            (
                grant(&|g| g.mode = Some(Auto)),
                ask(None, None),
                plan(Place::Served, Ask, false),
            ),
            (
                grant(&|g| g.no_network = true),
                ask(None, None),
                plan(Place::Served, Ask, true),
            ),
            // A workspace within the server's: that directory alone.
            (
                grant(&|g| g.workspaces = vec!["/w/sub".into()]),
                ask(None, None),
                plan(Place::Within("/w/sub".into()), Ask, false),
            ),
            (
                grant(&|g| g.workspaces = vec!["/w/sub".into()]),
                ask(Some("/w/sub/deeper"), None),
                plan(Place::Within("/w/sub/deeper".into()), Ask, false),
            ),
            (
                grant(&|g| g.workspaces = vec!["/w".into()]),
                ask(Some("/w"), None),
                plan(Place::Served, Ask, false),
            ),
            // Outside the grant, outside the server.
            (
                grant(&|g| g.workspaces = vec!["/w/sub".into()]),
                ask(Some("/w/elsewhere"), None),
                Err("does not grant /w/elsewhere"),
            ),
            (
                grant(&|g| g.workspaces = vec!["/w/sub".into()]),
                ask(Some("/w/subway"), None),
                Err("does not grant /w/subway"),
            ),
            (
                none.clone(),
                ask(Some("/etc"), None),
                Err("not within this server's workspace"),
            ),
            (
                grant(&|g| g.workspaces = vec!["/other".into()]),
                ask(None, None),
                Err("/other is not within this server's workspace"),
            ),
            // Templates: by path or name, only those both name; a template-only credential never
            // gets the server's workspace.
            (
                grant(&|g| g.templates = vec!["/t/repo".into()]),
                ask(None, Some("repo")),
                plan(Place::Template("/t/repo".into()), Ask, false),
            ),
            (
                grant(&|g| g.templates = vec!["/t/repo".into()]),
                ask(None, Some("/t/repo")),
                plan(Place::Template("/t/repo".into()), Ask, false),
            ),
            (
                grant(&|g| g.templates = vec!["/t/repo".into()]),
                ask(None, None),
                plan(Place::Template("/t/repo".into()), Ask, false),
            ),
            (
                grant(&|g| g.templates = vec!["/t/repo".into()]),
                ask(Some("/w"), None),
                Err("does not grant /w"),
            ),
            (
                grant(&|g| g.templates = vec!["/t/repo".into()]),
                ask(None, Some("other")),
                Err("does not grant the template other"),
            ),
            (
                grant(&|g| g.templates = vec!["/t/unserved".into()]),
                ask(None, Some("unserved")),
                Err("does not serve the template /t/unserved"),
            ),
            (none, ask(Some("/w"), Some("repo")), Err("not both")),
        ];
        for (grant, ask, want) in cases {
            let got = narrow(&served(), &grant, &ask);
            match (&got, &want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{grant:?} {ask:?}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{grant:?} {ask:?}: {got}"),
                _ => panic!("{grant:?} {ask:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn a_server_without_network_gives_none_whatever_the_grant() {
        let served = Served {
            no_network: true,
            ..served()
        };
        let plan = narrow(&served, &Grant::default(), &SessionAsk::default()).unwrap();
        assert!(plan.no_network);
    }
}
