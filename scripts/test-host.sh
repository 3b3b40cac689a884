#!/usr/bin/env bash
# The tests' "internet": a host in its own network namespace, reachable from this machine's network
# stack (and so through slirp4netns) at 203.0.113.10, serving HTTP on port 8080. The address is in a
# documentation range, which spear refuses unless the configuration allows it; the network tests
# allow it. Also makes /dev/net/tun usable by every user, as distributions ship it, so that the
# unprivileged run tests the rootless network path.
#
#   scripts/test-host.sh up      create (idempotent) and check it answers
#   scripts/test-host.sh down    remove it, and put back what `up` changed (the mode of
#                                /dev/net/tun, a /run/netns mount it made)
#
# Needs root.
set -euo pipefail

ns=spear-testhost
host_if=spear-th0
peer_if=spear-th1

up() {
    # A namespace file left without its mount (a host that rebooted /run, an interrupted run) is
    # listed but unusable: start over.
    if ip netns list | grep -qw "$ns" && ! ip netns exec "$ns" true 2>/dev/null; then
        down
    fi
    if ! ip netns list | grep -qw "$ns"; then
        # `ip netns add` makes /run/netns a (shared) mount point if it is not one yet; remember
        # that it did, so that `down` leaves the mount table as it found it.
        if ! mountpoint -q /run/netns 2>/dev/null; then
            touch /run/spear-testhost-made-run-netns
        fi
        ip netns add "$ns"
    fi
    if ! ip link show "$host_if" >/dev/null 2>&1; then
        ip link add "$host_if" type veth peer name "$peer_if"
        ip link set "$peer_if" netns "$ns"
        ip addr add 203.0.113.1/24 dev "$host_if"
        ip netns exec "$ns" ip addr add 203.0.113.10/24 dev "$peer_if"
    fi
    ip link set "$host_if" up
    ip netns exec "$ns" ip link set "$peer_if" up
    ip netns exec "$ns" ip link set lo up
    if ! ip netns pids "$ns" | grep -q .; then
        # Not under /tmp: a cleaner there would leave the server answering 404.
        root=/run/spear-testhost-www
        mkdir -p "$root"
        echo "spear test host" >"$root/index.html"
        (cd "$root" && setsid -f ip netns exec "$ns" python3 -m http.server 8080 --bind 203.0.113.10 \
            >/dev/null 2>&1 </dev/null)
    fi
    for _ in $(seq 50); do
        if python3 -c "import urllib.request; urllib.request.urlopen('http://203.0.113.10:8080/', timeout=1)" 2>/dev/null; then
            break
        fi
        sleep 0.1
    done
    python3 -c "import urllib.request; urllib.request.urlopen('http://203.0.113.10:8080/', timeout=2)"
    if [ -e /dev/net/tun ]; then
        # Remember the mode it had, for `down` to put back.
        if [ ! -e /run/spear-testhost-tun-mode ]; then
            stat -c %a /dev/net/tun >/run/spear-testhost-tun-mode
        fi
        chmod 0666 /dev/net/tun
    fi
}

down() {
    for pid in $(ip netns pids "$ns" 2>/dev/null); do
        kill "$pid" 2>/dev/null || true
    done
    ip link del "$host_if" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    if [ -e /run/spear-testhost-tun-mode ]; then
        chmod "$(cat /run/spear-testhost-tun-mode)" /dev/net/tun 2>/dev/null || true
        rm -f /run/spear-testhost-tun-mode
    fi
    if [ -e /run/spear-testhost-made-run-netns ] && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
        umount /run/netns 2>/dev/null || true
        rm -f /run/spear-testhost-made-run-netns
    fi
}

case "${1:-}" in
up) up ;;
down) down ;;
*)
    echo "usage: $0 up|down" >&2
    exit 2
    ;;
esac
