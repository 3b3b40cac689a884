//! The MCP server: rmcp's `ServerHandler` over one [`ToolRouter`] session.
//!
//! Each `tools/call` runs the router on a blocking thread, with the call's cancellation, its
//! progress token and the way to ask its client. The router does everything else; this layer
//! only translates.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ErrorData as McpError;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeResult, InputRequests,
    InputRequiredResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ProtocolVersion, ServerCapabilities, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use spear_core::{ExecutionMode, ToolResult, ToolStatus};
use spear_policy::{Confirmation, Confirmer};
use spear_runtime::CancelToken;
use spear_tools::{CallOptions, Progress, ProgressSink, ToolResultEnvelope, ToolRouter};
use tokio::runtime::Handle;

use crate::asking::{
    self, BoundConfirmer, CONFIRM_KEY, CaptureConfirmer, ElicitConfirmer, FixedAnswer,
};
use crate::catalog;
use crate::state::StateSealer;

/// The first protocol version whose servers ask through input-required results rather than
/// requests of their own.
const INPUT_REQUIRED_SINCE: &str = "2026-07-28";

/// spear's MCP server. Cheap to clone; every clone serves the same session.
#[derive(Clone)]
pub struct SpearServer {
    inner: Arc<Inner>,
}

struct Inner {
    router: ToolRouter,
    tools: Vec<Tool>,
    sealer: StateSealer,
    /// The calls running now, so that a server going away can stop them.
    running: Mutex<HashMap<u64, CancelToken>>,
    next_call: AtomicU64,
}

impl SpearServer {
    /// A server for `router`'s session and role.
    pub fn new(router: ToolRouter) -> Result<Self, crate::state::StateError> {
        let output_schema = Arc::new(catalog::as_object(&spear_tools::output_schema()));
        let tools = router
            .tools()
            .into_iter()
            .map(|spec| catalog::mcp_tool(spec, &output_schema))
            .collect();
        Ok(SpearServer {
            inner: Arc::new(Inner {
                router,
                tools,
                sealer: StateSealer::new()?,
                running: Mutex::new(HashMap::new()),
                next_call: AtomicU64::new(0),
            }),
        })
    }

    /// The router this server serves.
    pub fn router(&self) -> &ToolRouter {
        &self.inner.router
    }

    /// Cancels every call still running: each one's process tree is killed and the call ends.
    pub fn cancel_running(&self) {
        for token in self.lock_running().values() {
            token.cancel();
        }
    }

    fn lock_running(&self) -> std::sync::MutexGuard<'_, HashMap<u64, CancelToken>> {
        self.inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Who asks the user about this call, and where a deferred question is kept; or a result
    /// that ends the call at once (a request state that does not verify).
    fn asker(
        &self,
        request: &CallToolRequestParams,
        args: &serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<Asker, ToolResult> {
        if self.inner.router.mode() != ExecutionMode::Ask {
            return Ok(Asker::default());
        }
        let can_ask = context
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some());
        let modern = context
            .protocol_version()
            .is_some_and(|v| v.as_str() >= INPUT_REQUIRED_SINCE);
        if !modern {
            return Ok(if can_ask {
                Asker {
                    confirmer: Some(Arc::new(ElicitConfirmer {
                        peer: context.peer.clone(),
                        runtime: Handle::current(),
                        cancelled: context.ct.clone(),
                    })),
                    capture: None,
                }
            } else {
                Asker::default()
            });
        }
        let capture = Arc::new(CaptureConfirmer::default());
        let Some(state) = &request.request_state else {
            return Ok(if can_ask {
                Asker {
                    confirmer: Some(Arc::clone(&capture) as Arc<dyn Confirmer + Send + Sync>),
                    capture: Some(capture),
                }
            } else {
                Asker::default()
            });
        };
        let approved = self
            .inner
            .sealer
            .open(state, self.inner.router.session(), &request.name, args)
            .map_err(|e| {
                let mut r = ToolResult::new(ToolStatus::Denied);
                r.reason = Some(format!(
                    "{e}. Nothing ran. Call {} again without requestState to be asked afresh.",
                    request.name
                ));
                r
            })?;
        let confirmer: Arc<dyn Confirmer + Send + Sync> =
            match asking::answer_in(request.input_responses.as_ref()) {
                Some(Confirmation::Approved) => Arc::new(BoundConfirmer {
                    approved,
                    capture: Arc::clone(&capture),
                }),
                Some(answer) => Arc::new(FixedAnswer(answer)),
                None => Arc::new(FixedAnswer(Confirmation::Unavailable)),
            };
        Ok(Asker {
            confirmer: Some(confirmer),
            capture: Some(capture),
        })
    }
}

/// How one call asks.
#[derive(Default)]
struct Asker {
    confirmer: Option<Arc<dyn Confirmer + Send + Sync>>,
    /// Set when a question is to be deferred to an input-required result.
    capture: Option<Arc<CaptureConfirmer>>,
}

/// Reports progress as MCP progress notifications: elapsed seconds as the progress, the output so
/// far as the message. Never blocks the supervising thread.
fn progress_sink(peer: Peer<RoleServer>, token: ProgressToken, runtime: Handle) -> ProgressSink {
    Arc::new(move |p: Progress| {
        let peer = peer.clone();
        #[allow(clippy::cast_precision_loss)]
        let seconds = p.elapsed_ms as f64 / 1000.0;
        let mut param = ProgressNotificationParam::new(token.clone(), seconds);
        param.message = Some(format!(
            "running for {seconds:.1} s; {} bytes on stdout, {} on stderr",
            p.stdout_bytes, p.stderr_bytes
        ));
        runtime.spawn(async move {
            if let Err(e) = peer.notify_progress(param).await {
                tracing::debug!("progress notification not sent: {e}");
            }
        });
    })
}

impl ServerHandler for SpearServer {
    fn get_info(&self) -> InitializeResult {
        let capabilities = ServerCapabilities::builder().enable_tools().build();
        InitializeResult::new(capabilities)
            .with_server_info(Implementation::new("spear", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "spear runs tools in a sandbox over the workspace {} in {} mode. Every result \
                 says why it ended as it did; a refusal says what to do instead.",
                self.inner
                    .router
                    .workspace()
                    .roots()
                    .first()
                    .map(|r| r.host_path().display().to_string())
                    .unwrap_or_default(),
                self.inner.router.mode().as_str().to_uppercase(),
            ))
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.inner.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let args = serde_json::Value::Object(request.arguments.clone().unwrap_or_default());
        let asker = match self.asker(&request, &args, &context) {
            Ok(a) => a,
            Err(result) => {
                let envelope = ToolResultEnvelope::new(&name, result);
                return Ok(CallToolResponse::Complete(catalog::call_result(&envelope)));
            }
        };
        let cancel = CancelToken::new().map_err(|e| {
            McpError::internal_error(format!("cannot make a cancel token: {e}"), None)
        })?;
        let id = self.inner.next_call.fetch_add(1, Ordering::Relaxed);
        self.lock_running().insert(id, cancel.clone());
        // notifications/cancelled (or the server going away) cancels the token rmcp gave the call.
        let bridge = {
            let ct = context.ct.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move {
                ct.cancelled().await;
                cancel.cancel();
            })
        };
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| progress_sink(context.peer.clone(), token, Handle::current()));
        let options = CallOptions {
            cancel: Some(cancel),
            progress,
            confirmer: asker.confirmer,
        };
        let server = self.clone();
        let call_args = args.clone();
        let call_name = name.clone();
        let joined = tokio::task::spawn_blocking(move || {
            server
                .inner
                .router
                .call_with(&call_name, call_args, options)
        })
        .await;
        bridge.abort();
        self.lock_running().remove(&id);
        let envelope = joined
            .map_err(|e| McpError::internal_error(format!("the call did not finish: {e}"), None))?;
        if envelope.result.status == ToolStatus::Cancelled
            && let Some(question) = asker.capture.as_ref().and_then(|c| c.take())
            && let Some(input) = asking::input_request(&question)
        {
            let state = self.inner.sealer.seal(
                self.inner.router.session(),
                &name,
                &args,
                &asking::request_digest(&question),
            );
            let mut requests = InputRequests::new();
            requests.insert(CONFIRM_KEY.to_owned(), input);
            return Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
                Some(requests),
                Some(state),
            )));
        }
        Ok(CallToolResponse::Complete(catalog::call_result(&envelope)))
    }
}
