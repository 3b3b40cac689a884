#!/usr/bin/env bash
# Fuzzes spear's parsers of untrusted input with cargo-fuzz (libFuzzer + AddressSanitizer), replays
# what fuzzing found, and minimises the kept corpus.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   fuzz each target for SECONDS (default 60)
#        scripts/fuzz.sh --replay [TARGET...]    run every kept input once, without fuzzing
#        scripts/fuzz.sh --cmin [TARGET...]      minimise fuzz/corpus/TARGET (before committing it)
#
#   TARGET   fuzz targets (default: every target in fuzz/fuzz_targets/)
#
# Each target's inputs live in three checked-in directories:
#   fuzz/seeds/TARGET        hand-written or generated starting points (fuzz/gen_seeds.py)
#   fuzz/regressions/TARGET  every input that once crashed the target or broke its invariants,
#                            named for what it was; fixed since, so each must pass
#   fuzz/corpus/TARGET       the corpus fuzzing has grown, minimised with `cargo fuzz cmin`
#
# Fuzzing starts from all three and adds what it finds to fuzz/corpus/TARGET, which it keeps: the
# next run starts where this one ended. Before committing a grown corpus, minimise it:
#   scripts/fuzz.sh --cmin TARGET     # merges the seeds and regressions in, keeps only the inputs
#                                     # that add coverage (cargo fuzz cmin); then git add fuzz/corpus
# A crash, failed invariant, timeout or out-of-memory is written to fuzz/artifacts/TARGET/ and
# makes the script exit non-zero once every target has run; each target's full libFuzzer log is
# fuzz/artifacts/TARGET.log. Once the bug is fixed, copy the input into fuzz/regressions/TARGET/
# under a name that says what it broke.
#
# --replay builds the targets and runs each over its corpus, seeds and regressions once (libFuzzer
# -runs=0: no mutation), and fails naming the target and the input on any crash, failed invariant
# or timeout (libFuzzer stops a target at its first failing input). scripts/test.sh runs it. It
# uses the AddressSanitizer build that fuzzing and --cmin use, so one build serves all three and a
# memory error is caught too; without a sanitizer
# (FUZZ_SANITIZER=none) the first build took 9 min instead of 11 on two cores, and the replay 6 s
# instead of 12, but it is a second build of its own beside the fuzzing one.
#
# Environment:
#   FUZZ_SANITIZER  address (default) or none (faster, no memory-error checks)
#   FUZZ_TIMEOUT    seconds one input may take before it counts as a hang (default 10)
#   FUZZ_ARGS       more libFuzzer flags when fuzzing, e.g. "-fork=2 -ignore_timeouts=1
#                   -ignore_crashes=1" to keep going past known crashes and collect every artifact
#
# cargo-fuzz passes nightly-only flags (-Zsanitizer=address...) to rustc; RUSTC_BOOTSTRAP=1 lets
# the stable toolchain accept them. Reproduce or minimise a crash with the same prefix:
#   RUSTC_BOOTSTRAP=1 cargo fuzz run TARGET fuzz/artifacts/TARGET/crash-...
#   RUSTC_BOOTSTRAP=1 cargo fuzz tmin TARGET fuzz/artifacts/TARGET/crash-...
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

usage() {
    echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2
    echo "       scripts/fuzz.sh --replay|--cmin [TARGET...]" >&2
    exit 2
}

mode=fuzz
seconds=60
case "${1:-}" in
    --replay) mode=replay; shift ;;
    --cmin) mode=cmin; shift ;;
    -*) usage ;;
    "") ;;
    *)
        if [[ "$1" =~ ^[0-9]+$ ]]; then
            seconds="$1"
            shift
            if [[ "$seconds" -eq 0 ]]; then usage; fi
        fi
        ;;
esac
if [[ $# -gt 0 ]]; then
    targets=("$@")
    for target in "${targets[@]}"; do
        if [[ ! -f "fuzz/fuzz_targets/$target.rs" ]]; then
            echo "scripts/fuzz.sh: no fuzz target $target (fuzz/fuzz_targets/$target.rs)" >&2
            exit 2
        fi
    done
else
    targets=()
    for f in fuzz/fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi
sanitizer="${FUZZ_SANITIZER:-address}"
timeout="${FUZZ_TIMEOUT:-10}"
read -r -a extra_args <<<"${FUZZ_ARGS:-}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    # The version scripts/setup.sh installs.
    echo "==> installing cargo-fuzz"
    cargo install cargo-fuzz@0.13.2 --locked
fi

export RUSTC_BOOTSTRAP=1
# The targets build their fixtures in temporary directories that libFuzzer's exit never removes:
# keep them all in one place and remove it afterwards.
mkdir -p fuzz/target
TMPDIR="$(mktemp -d "$root/fuzz/target/tmp.XXXXXX")"
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT

# The checked-in input directories of a target that exist, the corpus first (where a fuzzing run
# writes what it finds).
inputs_of() {
    local dir
    inputs=()
    for dir in fuzz/corpus/"$1" fuzz/seeds/"$1" fuzz/regressions/"$1"; do
        if [[ -d "$dir" ]]; then inputs+=("$dir"); fi
    done
}

# Prints the checked-in inputs with the same bytes as an artifact (libFuzzer names an artifact
# for the SHA-1 of its bytes).
name_input() {
    local sum
    sum="$(sha1sum "$1" | cut -d' ' -f1)"
    find "${inputs[@]}" -type f -exec sha1sum {} + | awk -v s="$sum" '$1 == s { print "    input: " $2 }'
}

# The size of a directory's files in bytes, and their number.
size_of() {
    if [[ -d "$1" ]]; then
        echo "$(find "$1" -type f | wc -l) files, $(find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }') bytes"
    else
        echo "none"
    fi
}

echo "==> building ${targets[*]} (sanitizer: $sanitizer)"
if [[ $# -eq 0 ]]; then
    # Every target: one cargo invocation builds them side by side.
    cargo fuzz build --sanitizer "$sanitizer"
else
    for target in "${targets[@]}"; do
        cargo fuzz build --sanitizer "$sanitizer" "$target"
    done
fi

if [[ $mode == cmin ]]; then
    for target in "${targets[@]}"; do
        corpus="fuzz/corpus/$target"
        echo "==> minimising $corpus (before: $(size_of "$corpus"))"
        mkdir -p "$corpus"
        # Merged with the seeds and regressions, so that the corpus alone covers what they do.
        for dir in fuzz/seeds/"$target" fuzz/regressions/"$target"; do
            if [[ -d "$dir" ]]; then find "$dir" -type f -exec cp -t "$corpus" -- {} +; fi
        done
        log="$TMPDIR/cmin-$target.log"
        # -set_cover_merge keeps a smallest set of inputs that covers every feature (edges and
        # their hit counts) the whole corpus does: a third to a half of what -merge alone keeps.
        cargo fuzz cmin --sanitizer "$sanitizer" "$target" "$corpus" -- -timeout="$timeout" \
            -set_cover_merge=1 >"$log" 2>&1 || { tail -n 40 "$log"; exit 1; }
        # cargo fuzz cmin exits 0 when the merge failed.
        if grep -q 'Failed to minimize corpus' "$log"; then
            tail -n 40 "$log"
            exit 1
        fi
        echo "    after: $(size_of "$corpus")"
    done
    echo "==> minimised; commit with: git add fuzz/corpus"
    exit 0
fi

failed=()
for target in "${targets[@]}"; do
    inputs_of "$target"
    mkdir -p "fuzz/artifacts/$target"
    marker="$TMPDIR/started-$target"
    touch "$marker"
    status=0
    if [[ $mode == replay ]]; then
        log="fuzz/artifacts/$target.replay.log"
        if [[ ${#inputs[@]} -eq 0 ]]; then
            echo "==> $target: no input to replay"
            continue
        fi
        # No -max_len: each input runs whole, as it was found.
        cargo fuzz run --sanitizer "$sanitizer" "$target" "${inputs[@]}" -- \
            -runs=0 -timeout="$timeout" >"$log" 2>&1 || status=$?
        summary="$(grep -aoE 'seed corpus: files: [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+$' || true)"
        echo "==> $target: replayed ${summary:-?} inputs of ${inputs[*]}"
    else
        corpus="fuzz/corpus/$target"
        log="fuzz/artifacts/$target.log"
        if [[ ! -d "$corpus" ]]; then
            mkdir -p "$corpus"
            inputs_of "$target"
        fi
        echo "==> fuzzing $target for ${seconds}s from ${inputs[*]} (log: $log)"
        cargo fuzz run --sanitizer "$sanitizer" "$target" "${inputs[@]}" -- \
            -max_total_time="$seconds" -timeout="$timeout" -max_len=4096 -print_final_stats=1 \
            "${extra_args[@]}" >"$log" 2>&1 || status=$?

        # The last coverage line and libFuzzer's final statistics.
        grep -aE '^#[0-9]+:?[[:space:]]+(DONE|NEW|REDUCE|pulse|cov:)' "$log" | tail -n 1 || true
        grep -aE '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" || true
        echo "    corpus: $(size_of "$corpus")"
    fi
    # With -ignore_crashes the exit status is 0: the new artifacts tell.
    found="$(find "fuzz/artifacts/$target" -type f -newer "$marker" | sort)"
    if [[ $status -ne 0 || -n "$found" ]]; then
        echo "!!! $target failed (exit $status; log: $log):"
        # A panic that escaped is marked FATAL (others were caught by spear).
        grep -a -A1 'FATAL' "$log" | tail -n 2 || true
        grep -aE '^==[0-9]+== ?ERROR|^SUMMARY' "$log" | sort -u || true
        grep -a -m 1 -A 1 'panicked at' "$log" || true
        if [[ -n "$found" ]]; then
            while IFS= read -r artifact; do
                echo "    artifact: $artifact"
                if [[ $mode == replay ]]; then name_input "$artifact"; fi
            done <<<"$found"
        else
            tail -n 40 "$log"
        fi
        failed+=("$target")
    fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "==> FAILED: ${failed[*]} (inputs in fuzz/artifacts/)"
    exit 1
fi
if [[ $mode == replay ]]; then
    echo "==> every kept input of ${targets[*]} passes"
else
    echo "==> no crash in ${targets[*]}; minimise what was found before committing it: scripts/fuzz.sh --cmin"
fi
