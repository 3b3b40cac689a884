#!/usr/bin/env bash
# Fuzzes spear's parsers of untrusted input with cargo-fuzz (libFuzzer + AddressSanitizer).
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#
#   SECONDS  how long each target runs (default 60)
#   TARGET   fuzz targets to run (default: every target in fuzz/fuzz_targets/)
#
# Each target starts from a fresh copy of its checked-in seeds (fuzz/seeds/TARGET) in
# fuzz/corpus/TARGET, and the targets run one after another. A crash, failed invariant, timeout
# or out-of-memory is written to fuzz/artifacts/TARGET/ and makes the script exit non-zero once
# every target has run; each target's full libFuzzer log is fuzz/artifacts/TARGET.log.
#
# Environment:
#   FUZZ_SANITIZER  address (default) or none (faster, no memory-error checks)
#   FUZZ_TIMEOUT    seconds one input may take before it counts as a hang (default 10)
#   FUZZ_ARGS       more libFuzzer flags, e.g. "-fork=2 -ignore_timeouts=1 -ignore_crashes=1" to
#                   keep going past known crashes and collect every artifact
#
# cargo-fuzz passes nightly-only flags (-Zsanitizer=address...) to rustc; RUSTC_BOOTSTRAP=1 lets
# the stable toolchain accept them. Reproduce or minimise a crash with the same prefix:
#   RUSTC_BOOTSTRAP=1 cargo fuzz run TARGET fuzz/artifacts/TARGET/crash-...
#   RUSTC_BOOTSTRAP=1 cargo fuzz tmin TARGET fuzz/artifacts/TARGET/crash-...
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

seconds="${1:-60}"
if [[ $# -gt 0 ]]; then shift; fi
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [[ "$seconds" -eq 0 ]]; then
    echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2
    exit 2
fi
if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    targets=()
    for f in fuzz/fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi
sanitizer="${FUZZ_SANITIZER:-address}"
timeout="${FUZZ_TIMEOUT:-10}"
read -r -a extra_args <<<"${FUZZ_ARGS:-}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "==> installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

export RUSTC_BOOTSTRAP=1
# The targets build their fixtures in temporary directories that libFuzzer's exit never removes:
# keep them all in one place and remove it afterwards.
mkdir -p fuzz/target
TMPDIR="$(mktemp -d "$root/fuzz/target/tmp.XXXXXX")"
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT

echo "==> building ${targets[*]} (sanitizer: $sanitizer)"
for target in "${targets[@]}"; do
    cargo fuzz build --sanitizer "$sanitizer" "$target"
done

failed=()
for target in "${targets[@]}"; do
    corpus="fuzz/corpus/$target"
    log="fuzz/artifacts/$target.log"
    rm -rf "$corpus"
    mkdir -p "$corpus" "fuzz/artifacts/$target"
    cp fuzz/seeds/"$target"/* "$corpus"/

    echo "==> fuzzing $target for ${seconds}s (log: $log)"
    marker="$TMPDIR/started-$target"
    touch "$marker"
    status=0
    cargo fuzz run --sanitizer "$sanitizer" "$target" "$corpus" -- \
        -max_total_time="$seconds" -timeout="$timeout" -max_len=4096 -print_final_stats=1 \
        "${extra_args[@]}" >"$log" 2>&1 || status=$?

    # The last coverage line and libFuzzer's final statistics.
    grep -aE '^#[0-9]+:?[[:space:]]+(DONE|NEW|REDUCE|pulse|cov:)' "$log" | tail -n 1 || true
    grep -aE '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" || true
    # With -ignore_crashes the exit status is 0: the new artifacts tell.
    found="$(find "fuzz/artifacts/$target" -type f -newer "$marker" | sort)"
    if [[ $status -ne 0 || -n "$found" ]]; then
        echo "!!! $target failed (exit $status):"
        # A panic that escaped is marked FATAL (others were caught by spear).
        grep -a -A1 'FATAL' "$log" | tail -n 2 || true
        grep -aE '^==[0-9]+== ?ERROR|^SUMMARY' "$log" | sort -u || true
        if [[ -n "$found" ]]; then echo "$found"; else tail -n 40 "$log"; fi
        failed+=("$target")
    fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "==> FAILED: ${failed[*]} (inputs in fuzz/artifacts/)"
    exit 1
fi
echo "==> no crash in ${targets[*]}"
