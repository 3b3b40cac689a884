//! rmcp's client of a server under test: a client that answers questions as told, a session with
//! a deadline on every call, and the checks every result must pass.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient};
use serde_json::{Value, json};

use crate::workspace::Dirs;

/// The longest any one client call may take; far above what a call needs.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Which protocol generation the client speaks.
#[derive(Clone, Copy, Debug)]
pub enum Generation {
    /// The `initialize` handshake; rmcp's server answers 2025-11-25, so ASK elicits.
    Initialize,
    /// `server/discover` at 2026-07-28; ASK answers with input-required results.
    Discover,
}

impl Generation {
    /// How rmcp's client opens a session of this generation.
    pub fn lifecycle(self) -> ClientLifecycleMode {
        match self {
            Generation::Initialize => ClientLifecycleMode::Initialize,
            Generation::Discover => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        }
    }

    /// The protocol version a session of this generation must end up on.
    pub fn version(self) -> ProtocolVersion {
        match self {
            Generation::Initialize => ProtocolVersion::V_2025_11_25,
            Generation::Discover => ProtocolVersion::V_2026_07_28,
        }
    }
}

/// A client that asks its "user" nothing and answers every question the same way, keeping the
/// questions it was asked.
#[derive(Clone)]
pub struct User {
    /// Whether the client says it can elicit.
    can_ask: bool,
    answer: ElicitationAction,
    asked: Arc<Mutex<Vec<String>>>,
}

impl User {
    /// A client that can elicit and gives `answer` to every question (`Accept` approves).
    pub fn answering(answer: ElicitationAction) -> User {
        User {
            can_ask: true,
            answer,
            asked: Arc::default(),
        }
    }

    /// A client that says it cannot elicit (so it is never asked).
    pub fn mute() -> User {
        User {
            can_ask: false,
            ..User::answering(ElicitationAction::Decline)
        }
    }

    /// The questions asked so far, in order.
    pub fn questions(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl ClientHandler for User {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities = if self.can_ask {
            serde_json::from_value(json!({"elicitation": {"form": {}}})).unwrap()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("spear-test", "0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Err(McpError::invalid_params("spear asks with forms only", None));
        };
        self.asked.lock().unwrap().push(message);
        Ok(match self.answer {
            ElicitationAction::Accept => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true}))
            }
            ref other => ElicitResult::new(other.clone()),
        })
    }
}

/// Awaits `fut`, failing the test when it takes longer than [`DEADLINE`].
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, fut)
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {DEADLINE:?}"))
}

/// A server, its directories, and rmcp's client of it, the handshake done.
pub struct Session<H: ClientHandler> {
    /// rmcp's running client.
    pub client: RunningService<RoleClient, H>,
    /// The server's directories (workspace, HOME, state); its log is [`Dirs::log`].
    pub dirs: Dirs,
    pid: u32,
}

impl<H: ClientHandler> Session<H> {
    /// Starts `server` (its stderr kept in `dirs`' [`Dirs::log`]) and serves it to `handler` in
    /// `generation`; fails the test unless the session starts within [`DEADLINE`] on the
    /// generation's protocol version.
    pub async fn start(
        dirs: Dirs,
        server: std::process::Command,
        handler: H,
        generation: Generation,
    ) -> Session<H> {
        let cmd = tokio::process::Command::from(server);
        let log = std::fs::File::create(dirs.log_path()).unwrap();
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(log)
            .spawn()
            .expect("the server starts");
        let pid = transport.id().expect("the server's pid");
        let client = within(
            "the session's start",
            handler.serve_with_lifecycle(transport, generation.lifecycle()),
        )
        .await
        .unwrap_or_else(|e| panic!("the session did not start: {e}\n{}", dirs.log()));
        let negotiated = client.peer_info().unwrap().protocol_version.clone();
        assert_eq!(negotiated, generation.version(), "{generation:?}");
        Session { client, dirs, pid }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Calls `tool` with `args` (an object), driving input-required rounds through the handler.
    pub async fn call(&self, tool: &'static str, args: Value) -> CallToolResult {
        let Value::Object(args) = args else {
            panic!("arguments are an object")
        };
        within(
            tool,
            self.client
                .call_tool(CallToolRequestParams::new(tool).with_arguments(args)),
        )
        .await
        .unwrap_or_else(|e| {
            panic!(
                "{tool} was not answered with a result: {e}\n{}",
                self.dirs.log()
            )
        })
    }

    /// Ends the session (the client closes it) within [`DEADLINE`].
    pub async fn stop(self) {
        within("the session's end", self.client.cancel())
            .await
            .unwrap();
    }
}

/// The structured content, after checking that `isError` agrees with its status and that the one
/// text block is there.
pub fn envelope(result: &CallToolResult) -> &Value {
    let s = result
        .structured_content
        .as_ref()
        .expect("every result has structured content");
    let ok = s["status"] == "ok";
    assert_eq!(result.is_error, Some(!ok), "{s}");
    assert_eq!(result.content.len(), 1, "{result:?}");
    let text = result.content[0].as_text().expect("a text block");
    assert!(
        text.text.starts_with(&format!(
            "{}: {}",
            s["tool"].as_str().unwrap(),
            s["status"].as_str().unwrap()
        )),
        "{}",
        text.text
    );
    s
}
