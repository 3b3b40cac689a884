//! What spear-web's tests share: the test network (in [`testnet`]), a generated PDF (in [`pdf`]),
//! both also included by the other crates' network tests, and a fetcher configured for the test
//! network.

#![allow(dead_code)]

pub mod pdf;
pub mod testnet;

use std::time::Duration;

use spear_web::{Fetcher, Timeouts, WebConfig};

#[allow(unused_imports)]
pub use testnet::*;

/// The tests' configuration: `extra_ports` allowed (so that the address rule, not the port rule,
/// is what refuses a listener on port 0), short timeouts.
pub fn config(extra_ports: &[u16]) -> WebConfig {
    WebConfig {
        extra_ports: extra_ports.to_vec(),
        timeouts: Timeouts {
            connect: Duration::from_secs(3),
            first_byte: Duration::from_secs(5),
            total: Duration::from_secs(20),
        },
        ..WebConfig::default()
    }
}

/// A fetcher with [`config`].
pub fn fetcher(extra_ports: &[u16]) -> Fetcher {
    Fetcher::new(config(extra_ports)).unwrap()
}
