#!/usr/bin/env bash
# Installs what spear and its tests need on a Debian machine. Idempotent: a second run changes
# nothing and takes a second.
#
# - Debian packages: bubblewrap and slirp4netns (the sandbox and its network), util-linux
#   (setpriv/runuser for unprivileged test runs), iproute2 and nftables (network tests), GNU sed
#   and gawk (the classifier's tests use them as oracles), gcc and g++ (crates that build C and
#   C++, such as libFuzzer for the fuzz targets; the seccomp tests compile their probes), python3,
#   git, procps and curl (programs the sandbox tests run inside the sandbox), ripgrep (the
#   search_files benchmark compares spear's search with rg on the same tree), openssl (the test
#   network's web hosts make their test CA and certificates with it), fuse-overlayfs (a rollout
#   workspace's copy-on-write view of its template when spear runs as a user; root uses the
#   kernel's overlayfs).
# - /dev/fuse readable and writable by every user (mode 0666, what Debian's udev rule makes it;
#   a container without udev may leave it 0600), so that a user can mount fuse-overlayfs.
# - A Rust toolchain with rustfmt and clippy (the machine's rustup), and cargo-fuzz (the fuzz
#   targets' replay in scripts/test.sh; built from source the first time, a few minutes).
# - An unprivileged user, spear-test, that the security tests also run as.
set -euo pipefail

packages=(bubblewrap slirp4netns util-linux iproute2 nftables sed gawk gcc g++ libc6-dev bash coreutils findutils python3 git procps curl ripgrep openssl fuse-overlayfs)
test_user=spear-test
cargo_fuzz_version=0.13.2

say() { printf 'setup: %s\n' "$*"; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        say "need root to run: $*"
        exit 1
    fi
}

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    else
        say "no Rust toolchain found: install rustup (https://rustup.rs) and run this again"
        exit 1
    fi
fi
for component in rustfmt clippy; do
    if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
        say "adding the $component component"
        rustup component add "$component"
    fi
done

if ! cargo fuzz --version >/dev/null 2>&1; then
    say "installing cargo-fuzz $cargo_fuzz_version"
    cargo install "cargo-fuzz@$cargo_fuzz_version" --locked --quiet
fi

if [ -c /dev/fuse ] && [ "$(stat -c %a /dev/fuse)" != 666 ]; then
    say "making /dev/fuse usable by users (mode 0666, as udev does)"
    as_root chmod 0666 /dev/fuse
fi

if [ "$(id -u)" -eq 0 ] && ! id "$test_user" >/dev/null 2>&1; then
    say "creating the unprivileged test user $test_user"
    useradd --system --no-create-home --shell /usr/sbin/nologin "$test_user"
fi

say "ready: $(bwrap --version), $(slirp4netns --version | head -n 1), $(cargo --version), $(cargo fuzz --version)"
