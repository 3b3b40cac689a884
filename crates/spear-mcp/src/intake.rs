//! The framing layer in front of rmcp's stdio transport: every line the client sends is screened
//! ([`crate::screen`]) before rmcp reads it, and a malformed one is answered here.
//!
//! Two pieces, made together by [`transport`]:
//!
//! - [`Screened`], the reader rmcp's transport reads from: it cuts the client's stream into lines
//!   in bounded memory ([`crate::lines`]), hands each good line on byte for byte, drops blank
//!   ones, and passes the answer a malformed one earns to
//! - [`Answering`], a [`Transport`] around rmcp's own, which writes those answers through the
//!   inner transport's `send`: the very writer, behind the same lock, that writes every other
//!   message, so that stdout carries whole messages only, never two interleaved.
//!
//! The reader waits (reads no further) while answers it produced are not yet taken, and the
//! transport stops receiving while too many answers wait for stdout: a client that floods bad
//! lines and reads nothing back is slowed, not buffered.
//!
//! Requests in flight are bounded ([`InFlight`]): each request rmcp parsed holds its weight (its
//! arguments as parsed, and [`REQUEST_COST`]) from the moment it is received until its call ends,
//! at most [`MAX_HELD_BYTES`] together. A request that would go past it is answered at once
//! with a JSON-RPC error (-32000) that says so and what to do, its memory let go: the server's
//! resident memory stays bounded however many calls a client sends at once and however large
//! (see [`MAX_HELD_BYTES`] for the bound). Refused rather than waiting, because a reader that
//! stopped reading could not see the end of stdin, a cancellation or the answer to a question
//! that a running call waits for.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ClientRequest, ErrorCode, ErrorData, GetExtensions as _, JsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, BufReader, ReadBuf};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::PollSender;

use crate::lines::{LineSplitter, Piece};
use crate::screen::{self, MAX_LINE_BYTES, Rejection, Verdict};

/// How many lines' answers may wait between the reader and the transport.
const QUEUED_ANSWERS: usize = 8;
/// How many lines' answers may wait for stdout before the transport stops receiving.
const WRITING_ANSWERS: usize = 64;
/// How long closing waits for answers still being written.
const CLOSE_WAIT: Duration = Duration::from_secs(5);
/// The size of each read from the client.
const READ_CHUNK: usize = 64 * 1024;

/// The most bytes the requests in flight of a session hold together (their arguments as parsed,
/// and [`REQUEST_COST`] each), from their reading until their calls end: 64 MiB, four of the
/// largest requests read ([`MAX_LINE_BYTES`]), hundreds of ordinary ones.
///
/// The resident bound this gives: the server at rest (about 35 MiB), plus what the requests in
/// flight hold (64 MiB) times what a call makes of its arguments while it runs (the parsed
/// value, the copy the router validates and the tool's own, 3 at most), plus one line being
/// read (16 MiB) and parsed (16 MiB): under 320 MiB, however many calls come at once and however
/// large. (`tests/mcp_bounds.rs` holds 60 concurrent 2 MiB calls to it.)
pub const MAX_HELD_BYTES: usize = 64 << 20;

/// What each request in flight counts for besides its arguments: its task, its context, the
/// thread its call runs on, its answer (a result's output is cut to its preview).
pub const REQUEST_COST: usize = 64 << 10;

/// The JSON-RPC error code of a request refused because the requests in flight hold too much
/// (implementation-defined server error).
pub const BUSY: ErrorCode = ErrorCode(-32000);

/// The weight of the requests in flight of one session ([`MAX_HELD_BYTES`] at most).
#[derive(Debug)]
pub struct InFlight {
    held: AtomicUsize,
    max: usize,
}

/// The weight one request in flight holds, given back when the last handle on it is dropped
/// (its call's end: the server keeps one on the call's thread).
#[derive(Debug)]
pub struct Held {
    budget: Arc<InFlight>,
    bytes: usize,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.held.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

impl InFlight {
    /// A budget of `max` bytes.
    pub fn new(max: usize) -> Arc<InFlight> {
        Arc::new(InFlight {
            held: AtomicUsize::new(0),
            max,
        })
    }

    /// Takes `bytes` when they fit; otherwise says how much is held now.
    pub fn take(self: &Arc<Self>, bytes: usize) -> Result<Held, usize> {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes).filter(|total| *total <= self.max)
            })
            .map(|_| Held {
                budget: Arc::clone(self),
                bytes,
            })
    }

    /// Bytes held now.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }
}

/// About the bytes `value` takes in memory once parsed: its strings, and each value, array
/// element and object entry at what `serde_json` spends on it. Recursion is bounded by
/// [`screen::MAX_DEPTH`], checked before rmcp parsed it.
pub fn weight(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    /// A `Value` (32 bytes) and its share of the spare room of the `Vec` that holds it.
    const NODE: usize = 64;
    /// An object entry: its key's `String` and its share of a B-tree node, half full at worst.
    const ENTRY: usize = 2 * NODE;
    match value {
        Value::String(s) => NODE.saturating_add(s.len()),
        Value::Array(items) => items
            .iter()
            .fold(NODE, |sum, v| sum.saturating_add(weight(v))),
        Value::Object(map) => map.iter().fold(NODE, |sum, (k, v)| {
            sum.saturating_add(ENTRY + k.len())
                .saturating_add(weight(v))
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => NODE,
    }
}

/// The weight of a request: [`REQUEST_COST`], and a tool call's arguments.
fn request_weight(request: &ClientRequest) -> usize {
    let arguments = match request {
        ClientRequest::CallToolRequest(call) => call.params.arguments.as_ref().map_or(0, |a| {
            a.iter().fold(0usize, |sum, (k, v)| {
                sum.saturating_add(k.len()).saturating_add(weight(v))
            })
        }),
        _ => 0,
    };
    REQUEST_COST.saturating_add(arguments)
}

/// The error a request too heavy for the budget now earns.
fn busy(id: rmcp::model::RequestId, bytes: usize, held: usize, max: usize) -> Rejection {
    const MIB: usize = 1 << 20;
    let message = if bytes > max {
        format!(
            "the request is too large to run: its arguments take {} MiB once read, more than \
             the {} MiB spear holds for all the calls in flight; send smaller arguments (write \
             a large file in parts, or have a command produce it)",
            bytes.div_ceil(MIB),
            max / MIB
        )
    } else {
        format!(
            "spear is busy: the calls in flight hold {} MiB of arguments and this one needs {} \
             MiB more, past the {} MiB it holds at once; it was not run. Send it again when \
             one of your calls has answered",
            held.div_ceil(MIB),
            bytes.div_ceil(MIB),
            max / MIB
        )
    };
    Rejection {
        error: ErrorData::new(
            BUSY,
            message,
            Some(serde_json::json!({"request_bytes": bytes, "held_bytes": held, "max_bytes": max})),
        ),
        ids: vec![id],
    }
}

/// The server's stdio transport: rmcp's, reading from `reader` through [`Screened`] and writing to
/// `writer`, wrapped in [`Answering`]. Every line rmcp receives fits [`MAX_LINE_BYTES`], is UTF-8,
/// JSON, an object and at most [`screen::MAX_DEPTH`] deep; every other line is answered.
pub fn transport<R, W>(
    reader: R,
    writer: W,
) -> Answering<AsyncRwTransport<RoleServer, Screened<R>, W>>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (sender, answers) = mpsc::channel(QUEUED_ANSWERS);
    let screened = Screened {
        reader: BufReader::with_capacity(READ_CHUNK, reader),
        splitter: LineSplitter::new(MAX_LINE_BYTES),
        ready: Vec::new(),
        handed: 0,
        unsent: None,
        answers: PollSender::new(sender),
    };
    // rmcp's own limit is the same: it never meets a line it would drop for its length.
    let inner = AsyncRwTransport::new_server(screened, writer).with_max_line_length(MAX_LINE_BYTES);
    Answering {
        inner,
        answers,
        writer: None,
        budget: InFlight::new(MAX_HELD_BYTES),
    }
}

/// A reader that yields only the good lines of `R`, whole and unchanged, and sends the answer
/// each malformed line earns to its [`Answering`] transport. At the end of the input, an
/// unfinished last line (no newline) is dropped, as rmcp drops it.
pub struct Screened<R> {
    reader: BufReader<R>,
    splitter: LineSplitter,
    /// A good line being handed on, and how much of it was.
    ready: Vec<u8>,
    handed: usize,
    /// An answer not yet taken by the transport.
    unsent: Option<Rejection>,
    answers: PollSender<Rejection>,
}

impl<R: AsyncRead + Unpin> Screened<R> {
    /// Passes the answer on, when there is one and the transport can take it.
    fn poll_pass_answer(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(answer) = self.unsent.take() else {
            return Poll::Ready(());
        };
        match self.answers.poll_reserve(cx) {
            Poll::Ready(Ok(())) => {
                if self.answers.send_item(answer).is_err() {
                    tracing::warn!("a malformed request went unanswered: the transport is gone");
                }
                Poll::Ready(())
            }
            Poll::Ready(Err(_)) => {
                tracing::warn!("a malformed request went unanswered: the transport is gone");
                Poll::Ready(())
            }
            Poll::Pending => {
                self.unsent = Some(answer);
                Poll::Pending
            }
        }
    }

    /// Takes the next piece of input into the splitter; `Ok(false)` at the end of the input.
    fn poll_take(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        let available = ready!(Pin::new(&mut self.reader).poll_fill_buf(cx))?;
        if available.is_empty() {
            if self.splitter.held() > 0 {
                tracing::debug!("the input ended inside a line; it is dropped");
            }
            return Poll::Ready(Ok(false));
        }
        let (used, piece) = self.splitter.feed(available);
        Pin::new(&mut self.reader).consume(used);
        match piece {
            None => {}
            Some(Piece::Line(line)) => match screen::classify(&line) {
                Verdict::Pass => {
                    self.ready = line;
                    self.handed = 0;
                }
                Verdict::Blank => {}
                Verdict::Reject(answer) => self.reject(answer),
            },
            Some(Piece::Oversized(scan)) => self.reject(Rejection::oversized(scan)),
        }
        Poll::Ready(Ok(true))
    }

    fn reject(&mut self, answer: Rejection) {
        tracing::warn!(
            code = answer.error.code.0,
            ids = answer.ids.len(),
            "answering a malformed request: {}",
            answer.error.message
        );
        self.unsent = Some(answer);
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Screened<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            ready!(this.poll_pass_answer(cx));
            if let Some(rest) = this.ready.get(this.handed..)
                && !rest.is_empty()
            {
                let n = rest.len().min(buf.remaining());
                buf.put_slice(rest.get(..n).unwrap_or_default());
                this.handed += n;
                if this.handed == this.ready.len() {
                    this.ready = Vec::new();
                    this.handed = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if !ready!(this.poll_take(cx))? {
                // The end of the input (an answer still unsent went out above).
                return Poll::Ready(Ok(()));
            }
        }
    }
}

/// rmcp's transport `T`, with the answers its [`Screened`] reader produced written through `T`'s
/// own `send`, in the order of the lines, by one task. Closing waits (5 s at most) for the answers
/// still being written before closing `T`.
pub struct Answering<T: Transport<RoleServer>> {
    inner: T,
    answers: mpsc::Receiver<Rejection>,
    writer: Option<Writer<T::Error>>,
    /// The weight of the requests in flight.
    budget: Arc<InFlight>,
}

/// One `send` of the inner transport, not yet awaited.
type Sending<E> = Pin<Box<dyn Future<Output = Result<(), E>> + Send>>;

/// The task that writes the answers, one line's answers after another's.
struct Writer<E> {
    queue: mpsc::Sender<Vec<Sending<E>>>,
    task: JoinHandle<()>,
}

impl<E: std::error::Error + Send + 'static> Writer<E> {
    fn start() -> Writer<E> {
        let (queue, mut lines) = mpsc::channel::<Vec<Sending<E>>>(WRITING_ANSWERS);
        let task = tokio::spawn(async move {
            while let Some(sends) = lines.recv().await {
                for send in sends {
                    if let Err(e) = send.await {
                        tracing::warn!("cannot answer a malformed request: {e}");
                    }
                }
            }
        });
        Writer { queue, task }
    }
}

/// The sends that write the answers to one line.
fn sends<T: Transport<RoleServer>>(inner: &mut T, rejection: Rejection) -> Vec<Sending<T::Error>> {
    rejection
        .into_messages()
        .into_iter()
        .map(|message| Box::pin(inner.send(message)) as Sending<T::Error>)
        .collect()
}

impl<T: Transport<RoleServer> + 'static> Transport<RoleServer> for Answering<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    // Cancellation-safe, as rmcp's loop needs (it polls `receive` in a `select!`): the inner
    // `receive`, the channel and the queue's reservation are, and an answer taken is queued at
    // once, in the place reserved for it before it was taken. While the queue is full (stdout
    // does not drain), nothing more is received.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let Answering {
            inner,
            answers,
            writer,
            budget,
        } = self;
        let writer = writer.get_or_insert_with(Writer::start);
        loop {
            let Ok(place) = writer.queue.reserve().await else {
                // The writer is gone (it cannot be before the close): receive without answering.
                return inner.receive().await;
            };
            tokio::select! {
                biased;
                Some(rejection) = answers.recv() => place.send(sends(inner, rejection)),
                message = inner.receive() => {
                    // Cancellation-safe from here on: nothing below awaits before the return,
                    // but for the end of the input.
                    let mut message = message;
                    if let Some(JsonRpcMessage::Request(request)) = &mut message {
                        let bytes = request_weight(&request.request);
                        match budget.take(bytes) {
                            Ok(held) => {
                                request.request.extensions_mut().insert(Arc::new(held));
                            }
                            Err(now) => {
                                tracing::warn!(
                                    id = %request.id,
                                    bytes,
                                    held = now,
                                    "refusing a request: the requests in flight hold too much"
                                );
                                let answer = busy(request.id.clone(), bytes, now, budget.max);
                                // Dropped here: its memory goes now, its answer with the next
                                // place.
                                drop(message);
                                place.send(sends(inner, answer));
                                continue;
                            }
                        }
                    }
                    drop(place);
                    // Answers to lines read on the way to this message go to the queue now,
                    // not when `receive` is called next.
                    while let Ok(place) = writer.queue.try_reserve()
                        && let Ok(rejection) = answers.try_recv()
                    {
                        place.send(sends(inner, rejection));
                    }
                    if message.is_none() {
                        // The input ended: the last lines' answers, if any, still go out.
                        while let Ok(rejection) = answers.try_recv() {
                            if writer.queue.send(sends(inner, rejection)).await.is_err() {
                                break;
                            }
                        }
                    }
                    return message;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(Writer { queue, task }) = self.writer.take() {
            drop(queue);
            if tokio::time::timeout(CLOSE_WAIT, task).await.is_err() {
                tracing::warn!("closing with answers to malformed requests still unwritten");
            }
        }
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

    /// A transport over in-memory pipes, and the client's ends.
    fn pair() -> (
        impl Transport<RoleServer>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
        tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    ) {
        let (server, client) = tokio::io::duplex(1 << 20);
        let (server_r, server_w) = tokio::io::split(server);
        let (client_r, client_w) = tokio::io::split(client);
        (
            transport(server_r, server_w),
            client_w,
            BufReader::new(client_r).lines(),
        )
    }

    async fn next_json(
        lines: &mut tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    ) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap()
    }

    #[test]
    fn the_budget_takes_what_fits_and_gets_it_back() {
        let budget = InFlight::new(100);
        let a = budget.take(60).unwrap();
        assert_eq!(budget.take(41).unwrap_err(), 60, "over the budget");
        let b = budget.take(40).unwrap();
        assert_eq!(budget.held(), 100);
        drop(a);
        assert_eq!(budget.held(), 40);
        let shared = Arc::new(b);
        let other = Arc::clone(&shared);
        drop(shared);
        assert_eq!(budget.held(), 40, "held while a handle remains");
        drop(other);
        assert_eq!(budget.held(), 0);
        assert!(budget.take(usize::MAX).is_err());
    }

    #[test]
    fn a_value_weighs_at_least_what_it_takes() {
        let s = "x".repeat(1 << 20);
        assert!(weight(&json!(s)) >= 1 << 20);
        // A million small numbers: 32 MiB or more as values, whatever their few bytes.
        let many = serde_json::Value::Array(vec![json!(0); 1 << 20]);
        assert!(weight(&many) >= 32 << 20);
        let entries: serde_json::Map<String, Value> =
            (0..1000).map(|i| (format!("k{i}"), json!(null))).collect();
        assert!(weight(&Value::Object(entries)) >= 1000 * 96);
    }

    #[tokio::test]
    async fn answers_malformed_lines_and_hands_on_the_good_ones() {
        let (mut transport, mut client, mut lines) = pair();
        let good = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let mut input = Vec::new();
        input.extend_from_slice(b"not json\n\n");
        input.extend_from_slice(br#"{"jsonrpc":"2.0","id":5,"method":"ping","params":{"a":"#);
        input.extend_from_slice(b"\"\xFF\"}}\n");
        input.extend_from_slice(good);
        input.push(b'\n');
        let writer = tokio::spawn(async move {
            client.write_all(&input).await.unwrap();
            client.shutdown().await.unwrap();
        });
        let received = transport.receive().await.expect("the good line");
        assert_eq!(
            serde_json::to_value(&received).unwrap()["method"],
            "notifications/initialized"
        );
        let first = next_json(&mut lines).await;
        assert_eq!(first["error"]["code"], -32700, "{first}");
        assert!(first.get("id").is_none(), "{first}");
        let second = next_json(&mut lines).await;
        assert_eq!(second["id"], 5, "{second}");
        assert_eq!(second["error"]["code"], -32700, "{second}");
        assert!(
            second["error"]["message"]
                .as_str()
                .unwrap()
                .contains("not valid UTF-8"),
            "{second}"
        );
        writer.await.unwrap();
        assert!(transport.receive().await.is_none(), "the end of the input");
        transport.close().await.unwrap();
    }

    #[tokio::test]
    async fn an_oversized_line_is_answered_with_its_id_and_never_held() {
        let (mut transport, mut client, mut lines) = pair();
        let writer = tokio::spawn(async move {
            client
                .write_all(br#"{"jsonrpc":"2.0","method":"tools/call","params":{"s":""#)
                .await
                .unwrap();
            let block = vec![b'x'; 1 << 20];
            for _ in 0..17 {
                client.write_all(&block).await.unwrap();
            }
            client.write_all(b"\"},\"id\":\"last\"}\n").await.unwrap();
            client
                .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
                .await
                .unwrap();
            client
        });
        let received = transport.receive().await.expect("the good line after it");
        assert_eq!(
            serde_json::to_value(&received).unwrap()["method"],
            "notifications/initialized"
        );
        let answer = next_json(&mut lines).await;
        assert_eq!(
            answer,
            json!({"jsonrpc": "2.0", "id": "last", "error": {"code": -32600, "message":
                "the request is larger than 16 MiB (16777216 bytes, its newline included); it was not read"}})
        );
        drop(writer.await.unwrap());
        transport.close().await.unwrap();
    }

    #[tokio::test]
    async fn answers_to_the_last_lines_go_out_before_the_close() {
        let (server, client) = tokio::io::duplex(1 << 16);
        let (server_r, server_w) = tokio::io::split(server);
        let (client_r, mut client_w) = tokio::io::split(client);
        let mut transport = transport(server_r, server_w);
        client_w.write_all(b"42\n[]\n").await.unwrap();
        client_w.shutdown().await.unwrap();
        assert!(transport.receive().await.is_none());
        transport.close().await.unwrap();
        // The server's end of the pipe closes with the whole transport.
        drop(transport);
        let mut lines = BufReader::new(client_r).lines();
        let mut codes = Vec::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&line).unwrap();
            codes.push(v["error"]["code"].clone());
        }
        assert_eq!(codes, vec![json!(-32600), json!(-32600)]);
    }
}
