#!/usr/bin/env bash
# The tests' network: runs a command (the test suite) in a network namespace and a mount namespace
# of its own, beside a test "internet" host, and leaves the machine's own network untouched.
#
#   scripts/test-host.sh run COMMAND [ARG...]   COMMAND inside the test network; its exit status
#
# What COMMAND sees (and nothing else):
# - a network namespace of its own holding loopback and spear-th0 (203.0.113.1/24), one end of a
#   veth pair; no default route, so every other destination fails at once (ENETUNREACH);
# - the test host, a second network namespace at 203.0.113.10 on the other end, serving HTTP on
#   port 8080 ("spear test host") and DNS on port 53 (every name is an A record of 203.0.113.10);
#   the address is in a documentation range, which spear refuses unless the configuration allows
#   it, and the network tests allow it;
# - a mount namespace of its own (every mount private) in which /etc/resolv.conf names the test
#   host's resolver, and /dev/net/tun is a node of the same device with mode 0666, as
#   distributions ship it, so that the unprivileged test user reaches the rootless network path.
#
# Why: spear starts slirp4netns in the network namespace spear itself runs in, and slirp4netns
# connects from there on behalf of the sandbox. Running the tests (spear) inside this namespace
# makes slirp4netns reach the test host through this namespace's route, so nothing is added to the
# machine's own routes, addresses or resolver, nor changed in its /dev/net/tun, at any moment of
# the run (an earlier version put 203.0.113.1/24 on the host, which hid package registries whose
# route fell in that range). Both namespaces are anonymous (no `ip netns` name, no file on the
# host): the test host's namespace is pinned by a bind mount inside the private mount namespace,
# on a tmpfs mounted over /dev/net there. They vanish when COMMAND and the test host exit; the test
# host is killed when this script's inner shell exits (parent-death signal), however it ends.
#
# The tests inside have no other network: whatever they need from the internet (cargo's
# downloads, the MCP clients) must be fetched before, outside (scripts/test.sh builds the tests
# first). Run a network test binary by hand the same way:
#   scripts/test-host.sh run cargo test -p spear-runtime --test network
# As the unprivileged user, nest setpriv inside (scripts/test-unprivileged.sh does).
#
# Needs root (to create the namespaces). COMMAND runs as root with SPEAR_TEST_NETWORK=1 set.
set -euo pipefail

host_if=spear-th0
peer_if=spear-th1
client_addr=203.0.113.1/24
host_addr=203.0.113.10

usage() {
    echo "usage: $0 run COMMAND [ARG...]" >&2
    exit 2
}

# The test host: HTTP on :8080 (files of $1) and a DNS server on :53, both on $host_addr.
server_program() {
    cat <<'PY'
import functools, http.server, socket, struct, sys, threading

addr, root = sys.argv[1], sys.argv[2]

class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

def dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))
    answer_ip = socket.inet_aton(addr)
    while True:
        q, peer = s.recvfrom(512)
        try:
            (qid, flags, qd) = struct.unpack(">HHH", q[:6])
            i = 12
            while q[i] != 0:
                i += 1 + q[i]
            qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
            question = q[12:i + 5]
        except (IndexError, struct.error):
            continue
        if flags & 0x8000 or qd != 1:
            continue
        a = qtype == 1
        r = struct.pack(">HHHHHH", qid, 0x8180, 1, int(a), 0, 0) + question
        if a:
            r += struct.pack(">HHHLH", 0xC00C, 1, 1, 60, 4) + answer_ip
        s.sendto(r, peer)

threading.Thread(target=dns, daemon=True).start()
handler = functools.partial(Handler, directory=root)
http.server.ThreadingHTTPServer((addr, 8080), handler).serve_forever()
PY
}

# Exits 0 once the test host answers HTTP and DNS from this namespace.
answers() {
    python3 - "$host_addr" <<'PY'
import socket, sys, urllib.request
addr = sys.argv[1]
body = urllib.request.urlopen(f"http://{addr}:8080/", timeout=1).read()
assert body == b"spear test host\n", body
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1)
s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01", (addr, 53))
r = s.recv(512)
assert r[:2] == b"\x12\x34" and r[-4:] == socket.inet_aton(addr), r
PY
}

# Runs in the new network and mount namespaces (as `unshare` starts it): builds the test network,
# then runs the command.
inside() {
    # Belt and braces: this builds the test network in the namespaces it runs in, so it must be in
    # a network namespace just made (nothing in it but a loopback that is down) and in mount and
    # network namespaces that are not its caller's.
    local ns
    for ns in net mnt; do
        if [ "$(readlink /proc/self/ns/$ns)" = "$(readlink /proc/$PPID/ns/$ns)" ]; then
            echo "test-host: refusing to build the test network in the caller's $ns namespace" >&2
            exit 1
        fi
    done
    if [ "$(ip -o link show | wc -l)" -ne 1 ] || [ -n "$(ip -o addr show up)" ]; then
        echo "test-host: refusing to build the test network in a network namespace in use" >&2
        exit 1
    fi
    if [ ! -c /dev/net/tun ]; then
        echo "test-host: /dev/net/tun is missing: slirp4netns needs the tun driver" >&2
        exit 1
    fi
    # /dev/net/tun is char 10:200 everywhere (the kernel's "misc" tun minor).
    local tun_dev
    tun_dev=$(stat -c '%t:%T' /dev/net/tun)
    mount -t tmpfs -o mode=0755,size=4m spear-testnet /dev/net
    mknod -m 0666 /dev/net/tun c "$((16#${tun_dev%:*}))" "$((16#${tun_dev#*:}))"
    local dir=/dev/net/spear-testnet
    mkdir -m 0755 "$dir" "$dir/www"
    echo "spear test host" >"$dir/www/index.html"
    server_program >"$dir/server.py"
    if [ ! -e /etc/resolv.conf ]; then
        # Making one would change the machine; bind mounts need a file to cover.
        echo "test-host: /etc/resolv.conf is missing (the test network binds its own over it)" >&2
        exit 1
    fi
    echo "nameserver $host_addr" >"$dir/resolv.conf"
    chmod 0644 "$dir/resolv.conf"
    mount --bind "$dir/resolv.conf" /etc/resolv.conf

    ip link set lo up
    touch "$dir/host.net"
    unshare --net="$dir/host.net" true
    ip link add "$host_if" type veth peer name "$peer_if"
    ip link set "$peer_if" netns "$dir/host.net"
    ip addr add "$client_addr" dev "$host_if"
    ip link set "$host_if" up
    nsenter --net="$dir/host.net" sh -c \
        "ip link set lo up && ip addr add $host_addr/24 dev $peer_if && ip link set $peer_if up"

    # The test host dies with this shell (its parent), also when the shell is killed.
    setpriv --pdeathsig KILL nsenter --net="$dir/host.net" \
        python3 "$dir/server.py" "$host_addr" "$dir/www" </dev/null >"$dir/server.log" 2>&1 &
    local server=$!
    trap 'kill "$server" 2>/dev/null || true' EXIT
    local ok=0
    for _ in $(seq 50); do
        if answers 2>/dev/null; then
            ok=1
            break
        fi
        sleep 0.1
    done
    if [ "$ok" -ne 1 ] && ! answers; then
        echo "test-host: the test host does not answer; its log:" >&2
        cat "$dir/server.log" >&2
        exit 1
    fi
    local status=0
    SPEAR_TEST_NETWORK=1 "$@" || status=$?
    exit "$status"
}

case "${1:-}" in
run)
    shift
    [ "$#" -ge 1 ] || usage
    if [ "$(id -u)" -ne 0 ]; then
        echo "test-host: run as root (it creates network and mount namespaces)" >&2
        exit 1
    fi
    if [ "${SPEAR_TEST_NETWORK:-}" = 1 ]; then
        # Already inside: no second network around the first.
        exec "$@"
    fi
    # `inside` is reachable only this way (no subcommand runs it in the caller's namespaces).
    exec unshare --net --mount --propagation private -- bash -c \
        "set -euo pipefail; $(declare -p host_if peer_if client_addr host_addr);
         $(declare -f server_program answers inside); inside \"\$@\"" test-host "$@"
    ;;
*) usage ;;
esac
