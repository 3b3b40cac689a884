//! What spear-web's network tests share besides the test network itself (which is
//! [`spear_testkit::net`]): a fetcher configured for the test network.

use std::time::Duration;

use spear_web::{Fetcher, Timeouts, WebConfig};

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
