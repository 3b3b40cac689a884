#!/usr/bin/env bash
# Delegates a cgroup v1 subtree to USER, as systemd delegates a cgroup v2 subtree to a user's
# session, so that spear running as USER finds its own cgroups writable (the cgroup v1 backend).
#
# For each v1 controller spear uses (memory, pids, cpu, freezer) this creates, as root, a child
# cgroup named USER under the caller's own cgroup in that hierarchy (from /proc/self/cgroup), gives
# USER the directory and its cgroup.procs and tasks files (USER then creates per-command cgroups
# inside it, but cannot raise the limits of the delegated cgroup itself), and moves each PID given
# into it. Run it again and it finds the same cgroups: it is idempotent, also when the caller was
# already moved in.
#
#   scripts/delegate-cgroup.sh USER [PID...]         delegate, and move the PIDs in
#   scripts/delegate-cgroup.sh --undo USER [PID...]  move the PIDs back to the parent cgroups and
#                                                    remove the delegated cgroups (children left
#                                                    empty inside them too; a busy one is an error)
#
# Needs root. A host without cgroup v1 controllers (a systemd host with the unified hierarchy)
# needs none of this: systemd delegates there; the script says so and does nothing.
set -euo pipefail

undo=0
if [ "${1:-}" = "--undo" ]; then
    undo=1
    shift
fi
if [ "$#" -lt 1 ]; then
    echo "usage: $0 [--undo] USER [PID...]" >&2
    exit 2
fi
user=$1
shift
if [ "$(id -u)" -ne 0 ]; then
    echo "delegate-cgroup: run as root" >&2
    exit 1
fi
id "$user" >/dev/null

controllers=(memory pids cpu freezer)

# The caller's cgroup path in the v1 hierarchy of controller $1, from /proc/self/cgroup.
own_path() {
    awk -F: -v c="$1" '$1 != "0" {
        n = split($2, names, ",")
        for (i = 1; i <= n; i++) if (names[i] == c) { sub(/^[^:]*:[^:]*:/, ""); print; exit }
    }' /proc/self/cgroup
}

# "mount-root mount-point" of the v1 hierarchy of controller $1, from /proc/self/mountinfo.
mount_of() {
    awk -v c="$1" '{
        for (i = 7; i <= NF; i++) if ($i == "-") break
        if ($(i + 1) != "cgroup") next
        n = split($(i + 3), opts, ",")
        for (j = 1; j <= n; j++) if (opts[j] == c) { print $4, $5; exit }
    }' /proc/self/mountinfo
}

# The delegated directory of controller $1: the child $user of our cgroup, or our cgroup itself
# when we already run inside the delegated one.
delegated_dir() {
    local controller=$1 path root mount base rest
    path=$(own_path "$controller")
    read -r root mount < <(mount_of "$controller") || true
    if [ -z "$path" ] || [ -z "${mount:-}" ]; then
        return 1
    fi
    base=${root%/}
    case "$path" in
        "$root" | "$base"/*) rest=${path#"$base"} ;;
        *)
            echo "delegate-cgroup: our $controller cgroup $path is not under its mount's root $root" >&2
            exit 1
            ;;
    esac
    rest=${rest%/}
    case "$rest" in
        */"$user") printf '%s%s\n' "$mount" "$rest" ;;
        *) printf '%s%s/%s\n' "$mount" "$rest" "$user" ;;
    esac
}

if ! delegated_dir memory >/dev/null; then
    echo "delegate-cgroup: no cgroup v1 memory controller here; nothing to delegate (systemd delegates cgroup v2 itself)" >&2
    exit 0
fi

for controller in "${controllers[@]}"; do
    if ! dir=$(delegated_dir "$controller"); then
        echo "delegate-cgroup: the cgroup v1 $controller controller is not mounted" >&2
        exit 1
    fi
    if [ "$undo" -eq 0 ]; then
        mkdir -p "$dir"
        chown "$user:" "$dir" "$dir/cgroup.procs" "$dir/tasks"
        for pid in "$@"; do
            echo "$pid" >"$dir/cgroup.procs"
        done
    elif [ -d "$dir" ]; then
        # This script too may run inside the delegated cgroup (when its caller does).
        for pid in "$@" "$$"; do
            echo "$pid" >"$(dirname "$dir")/cgroup.procs"
        done
        # Only rmdir: a cgroup still holding a process stays, and that is an error.
        find "$dir" -depth -type d -exec rmdir {} +
    fi
done
