//! Which URLs a fetch may ask for, before any name is resolved: http or https, no userinfo, a
//! port of 80, 443 or the operator's additions, a host that is a name or an address literal.
//!
//! Attack: a URL that reaches what the address check cannot see. Userinfo (`http://x@10.0.0.1/`)
//! hides the real host from a reader of the URL; an unusual port (`:6379`, `:25`) speaks to a
//! service that is not a web server even at a public address; `file:`, `gopher:` or `ftp:` reach
//! the host or smuggle protocols. Parsing is the WHATWG URL parser's (the `url` crate), the one
//! browsers agree on, so that `http://0x7f.1/` or `http://2130706433/` is read as the address a
//! client would connect to (127.0.0.1) and judged as such.

use std::net::IpAddr;

use url::{Host, Url};

/// A URL that may be fetched: parsed, its scheme and port allowed, its host a name or an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    url: Url,
    host: TargetHost,
    port: u16,
}

/// The host of a [`Target`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetHost {
    /// A name, to be resolved (lowercase, IDNA-encoded by the parser, no trailing dot).
    Name(String),
    /// An address literal: checked as it is, it never meets the resolver.
    Addr(IpAddr),
}

/// Why a URL may not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Not a URL.
    #[error("`{url}` is not a URL: {why}")]
    Unparsable {
        /// The text (redacted of its query).
        url: String,
        /// The parser's reason.
        why: String,
    },
    /// A scheme other than http and https.
    #[error("the scheme `{0}:` is not fetched: only http and https URLs are")]
    Scheme(String),
    /// A user name or password in the URL.
    #[error("URLs with a user name or password (`user@host`) are not fetched")]
    Userinfo,
    /// No host.
    #[error("the URL has no host")]
    NoHost,
    /// A port that is not allowed.
    #[error("port {port} is not fetched: only 80, 443{extra} are")]
    Port {
        /// The port asked for.
        port: u16,
        /// The operator's additions, written for the message.
        extra: String,
    },
}

impl Target {
    /// Parses `text` and checks everything that can be checked before resolution. `extra_ports`
    /// are the operator's additions to 80 and 443.
    pub fn parse(text: &str, extra_ports: &[u16]) -> Result<Target, TargetError> {
        let url = Url::parse(text.trim()).map_err(|e| TargetError::Unparsable {
            url: redact_str(text),
            why: e.to_string(),
        })?;
        Target::check(url, extra_ports)
    }

    /// Parses the operator's own URL (a search backend's endpoint) as [`Target::parse`] does,
    /// with its port allowed whatever it is.
    pub fn parse_operator(text: &str) -> Result<Target, TargetError> {
        let port = Url::parse(text.trim())
            .ok()
            .and_then(|u| u.port_or_known_default());
        Target::parse(text, port.as_slice())
    }

    /// Resolves `location` (a redirect's `Location`, possibly relative) against this target and
    /// checks the result as [`Target::parse`] does.
    pub fn join(&self, location: &str, extra_ports: &[u16]) -> Result<Target, TargetError> {
        let url = self
            .url
            .join(location.trim())
            .map_err(|e| TargetError::Unparsable {
                url: redact_str(location),
                why: e.to_string(),
            })?;
        Target::check(url, extra_ports)
    }

    fn check(mut url: Url, extra_ports: &[u16]) -> Result<Target, TargetError> {
        match url.scheme() {
            "http" | "https" => {}
            other => return Err(TargetError::Scheme(other.to_owned())),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(TargetError::Userinfo);
        }
        let host = match url.host() {
            None => return Err(TargetError::NoHost),
            Some(Host::Ipv4(v4)) => TargetHost::Addr(IpAddr::V4(v4)),
            Some(Host::Ipv6(v6)) => TargetHost::Addr(IpAddr::V6(v6)),
            Some(Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                if name.is_empty() {
                    return Err(TargetError::NoHost);
                }
                if name != url.host_str().unwrap_or_default() {
                    // `example.com.` is asked for as `example.com`: one spelling of the name is
                    // resolved, checked and pinned.
                    url.set_host(Some(&name))
                        .map_err(|e| TargetError::Unparsable {
                            url: redact(&url),
                            why: e.to_string(),
                        })?;
                }
                TargetHost::Name(name)
            }
        };
        let Some(port) = url.port_or_known_default() else {
            return Err(TargetError::NoHost);
        };
        if port != 80 && port != 443 && !extra_ports.contains(&port) {
            let extra = extra_ports
                .iter()
                .map(|p| format!(", {p}"))
                .collect::<Vec<_>>()
                .concat();
            return Err(TargetError::Port { port, extra });
        }
        // The fragment is never sent; keeping it out keeps it out of the audit log too.
        url.set_fragment(None);
        Ok(Target { url, host, port })
    }

    /// The URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The host.
    pub fn host(&self) -> &TargetHost {
        &self.host
    }

    /// The port connected to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether the scheme is https.
    pub fn is_https(&self) -> bool {
        self.url.scheme() == "https"
    }

    /// The URL as the audit log and results write it: the query string's values redacted (a
    /// query often carries a token), the fragment gone.
    pub fn redacted(&self) -> String {
        redact(&self.url)
    }
}

/// `url` with each query value replaced by `REDACTED` (names kept: they say what was asked), and
/// no user name, password or fragment.
pub fn redact(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    let _ = url.set_username("");
    let _ = url.set_password(None);
    if let Some(query) = url.query().map(str::to_owned) {
        let redacted: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) => format!("{name}=REDACTED"),
                None if pair.is_empty() => String::new(),
                None => "REDACTED".to_owned(),
            })
            .collect();
        url.set_query(Some(&redacted.join("&")));
    }
    url.to_string()
}

/// Any text naming a URL, as logs and results write it: [`redact`] when it parses, else cut at
/// its query, fragment or userinfo.
pub fn redact_text(text: &str) -> String {
    match Url::parse(text.trim()) {
        Ok(url) => redact(&url),
        Err(_) => redact_str(text),
    }
}

/// `text` cut at its query, fragment or userinfo, for a URL that did not parse.
fn redact_str(text: &str) -> String {
    let text = text.trim();
    let cut = text.find(['?', '#', '@']).unwrap_or(text.len());
    let mut out: String = text[..cut].chars().take(200).collect();
    if cut < text.len() {
        out.push_str("?REDACTED");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_judged_before_resolution() {
        type Want = Result<(&'static str, u16), &'static str>;
        let extra = [8080];
        let table: &[(&str, Want)] = &[
            ("https://docs.rs/serde", Ok(("name:docs.rs", 443))),
            ("http://Example.COM./a", Ok(("name:example.com", 80))),
            ("http://example.com:8080/", Ok(("name:example.com", 8080))),
            ("http://93.184.216.34/", Ok(("addr:93.184.216.34", 80))),
            // The WHATWG parser reads these as the address a browser would connect to.
            ("http://0x7f.1/", Ok(("addr:127.0.0.1", 80))),
            ("http://2130706433/", Ok(("addr:127.0.0.1", 80))),
            ("http://017700000001/", Ok(("addr:127.0.0.1", 80))),
            (
                "http://[::ffff:169.254.169.254]/",
                Ok(("addr:::ffff:169.254.169.254", 80)),
            ),
            ("ftp://example.com/", Err("scheme")),
            ("file:///etc/passwd", Err("scheme")),
            ("gopher://example.com:70/", Err("scheme")),
            ("javascript:alert(1)", Err("scheme")),
            ("http://user@example.com/", Err("userinfo")),
            ("http://user:pw@example.com/", Err("userinfo")),
            ("http://:pw@example.com/", Err("userinfo")),
            ("http://example.com:6379/", Err("port")),
            ("https://example.com:22/", Err("port")),
            ("http://example.com:0/", Err("port")),
            ("not a url", Err("unparsable")),
            ("http://", Err("unparsable")),
            ("http://exa mple.com/", Err("unparsable")),
        ];
        for (text, want) in table {
            let got = Target::parse(text, &extra).map(|t| {
                let host = match t.host() {
                    TargetHost::Name(n) => format!("name:{n}"),
                    TargetHost::Addr(a) => format!("addr:{a}"),
                };
                (host, t.port())
            });
            match (want, got) {
                (Ok((host, port)), Ok((h, p))) => {
                    assert_eq!((host.to_string(), *port), (h, p), "{text}");
                }
                (Err(kind), Err(e)) => {
                    let k = match e {
                        TargetError::Unparsable { .. } => "unparsable",
                        TargetError::Scheme(_) => "scheme",
                        TargetError::Userinfo => "userinfo",
                        TargetError::NoHost => "nohost",
                        TargetError::Port { .. } => "port",
                    };
                    assert_eq!(*kind, k, "{text}: {e}");
                }
                (want, got) => panic!("{text}: want {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn redirects_are_joined_then_judged_again() {
        let t = Target::parse("https://example.com/a/b", &[]).unwrap();
        assert_eq!(
            t.join("c", &[]).unwrap().url().as_str(),
            "https://example.com/a/c"
        );
        assert_eq!(
            t.join("//other.example/x", &[]).unwrap().url().as_str(),
            "https://other.example/x"
        );
        assert!(matches!(
            t.join("http://example.com:25/", &[]),
            Err(TargetError::Port { .. })
        ));
        assert!(matches!(
            t.join("file:///etc/passwd", &[]),
            Err(TargetError::Scheme(_))
        ));
        assert!(matches!(
            t.join("http://u@example.com/", &[]),
            Err(TargetError::Userinfo)
        ));
    }

    #[test]
    fn the_query_is_redacted_and_the_fragment_dropped() {
        let t = Target::parse("https://api.example/v1?key=s3cret&q=rust&flag#frag", &[]).unwrap();
        assert_eq!(
            t.redacted(),
            "https://api.example/v1?key=REDACTED&q=REDACTED&REDACTED"
        );
        assert!(!t.url().as_str().contains("frag"));
        // Userinfo never reaches a log either (Target refuses it; redact drops it wherever from).
        assert_eq!(
            redact_text("https://u:pw@api.example/v1?key=s3cret#x"),
            "https://api.example/v1?key=REDACTED"
        );
        assert_eq!(redact_text("no url?token=s3cret"), "no url?REDACTED");
        let e = Target::parse("nope://x?token=s3cret", &[])
            .unwrap_err()
            .to_string();
        assert!(!e.contains("s3cret"), "{e}");
        let e = Target::parse("::bad?token=s3cret", &[])
            .unwrap_err()
            .to_string();
        assert!(!e.contains("s3cret"), "{e}");
    }
}
