//! Fuzzes what `spear serve` reads from a connection and `spear exec` from the server: the
//! frames of `spear-exec/1`, and the client's cgroup membership the server judges (spear-cli's
//! library: the modules the binary itself compiles).
//!
//! Invariants: no panic and no allocation past the input's size; whatever decodes re-encodes
//! to something that decodes the same; memberships the relation accepts are each within
//! themselves.

#![no_main]
// A failed invariant must abort the run: that is how libFuzzer learns of it.
#![allow(clippy::manual_assert, clippy::panic)]

use libfuzzer_sys::fuzz_target;

use spear_cli::exec_wire as wire;
use spear_cli::served_cgroups as cgroups;
use wire::{Done, Request, Verdict};

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = Request::decode(data) {
        assert_eq!(Request::decode(&r.encode()).as_ref(), Ok(&r));
    }
    if let Ok(v) = Verdict::decode(data) {
        assert_eq!(Verdict::decode(&v.encode()).as_ref(), Ok(&v));
    }
    if let Ok(d) = Done::decode(data) {
        assert_eq!(Done::decode(&d.encode()).as_ref(), Ok(&d));
    }
    if let Ok(header) = <[u8; 4]>::try_from(data.get(..4).unwrap_or_default()) {
        let _ = wire::frame_len(header);
    }
    // Two memberships, split at the first NUL.
    if let Ok(text) = std::str::from_utf8(data) {
        let (client, server) = text.split_once('\0').unwrap_or((text, text));
        let forth = cgroups::within(client, server);
        if forth.is_ok() {
            assert_eq!(cgroups::within(client, client), Ok(()));
            assert_eq!(cgroups::within(server, server), Ok(()));
        }
    }
});
