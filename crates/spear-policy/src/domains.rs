//! Allowlists by name: the pure half of `[network] allow` and `deny` entries that name hosts
//! (`pypi.org`, `*.pythonhosted.org`, `github.com:22`), and the verdict for one destination a
//! sandboxed command asks for (the name in a proxy's `CONNECT`, a plain request's `Host`, a SOCKS5
//! request or a DNS question).
//!
//! ```toml
//! [network]
//! allow = ["pypi.org", "*.pythonhosted.org", "github.com:22"]
//! deny = ["upload.pypi.org"]
//! ```
//!
//! What an entry means:
//! - `name`: that name exactly, on ports 80 and 443 ([`DEFAULT_PORTS`]);
//! - `name:port`: that name on that port only;
//! - `*.name`: every name below `name`, at any depth (`files.pythonhosted.org`,
//!   `a.b.pythonhosted.org`), but not `name` itself, which an entry of its own allows;
//! - an IPv4 prefix or `address:port` is not a name ([`is_address_entry`]): the sandbox's egress
//!   rules read those.
//!
//! The verdict ([`DomainRules::verdict`]): a deny entry that matches wins over every allow entry;
//! then an allow entry that matches; else the destination is not listed (which SAFE refuses,
//! ASK asks about and AUTO refuses when a list is given).
//!
//! Names are compared in one spelling ([`normalize_host`]): ASCII lower case without the trailing
//! dot. Attack stopped: `PyPI.org.` or `pypi.org.` reaching a host a deny entry names as
//! `pypi.org`, and a name that is not a host name at all (`evil.com\0.pypi.org`,
//! `pypi.org@evil.com`, an empty label) matching an entry by a suffix. A name that is not ASCII is
//! refused: the sandbox's tools send the punycode form (`xn--...`), which entries are written in.
//! A name whose last label is all digits is an address, never a name, so `*.0.113` can never
//! stand for addresses.

use std::fmt;

/// The ports an entry without a port allows.
pub const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// The longest host name (RFC 1035, without the trailing dot).
const MAX_NAME: usize = 253;

/// The longest label.
const MAX_LABEL: usize = 63;

/// Which names an entry matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NameMatch {
    /// This name only.
    Exact(String),
    /// Every name below this one (`*.` and the name), at any depth, not the name itself.
    Below(String),
}

/// One entry of an allow or deny list that names hosts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DomainPattern {
    /// The names it matches.
    pub name: NameMatch,
    /// The one port it matches; `None`: [`DEFAULT_PORTS`].
    pub port: Option<u16>,
}

/// Why an entry or an asked-for name is not a host name spear compares.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    /// Empty, or a label empty (`a..b`, `.a`).
    #[error("`{0}` has an empty label: write a host name such as pypi.org")]
    EmptyLabel(String),
    /// A character a host name does not have.
    #[error(
        "`{0}` is not a host name: only letters, digits, `-` and `.` (a name in another script is \
         written in its punycode form, xn--...)"
    )]
    BadCharacter(String),
    /// A label over 63 bytes, or a name over 253.
    #[error("`{0}` is longer than a host name may be (63 bytes a label, 253 in all)")]
    TooLong(String),
    /// A label that begins or ends with `-`.
    #[error("`{0}` has a label that begins or ends with `-`")]
    Hyphen(String),
    /// An address where a name was expected.
    #[error(
        "`{0}` is an address, not a name: allow addresses as 203.0.113.0/24 or 203.0.113.10:8080"
    )]
    Address(String),
    /// `*` anywhere but as the whole first label, or `*.` over a name with one label only.
    #[error(
        "`{0}`: `*` is only allowed as the whole first label, over a name of two labels or more \
         (*.example.com)"
    )]
    Wildcard(String),
    /// A port that is not 1-65535.
    #[error("`{0}` has a port that is not a number from 1 to 65535")]
    Port(String),
}

/// The operator's names: what is allowed, and what is refused even when an allow entry matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainRules {
    allow: Vec<DomainPattern>,
    deny: Vec<DomainPattern>,
}

/// The verdict for one destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DomainVerdict<'r> {
    /// An allow entry matches and no deny entry does.
    Allowed(&'r DomainPattern),
    /// A deny entry matches.
    Denied(&'r DomainPattern),
    /// No entry matches.
    NotListed,
}

impl DomainPattern {
    /// Whether this entry matches `host` (in [`normalize_host`]'s spelling) on `port`.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        let port_ok = match self.port {
            Some(p) => p == port,
            None => DEFAULT_PORTS.contains(&port),
        };
        port_ok
            && match &self.name {
                NameMatch::Exact(name) => host == name,
                NameMatch::Below(name) => host
                    .strip_suffix(name.as_str())
                    .and_then(|head| head.strip_suffix('.'))
                    .is_some_and(|head| !head.is_empty()),
            }
    }
}

impl std::str::FromStr for DomainPattern {
    type Err = DomainError;

    /// Parses one entry: `name`, `name:port`, `*.name` or `*.name:port`.
    fn from_str(entry: &str) -> Result<Self, DomainError> {
        let (host, port) = match entry.rsplit_once(':') {
            Some((host, port)) => {
                let port = port
                    .parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0 && !port.starts_with('+'))
                    .ok_or_else(|| DomainError::Port(entry.to_owned()))?;
                (host, Some(port))
            }
            None => (entry, None),
        };
        let name = match host.strip_prefix("*.") {
            Some(below) => {
                let below = normalize_host(below).map_err(|e| match e {
                    DomainError::BadCharacter(_) if below.contains('*') => {
                        DomainError::Wildcard(entry.to_owned())
                    }
                    other => other,
                })?;
                if !below.contains('.') {
                    return Err(DomainError::Wildcard(entry.to_owned()));
                }
                NameMatch::Below(below)
            }
            None if host.contains('*') => return Err(DomainError::Wildcard(entry.to_owned())),
            None => NameMatch::Exact(normalize_host(host)?),
        };
        Ok(DomainPattern { name, port })
    }
}

impl fmt::Display for DomainPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            NameMatch::Exact(name) => write!(f, "{name}")?,
            NameMatch::Below(name) => write!(f, "*.{name}")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

impl DomainRules {
    /// The rules of `allow` and `deny` entries, each parsed as [`DomainPattern`]; the first entry
    /// that is not a name is the error.
    pub fn parse<A, D>(allow: A, deny: D) -> Result<DomainRules, DomainError>
    where
        A: IntoIterator,
        A::Item: AsRef<str>,
        D: IntoIterator,
        D::Item: AsRef<str>,
    {
        let parse = |e: &str| e.parse::<DomainPattern>();
        Ok(DomainRules {
            allow: allow
                .into_iter()
                .map(|e| parse(e.as_ref()))
                .collect::<Result<_, _>>()?,
            deny: deny
                .into_iter()
                .map(|e| parse(e.as_ref()))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Whether no name is allowed (the network is as it was without a list), deny entries or not.
    pub fn allows_no_name(&self) -> bool {
        self.allow.is_empty()
    }

    /// The verdict for `host` (as the sandbox sent it) on `port`. A name that is not a host name
    /// is [`DomainVerdict::NotListed`]: no entry can match what is not a name.
    pub fn verdict(&self, host: &str, port: u16) -> DomainVerdict<'_> {
        let Ok(host) = normalize_host(host) else {
            return DomainVerdict::NotListed;
        };
        if let Some(rule) = self.deny.iter().find(|r| r.matches(&host, port)) {
            return DomainVerdict::Denied(rule);
        }
        match self.allow.iter().find(|r| r.matches(&host, port)) {
            Some(rule) => DomainVerdict::Allowed(rule),
            None => DomainVerdict::NotListed,
        }
    }
}

/// Whether an `allow` entry is an address entry (an IPv4 prefix, `address:port` or an address
/// alone) rather than a name: its host part is digits and dots only.
pub fn is_address_entry(entry: &str) -> bool {
    let host = entry.split(['/', ':']).next().unwrap_or_default();
    !host.is_empty() && host.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// `host` in the one spelling names are compared in: ASCII lower case, without one trailing dot,
/// checked to be a host name (letters, digits and `-` in labels of 1-63 bytes, no label beginning
/// or ending with `-`, 253 bytes at most, its last label not all digits).
pub fn normalize_host(host: &str) -> Result<String, DomainError> {
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.is_empty() {
        return Err(DomainError::EmptyLabel(host.to_owned()));
    }
    if name.len() > MAX_NAME {
        return Err(DomainError::TooLong(host.to_owned()));
    }
    let mut last = "";
    for label in name.split('.') {
        if label.is_empty() {
            return Err(DomainError::EmptyLabel(host.to_owned()));
        }
        if label.len() > MAX_LABEL {
            return Err(DomainError::TooLong(host.to_owned()));
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(DomainError::BadCharacter(host.to_owned()));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(DomainError::Hyphen(host.to_owned()));
        }
        last = label;
    }
    if last.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DomainError::Address(host.to_owned()));
    }
    Ok(name.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use proptest::prelude::*;

    fn rules(allow: &[&str], deny: &[&str]) -> DomainRules {
        DomainRules::parse(allow, deny).unwrap()
    }

    #[test]
    fn entries_parse_to_what_they_match() {
        let exact = |n: &str, port| DomainPattern {
            name: NameMatch::Exact(n.into()),
            port,
        };
        let below = |n: &str, port| DomainPattern {
            name: NameMatch::Below(n.into()),
            port,
        };
        for (entry, want) in [
            ("pypi.org", exact("pypi.org", None)),
            ("PyPI.org.", exact("pypi.org", None)),
            ("github.com:22", exact("github.com", Some(22))),
            ("*.pythonhosted.org", below("pythonhosted.org", None)),
            ("*.Example.COM:8443", below("example.com", Some(8443))),
            ("localhost", exact("localhost", None)),
            (
                "xn--bcher-kva.example",
                exact("xn--bcher-kva.example", None),
            ),
            ("a-b.c0m", exact("a-b.c0m", None)),
        ] {
            assert_eq!(entry.parse::<DomainPattern>(), Ok(want.clone()), "{entry}");
            // Written back as the operator would write it, it parses to the same.
            assert_eq!(
                want.to_string().parse::<DomainPattern>(),
                Ok(want),
                "{entry}"
            );
        }
    }

    #[test]
    fn what_is_not_a_host_name_is_refused_with_its_reason() {
        use DomainError as E;
        for (entry, want) in [
            ("", E::EmptyLabel(String::new())),
            (".", E::EmptyLabel(".".into())),
            ("a..b", E::EmptyLabel("a..b".into())),
            (".pypi.org", E::EmptyLabel(".pypi.org".into())),
            ("pypi.org..", E::EmptyLabel("pypi.org..".into())),
            (
                "pypi.org@evil.com",
                E::BadCharacter("pypi.org@evil.com".into()),
            ),
            (
                "evil.com\0.pypi.org",
                E::BadCharacter("evil.com\0.pypi.org".into()),
            ),
            ("pypi.org/x", E::BadCharacter("pypi.org/x".into())),
            ("py pi.org", E::BadCharacter("py pi.org".into())),
            ("pypi_org.com", E::BadCharacter("pypi_org.com".into())),
            ("bücher.example", E::BadCharacter("bücher.example".into())),
            ("-a.org", E::Hyphen("-a.org".into())),
            ("a-.org", E::Hyphen("a-.org".into())),
            ("203.0.113.10", E::Address("203.0.113.10".into())),
            ("example.123", E::Address("example.123".into())),
            ("*", E::Wildcard("*".into())),
            ("*.org", E::Wildcard("*.org".into())),
            ("a.*.org", E::Wildcard("a.*.org".into())),
            ("*a.org", E::Wildcard("*a.org".into())),
            ("*.*.org", E::Wildcard("*.*.org".into())),
            ("pypi.org:0", E::Port("pypi.org:0".into())),
            ("pypi.org:65536", E::Port("pypi.org:65536".into())),
            ("pypi.org:+22", E::Port("pypi.org:+22".into())),
            ("pypi.org:", E::Port("pypi.org:".into())),
            ("pypi.org:ssh", E::Port("pypi.org:ssh".into())),
        ] {
            assert_eq!(entry.parse::<DomainPattern>(), Err(want), "{entry:?}");
        }
        let long_label = format!("{}.org", "a".repeat(64));
        assert!(matches!(
            long_label.parse::<DomainPattern>(),
            Err(DomainError::TooLong(_))
        ));
        let long_name = format!("{}org", "abcdefghi.".repeat(26));
        assert!(long_name.len() > MAX_NAME);
        assert!(matches!(
            long_name.parse::<DomainPattern>(),
            Err(DomainError::TooLong(_))
        ));
        // The positive controls of both limits.
        assert!(
            format!("{}.org", "a".repeat(63))
                .parse::<DomainPattern>()
                .is_ok()
        );
        assert!(
            format!("{}org", "abcdefghi.".repeat(25))
                .parse::<DomainPattern>()
                .is_ok()
        );
    }

    #[test]
    fn verdicts() {
        let r = rules(
            &[
                "pypi.org",
                "*.pythonhosted.org",
                "github.com:22",
                "*.github.com",
            ],
            &["upload.pypi.org", "gist.github.com", "pypi.org:80"],
        );
        for (host, port, want) in [
            ("pypi.org", 443, "allowed pypi.org"),
            ("PYPI.ORG.", 443, "allowed pypi.org"),
            // A deny entry wins over the allow entry that matches.
            ("pypi.org", 80, "denied pypi.org:80"),
            ("upload.pypi.org", 443, "denied upload.pypi.org"),
            // An exact entry allows no name below it.
            ("evil.pypi.org", 443, "not listed"),
            ("files.pythonhosted.org", 443, "allowed *.pythonhosted.org"),
            ("a.b.pythonhosted.org", 80, "allowed *.pythonhosted.org"),
            // `*.name` does not allow the name itself, nor a name that only ends like it.
            ("pythonhosted.org", 443, "not listed"),
            ("evilpythonhosted.org", 443, "not listed"),
            ("pythonhosted.org.evil.com", 443, "not listed"),
            // A port: that port only; no port: 80 and 443 only.
            ("github.com", 22, "allowed github.com:22"),
            ("github.com", 443, "not listed"),
            ("api.github.com", 443, "allowed *.github.com"),
            ("api.github.com", 22, "not listed"),
            ("gist.github.com", 443, "denied gist.github.com"),
            ("files.pythonhosted.org", 8080, "not listed"),
            // What is not a name matches nothing.
            ("pypi.org@evil.com", 443, "not listed"),
            ("evil.com\0.pypi.org", 443, "not listed"),
            ("", 443, "not listed"),
            ("151.101.0.223", 443, "not listed"),
        ] {
            let got = match r.verdict(host, port) {
                DomainVerdict::Allowed(p) => format!("allowed {p}"),
                DomainVerdict::Denied(p) => format!("denied {p}"),
                DomainVerdict::NotListed => "not listed".to_owned(),
            };
            assert_eq!(got, want, "{host:?}:{port}");
        }
    }

    #[test]
    fn an_empty_list_allows_nothing_by_name() {
        let r = rules(&[], &["pypi.org"]);
        assert!(r.allows_no_name());
        assert_eq!(r.verdict("github.com", 443), DomainVerdict::NotListed);
        assert!(!rules(&["pypi.org"], &[]).allows_no_name());
    }

    #[test]
    fn the_first_bad_entry_is_the_error() {
        assert_eq!(
            DomainRules::parse(["pypi.org", "a..b"], ["x.org"]),
            Err(DomainError::EmptyLabel("a..b".into()))
        );
        assert_eq!(
            DomainRules::parse(["pypi.org"], ["*"]),
            Err(DomainError::Wildcard("*".into()))
        );
    }

    #[test]
    fn address_entries_are_told_from_names() {
        for (entry, address) in [
            ("203.0.113.0/24", true),
            ("203.0.113.10:8080", true),
            ("203.0.113.10", true),
            ("pypi.org", false),
            ("github.com:22", false),
            ("*.pythonhosted.org", false),
            ("1.example", false),
            ("", false),
        ] {
            assert_eq!(is_address_entry(entry), address, "{entry}");
        }
    }

    /// A label of host-name characters.
    fn label() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9]([a-zA-Z0-9-]{0,8}[a-zA-Z0-9])?"
    }

    /// A name of two to four labels, its last one with a letter.
    fn name() -> impl Strategy<Value = String> {
        (prop::collection::vec(label(), 1..4), "[a-z][a-z0-9]{1,5}")
            .prop_map(|(labels, tld)| format!("{}.{tld}", labels.join(".")))
    }

    proptest! {
        #[test]
        fn spelling_never_changes_a_verdict(host in name(), port in prop::sample::select(vec![22u16, 80, 443, 8080])) {
            let r = DomainRules::parse([host.clone(), format!("*.{host}")], ["deny.example"]).unwrap();
            let lower = r.verdict(&host.to_ascii_lowercase(), port);
            prop_assert_eq!(r.verdict(&host.to_ascii_uppercase(), port), lower);
            prop_assert_eq!(r.verdict(&format!("{host}."), port), lower);
        }

        #[test]
        fn a_deny_entry_always_wins(host in name(), sub in label(), port in 1u16..) {
            let entries = [host.clone(), format!("*.{host}"), format!("{host}:{port}")];
            let r = DomainRules::parse(&entries, &entries).unwrap();
            for asked in [host.clone(), format!("{sub}.{host}")] {
                prop_assert!(!matches!(r.verdict(&asked, port), DomainVerdict::Allowed(_)));
            }
        }

        #[test]
        fn a_wildcard_matches_exactly_the_names_below_it(host in name(), other in name(), sub in label()) {
            let p: DomainPattern = format!("*.{host}").parse().unwrap();
            let host = host.to_ascii_lowercase();
            let sub = sub.to_ascii_lowercase();
            let below = format!("{sub}.{host}");
            prop_assert!(p.matches(&below, 443));
            prop_assert!(!p.matches(&host, 443));
            let other = other.to_ascii_lowercase();
            prop_assert_eq!(
                p.matches(&other, 443),
                other.ends_with(&format!(".{host}"))
            );
        }

        #[test]
        fn normalizing_never_panics_and_keeps_to_host_characters(s in "\\PC{0,80}") {
            if let Ok(n) = normalize_host(&s) {
                prop_assert!(n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'));
                prop_assert!(!n.ends_with('.'));
                prop_assert_eq!(normalize_host(&n), Ok(n.clone()));
            }
        }
    }
}
