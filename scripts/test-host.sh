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
# - a tmpfs at target/test-tmpfs (mode 1777), named by $SPEAR_TEST_TMPFS, for tests that measure
#   spear's own work rather than the host disk's;
# - for spear's own fetches (fetch_url), web hosts on the test host (scripts/test-web-host.py, whose
#   header lists the paths): HTTP on 80 and HTTPS on 443 of 93.184.216.34, .35 and .36 (routed
#   on-link, one /32 route each) and of 2a0b:4d07::34 and ::35 (the /64 spear-th0 shares, holding
#   2a0b:4d07::1 on this side). Their test CA is $SPEAR_TEST_WEB_CA
#   (/dev/net/spear-testnet/web/ca.pem, readable by everyone), and /dev/net/spear-testnet/web/files
#   is a world-writable directory they serve at /files/NAME.
# - the DNS server's test names (TTL 0; the table is in server_program): public.test ->
#   93.184.216.34, second.test -> .35, untrusted.test -> .36 (a certificate nobody trusts),
#   wrongname.test -> .34 (a certificate not naming it), v6only.test -> AAAA 2a0b:4d07::34 only,
#   dual.test -> both, multi.test -> 93.184.216.34 and 127.0.0.1, mixed6.test -> A 93.184.216.34
#   and AAAA fd00:77::1, meta.test -> 169.254.169.254, mapped.test -> AAAA ::ffff:169.254.169.254,
#   private.test -> 10.77.0.1, ula.test -> AAAA fd00:77::1, own.test -> 93.184.217.1, own6.test ->
#   AAAA 2a0b:4d07::1, loopback.test and localhost -> 127.0.0.1 and ::1, empty.test -> no address,
#   nxdomain.test -> NXDOMAIN; rebind.test and rebind-LABEL.test -> 93.184.216.34 at the first A
#   question for that name, 10.77.0.1 at every later one. Every other name: A 203.0.113.10.
# - addresses of refused kinds on this namespace's loopback, where tests bind counting listeners:
#   10.77.0.1, 169.254.169.254, 93.184.217.1 (public-looking, but this namespace's own), fd00:77::1,
#   2002:a9fe:a9fe::1 (6to4 of the metadata address); and net.ipv4.ip_unprivileged_port_start=0
#   in this namespace (a per-namespace setting), so that the unprivileged user binds port 80 too.
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
# Needs root (to create the namespaces). COMMAND runs as root with SPEAR_TEST_NETWORK=1 and
# SPEAR_TEST_WEB_CA set.
set -euo pipefail

host_if=spear-th0
peer_if=spear-th1
client_addr=203.0.113.1/24
host_addr=203.0.113.10
# The web hosts (scripts/test-web-host.py), on the test host's end of the veth; routed on-link in
# the tests' namespace, which also holds client_v6 on its end (the /64 is the hosts' too).
web_v4=(93.184.216.34 93.184.216.35 93.184.216.36)
web_v6=(2a0b:4d07::34 2a0b:4d07::35)
client_v6=2a0b:4d07::1/64
# Addresses of refused kinds on the tests' namespace's loopback interface (beside 127.0.0.1 and
# ::1), for the tests' counting listeners: private, metadata, one public-looking address that is
# the namespace's own, a ULA and a 6to4 address embedding the metadata address. (On lo, not on a
# dummy interface: not every kernel has the dummy driver.)
local_v4=(10.77.0.1 169.254.169.254 93.184.217.1)
local_v6=(fd00:77::1 2002:a9fe:a9fe::1)
web_program="$(cd "$(dirname "$0")" && pwd)/test-web-host.py"

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

# The test names (TTL 0, so nothing is cached between two lookups): name -> (A, AAAA). Keep in step
# with scripts/test-web-host.py. Every other name is an A record of the test host (TTL 60) and has
# no AAAA; AAAA questions for a name without an IPv6 answer get NOERROR and no answer.
TABLE = {
    "public.test": (["93.184.216.34"], []),
    "second.test": (["93.184.216.35"], []),
    "untrusted.test": (["93.184.216.36"], []),
    "wrongname.test": (["93.184.216.34"], []),
    "v6only.test": ([], ["2a0b:4d07::34"]),
    "dual.test": (["93.184.216.34"], ["2a0b:4d07::34"]),
    "multi.test": (["93.184.216.34", "127.0.0.1"], []),
    "mixed6.test": (["93.184.216.34"], ["fd00:77::1"]),
    "meta.test": (["169.254.169.254"], []),
    "mapped.test": ([], ["::ffff:169.254.169.254"]),
    "private.test": (["10.77.0.1"], []),
    "ula.test": ([], ["fd00:77::1"]),
    "own.test": (["93.184.217.1"], []),
    "own6.test": ([], ["2a0b:4d07::1"]),
    "loopback.test": (["127.0.0.1"], ["::1"]),
    "localhost": (["127.0.0.1"], ["::1"]),
    "empty.test": ([], []),
}
NXDOMAIN = {"nxdomain.test"}
# DNS rebinding: the first A question for rebind.test, or for any rebind-LABEL.test, is answered
# with the public web host; every later one with the private address 10.77.0.1.
REBIND = ("93.184.216.34", "10.77.0.1")
rebound = set()

def answer(name, qtype):
    """(rcode, ttl, [(type, rdata)]) for a question."""
    if name in NXDOMAIN:
        return 3, 0, []
    if name == "rebind.test" or (name.startswith("rebind-") and name.endswith(".test")):
        if qtype != 1:
            return 0, 0, []
        first = name not in rebound
        rebound.add(name)
        return 0, 0, [(1, socket.inet_aton(REBIND[0] if first else REBIND[1]))]
    if name in TABLE:
        v4, v6 = TABLE[name]
        if qtype == 1:
            return 0, 0, [(1, socket.inet_aton(a)) for a in v4]
        if qtype == 28:
            return 0, 0, [(28, socket.inet_pton(socket.AF_INET6, a)) for a in v6]
        return 0, 0, []
    if qtype == 1:
        return 0, 60, [(1, socket.inet_aton(addr))]
    return 0, 60, []

def dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))
    while True:
        q, peer = s.recvfrom(512)
        try:
            (qid, flags, qd) = struct.unpack(">HHH", q[:6])
            i = 12
            labels = []
            while q[i] != 0:
                labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace").lower())
                i += 1 + q[i]
            qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
            question = q[12:i + 5]
        except (IndexError, struct.error):
            continue
        if flags & 0x8000 or qd != 1:
            continue
        rcode, ttl, records = answer(".".join(labels), qtype)
        r = struct.pack(">HHHHHH", qid, 0x8180 | rcode, 1, len(records), 0, 0) + question
        for rtype, rdata in records:
            r += struct.pack(">HHHLH", 0xC00C, rtype, 1, ttl, len(rdata)) + rdata
        s.sendto(r, peer)

threading.Thread(target=dns, daemon=True).start()
handler = functools.partial(Handler, directory=root)
http.server.ThreadingHTTPServer((addr, 8080), handler).serve_forever()
PY
}

# Exits 0 once the test host answers HTTP and DNS, and the web hosts HTTP and HTTPS (with the
# test CA $2), from this namespace.
answers() {
    python3 - "$host_addr" "$2" "${web_v4[@]}" "${web_v6[@]}" <<'PY'
import socket, ssl, sys, urllib.request
addr, ca, webs = sys.argv[1], sys.argv[2], sys.argv[3:]
body = urllib.request.urlopen(f"http://{addr}:8080/", timeout=1).read()
assert body == b"spear test host\n", body
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1)
s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01", (addr, 53))
r = s.recv(512)
assert r[:2] == b"\x12\x34" and r[-4:] == socket.inet_aton(addr), r
tls = ssl.create_default_context(cafile=ca)
tls.check_hostname = False
tls.verify_mode = ssl.CERT_NONE
for web in webs:
    host = f"[{web}]" if ":" in web else web
    for scheme in ("http", "https"):
        got = urllib.request.urlopen(f"{scheme}://{host}/", timeout=1, context=tls).read()
        assert got == b"spear test web host\n", (web, got)
# The server certificate verifies against the CA.
with socket.create_connection((webs[0], 443), timeout=1) as raw:
    with ssl.create_default_context(cafile=ca).wrap_socket(raw, server_hostname="public.test"):
        pass
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
    mount -t tmpfs -o mode=0755,size=64m spear-testnet /dev/net
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
    # Listeners on port 80 for the unprivileged test user too: this namespace's own setting.
    sysctl -q -w net.ipv4.ip_unprivileged_port_start=0
    local a
    for a in "${local_v4[@]}"; do ip addr add "$a/32" dev lo; done
    for a in "${local_v6[@]}"; do ip -6 addr add "$a/128" dev lo nodad; done
    touch "$dir/host.net"
    unshare --net="$dir/host.net" true
    ip link add "$host_if" type veth peer name "$peer_if"
    ip link set "$peer_if" netns "$dir/host.net"
    ip addr add "$client_addr" dev "$host_if"
    ip -6 addr add "$client_v6" dev "$host_if" nodad
    ip link set "$host_if" up
    for a in "${web_v4[@]}"; do ip route add "$a/32" dev "$host_if" src "${client_addr%/*}"; done
    nsenter --net="$dir/host.net" sh -c \
        "ip link set lo up && ip addr add $host_addr/24 dev $peer_if && ip link set $peer_if up"
    for a in "${web_v4[@]}"; do nsenter --net="$dir/host.net" ip addr add "$a/32" dev "$peer_if"; done
    for a in "${web_v6[@]}"; do
        nsenter --net="$dir/host.net" ip -6 addr add "$a/64" dev "$peer_if" nodad
    done
    mkdir -m 0755 "$dir/web"

    # The test host dies with this shell (its parent), also when the shell is killed.
    setpriv --pdeathsig KILL nsenter --net="$dir/host.net" \
        python3 "$dir/server.py" "$host_addr" "$dir/www" </dev/null >"$dir/server.log" 2>&1 &
    local server=$!
    setpriv --pdeathsig KILL nsenter --net="$dir/host.net" \
        python3 "$web_program" "$dir/web" </dev/null >"$dir/web.log" 2>&1 &
    local web=$!
    trap 'kill "$server" "$web" 2>/dev/null || true' EXIT
    local ok=0
    for _ in $(seq 50); do
        if [ -e "$dir/web/ready" ] && answers "$dir" "$dir/web/ca.pem" 2>/dev/null; then
            ok=1
            break
        fi
        sleep 0.1
    done
    if [ "$ok" -ne 1 ] && ! answers "$dir" "$dir/web/ca.pem"; then
        echo "test-host: the test host does not answer; its logs:" >&2
        cat "$dir/server.log" "$dir/web.log" >&2
        exit 1
    fi
    # A tmpfs for the tests that measure spear's own work rather than the host disk's (on a slow
    # disk, creating 200,000 files takes a minute of system time before spear does anything),
    # mounted in this mount namespace only, over a directory of the repository's target/.
    mount -t tmpfs -o mode=1777,size=4g spear-test-tmpfs "$test_tmpfs"
    local status=0
    SPEAR_TEST_NETWORK=1 SPEAR_TEST_WEB_CA="$dir/web/ca.pem" SPEAR_TEST_TMPFS="$test_tmpfs" \
        "$@" || status=$?
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
    # The mount point of the tests' tmpfs (the tmpfs itself exists only inside the namespace).
    test_tmpfs="$(cd "$(dirname "$0")/.." && pwd)/target/test-tmpfs"
    mkdir -p "$test_tmpfs"
    # `inside` is reachable only this way (no subcommand runs it in the caller's namespaces).
    exec unshare --net --mount --propagation private -- bash -c \
        "set -euo pipefail; $(declare -p host_if peer_if client_addr host_addr web_v4 web_v6 client_v6 local_v4 \
            local_v6 web_program test_tmpfs);
         $(declare -f server_program answers inside); inside \"\$@\"" test-host "$@"
    ;;
*) usage ;;
esac
