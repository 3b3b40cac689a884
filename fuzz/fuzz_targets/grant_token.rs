//! Fuzzes the grant tokens spear reads from outside (`spear exec --grant TOKEN`): `GrantKey::open`
//! and `GrantAuthority::verify`.
//!
//! Invariants: no panic; a token this key did not seal never opens (whatever its shape: cut,
//! re-encoded, another key's); a grant sealed for a binding made from the input verifies for it
//! once, and never for a binding that differs in its command.

#![no_main]
// A failed invariant must abort the run: that is how libFuzzer learns of it.
#![allow(clippy::manual_assert, clippy::panic)]

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use libfuzzer_sys::fuzz_target;
use spear_runtime::{
    Binding, GrantAuthority, GrantKey, Issuer, MemoryLedger, NetworkRoute, SandboxBinding,
    command_digest,
};

fn authority() -> &'static GrantAuthority {
    static AUTHORITY: OnceLock<GrantAuthority> = OnceLock::new();
    AUTHORITY.get_or_init(|| {
        GrantAuthority::with_parts(
            GrantKey::from_bytes([7; 32]),
            Box::new(MemoryLedger::default()),
            Issuer::Operator,
        )
    })
}

fn binding(script: &str) -> Binding {
    Binding {
        execution: None,
        command: command_digest(None, Some(script)),
        cwd: "/w".into(),
        cwd_identity: None,
        profile: "p".into(),
        network: NetworkRoute::Closed,
        guarantees: Vec::new(),
        class: None,
        targets: Vec::new(),
        sandbox: SandboxBinding {
            env: Vec::new(),
            roots: Vec::new(),
            limits: Vec::new(),
            egress: Vec::new(),
            rules: String::new(),
            digest: String::new(),
        },
    }
}

fuzz_target!(
    init: spear_fuzz::install_panic_hook(),
    |data: &[u8]| {
        let text = String::from_utf8_lossy(data);
        let now = SystemTime::now();
        if authority().verify(&text, &binding(&text), now).is_ok() {
            panic!("a token this key never sealed verified: {text:?}");
        }
        let other = GrantKey::from_bytes([8; 32]);
        if other.open(&text).is_ok() {
            panic!("a token opened under a key that never sealed it: {text:?}");
        }
        let token = authority()
            .issue(&binding(&text), Duration::from_secs(60), now)
            .expect("a grant");
        if other.open(&token).is_ok() {
            panic!("a grant opened under another key");
        }
        if authority()
            .verify(&token, &binding(&format!("{text}x")), now)
            .is_ok()
        {
            panic!("a grant verified for another command");
        }
        if authority().verify(&token, &binding(&text), now).is_err() {
            panic!("a grant did not verify for its own command");
        }
        if authority().verify(&token, &binding(&text), now).is_ok() {
            panic!("a grant verified twice");
        }
    }
);
