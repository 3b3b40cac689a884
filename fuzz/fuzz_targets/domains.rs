//! Fuzzes `spear_policy::domains`: the names a sandboxed command asks the proxy for (a
//! `CONNECT`'s host, a `Host` header, a SOCKS5 name, a DNS question) and the operator's entries.
//!
//! The input is text (`String::from_utf8_lossy`): its first line is an entry, its second the name
//! asked for, its third the port (a number, or 443).
//!
//! Checks: no panic; a name that normalizes is lower-case host characters without a trailing dot,
//! and normalizes to itself; an entry that parses is written back (`Display`) as an entry that
//! parses to the same; a verdict `Allowed` or `Denied` names an entry that matches the normalized
//! name on that port, and the entry's name is the name asked or one it ends with after a dot; the
//! same entry in both lists never allows.

#![no_main]
// A failed invariant must abort the run: that is how libFuzzer learns of it.
#![allow(clippy::manual_assert, clippy::panic)]

use libfuzzer_sys::fuzz_target;
use spear_policy::domains::{DomainPattern, DomainRules, DomainVerdict, NameMatch, normalize_host};

fuzz_target!(
    init: spear_fuzz::install_panic_hook(),
    |data: &[u8]| {
        let text = String::from_utf8_lossy(data);
        let mut lines = text.splitn(3, '\n');
        let entry = lines.next().unwrap_or_default();
        let asked = lines.next().unwrap_or_default();
        let port = lines.next().and_then(|p| p.trim().parse().ok()).unwrap_or(443u16);

        let normalized = normalize_host(asked);
        if let Ok(n) = &normalized {
            if !n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
                || n.ends_with('.')
                || n.is_empty()
            {
                panic!("{asked:?} normalized to {n:?}");
            }
            if normalize_host(n).as_ref() != Ok(n) {
                panic!("{n:?} does not normalize to itself");
            }
        }

        let Ok(pattern) = entry.parse::<DomainPattern>() else {
            return;
        };
        let written = pattern.to_string();
        if written.parse::<DomainPattern>().as_ref() != Ok(&pattern) {
            panic!("{entry:?} parsed to {pattern:?}, written back as {written:?}, which does not parse to it");
        }

        let allow = DomainRules::parse([entry], Vec::<&str>::new()).expect("parsed above");
        match (allow.verdict(asked, port), &normalized) {
            (DomainVerdict::Allowed(p), Ok(n)) => {
                if !p.matches(n, port) {
                    panic!("{p} allowed {n:?}:{port} without matching it");
                }
                let name = match &p.name {
                    NameMatch::Exact(name) | NameMatch::Below(name) => name,
                };
                if n != name && !n.ends_with(&format!(".{name}")) {
                    panic!("{p} allowed {n:?}, which is neither its name nor below it");
                }
            }
            (DomainVerdict::Allowed(p), Err(_)) => panic!("{p} allowed {asked:?}, which is not a name"),
            (DomainVerdict::Denied(p), _) => panic!("an allow list alone denied {asked:?} by {p}"),
            (DomainVerdict::NotListed, _) => {}
        }
        let both = DomainRules::parse([entry], [entry]).expect("parsed above");
        if matches!(both.verdict(asked, port), DomainVerdict::Allowed(_)) {
            panic!("{entry:?} in both lists allowed {asked:?}:{port}");
        }
    }
);
