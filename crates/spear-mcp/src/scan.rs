//! What can be read from the bytes of a line without parsing it: the shape of its top-level
//! value, how deep it nests, and the `id` of each request in it. Pure, one pass, no recursion.
//!
//! The line may be too large to hold, not UTF-8, not JSON or nested without end: the scanner is
//! fed it in pieces of any size, holds a fixed amount of state (a depth counter, a few flags and
//! one short token), and never fails. It is what lets a malformed request be answered with its
//! own id when that id can be read.
//!
//! An id is read only from a message object (the top-level object, or each object element of a
//! top-level array) that also has a `method` key: a line with an id and no method is a response
//! to the server, and the server must not answer a response with an error carrying the id of its
//! own request. A message with two `id` keys, or an id that is neither a string nor an integer,
//! has no readable id.

use rmcp::model::RequestId;

/// The longest key that can be read (`"id"` and `"method"`, even fully `\u`-escaped, fit).
const MAX_KEY_BYTES: usize = 64;
/// The longest id token that can be read, quotes included.
const MAX_ID_BYTES: usize = 1024;
/// The most ids read from one line (a batch); the rest are not read.
pub const MAX_IDS: usize = 10_000;

/// The UTF-8 byte order mark, which a line may begin with (RFC 8259 §8.1; rmcp skips it too).
pub const BOM: &[u8; 3] = b"\xEF\xBB\xBF";

/// The first thing in a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Top {
    /// Nothing but whitespace (or nothing).
    Nothing,
    /// `{`: one message.
    Object,
    /// `[`: a batch.
    Array,
    /// Anything else: a string, number, literal, or not JSON at all.
    Other,
}

/// What a whole line showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// The first thing in it.
    pub top: Top,
    /// The deepest nesting of objects and arrays (brackets outside strings), `[]` being 1.
    pub max_depth: usize,
    /// The readable ids of the requests in it, in order, at most [`MAX_IDS`].
    pub ids: Vec<RequestId>,
}

/// A streaming scanner: [`Scanner::feed`] the line in pieces, then [`Scanner::finish`].
#[derive(Debug, Default)]
pub struct Scanner {
    /// Bytes seen so far (to skip a leading byte order mark).
    seen: usize,
    top: Option<Top>,
    depth: usize,
    max_depth: usize,
    in_string: bool,
    escaped: bool,
    /// The depth inside a message object: 1 for a top-level object, 2 in a batch, 0 for none.
    message_depth: usize,
    /// The message object open now, if any.
    message: Option<Message>,
    /// The token being kept, at message level.
    token: Option<Token>,
    ids: Vec<RequestId>,
}

#[derive(Debug, Default)]
struct Message {
    expect: Expect,
    id: IdSlot,
    has_method: bool,
}

/// Where a message object's grammar stands: `{ key : value , key : value }`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Expect {
    #[default]
    Key,
    Colon(Key),
    Value(Key),
    /// A value is under way or done; the next `,` starts a key.
    Next,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Id,
    Method,
    Other,
}

#[derive(Debug, Default)]
enum IdSlot {
    #[default]
    Absent,
    Read(RequestId),
    Unreadable,
}

#[derive(Debug)]
struct Token {
    kind: TokenKind,
    bytes: Vec<u8>,
    /// The token outgrew its limit: it cannot be read.
    overflow: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenKind {
    Key,
    IdString,
    IdNumber,
}

impl Token {
    fn new(kind: TokenKind, first: u8) -> Token {
        Token {
            kind,
            bytes: vec![first],
            overflow: false,
        }
    }

    fn push(&mut self, b: u8) {
        let limit = if self.kind == TokenKind::Key {
            MAX_KEY_BYTES
        } else {
            MAX_ID_BYTES
        };
        if self.bytes.len() < limit {
            self.bytes.push(b);
        } else {
            self.overflow = true;
        }
    }
}

impl Scanner {
    /// A scanner at the start of a line.
    pub fn new() -> Scanner {
        Scanner::default()
    }

    /// Everything the scanner can tell about `line`, scanned whole.
    pub fn scan(line: &[u8]) -> Scan {
        let mut scanner = Scanner::new();
        scanner.feed(line);
        scanner.finish()
    }

    /// The next piece of the line.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    /// What the line showed. A message still open at the end (a truncated line) counts as it
    /// stands.
    pub fn finish(mut self) -> Scan {
        if self
            .token
            .as_ref()
            .is_some_and(|t| t.kind == TokenKind::IdNumber)
        {
            self.token_ended();
        }
        self.message_ended();
        Scan {
            top: self.top.unwrap_or(Top::Nothing),
            max_depth: self.max_depth,
            ids: self.ids,
        }
    }

    fn byte(&mut self, b: u8) {
        let at = self.seen;
        self.seen = self.seen.saturating_add(1);
        if self.in_string {
            if let Some(token) = &mut self.token {
                token.push(b);
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                self.token_ended();
            }
            return;
        }
        if let Some(token) = &mut self.token {
            // Only a number is kept outside a string: it ends at the first byte not its own.
            if matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                token.push(b);
                return;
            }
            self.token_ended();
        }
        if self.top.is_none() {
            if is_whitespace(b) || (at < BOM.len() && BOM.get(at) == Some(&b)) {
                return;
            }
            let top = match b {
                b'{' => Top::Object,
                b'[' => Top::Array,
                _ => Top::Other,
            };
            self.top = Some(top);
            self.message_depth = match top {
                Top::Object => 1,
                Top::Array => 2,
                Top::Nothing | Top::Other => 0,
            };
        }
        let at_message_level = self.message.is_some() && self.depth == self.message_depth;
        match b {
            b'"' => {
                self.in_string = true;
                if at_message_level {
                    self.value_starts(b, |expect| match expect {
                        Expect::Key => Some(TokenKind::Key),
                        Expect::Value(Key::Id) => Some(TokenKind::IdString),
                        _ => None,
                    });
                }
            }
            b'{' | b'[' => {
                if at_message_level {
                    self.value_starts(b, |_| None);
                }
                self.depth = self.depth.saturating_add(1);
                self.max_depth = self.max_depth.max(self.depth);
                if b == b'{' && self.depth == self.message_depth && self.message.is_none() {
                    self.message = Some(Message::default());
                }
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth < self.message_depth {
                    self.message_ended();
                }
            }
            b':' if at_message_level => {
                if let Some(m) = &mut self.message
                    && let Expect::Colon(key) = m.expect
                {
                    m.expect = Expect::Value(key);
                }
            }
            b',' if at_message_level => {
                if let Some(m) = &mut self.message {
                    m.expect = Expect::Key;
                }
            }
            b'0'..=b'9' | b'-' if at_message_level => {
                self.value_starts(b, |expect| {
                    (expect == Expect::Value(Key::Id)).then_some(TokenKind::IdNumber)
                });
            }
            _ if is_whitespace(b) || !at_message_level => {}
            // A literal (true, false, null) or a stray byte where a value goes.
            _ => self.value_starts(b, |_| None),
        }
    }

    /// A token begins at message level with byte `b`: keep it when `keep` says which kind it is;
    /// a value that is not kept is passed over (an `id` that is not kept cannot be read).
    fn value_starts(&mut self, b: u8, keep: impl Fn(Expect) -> Option<TokenKind>) {
        let Some(m) = &mut self.message else {
            return;
        };
        if let Some(kind) = keep(m.expect) {
            self.token = Some(Token::new(kind, b));
        } else if let Expect::Value(key) = m.expect {
            if key == Key::Id {
                m.id = IdSlot::Unreadable;
            }
            m.expect = Expect::Next;
        }
    }

    /// The kept token is complete.
    fn token_ended(&mut self) {
        let Some(token) = self.token.take() else {
            return;
        };
        let Some(m) = &mut self.message else {
            return;
        };
        match token.kind {
            TokenKind::Key => {
                let key = if token.overflow {
                    Key::Other
                } else {
                    match serde_json::from_slice::<String>(&token.bytes).as_deref() {
                        Ok("id") => Key::Id,
                        Ok("method") => Key::Method,
                        _ => Key::Other,
                    }
                };
                if key == Key::Method {
                    m.has_method = true;
                }
                m.expect = Expect::Colon(key);
            }
            TokenKind::IdString | TokenKind::IdNumber => {
                let id = if token.overflow {
                    None
                } else {
                    // rmcp's own reading of an id: a string, or an integer (`1.0` included).
                    serde_json::from_slice::<RequestId>(&token.bytes).ok()
                };
                m.id = match (&m.id, id) {
                    (IdSlot::Absent, Some(id)) => IdSlot::Read(id),
                    _ => IdSlot::Unreadable,
                };
                m.expect = Expect::Next;
            }
        }
    }

    /// The open message object ends: keep its id if it is a request's.
    fn message_ended(&mut self) {
        if let Some(Message {
            id: IdSlot::Read(id),
            has_method: true,
            ..
        }) = self.message.take()
            && self.ids.len() < MAX_IDS
        {
            self.ids.push(id);
        }
        self.token = None;
    }
}

/// JSON's whitespace.
pub fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn num(n: i64) -> RequestId {
        RequestId::Number(n)
    }

    fn text(s: &str) -> RequestId {
        RequestId::String(s.into())
    }

    #[test]
    fn reads_the_ids_of_requests_only() {
        let cases: &[(&[u8], &[RequestId])] = &[
            (br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#, &[num(7)]),
            (br#"{"method":"ping","id":"a-1"}"#, &[text("a-1")]),
            (br#"{ "id" : -3 , "method" : "x" }"#, &[num(-3)]),
            (br#"{"id":1.0,"method":"x"}"#, &[num(1)]),
            (br#"{"\u0069d":5,"method":"x"}"#, &[num(5)]),
            (br#"{"id":"q\"uote","method":"x"}"#, &[text("q\"uote")]),
            (b"\xEF\xBB\xBF{\"id\":2,\"method\":\"x\"}", &[num(2)]),
            // The id last, after a large params (how the TypeScript SDK writes it).
            (
                br#"{"method":"tools/call","params":{"id":99,"a":[1,{"id":98}]},"id":4}"#,
                &[num(4)],
            ),
            // A response (no method): its id is the server's own request's.
            (br#"{"jsonrpc":"2.0","id":0,"result":{}}"#, &[]),
            // A notification.
            (br#"{"method":"notifications/initialized"}"#, &[]),
            // Ids that cannot be read.
            (br#"{"id":1.5,"method":"x"}"#, &[]),
            (br#"{"id":null,"method":"x"}"#, &[]),
            (br#"{"id":true,"method":"x"}"#, &[]),
            (br#"{"id":{"n":1},"method":"x"}"#, &[]),
            (br#"{"id":[1],"method":"x"}"#, &[]),
            (br#"{"id":1,"id":2,"method":"x"}"#, &[]),
            (br#"{"id":99999999999999999999,"method":"x"}"#, &[]),
            // Only the top level counts.
            (br#"{"method":"x","params":{"id":3}}"#, &[]),
            (br#"{"method":"x","params":"\"id\":3"}"#, &[]),
            // A batch: each request's id.
            (
                br#"[{"id":1,"method":"a"},{"method":"n"},{"id":2,"method":"b"},3,[{"id":4,"method":"c"}]]"#,
                &[num(1), num(2)],
            ),
            // Not JSON, or broken after the id: still read.
            (br#"{"id":8,"method":"x","params":{,,}"#, &[num(8)]),
            (b"{\"id\":9,\"method\":\"x\",\"p\":\"\xFF\xFE\"}", &[num(9)]),
            (br#"{"id":10,"method":"tools/call","params":{"a":[[[["#, &[num(10)]),
            (br#"{"id":11,"method""#, &[num(11)]),
            // Not an object at all.
            (br#""id":1,"method":"x""#, &[]),
            (b"42", &[]),
            (b"id 5 method", &[]),
            (b"", &[]),
        ];
        for (line, want) in cases {
            let scan = Scanner::scan(line);
            assert_eq!(scan.ids, want.to_vec(), "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn sees_the_top_and_the_depth() {
        let cases: &[(&[u8], Top, usize)] = &[
            (b"", Top::Nothing, 0),
            (b" \t\r\n", Top::Nothing, 0),
            (b"{}", Top::Object, 1),
            (b"  {\"a\":[1,{\"b\":[]}]}", Top::Object, 4),
            (b"[]", Top::Array, 1),
            (b"[[[\"]]]]]]]]\"]]]", Top::Array, 3),
            (b"42", Top::Other, 0),
            (b"\"{{{\"", Top::Other, 0),
            (b"null", Top::Other, 0),
            (b"\xEF\xBB\xBF[1]", Top::Array, 1),
            (b"\xFF{", Top::Other, 1),
        ];
        for (line, top, depth) in cases {
            let scan = Scanner::scan(line);
            assert_eq!(
                (scan.top, scan.max_depth),
                (*top, *depth),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        let deep = "[".repeat(100_000);
        assert_eq!(Scanner::scan(deep.as_bytes()).max_depth, 100_000);
    }

    #[test]
    fn pieces_of_any_size_read_the_same() {
        let line = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"s":"a\\\"b","id":[1]},"id":"x\u00e9"}"#;
        let whole = Scanner::scan(line);
        assert_eq!(whole.ids, vec![text("x\u{e9}")]);
        for size in 1..line.len() {
            let mut scanner = Scanner::new();
            for piece in line.chunks(size) {
                scanner.feed(piece);
            }
            assert_eq!(scanner.finish(), whole, "pieces of {size}");
        }
    }

    #[test]
    fn long_tokens_are_not_read_and_ids_are_capped() {
        let long = format!(r#"{{"id":"{}","method":"x"}}"#, "a".repeat(MAX_ID_BYTES));
        assert!(Scanner::scan(long.as_bytes()).ids.is_empty());
        let long_key = format!(r#"{{"{}":1,"id":2,"method":"x"}}"#, "k".repeat(1000));
        assert_eq!(Scanner::scan(long_key.as_bytes()).ids, vec![num(2)]);
        let batch = format!(
            "[{}]",
            vec![r#"{"id":1,"method":"x"}"#; MAX_IDS + 5].join(",")
        );
        assert_eq!(Scanner::scan(batch.as_bytes()).ids.len(), MAX_IDS);
    }
}
