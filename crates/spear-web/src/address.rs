//! Which addresses a fetch may connect to: an explicit deny table, judged on the address that
//! will really be connected to (after resolution, before the connection, for every hop).
//!
//! Attack: server-side request forgery. A URL (or a name, or a redirect) that leads spear's own
//! process to the host's loopback services, its LAN, a cloud metadata endpoint, or an address
//! that embeds one of those in IPv6 (mapped, compatible, 6to4, Teredo, NAT64). `Ipv4Addr::
//! is_private` alone misses link-local and CGNAT; every range here is written out.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    /// A cloud metadata endpoint (`169.254.169.254`, `100.100.100.200`, `fd00:ec2::254`).
    #[error("a cloud metadata endpoint")]
    Metadata,
    /// Loopback (`127/8`, `::1`).
    #[error("loopback")]
    Loopback,
    /// "This network" or unspecified (`0/8`, `::`).
    #[error("an unspecified address")]
    Unspecified,
    /// A private network (`10/8`, `172.16/12`, `192.168/16`).
    #[error("a private network (RFC 1918)")]
    Private,
    /// Carrier-grade NAT (`100.64/10`).
    #[error("carrier-grade NAT space (100.64.0.0/10)")]
    SharedAddressSpace,
    /// Link-local (`169.254/16`, `fe80::/10`).
    #[error("link-local")]
    LinkLocal,
    /// A unique local IPv6 network (`fc00::/7`), or site-local (`fec0::/10`).
    #[error("a unique local IPv6 network")]
    UniqueLocal,
    /// Multicast (`224/4`, `ff00::/8`).
    #[error("multicast")]
    Multicast,
    /// The limited broadcast address.
    #[error("broadcast")]
    Broadcast,
    /// Documentation ranges (`192.0.2/24`, `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`).
    #[error("a documentation range")]
    Documentation,
    /// Benchmarking ranges (`198.18/15`, `2001:2::/48`).
    #[error("a benchmarking range")]
    Benchmarking,
    /// Reserved or special-purpose space (`240/4`, `192.0.0/24`, `192.88.99/24`, `100::/64`, ORCHID).
    #[error("reserved space")]
    Reserved,
    /// NAT64 (`64:ff9b::/96`, `64:ff9b:1::/48`): it reaches IPv4 through a translator.
    #[error("NAT64 translation space")]
    Nat64,
    /// One of this host's own addresses.
    #[error("one of this host's own addresses")]
    HostOwn,
}

impl Denied {
    /// The rule's stable name, as the audit log records it (`loopback`, `host_own`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Denied::Metadata => "metadata",
            Denied::Loopback => "loopback",
            Denied::Unspecified => "unspecified",
            Denied::Private => "private",
            Denied::SharedAddressSpace => "shared_address_space",
            Denied::LinkLocal => "link_local",
            Denied::UniqueLocal => "unique_local",
            Denied::Multicast => "multicast",
            Denied::Broadcast => "broadcast",
            Denied::Documentation => "documentation",
            Denied::Benchmarking => "benchmarking",
            Denied::Reserved => "reserved",
            Denied::Nat64 => "nat64",
            Denied::HostOwn => "host_own",
        }
    }
}

/// A refusal of `addr` for `why`; `embedded` is the IPv4 address judged inside an IPv6 one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{addr} is {why}{}", embedded.map(|v4| format!(" (it embeds {v4})")).unwrap_or_default())]
pub struct Refused {
    /// The address as connected to.
    pub addr: IpAddr,
    /// The rule.
    pub why: Denied,
    /// The IPv4 address an IPv6 one carries, when that is what was refused.
    pub embedded: Option<Ipv4Addr>,
}

/// IPv4 ranges, most specific first: (network, prefix length, rule).
const V4: &[([u8; 4], u8, Denied)] = &[
    ([169, 254, 169, 254], 32, Denied::Metadata),
    ([100, 100, 100, 200], 32, Denied::Metadata),
    ([255, 255, 255, 255], 32, Denied::Broadcast),
    ([0, 0, 0, 0], 8, Denied::Unspecified),
    ([10, 0, 0, 0], 8, Denied::Private),
    ([100, 64, 0, 0], 10, Denied::SharedAddressSpace),
    ([127, 0, 0, 0], 8, Denied::Loopback),
    ([169, 254, 0, 0], 16, Denied::LinkLocal),
    ([172, 16, 0, 0], 12, Denied::Private),
    ([192, 0, 0, 0], 24, Denied::Reserved),
    ([192, 0, 2, 0], 24, Denied::Documentation),
    ([192, 88, 99, 0], 24, Denied::Reserved),
    ([192, 168, 0, 0], 16, Denied::Private),
    ([198, 18, 0, 0], 15, Denied::Benchmarking),
    ([198, 51, 100, 0], 24, Denied::Documentation),
    ([203, 0, 113, 0], 24, Denied::Documentation),
    ([224, 0, 0, 0], 4, Denied::Multicast),
    ([240, 0, 0, 0], 4, Denied::Reserved),
];

/// IPv6 ranges denied outright, most specific first. The forms that embed IPv4 (mapped,
/// compatible, 6to4, Teredo) are judged by what they embed, in [`check`].
const V6: &[(u128, u8, Denied)] = &[
    (
        0xfd00_0ec2_0000_0000_0000_0000_0000_0254,
        128,
        Denied::Metadata,
    ),
    (0, 128, Denied::Unspecified),
    (1, 128, Denied::Loopback),
    (0x0064_ff9b_0000_0000_0000_0000_0000_0000, 96, Denied::Nat64),
    (0x0064_ff9b_0001_0000_0000_0000_0000_0000, 48, Denied::Nat64),
    (
        0x0100_0000_0000_0000_0000_0000_0000_0000,
        64,
        Denied::Reserved,
    ),
    (
        0x2001_0002_0000_0000_0000_0000_0000_0000,
        48,
        Denied::Benchmarking,
    ),
    (
        0x2001_0010_0000_0000_0000_0000_0000_0000,
        28,
        Denied::Reserved,
    ),
    (
        0x2001_0020_0000_0000_0000_0000_0000_0000,
        28,
        Denied::Reserved,
    ),
    (
        0x2001_0db8_0000_0000_0000_0000_0000_0000,
        32,
        Denied::Documentation,
    ),
    // The second documentation prefix (RFC 9637).
    (
        0x3fff_0000_0000_0000_0000_0000_0000_0000,
        20,
        Denied::Documentation,
    ),
    (
        0xfc00_0000_0000_0000_0000_0000_0000_0000,
        7,
        Denied::UniqueLocal,
    ),
    (
        0xfe80_0000_0000_0000_0000_0000_0000_0000,
        10,
        Denied::LinkLocal,
    ),
    (
        0xfec0_0000_0000_0000_0000_0000_0000_0000,
        10,
        Denied::UniqueLocal,
    ),
    (
        0xff00_0000_0000_0000_0000_0000_0000_0000,
        8,
        Denied::Multicast,
    ),
];

fn in_v4(addr: u32, net: [u8; 4], len: u8) -> bool {
    let mask = if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len))
    };
    addr & mask == u32::from_be_bytes(net) & mask
}

fn in_v6(addr: u128, net: u128, len: u8) -> bool {
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    };
    addr & mask == net & mask
}

fn check_v4(v4: Ipv4Addr) -> Option<Denied> {
    let bits = u32::from(v4);
    V4.iter()
        .find(|(net, len, _)| in_v4(bits, *net, *len))
        .map(|(_, _, why)| *why)
}

/// The IPv4 address an IPv6 one carries, in the forms that route to it: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`, deprecated but still parsed by stacks),
/// 6to4 (`2002:aabb:ccdd::/48`) and Teredo (`2001:0::/32`, the client's address inverted in the
/// last 32 bits; the server's in bits 32-63 is judged too).
fn embedded(v6: Ipv6Addr) -> Vec<Ipv4Addr> {
    let bits = u128::from(v6);
    let low = Ipv4Addr::from(u32::try_from(bits & 0xffff_ffff).unwrap_or(0));
    let mut out = Vec::new();
    // Mapped (`::ffff:0:0/96`) and compatible (`::/96`, but `::` and `::1` themselves).
    if bits >> 32 == 0xffff || (bits >> 32 == 0 && bits > 1) {
        out.push(low);
    } else if bits >> 112 == 0x2002 {
        out.push(Ipv4Addr::from(
            u32::try_from((bits >> 80) & 0xffff_ffff).unwrap_or(0),
        ));
    } else if bits >> 96 == 0x2001_0000 {
        out.push(Ipv4Addr::from(
            u32::try_from((bits >> 64) & 0xffff_ffff).unwrap_or(0),
        ));
        out.push(Ipv4Addr::from(
            !u32::try_from(bits & 0xffff_ffff).unwrap_or(0),
        ));
    }
    out
}

/// Whether a fetch may connect to `addr`, given this host's own addresses `own`.
pub fn check(addr: IpAddr, own: &[IpAddr]) -> Result<(), Refused> {
    let refused = |why, embedded| Refused {
        addr,
        why,
        embedded,
    };
    // The named ranges first (their rule says more than "own"), the host's own addresses last.
    match addr {
        IpAddr::V4(v4) => {
            if let Some(why) = check_v4(v4) {
                return Err(refused(why, None));
            }
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            if let Some((_, _, why)) = V6.iter().find(|(net, len, _)| in_v6(bits, *net, *len)) {
                return Err(refused(*why, None));
            }
            let carried = embedded(v6);
            // Outside 2000::/3 nothing is global unicast: what is not denied above by name
            // (loopback, ULA, link-local, multicast, NAT64) is unallocated or special-purpose,
            // except the forms that carry an IPv4 address, judged by what they carry.
            let mapped_or_compatible = bits >> 32 == 0 || bits >> 32 == 0xffff;
            if bits >> 125 != 1 && !mapped_or_compatible {
                return Err(refused(Denied::Reserved, None));
            }
            for v4 in carried {
                if let Some(why) = check_v4(v4) {
                    return Err(refused(why, Some(v4)));
                }
                if own.contains(&IpAddr::V4(v4)) {
                    return Err(refused(Denied::HostOwn, Some(v4)));
                }
            }
        }
    }
    if own.contains(&addr) {
        return Err(refused(Denied::HostOwn, None));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn judge(text: &str) -> Result<(), Denied> {
        check(
            text.parse().unwrap(),
            &[
                "93.184.216.77".parse().unwrap(),
                "2a01:4f8::7".parse().unwrap(),
            ],
        )
        .map_err(|r| r.why)
    }

    #[test]
    fn the_deny_table() {
        use Denied::*;
        for (addr, want) in [
            // Allowed: public addresses of both families (positive controls).
            ("93.184.215.14", Ok(())),
            ("1.1.1.1", Ok(())),
            ("8.8.8.8", Ok(())),
            ("100.63.255.255", Ok(())),
            ("100.128.0.0", Ok(())),
            ("172.15.255.255", Ok(())),
            ("172.32.0.0", Ok(())),
            ("169.253.255.255", Ok(())),
            ("2606:4700:4700::1111", Ok(())),
            ("2001:4860:4860::8888", Ok(())),
            ("::ffff:93.184.215.14", Ok(())),
            ("2002:5db8:d70e::1", Ok(())),
            // IPv4.
            ("0.0.0.0", Err(Unspecified)),
            ("0.1.2.3", Err(Unspecified)),
            ("127.0.0.1", Err(Loopback)),
            ("127.255.255.254", Err(Loopback)),
            ("10.0.0.1", Err(Private)),
            ("172.16.0.1", Err(Private)),
            ("172.31.255.255", Err(Private)),
            ("192.168.1.1", Err(Private)),
            ("100.64.0.1", Err(SharedAddressSpace)),
            ("100.127.255.255", Err(SharedAddressSpace)),
            ("169.254.169.254", Err(Metadata)),
            ("100.100.100.200", Err(Metadata)),
            ("169.254.1.1", Err(LinkLocal)),
            ("224.0.0.1", Err(Multicast)),
            ("239.255.255.250", Err(Multicast)),
            ("255.255.255.255", Err(Broadcast)),
            ("240.0.0.1", Err(Reserved)),
            ("192.0.0.8", Err(Reserved)),
            ("192.88.99.1", Err(Reserved)),
            ("192.0.2.1", Err(Documentation)),
            ("198.51.100.1", Err(Documentation)),
            ("203.0.113.9", Err(Documentation)),
            ("198.18.0.1", Err(Benchmarking)),
            ("198.19.255.255", Err(Benchmarking)),
            // IPv6.
            ("::", Err(Unspecified)),
            ("::1", Err(Loopback)),
            ("fd00:ec2::254", Err(Metadata)),
            ("fd12:3456::1", Err(UniqueLocal)),
            ("fc00::1", Err(UniqueLocal)),
            ("fec0::1", Err(UniqueLocal)),
            ("fe80::1", Err(LinkLocal)),
            ("febf::1", Err(LinkLocal)),
            ("ff02::1", Err(Multicast)),
            ("64:ff9b::a00:1", Err(Nat64)),
            ("64:ff9b::5db8:d70e", Err(Nat64)),
            ("64:ff9b:1::1", Err(Nat64)),
            ("100::1", Err(Reserved)),
            ("2001:db8::1", Err(Documentation)),
            ("2001:2::1", Err(Benchmarking)),
            // Embedded IPv4, judged as what it embeds.
            ("::ffff:127.0.0.1", Err(Loopback)),
            ("::ffff:169.254.169.254", Err(Metadata)),
            ("::ffff:10.1.2.3", Err(Private)),
            ("::127.0.0.1", Err(Loopback)),
            ("::10.0.0.1", Err(Private)),
            ("2002:7f00:1::1", Err(Loopback)),
            ("2002:a9fe:a9fe::1", Err(Metadata)),
            ("2002:c0a8:101::", Err(Private)),
            // Teredo: server 192.168.1.1, client 93.184.215.14 inverted.
            ("2001:0:c0a8:101::a247:28f1", Err(Private)),
            // Teredo: a public server, client 127.0.0.1 inverted (0x80fffffe).
            ("2001:0:5db8:d70e::80ff:fffe", Err(Loopback)),
            // Outside global unicast (2000::/3): reserved, unless it carries IPv4.
            ("4000::1", Err(Reserved)),
            ("5f00::1", Err(Reserved)),
            ("::ffff:0:808:808", Err(Reserved)),
            ("3fff::1", Err(Documentation)),
            ("::ffff:8.8.8.8", Ok(())),
            // The host's own addresses, directly and embedded.
            ("2a01:4f8::7", Err(HostOwn)),
            ("::ffff:93.184.216.77", Err(HostOwn)),
            ("93.184.216.77", Err(HostOwn)),
            // A named rule says more than "own": it is reported first.
            ("::ffff:192.0.2.1", Err(Documentation)),
        ] {
            assert_eq!(judge(addr), want, "{addr}");
        }
        // Teredo with public server and client (positive control): allowed.
        assert_eq!(judge("2001:0:5db8:d70e::a247:28f1"), Ok(()));
    }

    #[test]
    fn a_refusal_names_the_address_and_what_it_embeds() {
        let r = check("::ffff:169.254.169.254".parse().unwrap(), &[]).unwrap_err();
        let text = r.to_string();
        assert!(
            text.contains("metadata") && text.contains("embeds 169.254.169.254"),
            "{text}"
        );
        let r = check("10.0.0.1".parse().unwrap(), &[]).unwrap_err();
        assert_eq!(r.to_string(), "10.0.0.1 is a private network (RFC 1918)");
    }

    /// The table's own shape: every range's network has no bits past its prefix, so no entry
    /// is written wider or narrower than it reads.
    #[test]
    fn every_range_is_written_exactly() {
        for (net, len, _) in V4 {
            let bits = u32::from_be_bytes(*net);
            let host = if *len == 32 { 0 } else { u32::MAX >> len };
            assert_eq!(bits & host, 0, "{net:?}/{len}");
        }
        for (net, len, _) in V6 {
            let host = if *len == 128 { 0 } else { u128::MAX >> len };
            assert_eq!(net & host, 0, "{net:x}/{len}");
        }
    }
}
