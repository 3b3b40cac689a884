//! What a request may carry off the host, judged before its name is resolved.
//!
//! A [`Fetcher`](crate::Fetcher) given a [`RequestGuard`] shows it every request it is about to
//! send: the first one and each redirect it would follow, its URL and the headers its caller
//! added. A refusal ends the fetch with [`FetchError::Guarded`](crate::FetchError::Guarded)
//! before any name is resolved or any connection made: nothing of the request leaves the host,
//! not even a DNS question naming its host. Every request is a GET: there is no body to judge.
//!
//! Attack stopped: a request carrying what must not leave (spear's own secrets, judged by the
//! tool layer's guard), whether the model wrote it into the URL or a server it was sent to
//! redirects there.

use std::fmt;

/// One request, as it would be sent.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// Its URL, exactly as it would be asked for (its host included).
    pub url: &'a url::Url,
    /// The headers its caller added (the fetcher's own are fixed: `Accept`, `User-Agent`).
    pub headers: &'a [(&'a str, String)],
    /// Whether it is a redirect's, not the URL the caller asked for.
    pub redirect: bool,
    /// Whether it goes to the operator's own endpoint (a search backend), whose credential its
    /// headers carry by design.
    pub operator: bool,
}

/// Judges every request a fetcher would send.
pub trait RequestGuard: Send + Sync + fmt::Debug {
    /// `Ok` to send `request`; `Err(why)` refuses it, `why` saying what it carries (never the
    /// value itself: the reason reaches results and the audit log).
    fn check(&self, request: &Outgoing<'_>) -> Result<(), String>;
}
