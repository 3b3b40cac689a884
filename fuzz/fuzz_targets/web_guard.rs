//! Fuzzes fetch_url's guard: the URL parser and checks (`Target::parse`, `Target::join`) and the
//! address policy (`address::check`), which meet the model's URLs and any server's redirects.
//!
//! Invariants: no panic; an accepted URL is http or https, has no userinfo, names a port of 80,
//! 443 or the allowed extra, and its redacted form keeps no query value; a redirect joined onto it
//! keeps all of that; an address std calls loopback, private, link-local, unspecified, multicast,
//! broadcast or documentation is refused, and so is every IPv6 form that carries a refused IPv4
//! address (mapped, compatible, 6to4, Teredo's client and server); the host's own addresses are
//! refused in every form.

#![no_main]
#![allow(clippy::manual_assert, clippy::panic)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use libfuzzer_sys::fuzz_target;
use spear_web::address::check;
use spear_web::target::{Target, TargetHost};

const EXTRA: [u16; 1] = [8080];

fn accepted(t: &Target) {
    let url = t.url();
    assert!(matches!(url.scheme(), "http" | "https"), "{url}");
    assert!(url.username().is_empty() && url.password().is_none(), "{url}");
    assert!(matches!(t.port(), 80 | 443 | 8080), "{url}");
    if let Some(query) = url.query() {
        // Every value of the redacted query is `REDACTED`, pair for pair: names are kept (they
        // say what was asked), values are not.
        let redacted = t.redacted();
        let rest = redacted.split_once('?').map_or("", |(_, q)| q);
        let kept: Vec<&str> = rest.split('&').collect();
        let asked: Vec<&str> = query.split('&').collect();
        assert_eq!(kept.len(), asked.len(), "{query} -> {redacted}");
        for (k, a) in kept.iter().zip(&asked) {
            match a.split_once('=') {
                Some((name, _)) => assert_eq!(*k, format!("{name}=REDACTED"), "{redacted}"),
                None if a.is_empty() => assert!(k.is_empty(), "{redacted}"),
                None => assert_eq!(*k, "REDACTED", "{redacted}"),
            }
        }
    }
    if let TargetHost::Addr(ip) = t.host() {
        // A literal is judged as an address; the judgement must not panic.
        let _ = check(*ip, &[]);
    }
}

fn std_says_refused(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || v6.is_unique_local()
                || v6.is_unicast_link_local()
                || v6.to_ipv4_mapped().is_some_and(|v4| std_says_refused(IpAddr::V4(v4)))
        }
    }
}

fn addresses(data: &[u8]) {
    if data.len() < 20 {
        return;
    }
    let mut b4 = [0u8; 4];
    b4.copy_from_slice(&data[..4]);
    let mut b16 = [0u8; 16];
    b16.copy_from_slice(&data[4..20]);
    let v4 = Ipv4Addr::from(b4);
    let v6 = Ipv6Addr::from(b16);
    for ip in [IpAddr::V4(v4), IpAddr::V6(v6)] {
        if std_says_refused(ip) {
            assert!(check(ip, &[]).is_err(), "{ip} allowed");
        }
        assert!(check(ip, &[ip]).is_err(), "{ip} is own but allowed");
    }
    let bits = u32::from(v4);
    let carriers = [
        v4.to_ipv6_mapped(),
        Ipv6Addr::from((u128::from(bits) << 80) | (0x2002u128 << 112)),
        // Teredo: a public server, the client inverted; and the server itself.
        Ipv6Addr::from((0x2001_0000u128 << 96) | (0x5db8_d70eu128 << 64) | u128::from(!bits)),
        Ipv6Addr::from((0x2001_0000u128 << 96) | (u128::from(bits) << 64) | 0xa247_28f1),
    ];
    let v4_refused = check(IpAddr::V4(v4), &[]).is_err();
    for carrier in carriers {
        if v4_refused {
            assert!(check(IpAddr::V6(carrier), &[]).is_err(), "{carrier} carries {v4}");
        }
        assert!(
            check(IpAddr::V6(carrier), &[IpAddr::V4(v4)]).is_err(),
            "{carrier} carries the own {v4}"
        );
    }
    if bits > 1 && !v4_refused {
        // IPv4-compatible (`::a.b.c.d`) of a public address is judged as the address.
        let compatible = Ipv6Addr::from(u128::from(bits));
        assert!(check(IpAddr::V6(compatible), &[IpAddr::V4(v4)]).is_err());
    }
}

fuzz_target!(|data: &[u8]| {
    addresses(data);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (first, location) = text.split_once('\n').unwrap_or((text, ""));
    if let Ok(t) = Target::parse(first, &EXTRA) {
        accepted(&t);
        if let Ok(next) = t.join(location, &EXTRA) {
            accepted(&next);
        }
    }
    if let Ok(t) = Target::parse(&format!("http://{first}/"), &EXTRA) {
        accepted(&t);
    }
});
