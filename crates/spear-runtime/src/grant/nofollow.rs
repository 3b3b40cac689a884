//! How the key and the ledger are opened: never through a link.

/// `O_NOFOLLOW`, for the key and the ledger: neither is ever read or rewritten through a link
/// planted to make spear use another file.
pub(super) fn nofollow() -> i32 {
    i32::try_from(rustix::fs::OFlags::NOFOLLOW.bits()).unwrap_or(0)
}
