//! The verdict on one line from the client, and the error a malformed one earns. Pure.
//!
//! rmcp 3.11 drops, with no answer, a line over its limit, a line that is not UTF-8, not JSON, or
//! nested deeper than `serde_json`'s recursion limit (128): the client then waits for ever. Every
//! such line is answered here instead, with the JSON-RPC code for what is wrong and a message that
//! says it and the limit:
//!
//! | the line | code |
//! |---|---|
//! | over `MAX_LINE_BYTES` | -32600 (invalid request) |
//! | not UTF-8 | -32700 (parse error) |
//! | nested deeper than [`MAX_DEPTH`] | -32700 |
//! | heavier than [`MAX_PARSED_BYTES`] once parsed ([`parsed_weight`]) | -32600 |
//! | not JSON | -32700 |
//! | a batch (a JSON array) | -32600 |
//! | JSON but not an object (`42`) | -32600 |
//!
//! The answer carries the request's id when it can be read ([`crate::scan`]), one answer per
//! readable id for a batch; otherwise it has no id, as MCP says of an error whose request id
//! cannot be read (MCP's request ids are never `null`). A blank line is no message and gets no
//! answer. Every other line, an object, goes to rmcp untouched; rmcp answers an object that is
//! not a JSON-RPC message itself (-32600).

use rmcp::model::{ErrorCode, ErrorData, RequestId, ServerJsonRpcMessage};
use serde::Deserializer;
use serde::de::{self, MapAccess, SeqAccess, Visitor};

use crate::scan::{BOM, Scan, Scanner, Top, is_whitespace};

/// The longest line read, its newline included: rmcp's own default
/// ([`rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH`]), 16 MiB.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The most memory a line may take once parsed, by [`parsed_weight`]: a line of 16 MiB of
/// small numbers (`[0,0,0,...]`) would take 16 times its size as `serde_json` values, so a line is
/// weighed by its values, not only its bytes, before anything parses it.
pub const MAX_PARSED_BYTES: usize = 32 * 1024 * 1024;

/// What one value, array element or object entry costs once parsed, besides its bytes.
const VALUE_COST: usize = 64;

/// About the bytes `body` takes once parsed: its own, and [`VALUE_COST`] for each value (counted
/// by the commas, colons and brackets outside strings). One pass, no allocation.
pub fn parsed_weight(body: &[u8]) -> usize {
    let (mut in_string, mut escaped, mut values) = (false, false, 1usize);
    for &b in body {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else {
            match b {
                b'"' => in_string = true,
                b',' | b':' | b'[' | b'{' => values = values.saturating_add(1),
                _ => {}
            }
        }
    }
    body.len().saturating_add(values.saturating_mul(VALUE_COST))
}

/// The deepest nesting of objects and arrays parsed; well under `serde_json`'s recursion limit
/// (which rmcp's parse hits at 128), so that a line that passes here also parses there.
pub const MAX_DEPTH: usize = 100;

/// What to do with a line.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// A JSON object within the limits: rmcp reads it.
    Pass,
    /// Nothing but whitespace: not a message, no answer.
    Blank,
    /// Malformed: answered here, never read by rmcp.
    Reject(Rejection),
}

/// The error a malformed line earns.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The JSON-RPC error code and message.
    pub error: ErrorData,
    /// The ids of the requests in the line that could be read (none, one, or a batch's).
    pub ids: Vec<RequestId>,
}

impl Rejection {
    fn new(code: ErrorCode, message: String, scan: Scan) -> Rejection {
        Rejection {
            error: ErrorData::new(code, message, None),
            ids: scan.ids,
        }
    }

    /// The answer to a line over `MAX_LINE_BYTES`, given what its scan showed.
    pub fn oversized(scan: Scan) -> Rejection {
        Rejection::new(
            ErrorCode::INVALID_REQUEST,
            format!(
                "the request is larger than 16 MiB ({MAX_LINE_BYTES} bytes, its newline \
                 included); it was not read"
            ),
            scan,
        )
    }

    /// The error responses to write: one per readable id, or one without an id.
    pub fn into_messages(self) -> Vec<ServerJsonRpcMessage> {
        if self.ids.is_empty() {
            return vec![ServerJsonRpcMessage::error(self.error, None)];
        }
        let error = self.error;
        self.ids
            .into_iter()
            .map(|id| ServerJsonRpcMessage::error(error.clone(), Some(id)))
            .collect()
    }
}

/// The verdict on `line` (with or without its newline), which fits `MAX_LINE_BYTES`.
pub fn classify(line: &[u8]) -> Verdict {
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    let body = body.strip_suffix(b"\r").unwrap_or(body);
    let body = body.strip_prefix(BOM.as_slice()).unwrap_or(body);
    if body.iter().all(|b| is_whitespace(*b)) {
        return Verdict::Blank;
    }
    let scan = Scanner::scan(body);
    match problem(body, &scan) {
        Some((code, message)) => Verdict::Reject(Rejection::new(code, message, scan)),
        None => Verdict::Pass,
    }
}

/// What is wrong with `body` (a line without its newline, not blank), given its scan.
fn problem(body: &[u8], scan: &Scan) -> Option<(ErrorCode, String)> {
    if std::str::from_utf8(body).is_err() {
        return Some((
            ErrorCode::PARSE_ERROR,
            "the request is not valid UTF-8".to_owned(),
        ));
    }
    // Before any parse: the depth is counted without recursion.
    if scan.max_depth > MAX_DEPTH {
        return Some((
            ErrorCode::PARSE_ERROR,
            format!("the request is nested deeper than {MAX_DEPTH} levels of objects and arrays"),
        ));
    }
    let weight = parsed_weight(body);
    if weight > MAX_PARSED_BYTES {
        return Some((
            ErrorCode::INVALID_REQUEST,
            format!(
                "the request would take about {} MiB once parsed, more than the {} MiB spear \
                 parses of one request (its values are many and small); it was not read: send \
                 the data in fewer, larger values, or in several requests",
                weight.div_ceil(1 << 20),
                MAX_PARSED_BYTES >> 20
            ),
        ));
    }
    if let Err(e) = serde_json::from_slice::<Checked>(body) {
        return Some((
            ErrorCode::PARSE_ERROR,
            format!("the request is not JSON: {e}"),
        ));
    }
    match scan.top {
        Top::Object => None,
        Top::Array => Some((
            ErrorCode::INVALID_REQUEST,
            "the request is a batch (a JSON array), which spear does not accept (MCP has had \
             no batches since 2025-06-18): send each message as an object on a line of its own"
                .to_owned(),
        )),
        Top::Nothing | Top::Other => Some((
            ErrorCode::INVALID_REQUEST,
            format!(
                "the request is {}, not a JSON-RPC message (an object)",
                kind_of(body)
            ),
        )),
    }
}

/// Any JSON value, read all the way down: every string decoded (a lone surrogate escape is an
/// error) and every number converted (`1e400` is), as rmcp's typed parse does, so that a line
/// passed here meets no syntax error there. (`serde::de::IgnoredAny` skips both.) Its recursion
/// is bounded by [`MAX_DEPTH`], checked before.
struct Checked;

impl<'de> serde::Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Checked, D::Error> {
        deserializer.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_entry::<Checked, Checked>()?.is_some() {}
        Ok(Checked)
    }
}

/// What a valid JSON value that is neither an object nor an array is, from its first byte.
fn kind_of(body: &[u8]) -> &'static str {
    match body.iter().find(|b| !is_whitespace(**b)) {
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_line_is_weighed_by_its_values_before_it_is_parsed() {
        assert_eq!(
            parsed_weight(br#""a,b:[{""#),
            8 + 64,
            "inside a string, nothing counts"
        );
        assert_eq!(parsed_weight(b"[1,2]"), 5 + 3 * 64);
        assert_eq!(
            parsed_weight(br#""\",""#),
            5 + 64,
            "an escaped quote does not end it"
        );
        // 8 MiB of zeros in an array: refused before any parse, with its id.
        let mut line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":["#.to_vec();
        for _ in 0..(4 << 20) {
            line.extend_from_slice(b"0,");
        }
        line.extend_from_slice(b"0]}}");
        let Verdict::Reject(r) = classify(&line) else {
            panic!("passed");
        };
        assert_eq!(r.error.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(r.ids, vec![RequestId::Number(7)]);
        assert!(
            r.error.message.contains("once parsed"),
            "{}",
            r.error.message
        );
        // The same bytes as one string pass.
        let mut line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":""#.to_vec();
        line.extend(std::iter::repeat_n(b'0', 8 << 20));
        line.extend_from_slice(br#""}}"#);
        assert_eq!(classify(&line), Verdict::Pass);
    }
    use serde_json::{Value, json};

    fn nested(depth: usize) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"a":{}{}}}}}"#,
            "[".repeat(depth - 2),
            "]".repeat(depth - 2)
        )
    }

    /// A line; the code and a piece of the message it earns (none: it passes); the ids answered.
    type Case<'a> = (&'a [u8], Option<(i32, &'a str)>, Vec<RequestId>);

    #[test]
    fn classifies_lines() {
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let mut not_utf8 = br#"{"jsonrpc":"2.0","id":2,"method":"x","params":{"s":""#.to_vec();
        not_utf8.extend_from_slice(b"\xC3\x28\"}}");
        let deep = nested(100_000);
        let at_limit = nested(MAX_DEPTH);
        let past_limit = nested(MAX_DEPTH + 1);
        let cases: Vec<Case<'_>> = vec![
            (ping, None, vec![]),
            (b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\r\n", None, vec![]),
            (b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\n", None, vec![]),
            // An object that is not a JSON-RPC message is rmcp's to answer.
            (br#"{"foo":"bar"}"#, None, vec![]),
            (at_limit.as_bytes(), None, vec![]),
            (
                &not_utf8,
                Some((-32700, "not valid UTF-8")),
                vec![RequestId::Number(2)],
            ),
            (b"\xFF\xFE\n", Some((-32700, "not valid UTF-8")), vec![]),
            (
                deep.as_bytes(),
                Some((-32700, "nested deeper than 100 levels")),
                vec![RequestId::Number(1)],
            ),
            (
                past_limit.as_bytes(),
                Some((-32700, "nested deeper than 100 levels")),
                vec![RequestId::Number(1)],
            ),
            (b"[[[[[[[[[[", Some((-32700, "not JSON")), vec![]),
            (
                b"not json\n",
                Some((-32700, "the request is not JSON: expected")),
                vec![],
            ),
            (
                br#"{"jsonrpc":"2.0","id":"t","method":"ping",}"#,
                Some((-32700, "the request is not JSON: ")),
                vec![RequestId::String("t".into())],
            ),
            (br#"{"id":1,"method":"x"} {}"#, Some((-32700, "not JSON: trailing characters")), vec![RequestId::Number(1)]),
            // What a parse that skips values would let through, and rmcp's would drop.
            (
                br#"{"jsonrpc":"2.0","id":12,"method":"x","params":{"s":"\ud800"}}"#,
                Some((-32700, "the request is not JSON: unexpected end of hex escape")),
                vec![RequestId::Number(12)],
            ),
            (
                br#"{"jsonrpc":"2.0","id":13,"method":"x","params":{"n":[1e400]}}"#,
                Some((-32700, "the request is not JSON: number out of range")),
                vec![RequestId::Number(13)],
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"x\",\"params\":{\"s\":\"a\tb\"}}",
                Some((-32700, "the request is not JSON: control character")),
                vec![RequestId::Number(14)],
            ),
            (b"42\n", Some((-32600, "the request is a number, not a JSON-RPC message")), vec![]),
            (b" \"hi\"", Some((-32600, "a string, not")), vec![]),
            (b"true", Some((-32600, "a boolean, not")), vec![]),
            (b"null", Some((-32600, "null, not")), vec![]),
            (b"[]", Some((-32600, "a batch")), vec![]),
            (
                br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"b","method":"ping"}]"#,
                Some((-32600, "a batch (a JSON array), which spear does not accept")),
                vec![RequestId::Number(1), RequestId::String("b".into())],
            ),
        ];
        for (line, want, ids) in cases {
            let shown = String::from_utf8_lossy(line);
            let shown = shown.get(..shown.len().min(120)).unwrap_or_default();
            match (classify(line), want) {
                (Verdict::Pass, None) => {}
                (Verdict::Reject(r), Some((code, message))) => {
                    assert_eq!(r.error.code.0, code, "{shown}: {}", r.error.message);
                    assert!(
                        r.error.message.contains(message),
                        "{shown}: {}",
                        r.error.message
                    );
                    assert_eq!(r.ids, ids, "{shown}");
                }
                (got, _) => panic!("{shown}: {got:?}"),
            }
        }
    }

    #[test]
    fn blank_lines_are_no_message() {
        for line in [&b""[..], b"\n", b"\r\n", b"  \t \n", b"\xEF\xBB\xBF\n"] {
            assert_eq!(classify(line), Verdict::Blank, "{line:?}");
        }
    }

    /// A UTF-8 byte-order mark at a line's start is set aside, as rmcp's own reader sets it aside
    /// (RFC 8259 §8.1 lets a parser ignore it; Windows tools write one): alone it is a blank line,
    /// before a request it passes, and rmcp then reads the request. Anywhere else it is not
    /// whitespace, and the line is answered as malformed. (Found by `scripts/fuzz.sh`: the fuzz
    /// target held blank lines to whitespace only; the target now sets the mark aside too.)
    #[test]
    fn a_byte_order_mark_at_the_start_is_set_aside() {
        assert_eq!(classify(b"\xEF\xBB\xBF"), Verdict::Blank);
        assert_eq!(classify(b"\xEF\xBB\xBF \t\r\n"), Verdict::Blank);
        let request = b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        assert_eq!(classify(request), Verdict::Pass);
        // Positive control of the refusal: the same mark later in the line, or twice.
        for line in [
            &b" \xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"[..],
            b"\xEF\xBB\xBF\xEF\xBB\xBF{}\n",
            b"{}\xEF\xBB\xBF\n",
        ] {
            assert!(matches!(classify(line), Verdict::Reject(_)), "{line:?}");
        }
    }

    #[test]
    fn what_passes_here_parses_in_rmcp() {
        // rmcp parses with serde_json's default recursion limit: the deepest line passed must
        // parse there, or it would be dropped unanswered.
        let at_limit = nested(MAX_DEPTH);
        assert_eq!(classify(at_limit.as_bytes()), Verdict::Pass);
        serde_json::from_str::<Value>(&at_limit).unwrap();
    }

    #[test]
    fn answers_carry_the_ids_or_none() {
        let error = ErrorData::new(ErrorCode::PARSE_ERROR, "bad", None);
        let none = Rejection {
            error: error.clone(),
            ids: vec![],
        };
        let as_json = |r: Rejection| -> Vec<Value> {
            r.into_messages()
                .iter()
                .map(|m| serde_json::to_value(m).unwrap())
                .collect()
        };
        assert_eq!(
            as_json(none),
            vec![json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "bad"}})]
        );
        let two = Rejection {
            error,
            ids: vec![RequestId::Number(4), RequestId::String("x".into())],
        };
        assert_eq!(
            as_json(two),
            vec![
                json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32700, "message": "bad"}}),
                json!({"jsonrpc": "2.0", "id": "x", "error": {"code": -32700, "message": "bad"}}),
            ]
        );
        let big = Rejection::oversized(Scan {
            top: Top::Object,
            max_depth: 1,
            ids: vec![RequestId::Number(9)],
        });
        assert_eq!(big.error.code, ErrorCode::INVALID_REQUEST);
        assert!(big.error.message.contains("larger than 16 MiB"));
        assert_eq!(big.ids, vec![RequestId::Number(9)]);
        assert_eq!(
            MAX_LINE_BYTES,
            rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH
        );
    }
}
