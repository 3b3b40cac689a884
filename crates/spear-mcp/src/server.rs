//! The MCP server: rmcp's `ServerHandler` over one [`ToolRouter`] session.
//!
//! Each `tools/call` runs the router on a blocking thread, with the call's cancellation, its
//! progress token and the way to ask its client. The router does everything else; this layer
//! only translates.
//!
//! At most [`MAX_RUNNING_CALLS`] calls run at once; the others wait for a slot (cancellable),
//! holding only their arguments, which the intake bounds ([`crate::intake::MAX_HELD_BYTES`]).
//! A call keeps its weight in that bound until its thread ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use rmcp::ErrorData as McpError;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeResult, InputRequests,
    InputRequiredResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ProtocolVersion, ServerCapabilities, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use spear_core::{ExecutionMode, Refusal, ToolResult, ToolStatus};
use spear_policy::{Confirmation, Confirmer};
use spear_sandbox::CancelToken;
use spear_tools::{CallOptions, Progress, ProgressSink, ToolResultEnvelope, ToolRouter};
use tokio::runtime::Handle;

use crate::approvals::{ApprovalConfirmer, Approvals};
use crate::asking::{
    self, BoundConfirmer, CONFIRM_KEY, CaptureConfirmer, ElicitConfirmer, FixedAnswer,
};
use crate::catalog;
use crate::intake::Held;
use crate::metrics::{CallRecord, Metrics};
use crate::request_state::StateSealer;

/// The first protocol version whose servers ask through input-required results rather than
/// requests of their own.
const INPUT_REQUIRED_SINCE: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// The most calls of a session that run at once (each on a thread of its own, most of them
/// waiting on a sandboxed command): enough for an agent's parallel tool calls, few enough that
/// their threads, commits and checkpoints do not crowd two cores. More wait for a slot.
pub const MAX_RUNNING_CALLS: usize = 8;

/// spear's MCP server. Cheap to clone; every clone serves the same session.
#[derive(Clone)]
pub struct SpearServer {
    inner: Arc<Inner>,
}

struct Inner {
    router: ToolRouter,
    calls: Mutex<Calls>,
    /// Signalled each time a call ends (see [`SpearServer::wait_for_calls`]).
    call_ended: Condvar,
    turn_gap: Duration,
    tools: Vec<Tool>,
    sealer: StateSealer,
    next_call: AtomicU64,
    /// Where a call asks when its client cannot: the approval channel (`spear approve`).
    approvals: Option<ApprovalWait>,
    /// A slot for each call running ([`MAX_RUNNING_CALLS`]).
    slots: Arc<tokio::sync::Semaphore>,
    /// Where calls are counted, and this session with them (see [`SpearServer::with_metrics`]).
    metrics: OnceLock<Arc<Metrics>>,
    /// What lives as long as the session ([`SpearServer::hold`]); declared last, so dropped
    /// after the router (whose end kills the jobs that may still use it).
    held: Mutex<Vec<Box<dyn std::any::Any + Send + Sync>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(m) = self.metrics.get() {
            m.session_closed();
        }
    }
}

/// The approval channel's registry, and how long a call waits on it.
#[derive(Clone)]
pub struct ApprovalWait {
    /// The registry the channel serves.
    pub approvals: Arc<Approvals>,
    /// The longest wait of one call.
    pub wait: Duration,
}

/// The calls running now (so that a server going away can stop them), and when the last one
/// ended: what the turn clock reads.
#[derive(Default)]
struct Calls {
    /// Each with its cancel token; a quick call, run on the event loop, has none (nothing can
    /// reach it while it runs).
    running: HashMap<u64, Option<CancelToken>>,
    idle_since: Option<Instant>,
}

impl SpearServer {
    /// A server for `router`'s session and role. A new turn begins when a call comes after
    /// `turn_gap` with no call running (see `begins_turn`).
    pub fn new(
        router: ToolRouter,
        turn_gap: Duration,
    ) -> Result<Self, crate::request_state::StateError> {
        Self::with_approvals(router, turn_gap, None)
    }

    /// As [`SpearServer::new`]; in ASK, a call whose client cannot ask its user waits on
    /// `approvals` (answered with `spear approve`) instead of being cancelled at once.
    pub fn with_approvals(
        router: ToolRouter,
        turn_gap: Duration,
        approvals: Option<ApprovalWait>,
    ) -> Result<Self, crate::request_state::StateError> {
        let output_schema = Arc::new(catalog::as_object(&spear_tools::output_schema()));
        let tools = router
            .tools()
            .into_iter()
            .map(|spec| catalog::mcp_tool(spec, &output_schema))
            .collect();
        Ok(SpearServer {
            inner: Arc::new(Inner {
                router,
                calls: Mutex::new(Calls::default()),
                call_ended: Condvar::new(),
                turn_gap,
                tools,
                sealer: StateSealer::new()?,
                next_call: AtomicU64::new(0),
                approvals,
                slots: Arc::new(tokio::sync::Semaphore::new(MAX_RUNNING_CALLS)),
                metrics: OnceLock::new(),
                held: Mutex::new(Vec::new()),
            }),
        })
    }

    /// This server counting into `metrics`: the session is counted opened now and closed when
    /// the server's last clone is dropped, and every `tools/call` is recorded once when it ends
    /// (with its tool, status, rule and time; a call abandoned before its result as `cancelled`,
    /// one that ended in an MCP error as `failed`). Only the first `metrics` given is kept.
    #[must_use]
    pub fn with_metrics(self, metrics: Arc<Metrics>) -> Self {
        let first = Arc::clone(&metrics);
        if self.inner.metrics.set(metrics).is_ok() {
            first.session_opened();
        }
        self
    }

    /// The tool label a call of `name` is counted under: its name when the catalog lists it,
    /// `unknown` otherwise (a client's made-up names are not kept).
    fn tool_label(&self, name: &str) -> String {
        if self.inner.tools.iter().any(|t| t.name == name) {
            name.to_owned()
        } else {
            "unknown".to_owned()
        }
    }

    /// The process's server goes away: every call is cancelled, and its approval registry
    /// withdraws what is pending and takes nothing more.
    pub fn shut_down(&self) {
        self.cancel_running();
        if let Some(a) = &self.inner.approvals {
            a.approvals.close();
        }
    }

    /// Keeps `guard` until the session ends (its last clone dropped), after its router: a
    /// session's place in its limits, the copy of a template it works in.
    pub fn hold(&self, guard: Box<dyn std::any::Any + Send + Sync>) {
        self.inner
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(guard);
    }

    /// The spear session's id (its audit records', its stored outputs').
    pub fn session(&self) -> &str {
        self.inner.router.session()
    }

    /// Cancels every call still running: each one's process tree is killed and the call ends;
    /// what it waits for `spear approve` about is withdrawn.
    pub fn cancel_running(&self) {
        if let Some(a) = &self.inner.approvals {
            a.approvals.withdraw_session(self.session());
        }
        for token in self.lock_calls().running.values().flatten() {
            token.cancel();
        }
    }

    /// Counts call `id` in, beginning a new turn first when the session was idle for the gap,
    /// unless the call `continues` a turn (the answer to a question that turn asked).
    fn call_starts(&self, id: u64, cancel: Option<CancelToken>, continues: bool) {
        let mut calls = self.lock_calls();
        if !continues
            && begins_turn(
                calls.running.len(),
                calls.idle_since,
                Instant::now(),
                self.inner.turn_gap,
            )
        {
            // Random ids always name a checkpoint; the error cannot happen.
            if let Ok(turn) = self.inner.router.begin_turn(None) {
                tracing::debug!("a new turn: {turn}");
            }
        }
        calls.running.insert(id, cancel);
    }

    /// Counts call `id` out.
    fn call_ends(&self, id: u64) {
        let mut calls = self.lock_calls();
        calls.running.remove(&id);
        calls.idle_since = Some(Instant::now());
        drop(calls);
        self.inner.call_ended.notify_all();
    }

    /// Waits until no call is running, at most `limit`; returns whether none is. Woken by each
    /// call's end, never by polling.
    pub fn wait_for_calls(&self, limit: Duration) -> bool {
        let calls = self.lock_calls();
        let (calls, _) = self
            .inner
            .call_ended
            .wait_timeout_while(calls, limit, |c| !c.running.is_empty())
            .unwrap_or_else(PoisonError::into_inner);
        calls.running.is_empty()
    }

    /// How many calls are running now.
    pub fn calls_running(&self) -> usize {
        self.lock_calls().running.len()
    }

    fn lock_calls(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.inner
            .calls
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
        // ASK asks; AUTO asks only before host-run configuration is written, which a quick call
        // (a read) never does; a session that may escalate asks too, only about an escalation
        // (SAFE's own decisions never ask).
        let mode = self.inner.router.mode();
        let may_ask = mode == ExecutionMode::Ask
            || (mode == ExecutionMode::Auto && !self.inner.router.is_quick(&request.name))
            || !self.inner.router.escalation_capabilities().is_empty();
        if !may_ask {
            return Ok(Asker::default());
        }
        let can_ask = context
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some());
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= INPUT_REQUIRED_SINCE);
        if !modern {
            return Ok(if can_ask {
                Asker {
                    confirmer: Some(Arc::new(ElicitConfirmer {
                        peer: context.peer.clone(),
                        runtime: Handle::current(),
                        cancelled: context.ct.clone(),
                    })),
                    capture: None,
                    continues_turn: false,
                }
            } else {
                self.approval_asker(request, context)
            });
        }
        let capture = Arc::new(CaptureConfirmer::default());
        let Some(state) = &request.request_state else {
            return Ok(if can_ask {
                Asker {
                    confirmer: Some(Arc::clone(&capture) as Arc<dyn Confirmer + Send + Sync>),
                    capture: Some(capture),
                    continues_turn: false,
                }
            } else {
                self.approval_asker(request, context)
            });
        };
        let approved = self
            .inner
            .sealer
            .open(state, self.inner.router.session(), &request.name, args)
            .map_err(|e| {
                // Not a call the router saw, so not in the audit log: say it here.
                tracing::warn!("{}: a requestState was refused: {e}", request.name);
                ToolResult::denied(&Refusal::request_state_refused(
                    &*request.name,
                    e.to_string(),
                ))
            })?;
        let confirmer: Arc<dyn Confirmer + Send + Sync> =
            match asking::answer_in(request.input_responses.as_ref()) {
                Some(Confirmation::Approved) => Arc::new(BoundConfirmer {
                    approved,
                    capture: Arc::clone(&capture),
                }),
                Some(answer) => Arc::new(FixedAnswer(answer)),
                None => {
                    return Err(ToolResult::cancelled(&Refusal::no_answer(
                        &*request.name,
                        format!("inputResponses.{CONFIRM_KEY}"),
                    )));
                }
            };
        Ok(Asker {
            confirmer: Some(confirmer),
            capture: Some(capture),
            continues_turn: true,
        })
    }
}

impl SpearServer {
    /// The asker of a call whose client can ask nothing: the approval channel when there is one,
    /// else nobody (what needs asking is cancelled).
    fn approval_asker(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Asker {
        let Some(a) = &self.inner.approvals else {
            return Asker::default();
        };
        Asker {
            confirmer: Some(Arc::new(ApprovalConfirmer {
                approvals: Arc::clone(&a.approvals),
                session: self.session().to_owned(),
                tool: request.name.to_string(),
                wait: a.wait,
                cancelled: context.ct.clone(),
                runtime: Handle::current(),
            })),
            capture: None,
            continues_turn: false,
        }
    }
}

/// Whether a call starting `now` begins a new turn. MCP says nothing of turns, so a pause stands
/// for one: when a call comes after `gap` in which no call ran, the model has handed back to the
/// user and this is the next turn (refusal counts, the verdict's evidence and `spear undo`'s unit
/// start afresh; a turn stopped by repeated refusals ends).
fn begins_turn(running: usize, idle_since: Option<Instant>, now: Instant, gap: Duration) -> bool {
    running == 0 && idle_since.is_some_and(|t| now.duration_since(t) >= gap)
}

/// How one call asks.
#[derive(Default)]
struct Asker {
    confirmer: Option<Arc<dyn Confirmer + Send + Sync>>,
    /// Set when a question is to be deferred to an input-required result.
    capture: Option<Arc<CaptureConfirmer>>,
    /// The call answers a question its turn asked (its request state opened): however long the
    /// user took, it belongs to that turn.
    continues_turn: bool,
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
        let mut recorder = CallRecorder {
            metrics: self.inner.metrics.get().cloned(),
            tool: self.tool_label(&request.name),
            started: Instant::now(),
            done: false,
        };
        let response = self.run_call(request, context, &mut recorder).await;
        if response.is_err() {
            recorder.status("failed");
        }
        response
    }
}

/// Records one call into the metrics once: at the first outcome given, or when dropped without
/// one (the call's future dropped before its end: `cancelled`).
struct CallRecorder {
    metrics: Option<Arc<Metrics>>,
    tool: String,
    started: Instant,
    done: bool,
}

impl CallRecorder {
    fn result(&mut self, result: &ToolResult) {
        if let Some(m) = self.metrics.as_ref().filter(|_| !self.done) {
            m.record(&CallRecord::of_result(
                &self.tool,
                result,
                self.started.elapsed(),
            ));
        }
        self.done = true;
    }

    fn status(&mut self, status: &'static str) {
        if let Some(m) = self.metrics.as_ref().filter(|_| !self.done) {
            m.record(&CallRecord::without_result(
                &self.tool,
                status,
                self.started.elapsed(),
            ));
        }
        self.done = true;
    }
}

impl Drop for CallRecorder {
    fn drop(&mut self) {
        self.status("cancelled");
    }
}

impl SpearServer {
    /// A quick call (`read_file`, `read_output`), run here, on the event loop: handing it to a
    /// thread of its own and back costs more than the call (two thread switches, a cancel pipe
    /// and a watcher task), and nothing it does waits. A call that panicked ends as one on its
    /// own thread would: an error for this call, the server still serving.
    fn run_quick(
        &self,
        name: &str,
        args: serde_json::Value,
        continues_turn: bool,
    ) -> Result<ToolResultEnvelope, McpError> {
        let id = self.inner.next_call.fetch_add(1, Ordering::Relaxed);
        self.call_starts(id, None, continues_turn);
        let envelope = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.inner
                .router
                .call_with(name, args, CallOptions::default())
        }));
        self.call_ends(id);
        envelope.map_err(|_| McpError::internal_error("the call did not finish: it panicked", None))
    }

    /// One `tools/call`, its outcome given to `recorder`.
    async fn run_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        recorder: &mut CallRecorder,
    ) -> Result<CallToolResponse, McpError> {
        let mut request = request;
        let name = request.name.to_string();
        // Taken, not copied: a call's arguments are held once (the intake counts them once).
        let args = serde_json::Value::Object(request.arguments.take().unwrap_or_default());
        // The weight the intake counted for this request, given back when the call ends.
        let held = context.extensions.get::<Arc<Held>>().cloned();
        // A slot to run in; waiting for it ends with the call's cancellation.
        let slot = tokio::select! {
            slot = Arc::clone(&self.inner.slots).acquire_owned() => slot.map_err(|_| {
                McpError::internal_error("the server is stopping", None)
            })?,
            // rmcp sends no answer to a cancelled request: this error goes nowhere.
            () = context.ct.cancelled() => {
                recorder.status("cancelled");
                return Err(McpError::internal_error("cancelled while waiting to run", None));
            }
        };
        let asker = match self.asker(&request, &args, &context) {
            Ok(a) => a,
            Err(result) => {
                recorder.result(&result);
                let envelope = ToolResultEnvelope::new(&name, result);
                return Ok(CallToolResponse::Complete(catalog::call_result(&envelope)));
            }
        };
        if asker.confirmer.is_none() && self.inner.router.is_quick(&name) {
            let envelope = self.run_quick(&name, args, asker.continues_turn)?;
            recorder.result(&envelope.result);
            return Ok(CallToolResponse::Complete(catalog::call_result(&envelope)));
        }
        let id = self.inner.next_call.fetch_add(1, Ordering::Relaxed);
        let cancel = CancelToken::new().map_err(|e| {
            McpError::internal_error(format!("cannot make a cancel token: {e}"), None)
        })?;
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
        self.call_starts(id, Some(cancel.clone()), asker.continues_turn);
        let options = CallOptions {
            cancel: Some(cancel),
            progress,
            confirmer: asker.confirmer,
            ..CallOptions::default()
        };
        let server = self.clone();
        // The arguments are kept past the call only to seal a question it may defer.
        let (call_args, kept_args) = if asker.capture.is_some() {
            (args.clone(), Some(args))
        } else {
            (args, None)
        };
        let call_name = name.clone();
        // The call counts itself out on its own thread, so that a server going away can wait for
        // its calls to end without driving the runtime; its slot and its weight go with it.
        let joined = tokio::task::spawn_blocking(move || {
            let envelope = server
                .inner
                .router
                .call_with(&call_name, call_args, options);
            server.call_ends(id);
            drop((slot, held));
            envelope
        })
        .await;
        bridge.abort();
        let envelope = joined
            .map_err(|e| McpError::internal_error(format!("the call did not finish: {e}"), None))?;
        if envelope.result.status == ToolStatus::Cancelled
            && let Some(question) = asker.capture.as_ref().and_then(|c| c.take())
            && let Some(input) = asking::input_request(&question)
            && let Some(args) = &kept_args
        {
            let state = self.inner.sealer.seal(
                self.inner.router.session(),
                &name,
                args,
                &asking::request_digest(&question),
            );
            recorder.status("input_required");
            let mut requests = InputRequests::new();
            requests.insert(CONFIRM_KEY.to_owned(), input);
            return Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
                Some(requests),
                Some(state),
            )));
        }
        recorder.result(&envelope.result);
        Ok(CallToolResponse::Complete(catalog::call_result(&envelope)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_turn_begins_after_a_pause_with_nothing_running() {
        let gap = Duration::from_secs(30);
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        for (running, idle_since, now, begins) in [
            // The first call of a session belongs to the turn the router began.
            (0, None, at(100), false),
            (0, Some(t0), at(29), false),
            (0, Some(t0), at(30), true),
            (0, Some(t0), at(3600), true),
            // A call still running (a long command, a question to the user) holds the turn open.
            (1, Some(t0), at(3600), false),
        ] {
            assert_eq!(
                begins_turn(running, idle_since, now, gap),
                begins,
                "{running} running, idle since {idle_since:?}, at {now:?}"
            );
        }
    }

    /// A SAFE router over a fresh workspace holding `a.txt`, its home elsewhere.
    fn router(ws: &std::path::Path, home: &std::path::Path) -> ToolRouter {
        std::fs::write(ws.join("a.txt"), "hello\n").unwrap();
        let workspace = Arc::new(
            spear_workspace::Workspace::open(&spear_workspace::WorkspaceConfig::new(ws)).unwrap(),
        );
        let policy = Arc::new(spear_policy::CommandPolicy::new(
            Arc::clone(&workspace),
            spear_policy::PolicyConfig::new(Some(home.to_path_buf())),
        ));
        let runner = Arc::new(spear_runtime::CommandRunner::new(
            workspace,
            spear_runtime::RunnerConfig::from_host(),
        ));
        ToolRouter::new(
            spear_tools::ToolRegistry::coding(),
            policy,
            runner,
            spear_tools::RouterConfig::new(ExecutionMode::Safe),
            spear_tools::RouterStores::default(),
        )
        .unwrap()
    }

    /// A client speaking JSON-RPC lines to a server over an in-memory pipe.
    struct Client {
        writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
        lines: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    }

    impl Client {
        async fn send(&mut self, message: &serde_json::Value) {
            use tokio::io::AsyncWriteExt as _;
            let line = format!("{message}\n");
            self.writer.write_all(line.as_bytes()).await.unwrap();
        }

        async fn next(&mut self) -> serde_json::Value {
            let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
                .await
                .expect("an answer in time")
                .unwrap()
                .expect("a line");
            serde_json::from_str(&line).unwrap()
        }
    }

    /// The count of `spear_tool_calls_total{tool, status}` in `text` (0 when absent).
    fn calls_counted(text: &str, tool: &str, status: &serde_json::Value) -> u64 {
        let prefix = format!(
            "spear_tool_calls_total{{tool=\"{tool}\",status=\"{}\"}} ",
            status.as_str().unwrap_or("?")
        );
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map_or(0, |n| n.parse().unwrap())
    }

    /// Serves `server` over an in-memory pipe and starts a session on it: the client, and the
    /// task that ends when the session does.
    async fn start(server: SpearServer) -> (Client, tokio::task::JoinHandle<()>) {
        use rmcp::ServiceExt as _;
        use serde_json::json;
        use tokio::io::AsyncBufReadExt as _;

        let (server_end, client_end) = tokio::io::duplex(1 << 20);
        let (server_r, server_w) = tokio::io::split(server_end);
        let (client_r, writer) = tokio::io::split(client_end);
        let serving = tokio::spawn(async move {
            let transport = crate::intake::transport(server_r, server_w);
            server
                .serve(transport)
                .await
                .unwrap()
                .waiting()
                .await
                .unwrap();
        });
        let mut client = Client {
            writer,
            lines: tokio::io::BufReader::new(client_r).lines(),
        };
        client
            .send(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"}}}),
            )
            .await;
        client.next().await;
        client
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        (client, serving)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_call_through_the_server_is_counted_once() {
        use serde_json::{Value, json};

        let ws = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let metrics = Arc::new(Metrics::new());
        let server = SpearServer::new(router(ws.path(), home.path()), Duration::from_secs(30))
            .unwrap()
            .with_metrics(Arc::clone(&metrics));
        assert_eq!(
            metrics.sessions_open(),
            1,
            "counted opened with its metrics"
        );
        let (mut client, serving) = start(server).await;
        let mut answers: Vec<Value> = Vec::new();
        for (id, (tool, path)) in [
            ("read_file", "a.txt"),
            ("read_file", "missing.txt"),
            ("read_file", "/etc/passwd"),
            ("made_up", "a.txt"),
        ]
        .into_iter()
        .enumerate()
        {
            client
                .send(
                    &json!({"jsonrpc": "2.0", "id": id + 1, "method": "tools/call",
                    "params": {"name": tool, "arguments": {"path": path}}}),
                )
                .await;
            answers.push(client.next().await["result"]["structuredContent"].clone());
        }
        let text = metrics.render(metrics.sessions_open());
        crate::metrics::tests::validate(&text);
        assert_eq!(answers[0]["status"], "ok", "{answers:?}");
        assert_eq!(
            calls_counted(&text, "read_file", &answers[0]["status"]),
            1,
            "{text}"
        );
        assert_ne!(answers[1]["status"], "ok", "{answers:?}");
        assert_ne!(answers[2]["status"], "ok", "{answers:?}");
        let same = if answers[1]["status"] == answers[2]["status"] {
            2
        } else {
            1
        };
        assert_eq!(
            calls_counted(&text, "read_file", &answers[1]["status"]),
            same,
            "{text}"
        );
        // A tool the catalog does not list is counted, under `unknown`, never its own name.
        assert!(!text.contains("made_up"), "{text}");
        let total: u64 = text
            .lines()
            .filter(|l| l.starts_with("spear_tool_calls_total{"))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, 4, "each call once: {text}");
        assert!(
            text.contains("spear_tool_call_duration_seconds_count{tool=\"read_file\"} 3\n"),
            "{text}"
        );
        if let Some(rule) = answers[3]["rule"].as_str() {
            let line = format!("spear_refusals_total{{rule=\"{rule}\"}} 1\n");
            assert!(text.contains(&line), "{text}");
        }
        // The client goes: the session ends, and is counted closed once the server is dropped.
        drop(client);
        tokio::time::timeout(Duration::from_secs(10), serving)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(metrics.sessions_open(), 0);
    }
}
