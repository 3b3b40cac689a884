//! spear's web pair, which runs in spear's own process, outside the sandbox: its boundary is
//! this code.
//!
//! - [`address`]: the deny table every address a fetch would connect to is checked against.
//! - [`target`]: which URLs may be fetched at all (scheme, userinfo, port), parsed once per hop.
//! - [`guard`]: what a request may carry off the host ([`RequestGuard`]), judged before its name
//!   is resolved.
//! - [`fetch`]: [`Fetcher`], which resolves a name once, checks every address, connects to the
//!   checked address only, follows redirects by hand (each hop checked again), ignores the
//!   system's proxies, and caps time and bytes (decompressed bytes included).
//! - [`extract`]: a fetched body as text (HTML through a real parser, text, JSON, PDF by pages),
//!   and slices of it that name what continues them.
//! - [`search`]: `search_internet`'s backends (`SearXNG`, Brave, Bing).

pub mod address;
pub mod extract;
pub mod fetch;
pub mod guard;
pub mod search;
pub mod target;

pub use fetch::{
    FetchError, Fetched, Fetcher, Hop, Phase, READ_CAP, SAVE_CAP, Timeouts, WebConfig,
};
pub use guard::{Outgoing, RequestGuard};
pub use target::{Target, TargetError, TargetHost};
