#!/usr/bin/env bash
# Checks spear's deployment files without a cluster or a container engine. Fails on the first
# problem, naming it.
#
# - Every YAML file under deploy/kubernetes (sub-folders included) against the Kubernetes API's
#   schemas, strictly (a field the API does not know is an error, as kubectl's validation makes
#   it), with kubernetes-validate (PyPI, pinned). Against two versions: the newest whose schemas
#   kubernetes-validate bundles, and the oldest the manifests are written for (1.33, where pods'
#   user namespaces came on by default; appArmorProfile, a field since 1.30, would fail older).
# - deploy/kubernetes/seccomp/spear.json: JSON of the shape runc and crun load, that does not
#   refuse a system call bubblewrap needs to build its sandboxes.
# - deploy/Containerfile: builds spear-cli from rust:1.95-bookworm, onto debian:bookworm-slim
#   with the packages spear runs on (no recommends, apt lists removed), runs as the uid the
#   manifests' runAsUser names; and its two ignore files (.containerignore for podman and buildah,
#   deploy/Containerfile.dockerignore for docker) are equal.
#
# kubernetes-validate goes into a virtual environment of Debian's python3 under the directory
# scripts/setup-test-clients.sh uses ($SPEAR_TEST_CLIENTS, default /opt/spear-test-clients as
# root, ~/.cache/spear-test-clients otherwise), in k8s-venv/. Idempotent: a second run finds the
# stamp and installs nothing.
#
# What a schema cannot tell: whether a cluster's nodes allow these settings (user namespaces,
# procMount: Unmasked, the seccomp profile installed). `kubectl exec deploy/spear -- spear doctor`
# in the running pod says which mechanism works there.
set -euo pipefail

validate_version=1.37.0
# The newest Kubernetes whose schemas kubernetes-validate $validate_version bundles, and the
# oldest these manifests are meant for.
k8s_versions=(1.37.0 1.33.0)
# What the image must install (deploy/Containerfile), as the README and the manifests rely on.
packages=(bubblewrap slirp4netns fuse-overlayfs git ca-certificates ripgrep iproute2 procps nftables)
# System calls bubblewrap (and spear's staging) make to build a sandbox: the seccomp profile must
# not refuse them.
sandbox_syscalls=(unshare clone clone3 setns mount umount2 pivot_root seccomp prctl)

cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then
    default_dir=/opt/spear-test-clients
else
    default_dir="$HOME/.cache/spear-test-clients"
fi
dir="${SPEAR_TEST_CLIENTS:-$default_dir}"
venv="$dir/k8s-venv"
stamp="$venv/.version"
want="kubernetes-validate=$validate_version"

say() { printf 'check-manifests: %s\n' "$*"; }
fail() {
    say "FAILED: $*"
    exit 1
}

# --- kubernetes-validate, once ---
if ! { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; }; then
    if ! /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
        say "installing python3-venv"
        if [ "$(id -u)" -eq 0 ]; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
        else
            sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
        fi
    fi
    say "installing $want into $venv"
    rm -rf "$venv"
    mkdir -p "$dir"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$validate_version"
    chmod -R a+rX "$venv"
    echo "$want" >"$stamp"
fi

# --- the manifests against the API's schemas ---
mapfile -t manifests < <(find deploy/kubernetes -type f \( -name '*.yaml' -o -name '*.yml' \) | sort)
[ "${#manifests[@]}" -gt 0 ] || fail "no YAML file under deploy/kubernetes"
for version in "${k8s_versions[@]}"; do
    say "kubernetes-validate --strict --kubernetes-version $version: ${manifests[*]}"
    # It exits non-zero when any document fails; every result is printed either way.
    "$venv/bin/kubernetes-validate" --strict --kubernetes-version "$version" "${manifests[@]}" ||
        fail "a manifest does not validate against Kubernetes $version (above)"
done

# --- the seccomp profile ---
profile=deploy/kubernetes/seccomp/spear.json
[ -f "$profile" ] || fail "$profile is missing"
/usr/bin/python3 - "$profile" "${sandbox_syscalls[@]}" <<'EOF' || fail "$profile (above)"
import json, sys
path, needed = sys.argv[1], set(sys.argv[2:])
try:
    prof = json.load(open(path))
except ValueError as e:
    sys.exit(f"{path} is not JSON: {e}")
actions = {"SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS",
           "SCMP_ACT_KILL_THREAD", "SCMP_ACT_TRAP", "SCMP_ACT_TRACE", "SCMP_ACT_LOG"}
if prof.get("defaultAction") not in actions:
    sys.exit(f"{path}: defaultAction {prof.get('defaultAction')!r} is not a seccomp action")
if not all(isinstance(a, str) and a.startswith("SCMP_ARCH_") for a in prof.get("architectures", [])):
    sys.exit(f"{path}: architectures must be SCMP_ARCH_* names")
refused, allowed = set(), set()  # by a rule without argument conditions
for i, rule in enumerate(prof.get("syscalls", [])):
    names = rule.get("names")
    if not names or not all(isinstance(n, str) for n in names):
        sys.exit(f"{path}: syscalls[{i}] has no list of names")
    if rule.get("action") not in actions:
        sys.exit(f"{path}: syscalls[{i}]: action {rule.get('action')!r} is not a seccomp action")
    if "errnoRet" in rule and not isinstance(rule["errnoRet"], int):
        sys.exit(f"{path}: syscalls[{i}]: errnoRet must be a number")
    if not rule.get("args"):
        (allowed if rule["action"] == "SCMP_ACT_ALLOW" else refused).update(names)
# Allowed by default: nothing needed may be refused. Refused by default: all must be allowed.
if prof["defaultAction"] == "SCMP_ACT_ALLOW":
    blocked = sorted(needed & refused)
else:
    blocked = sorted(needed - allowed)
if blocked:
    sys.exit(f"{path} refuses what bubblewrap needs: {', '.join(blocked)}")
print(f"check-manifests: {path}: a seccomp profile ({prof['defaultAction']} by default, "
      f"{len(refused)} system calls refused), none that bubblewrap needs")
EOF

# --- the image recipe ---
containerfile=deploy/Containerfile
[ -f "$containerfile" ] || fail "$containerfile is missing"
grep -Eq '^FROM +([^ ]+/)?rust:1\.95-bookworm +AS +[a-z]+' "$containerfile" ||
    fail "$containerfile: the build stage is not FROM rust:1.95-bookworm"
grep -Eq '^FROM +([^ ]+/)?debian:bookworm-slim *$' "$containerfile" ||
    fail "$containerfile: the runtime stage is not FROM debian:bookworm-slim"
grep -q 'cargo build --release --locked -p spear-cli' "$containerfile" ||
    fail "$containerfile: does not build with cargo build --release --locked -p spear-cli"
grep -Eq '^ENTRYPOINT \["spear"\]' "$containerfile" || fail "$containerfile: ENTRYPOINT is not [\"spear\"]"
# The apt-get install command, its continuation lines joined, one word a line.
install_words="$(awk '/\\$/ { sub(/\\$/, ""); printf "%s ", $0; next } { print }' "$containerfile" |
    grep -E 'apt-get install' | tr -s ' \t' '\n')" || fail "$containerfile installs no Debian package"
grep -qx -- '--no-install-recommends' <<<"$install_words" ||
    fail "$containerfile: apt-get install without --no-install-recommends"
grep -q 'rm -rf /var/lib/apt/lists' "$containerfile" || fail "$containerfile: the apt lists are not removed"
for p in "${packages[@]}"; do
    grep -qx -- "$p" <<<"$install_words" || fail "$containerfile does not install $p"
done
say "$containerfile: rust:1.95-bookworm -> debian:bookworm-slim with ${packages[*]}"

# The image's user is the pod's: spear as root in a user-namespaced pod cannot stage writes.
image_uid="$(sed -nE 's/^USER +([0-9]+)(:[0-9]+)? *$/\1/p' "$containerfile")"
[ -n "$image_uid" ] || fail "$containerfile: no numeric USER"
grep -Eq -- "useradd .*--uid $image_uid( |$)" "$containerfile" ||
    fail "$containerfile: USER $image_uid is not the user it creates"
mapfile -t pod_uids < <(grep -hE '^ *runAsUser: *[0-9]+' "${manifests[@]}" | sed -E 's/.*: *//' | sort -u)
[ "${#pod_uids[@]}" -gt 0 ] || fail "no runAsUser in deploy/kubernetes"
for uid in "${pod_uids[@]}"; do
    [ "$uid" = "$image_uid" ] || fail "runAsUser $uid in deploy/kubernetes, USER $image_uid in $containerfile"
done
say "$containerfile: USER $image_uid, the manifests' runAsUser"

cmp -s .containerignore deploy/Containerfile.dockerignore ||
    fail ".containerignore and deploy/Containerfile.dockerignore differ (or one is missing)"
say ".containerignore = deploy/Containerfile.dockerignore"

say "all deployment files check out"
