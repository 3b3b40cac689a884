#!/usr/bin/env bash
# Packs what scripts/test-device.sh needs on a machine without package registries into .device/
# (ignored by git): a release build of spear, stripped, and the .deb files of bubblewrap and
# slirp4netns (with libslirp) for amd64. The binary is built on Debian 12 (glibc 2.36), so it
# runs on Ubuntu 24.04 (glibc 2.39); the .debs are only unpacked there (dpkg -x), never installed.
#
#   scripts/pack-device.sh            then carry .device (the device tool's `carry`) and run
#                                     scripts/test-device.sh there
#
# Everything it fetches comes from this machine's registries (crates.io for the build, Debian's
# archive for the .debs).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

out=.device
rm -rf "$out"
mkdir -p "$out/debs"

cargo build --release --locked -p spear-cli
cp target/release/spear "$out/spear"
strip "$out/spear"

lists=$(mktemp -d)
trap 'rm -rf "$lists"' EXIT
apt_opts=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
mkdir -p "$lists/partial"
apt-get "${apt_opts[@]}" update -qq
(cd "$out/debs" && apt-get "${apt_opts[@]}" download bubblewrap slirp4netns libslirp0 nftables \
    libnftables1 libnftnl11 libjansson4 libmnl0 libxtables12)
ls -la "$out" "$out/debs"
du -sh "$out"
