#!/usr/bin/env bash
# Runs the cargo-fuzz targets of fuzz/ for a set time each and fails if any of them crashes.
#
#   fuzz/run.sh                    every target, FUZZ_SECONDS (default 60) each
#   fuzz/run.sh range sync_push    only these
#   FUZZ_SECONDS=600 fuzz/run.sh   longer
#
# cargo-fuzz is installed pinned into target/tools when missing. It needs nightly flags: on
# the stable toolchain RUSTC_BOOTSTRAP=1 allows them. Targets are built once, with debug
# assertions and overflow checks (-a) and without a sanitizer (the code under test is safe
# Rust: what we look for is panics, overflows and unbounded allocations, and without ASan a
# run makes several times more executions). FUZZ_SANITIZER=address brings ASan back.
#
# Seeds (fuzz/seeds/<target>/, small text files kept in git) are copied into the working
# corpus fuzz/corpus/<target>/, which grows run after run and is not committed, like
# fuzz/artifacts/ (crash files) and fuzz/target/ (builds, logs). On a crash the script
# prints the input (hex and base64) and the command that replays it.
#
# Builds are nice'd; CARGO_BUILD_JOBS=1 keeps one core free for another build, and
# FUZZ_NO_BUILD=1 runs the targets as last built.
set -euo pipefail

cd "$(dirname "$0")"
fuzz_dir=$(pwd)
root=$(cd .. && pwd)

cargo_fuzz_version=0.13.2
tools="$root/target/tools"
cargo_fuzz="$tools/bin/cargo-fuzz"
seconds=${FUZZ_SECONDS:-60}
sanitizer=${FUZZ_SANITIZER:-none}
export RUSTC_BOOTSTRAP=1

if ! "$cargo_fuzz" --version 2>/dev/null | grep -qF "$cargo_fuzz_version"; then
    echo "== installing cargo-fuzz $cargo_fuzz_version into $tools"
    nice -n 10 cargo install cargo-fuzz --version "$cargo_fuzz_version" --locked --root "$tools"
fi

# The fuzz crate is a member of the workspace (its lock file is the workspace's); cargo-fuzz
# builds it with flags of its own, in a target directory of its own, so the workspace's
# builds are left as they are.
build_flags=(--release --debug-assertions --sanitizer "$sanitizer" --target-dir "$fuzz_dir/target")

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <("$cargo_fuzz" list)
fi

# Every target in one build (they share all their dependencies); then each runs from its
# binary, so nothing is rebuilt between runs.
echo "== building"
if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
    nice -n 10 "$cargo_fuzz" build "${build_flags[@]}"
fi
bin_dir="$fuzz_dir/target/x86_64-unknown-linux-gnu/release"

logs="$fuzz_dir/target/logs"
mkdir -p "$logs"
failed=()
summary=()
for target in "${targets[@]}"; do
    corpus="$fuzz_dir/corpus/$target"
    artifacts="$fuzz_dir/artifacts/$target"
    mkdir -p "$corpus" "$artifacts"
    if [ -d "$fuzz_dir/seeds/$target" ]; then
        cp -n "$fuzz_dir/seeds/$target/"* "$corpus/" 2>/dev/null || true
    fi
    log="$logs/$target.log"
    echo "== $target: ${seconds} s (log: $log)"
    status=0
    # One process, its inputs limited to 64 KiB (longer ones say nothing new here and slow
    # every execution), 2 GB of memory, 10 s per input.
    nice -n 10 "$bin_dir/$target" "$corpus" \
        -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
        -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1 || status=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    cov=$(grep -oE '(#[0-9]+|DONE).*cov: [0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+' | grep -oE '[0-9]+')
    features=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+')
    inputs=$(find "$corpus" -type f | wc -l)
    summary+=("$(printf '%-16s %-6s execs=%-10s cov=%-6s ft=%-6s corpus=%s' \
        "$target" "$([ "$status" -eq 0 ] && echo ok || echo CRASH)" "${execs:-?}" "${cov:-?}" \
        "${features:-?}" "$inputs")")
    if [ "$status" -ne 0 ]; then
        failed+=("$target")
        echo "!! $target failed (exit $status); the end of its log:"
        grep -v '^#' "$log" | tail -40
        for crash in $(grep -oE "$artifacts/[^ ]+" "$log" | sort -u); do
            [ -f "$crash" ] || continue
            echo "!! crash file: $crash ($(stat -c %s "$crash") bytes)"
            head -c 1024 "$crash" | od -A d -t x1z | head -40
            echo "base64: $(head -c 4096 "$crash" | base64 -w 0)"
            echo "replay: $bin_dir/$target $crash"
        done
    fi
done

echo "== summary (${seconds} s each)"
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "!! crashed: ${failed[*]}"
    exit 1
fi
