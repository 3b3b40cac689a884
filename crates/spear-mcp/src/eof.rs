//! A reader that says when its input ends: the server cancels its running calls the moment the
//! client closes stdin, instead of after the SDK's drain timeout (5 s in rmcp 3.11).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// Wraps `inner`, calling `on_eof` once, on the first read that finds the end of the input.
pub struct EofWatch<R> {
    inner: R,
    on_eof: Option<Box<dyn FnOnce() + Send>>,
}

impl<R> EofWatch<R> {
    /// `inner`, watched.
    pub fn new(inner: R, on_eof: impl FnOnce() + Send + 'static) -> Self {
        EofWatch {
            inner,
            on_eof: Some(Box::new(on_eof)),
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for EofWatch<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(())))
            && buf.filled().len() == before
            && buf.remaining() > 0
            && let Some(on_eof) = self.on_eof.take()
        {
            on_eof();
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::AsyncReadExt as _;

    #[tokio::test]
    async fn says_once_when_the_input_ends_and_not_before() {
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&seen);
        let mut r = EofWatch::new(&b"abc"[..], move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        let mut one = [0u8; 2];
        r.read_exact(&mut one).await.unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 0, "not at the end yet");
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, b"c");
        assert_eq!(seen.load(Ordering::SeqCst), 1);
        let mut again = [0u8; 4];
        assert_eq!(r.read(&mut again).await.unwrap(), 0);
        assert_eq!(seen.load(Ordering::SeqCst), 1, "said once");
    }
}
