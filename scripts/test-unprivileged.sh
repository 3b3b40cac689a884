#!/usr/bin/env bash
# Runs every test binary of the workspace again as the unprivileged user spear-test, since users run
# spear as themselves and root passes permission checks that a user does not. Needs root (to switch
# user); scripts/setup.sh creates the user. Paths the tests need (test data, the spear binary) are
# compiled into the binaries and readable by everyone. Runs inside the test network
# (scripts/test-host.sh), entering it itself; the user's processes inherit its namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

user=spear-test
if [ "$(id -u)" -ne 0 ]; then
    echo "test-unprivileged: run as root (it switches to $user)" >&2
    exit 1
fi
id "$user" >/dev/null

# The tests run inside the test network (scripts/test-host.sh), like the root run; it has no other
# network, so build (and download) first, with the machine's.
if [ "${SPEAR_TEST_NETWORK:-}" != 1 ]; then
    cargo test --workspace --locked --no-run --quiet
    exec scripts/test-host.sh run "$0" "$@"
fi

# Build the test binaries as root and list them from cargo's JSON messages.
mapfile -t binaries < <(
    cargo test --workspace --locked --offline --no-run --message-format=json 2>/dev/null |
        grep '"reason":"compiler-artifact"' |
        grep -E '"profile":\{[^}]*"test":true' |
        sed -n 's/.*"executable":"\([^"]*\)".*/\1/p'
)
if [ "${#binaries[@]}" -eq 0 ]; then
    echo "test-unprivileged: no test binaries found" >&2
    exit 1
fi

# A scratch directory the user owns, for HOME and temporary files.
scratch=$(mktemp -d)
chown "$user" "$scratch"
# And one outside the sandbox's private places (/tmp, /var/tmp, the home directory; a checkout may
# lie in one), for tests that need a directory beside the workspace that a command may not write
# (SPEAR_TEST_OUTSIDE).
outside=$(mktemp -d -p /run spear-test-outside.XXXXXX)
chown "$user" "$outside"
trap 'rm -rf "$scratch" "$outside"' EXIT

# spear limits each command through a cgroup of its own, created under the cgroup it runs in; a
# user may do that only in a subtree delegated to them. systemd delegates one to each user session;
# without systemd, delegate a cgroup v1 subtree to the user here (as root) and move this shell, and
# so every test binary it starts, into it. Undone on exit.
scripts/delegate-cgroup.sh "$user" $$
trap 'scripts/delegate-cgroup.sh --undo "$user" $$ || echo "test-unprivileged: could not remove the delegated cgroups" >&2; rm -rf "$scratch" "$outside"' EXIT

failed=0
for bin in "${binaries[@]}"; do
    printf -- '-- %s as %s\n' "$(basename "$bin")" "$user"
    if ! (cd "$scratch" && setpriv --reuid="$user" --regid="$user" --init-groups \
            env -i PATH=/usr/bin:/bin HOME="$scratch" TMPDIR="$scratch" \
            SPEAR_TEST_TMPFS="${SPEAR_TEST_TMPFS:-}" SPEAR_TEST_OUTSIDE="$outside" \
            "$bin" --quiet); then
        failed=1
    fi
done
exit "$failed"
