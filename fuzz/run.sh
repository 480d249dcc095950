#!/usr/bin/env bash
# Runs ssdlab's fuzz targets, each for a bounded time, and fails if one finds a crash.
#
#   fuzz/run.sh [SECONDS_PER_TARGET] [TARGET ...]
#
# SECONDS_PER_TARGET: libFuzzer's -max_total_time per target (default 20 s).
# TARGET: any of the Rust targets (fuzz/fuzz_targets/*.rs: trace readers, profile text) and
# the Python ones (fiojob, fio_logs, profiles: fuzz/python/targets.py); default: all.
# FUZZ_JOBS (environment): how many targets fuzz at once (default: one per CPU).
#
# Each target first replays its regression inputs (fuzz/regressions/TARGET/*: crashes found
# before, each named after what it broke), then fuzzes from its checked-in seeds
# (fuzz/seeds/DIR) plus the working corpus fuzz/corpus/TARGET (kept between runs, not
# committed). A crash leaves its input in fuzz/artifacts/TARGET/: copy it to
# fuzz/regressions/TARGET/ under a name saying what it broke, and fix the code.
#
# Installs what it needs: cargo-fuzz (crates.io) and atheris (PyPI, into .venv). The Rust
# targets build with libFuzzer and AddressSanitizer; the machine's stable toolchain is told
# to accept the nightly flags this needs (RUSTC_BOOTSTRAP=1).
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd .. && pwd)
SECONDS_PER_TARGET=${1:-20}
shift || true
case "$SECONDS_PER_TARGET" in
    ''|*[!0-9]*) echo "fuzz/run.sh: SECONDS_PER_TARGET must be a whole number of seconds, got '$SECONDS_PER_TARGET'" >&2; exit 2 ;;
esac

# Rust target -> seed folder
declare -A SEEDS=(
    [trace_blkparse]=blkparse [trace_fio]=fio [trace_disksim]=disksim [trace_mqsim]=mqsim
    [trace_msr]=msr [trace_spc]=spc [trace_jedec]=jedec [trace_vscsi]=vscsi [trace_bin]=bin
    [profile]=profile
    [fiojob]=fiojob [fio_logs]=fio_logs [profiles]=profiles
)
PY_TARGETS=" fiojob fio_logs profiles "
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=(trace_blkparse trace_fio trace_disksim trace_mqsim trace_msr trace_spc trace_jedec trace_vscsi trace_bin profile fiojob fio_logs profiles); fi
for t in "${TARGETS[@]}"; do
    [ -n "${SEEDS[$t]:-}" ] || { echo "fuzz/run.sh: unknown target '$t' (known: ${!SEEDS[*]})" >&2; exit 2; }
done

need_rust=0; need_py=0
for t in "${TARGETS[@]}"; do
    if [[ "$PY_TARGETS" == *" $t "* ]]; then need_py=1; else need_rust=1; fi
done
if [ $need_rust = 1 ]; then
    command -v cargo-fuzz >/dev/null 2>&1 || cargo install -q cargo-fuzz --locked
    RUSTC_BOOTSTRAP=1 cargo fuzz build -O --debug-assertions >/dev/null
fi
PY="$ROOT/.venv/bin/python"
if [ $need_py = 1 ]; then
    [ -x "$PY" ] || { echo "fuzz/run.sh: $PY missing; run scripts/bootstrap.sh first" >&2; exit 2; }
    "$PY" -c 'import atheris' 2>/dev/null || "$ROOT/.venv/bin/pip" install -q atheris
fi

LIMITS=(-timeout=20 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=0)

# Replays TARGET's regression inputs, then fuzzes it; exits 1 on a crash.
fuzz_one() {
    local t=$1 corpus art reg run
    # absolute: the Python runner changes directory into its sandbox
    corpus="$PWD/corpus/$t"; art="$PWD/artifacts/$t/"; reg="$PWD/regressions/$t"
    mkdir -p "$corpus" "$art"
    if [[ "$PY_TARGETS" == *" $t "* ]]; then
        run=("$PY" python/run.py "$t")
    else
        run=("target/x86_64-unknown-linux-gnu/release/$t")
    fi
    echo "fuzz: $t (${SECONDS_PER_TARGET} s)" >&2
    if [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
        if ! "${run[@]}" "${LIMITS[@]}" "$reg"/* >"${art}regressions.log" 2>&1; then
            echo "fuzz: $t: a regression input crashes again (log: ${art}regressions.log)" >&2
            return 1
        fi
    fi
    if ! "${run[@]}" "${LIMITS[@]}" -max_total_time="$SECONDS_PER_TARGET" -artifact_prefix="$art" \
            "$corpus" "$PWD/seeds/${SEEDS[$t]}" >"${art}fuzz.log" 2>&1; then
        echo "fuzz: $t found a crash: input in $art, log in ${art}fuzz.log" >&2
        tail -n 30 "${art}fuzz.log" >&2
        return 1
    fi
}

# Each target is one single-threaded process; FUZZ_JOBS of them run at once.
JOBS=${FUZZ_JOBS:-$(nproc)}
declare -A running=()  # pid -> target
failed=()
reap_one() {
    local pid
    if wait -n -p pid "${!running[@]}"; then :; else failed+=("${running[$pid]}"); fi
    unset "running[$pid]"
}
for t in "${TARGETS[@]}"; do
    while [ ${#running[@]} -ge "$JOBS" ]; do reap_one; done
    fuzz_one "$t" &
    running[$!]=$t
done
while [ ${#running[@]} -gt 0 ]; do reap_one; done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: crashes in ${failed[*]}" >&2
    exit 1
fi
echo "fuzz: ${#TARGETS[@]} targets, no crash" >&2
