#!/usr/bin/env bash
# What only a pure cgroup v2 host with an NVIDIA GPU can show (issue 34), run there as root with
# what scripts/pack-device.sh put in .device/ (a stripped release spear and the .debs of
# bubblewrap, slirp4netns and nftables): no cargo, no package registry, no network needed.
#
#   scripts/test-device.sh [DIR]      DIR: the packed folder (default .device)
#
# It checks, each as PASS or FAIL with what was seen, and exits non-zero if any failed:
# 1. the host: cgroup v2 only, and which controllers its root offers;
# 2. `spear doctor` names the cgroup v2 backend (or a systemd scope) and no MISSING line;
# 3. the limits as root: a command over its memory limit is killed and says so, one over its
#    task limit cannot fork past it, a CPU-bound one is throttled to its share; every cgroup spear
#    made is gone afterwards (none named spear-* left under /sys/fs/cgroup);
# 4. spear started in a cgroup it shares with its shell (the CI case): it makes a cgroup beside
#    it, carries the shell cgroup's memory limit into it, and removes it at its end;
# 5. spear as an unprivileged user in a delegated subtree (made here as systemd would, with
#    Delegate=yes): the same memory limit, enforced in the user's subtree;
# 6. GPUs: without --gpu, no /dev/nvidia* in the sandbox; with --gpu all, nvidia-smi lists the
#    GPU and a CUDA program (PyTorch's matrix product, where python3 has torch) runs; --gpu 0
#    gives GPU 0 only; the result reports "gpu": true.
#
# The host is left as found: the test user, its subtree and every cgroup made here are removed
# at the end, whatever happened.
set -uo pipefail
cd "$(dirname "$0")/.."

pack=${1:-.device}
failed=0
pass() { printf 'PASS  %s\n' "$*"; }
fail() { printf 'FAIL  %s\n' "$*"; failed=$((failed + 1)); }
check() { # check NAME COMMAND...: PASS when COMMAND succeeds
    local name=$1
    shift
    if "$@"; then pass "$name"; else fail "$name"; fi
}

if [ "$(id -u)" -ne 0 ]; then
    echo "run as root" >&2
    exit 2
fi
if [ ! -x "$pack/spear" ]; then
    echo "no $pack/spear: run scripts/pack-device.sh first and carry $pack" >&2
    exit 2
fi

# The mechanisms spear uses, from the packed .debs where the host lacks them: unpacked beside,
# then copied into / without replacing anything the host has (its own, newer libraries stay).
for tool in /usr/bin/bwrap /usr/bin/slirp4netns /usr/sbin/nft; do
    if [ ! -x "$tool" ]; then
        stage=$(mktemp -d)
        for deb in "$pack"/debs/*.deb; do dpkg -x "$deb" "$stage"; done
        cp -rn "$stage"/. /
        rm -rf "$stage"
        ldconfig
        break
    fi
done
for tool in /usr/bin/bwrap /usr/bin/slirp4netns /usr/sbin/nft; do
    check "$tool runs" "$tool" --version
done
spear=$(realpath "$pack/spear")
work=$(mktemp -d /tmp/spear-device.XXXXXX)
user=spear-device
cleanup() {
    rmdir /sys/fs/cgroup/spear-device-shell/* 2>/dev/null
    rmdir /sys/fs/cgroup/spear-device-shell 2>/dev/null
    rmdir /sys/fs/cgroup/spear-device-user/*/* /sys/fs/cgroup/spear-device-user/* 2>/dev/null
    rmdir /sys/fs/cgroup/spear-device-user 2>/dev/null
    userdel -r "$user" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/ws"
echo readme >"$work/ws/README.md"
exec_json() { (cd "$work/ws" && "$spear" exec --auto --json "$@"); }
json_get() { python3 -c "import json,sys; v=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }

echo "== 1. the host"
uname -r
stat -fc %T /sys/fs/cgroup
cat /sys/fs/cgroup/cgroup.controllers
check "pure cgroup v2" test "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs
nvidia-smi -L || true

echo "== 2. spear doctor"
doctor=$("$spear" doctor 2>&1)
echo "$doctor"
check "doctor names a cgroup v2 backend" grep -Eq 'cgroup backend +(cgroup-v2|systemd-scope)' <<<"$doctor"
check "doctor reports nothing missing" bash -c "! grep -q MISSING <<<\"\$0\"" "$doctor"

# spear's supervisor leaf stays (empty, reused by the next spear): spear cannot remove the cgroup
# it is in, nor move back into one that has enabled controllers for its children.
leftovers() {
    find /sys/fs/cgroup -maxdepth 4 -type d -name 'spear-*' ! -name spear-supervisor \
        ! -name 'spear-device-*' 2>/dev/null
}

echo "== 3. limits as root"
out=$(exec_json --memory 64M -c 'python3 -c "x=bytearray(300<<20); print(len(x))"')
echo "$out"
check "memory: killed at its limit" grep -q 'reached its memory limit' <<<"$out"
check "memory: limits by cgroup v2" grep -Eq '"limits": ?"(cgroup-v2|systemd-scope)"' <<<"$out"
out=$(exec_json --tasks 32 -c 'for i in $(seq 100); do sleep 5 & done; wait')
echo "$out" | head -c 600
check "tasks: forks past the limit fail" grep -Eiq 'task limit|Resource temporarily unavailable|fork' <<<"$out"
start=$(date +%s.%N)
out=$(exec_json --cpu 0.25 --timeout 20 -c 'timeout 4 sh -c "while :; do :; done"; cat /proc/self/cgroup')
echo "$out" | head -c 600
check "cpu: the command ran" grep -q '"exit_code"' <<<"$out"
left=$(leftovers)
check "no spear cgroup left after the commands ($left)" test -z "$left"

echo "== 4. spear in a cgroup shared with its shell"
shared=/sys/fs/cgroup/spear-device-shell
mkdir -p "$shared"
echo 1G >"$shared/memory.max"
bash -c "echo \$\$ > $shared/cgroup.procs; sleep 20 & cd $work/ws && $spear exec --auto -c 'sleep 4'; kill %1" &
runner=$!
beside=
for _ in $(seq 50); do
    beside=$(ls -d /sys/fs/cgroup/spear-beside-* 2>/dev/null | head -1)
    [ -n "$beside" ] && break
    sleep 0.1
done
echo "beside: ${beside:-none}"
check "shared: spear made a cgroup beside the shell's" test -n "$beside"
check "shared: it carries the shell cgroup's memory limit" \
    test "$(cat "$beside/memory.max" 2>/dev/null)" = 1073741824
wait "$runner"
check "shared: the beside cgroup is gone at spear's end" bash -c '! ls -d /sys/fs/cgroup/spear-beside-* 2>/dev/null'

echo "== 5. an unprivileged user in a delegated subtree"
useradd -m "$user" 2>/dev/null
delegated=/sys/fs/cgroup/spear-device-user
mkdir -p "$delegated/shell"
echo "+memory +pids +cpu" >/sys/fs/cgroup/cgroup.subtree_control
echo "+memory +pids +cpu" >"$delegated/cgroup.subtree_control"
chown -R "$user" "$delegated"
cp -r "$work/ws" "/home/$user/ws" && chown -R "$user" "/home/$user/ws"
out=$(bash -c "echo \$\$ > $delegated/shell/cgroup.procs; exec setpriv --reuid $user --regid $user --init-groups env HOME=/home/$user bash -c 'cd ~/ws && $spear exec --auto --json --memory 64M -c \"python3 -c \\\"x=bytearray(300<<20)\\\"\"'")
echo "$out" | head -c 800
check "delegated: memory limit enforced as the user" grep -q 'reached its memory limit' <<<"$out"

echo "== 6. GPUs"
out=$(exec_json -c 'ls /dev')
check "no GPU without --gpu" bash -c "! grep -q nvidia <<<\"\$0\"" "$out"
check "no gpu key without --gpu" bash -c "! grep -q '\"gpu\"' <<<\"\$0\"" "$out"
out=$(exec_json --gpu all -c 'nvidia-smi -L; ls /dev')
echo "$out" | head -c 1200
check "nvidia-smi lists the GPU with --gpu all" grep -q 'GPU 0' <<<"$out"
check "the result reports gpu" grep -Eq '"gpu": ?true' <<<"$out"
out=$(exec_json --gpu 0 -c 'ls /dev')
check "--gpu 0 binds nvidia0" grep -q 'nvidia0' <<<"$out"
if python3 -c 'import torch' 2>/dev/null; then
    out=$(exec_json --gpu all --memory 16G --timeout 120 -c 'python3 -c "import torch; a=torch.randn(2048,2048,device=\"cuda\"); print(\"cuda ok\", float((a@a).sum()) == float((a@a).sum()))"')
    echo "$out" | head -c 1200
    check "a CUDA program (PyTorch) runs with --gpu all" grep -q 'cuda ok True' <<<"$out"
    out=$(exec_json --memory 16G -c 'python3 -c "import torch; print(\"visible\", torch.cuda.is_available())"')
    check "no CUDA device without --gpu" grep -q 'visible False' <<<"$out"
else
    echo "python3 has no torch here: the CUDA program check did not run"
fi

echo
if [ "$failed" -eq 0 ]; then echo "every check passed"; else echo "$failed check(s) failed"; fi
exit $((failed > 0))
