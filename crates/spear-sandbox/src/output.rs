//! Output capture with a byte cap that keeps the head and the tail.
//!
//! Attack stopped: output floods (`yes`, a runaway log) that would exhaust the harness's memory or
//! flood the model's context. A stream keeps at most `cap` bytes (the first half and the last
//! half), counts what it dropped, and says so in the text it returns.

use std::collections::VecDeque;
use std::fmt::Write as _;

/// One captured stream.
#[derive(Debug, Clone)]
pub struct CappedOutput {
    cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

/// A stream as the caller sees it at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// The kept text (lossy UTF-8), with a line saying what was cut when anything was.
    pub text: String,
    /// How many bytes the stream carried in all.
    pub total_bytes: u64,
    /// Whether bytes were dropped.
    pub truncated: bool,
}

impl CappedOutput {
    /// A stream that keeps at most `cap` bytes (at least 2).
    pub fn new(cap: usize) -> Self {
        CappedOutput {
            cap: cap.max(2),
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    /// Appends `bytes`; memory stays bounded by the cap whatever is pushed.
    pub fn push(&mut self, bytes: &[u8]) {
        self.total = self.total.saturating_add(bytes.len() as u64);
        let head_cap = self.cap / 2;
        let tail_cap = self.cap - head_cap;
        let room = head_cap.saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        let rest = if rest.len() > tail_cap {
            &rest[rest.len() - tail_cap..]
        } else {
            rest
        };
        let overflow = (self.tail.len() + rest.len()).saturating_sub(tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(rest);
    }

    /// Bytes seen so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The kept text and what was cut.
    pub fn finish(self) -> Captured {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let dropped = self.total - kept;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        let (a, b) = self.tail.as_slices();
        let tail = [a, b].concat();
        if dropped > 0 {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            let _ = writeln!(
                text,
                "[spear: {dropped} bytes of {} cut from the middle of this stream]",
                self.total
            );
        }
        text.push_str(&String::from_utf8_lossy(&tail));
        Captured {
            text,
            total_bytes: self.total,
            truncated: dropped > 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut o = CappedOutput::new(100);
        o.push(b"hello ");
        o.push(b"world\n");
        let c = o.finish();
        assert_eq!(c.text, "hello world\n");
        assert!(!c.truncated);
        assert_eq!(c.total_bytes, 12);
    }

    #[test]
    fn head_and_tail_survive_a_flood() {
        let mut o = CappedOutput::new(10);
        o.push(b"HEAD!");
        for _ in 0..1000 {
            o.push(b"middle");
        }
        o.push(b"TAIL!");
        let c = o.finish();
        assert!(c.truncated);
        assert!(c.text.starts_with("HEAD!\n[spear: "), "{}", c.text);
        assert!(c.text.ends_with("TAIL!"), "{}", c.text);
        assert!(c.text.contains("bytes of 6010 cut"), "{}", c.text);
    }

    proptest! {
        #[test]
        fn bounded_and_exact(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..50), 0..40), cap in 2usize..64) {
            let mut o = CappedOutput::new(cap);
            let mut all = Vec::new();
            for c in &chunks {
                o.push(c);
                all.extend_from_slice(c);
                prop_assert!(o.head.len() + o.tail.len() <= cap);
            }
            let head_len = o.head.len();
            let tail: Vec<u8> = o.tail.iter().copied().collect();
            prop_assert_eq!(&o.head[..], &all[..head_len]);
            prop_assert_eq!(&tail[..], &all[all.len() - tail.len()..]);
            if all.len() <= cap {
                prop_assert_eq!(head_len + tail.len(), all.len());
            }
        }
    }
}
