//! spear's web pair, which runs in spear's own process, outside the sandbox: its boundary is
//! this code. So far: the address policy every connection of a fetch is checked against
//! ([`address`]).

pub mod address;
