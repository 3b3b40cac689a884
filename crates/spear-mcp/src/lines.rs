//! Cutting the client's byte stream into lines, in bounded memory. Pure: the caller brings the
//! bytes.
//!
//! A line is held whole only while it fits the limit (its newline counted, as rmcp counts it). A
//! line that outgrows it is let go at once and only scanned from then on ([`crate::scan`]), so
//! that it can still be answered with its id: an oversized line costs the limit and a few
//! hundred bytes, never more, however long it is.

use crate::scan::{Scan, Scanner};

/// A complete line.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece {
    /// A line within the limit, its newline included.
    Line(Vec<u8>),
    /// A line over the limit, discarded; what its scan showed.
    Oversized(Scan),
}

/// Cuts lines of at most `limit` bytes (newline included) out of a stream fed in pieces.
#[derive(Debug)]
pub struct LineSplitter {
    limit: usize,
    line: Vec<u8>,
    /// Set while the line under way is over the limit: its bytes go here instead.
    oversized: Option<Scanner>,
}

impl LineSplitter {
    /// A splitter at the start of a line.
    pub fn new(limit: usize) -> LineSplitter {
        LineSplitter {
            limit,
            line: Vec::new(),
            oversized: None,
        }
    }

    /// Takes bytes from the front of `input`, up to and including its first newline, and says
    /// how many it took and the line they completed, if they did. Bytes after the newline are
    /// left for the next call.
    pub fn feed(&mut self, input: &[u8]) -> (usize, Option<Piece>) {
        let newline = input.iter().position(|b| *b == b'\n');
        let take = newline.map_or(input.len(), |at| at + 1);
        let part = input.get(..take).unwrap_or(input);
        if let Some(scanner) = &mut self.oversized {
            scanner.feed(part);
        } else if self.line.len().saturating_add(take) > self.limit {
            let mut scanner = Scanner::new();
            scanner.feed(&self.line);
            scanner.feed(part);
            // Let the memory go, not only the bytes.
            self.line = Vec::new();
            self.oversized = Some(scanner);
        } else {
            self.line.extend_from_slice(part);
        }
        if newline.is_none() {
            return (take, None);
        }
        let piece = match self.oversized.take() {
            Some(scanner) => Piece::Oversized(scanner.finish()),
            None => Piece::Line(std::mem::take(&mut self.line)),
        };
        (take, Some(piece))
    }

    /// Bytes of an unfinished line held now (0 once it is over the limit).
    pub fn held(&self) -> usize {
        self.line.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::scan::Top;
    use rmcp::model::RequestId;

    /// Every piece `input` yields when fed `chunk` bytes at a time.
    fn split(limit: usize, input: &[u8], chunk: usize) -> Vec<Piece> {
        let mut splitter = LineSplitter::new(limit);
        let mut pieces = Vec::new();
        for mut part in input.chunks(chunk) {
            while !part.is_empty() {
                let (used, piece) = splitter.feed(part);
                assert!(used > 0);
                part = &part[used..];
                pieces.extend(piece);
                assert!(splitter.held() <= limit);
            }
        }
        pieces
    }

    #[test]
    fn cuts_lines_and_discards_those_over_the_limit() {
        let oversized_request = Piece::Oversized(Scan {
            top: Top::Object,
            max_depth: 2,
            ids: vec![RequestId::Number(3)],
        });
        let cases: Vec<(&[u8], Vec<Piece>)> = vec![
            (b"", vec![]),
            (b"no newline yet", vec![]),
            (b"\n", vec![Piece::Line(b"\n".to_vec())]),
            (
                b"ab\ncd\r\n",
                vec![
                    Piece::Line(b"ab\n".to_vec()),
                    Piece::Line(b"cd\r\n".to_vec()),
                ],
            ),
            // Exactly the limit (10), newline included; then one byte more.
            (
                b"123456789\n1234567890\nok\n",
                vec![
                    Piece::Line(b"123456789\n".to_vec()),
                    Piece::Oversized(Scan {
                        top: Top::Other,
                        max_depth: 0,
                        ids: vec![],
                    }),
                    Piece::Line(b"ok\n".to_vec()),
                ],
            ),
            (
                br#"{"method":"x","params":{"a":"long enough"},"id":3}"#.as_slice(),
                vec![],
            ),
            (
                b"{\"method\":\"x\",\"params\":{\"a\":\"long enough\"},\"id\":3}\nok\n",
                vec![oversized_request, Piece::Line(b"ok\n".to_vec())],
            ),
        ];
        for (input, want) in cases {
            for chunk in [1, 3, 7, 64] {
                assert_eq!(
                    split(10, input, chunk),
                    want,
                    "{} in pieces of {chunk}",
                    String::from_utf8_lossy(input)
                );
            }
        }
    }

    #[test]
    fn an_oversized_line_holds_no_memory() {
        let mut splitter = LineSplitter::new(1024);
        let big = vec![b'x'; 4096];
        for _ in 0..100 {
            let (used, piece) = splitter.feed(&big);
            assert_eq!((used, piece), (4096, None));
            assert_eq!(splitter.held(), 0);
            assert!(splitter.line.capacity() == 0);
        }
        let (used, piece) = splitter.feed(b"\nnext");
        assert_eq!(used, 1);
        assert!(matches!(piece, Some(Piece::Oversized(_))));
    }
}
