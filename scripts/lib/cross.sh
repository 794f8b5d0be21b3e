# Sourced by scripts/test-windows and scripts/test-arm64: logging, the cross build (one cargo
# invocation per target, so acp-host is compiled once), running a libtest binary under an emulator
# with named skips, and the per-binary tally that ends each script.
# Needs before sourcing: NAME (log prefix), ROOT.
t_start=$EPOCHREALTIME
log() { printf '%s: %s\n' "$NAME" "$*" >&2; }
die() { printf '%s: ERROR: %s\n' "$NAME" "$*" >&2; exit 1; }
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }'; }

# The tally: one row per test binary or check, "label passed skipped failed".
rows=()
total_pass=0 total_skip=0 total_fail=0
failures=()
record() { # record LABEL PASSED SKIPPED FAILED
    rows+=("$(printf '%-34s %4d passed %4d skipped %4d failed' "$1" "$2" "$3" "$4")")
    total_pass=$((total_pass + $2)) total_skip=$((total_skip + $3)) total_fail=$((total_fail + $4))
    [[ $4 -eq 0 ]] || failures+=("$1")
}
check() { # check LABEL COMMAND...: one pass or fail
    local t0=$EPOCHREALTIME
    if "${@:2}"; then log "ok    $1 ($(elapsed "$t0")s)"; record "$1" 1 0 0
    else log "FAIL  $1 ($(elapsed "$t0")s)"; record "$1" 0 0 1; fi
}
skip_note() { # skip_note LABEL REASON: a whole check skipped
    log "skip  $1: $2"
    record "$1" 0 1 0
}

# cargo_build TRIPLE ARGS...: `cargo build --message-format=json` for the target; the executables
# of the test harnesses land in the associative array TEST_EXE[target-name] (lib: "lib").
declare -A TEST_EXE=()
cargo_build() {
    local triple=$1 json
    shift
    json=$(mktemp)
    log "cargo build --target $triple $*"
    if ! cargo build --target "$triple" --message-format=json-render-diagnostics "$@" >"$json"; then
        rm -f "$json"
        die "cargo build failed"
    fi
    while IFS=$'\t' read -r name exe; do
        TEST_EXE[$name]=$exe
    done < <(node -e '
        const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n");
        for (const l of lines) {
            if (!l.startsWith("{")) continue;
            const m = JSON.parse(l);
            if (m.reason !== "compiler-artifact" || !m.profile.test || !m.executable) continue;
            if (!m.manifest_path.endsWith("/core/Cargo.toml")) continue;
            const kind = m.target.kind[0];
            console.log((kind === "lib" ? "lib" : m.target.name) + "\t" + m.executable);
        }' "$json")
    rm -f "$json"
}

# run_tests LABEL EXE TIMEOUT SKIPS_ARRAY_NAME -- RUNNER...: runs a libtest binary under RUNNER
# with every skipped test (entries "test-name-substring|reason" of the named array whose label
# matches "LABEL:") passed as --skip and its reason printed; records passed / skipped (ignored +
# filtered out) / failed from libtest's summary. A timeout or crash fails the binary.
run_tests() {
    local label=$1 exe=$2 secs=$3 skips_name=$4
    shift 5
    local -n skips_ref=$skips_name
    local args=() entry pat reason out rc=0 t0=$EPOCHREALTIME
    for entry in "${skips_ref[@]}"; do
        [[ $entry == "$label:"* ]] || continue
        entry=${entry#"$label:"}
        pat=${entry%%|*} reason=${entry#*|}
        log "skip  $label::$pat: $reason"
        args+=(--skip "$pat")
    done
    out=$(mktemp)
    timeout -k 10 "$secs" "$@" "$exe" "${args[@]}" >"$out" 2>&1 || rc=$?
    # Wine 8 now and then faults in its own loader before the test harness has run a test
    # ("Unhandled page fault on write access to 0000000000000008", seen once in ~40 runs of a
    # binary that passes): that start is retried once, said, and never a test's failure.
    if ! grep -q "^test result: " "$out" && grep -q "^wine: Unhandled page fault" "$out" && ! grep -qE '^test .* \.\.\. ' "$out"; then
        log "$label: Wine faulted before any test ran (a Wine loader flake): retried once"
        rc=0
        timeout -k 10 "$secs" "$@" "$exe" "${args[@]}" >"$out" 2>&1 || rc=$?
    fi
    local summary p=0 f=0 i=0 fo=0
    summary=$(grep -E '^test result: ' "$out" | tail -n 1 || true)
    if [[ -n $summary ]]; then
        p=$(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$summary")
        f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$summary")
        i=$(sed -E 's/.* ([0-9]+) ignored.*/\1/' <<<"$summary")
        fo=$(sed -E 's/.* ([0-9]+) filtered out.*/\1/' <<<"$summary")
    fi
    # Wine 8 under load now and then fails CreateProcess with ERROR_INTERNAL_ERROR (1359) (seen
    # about once per full Windows run, a different test each time). When every failed test's
    # output names that error, just those tests run again once, alone, and the run says so.
    local flaky
    if [[ $f -gt 0 ]] && flaky=$(only_wine_1359_failures "$out" "$f"); then
        log "$label: $f failure(s) were Wine's CreateProcess internal error (1359): run again once: $flaky"
        local again rc2=0 s2
        again=$(mktemp)
        # shellcheck disable=SC2086 # test names carry no spaces
        timeout -k 10 "$secs" "$@" "$exe" --exact --test-threads 1 $flaky >"$again" 2>&1 || rc2=$?
        s2=$(grep -E '^test result: ' "$again" | tail -n 1 || true)
        if [[ -n $s2 ]]; then
            p=$((p + $(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$s2")))
            f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$s2")
            [[ $rc2 -eq 0 ]] && rc=0
        fi
        [[ $rc2 -eq 0 ]] || cat "$again" >>"$out"
        rm -f "$again"
    fi
    if [[ $rc -ne 0 || -z $summary ]]; then
        [[ $f -gt 0 ]] || f=1
        log "--- $label exited $rc after $(elapsed "$t0")s:"
        grep -vE '^test .* \.\.\. ok$' "$out" | tail -n 60 >&2 || true
        [[ $rc -eq 124 ]] && log "$label: timed out after ${secs}s"
    fi
    log "$label: $p passed, $((i + fo)) skipped, $f failed ($(elapsed "$t0")s)"
    record "$label" "$p" "$((i + fo))" "$f"
    rm -f "$out"
}

# only_wine_1359_failures OUT COUNT: prints the names of the failed tests in libtest output OUT
# and succeeds when there are COUNT of them and each one's captured output names "os error 1359".
only_wine_1359_failures() {
    awk -v want="$2" '
        /^---- .* stdout ----$/ { name = $2; names[name] = 1; next }
        /^failures:$/ { name = ""; next }
        name != "" && /os error 1359/ { hit[name] = 1 }
        END {
            n = 0; ok = 1; list = ""
            for (t in names) { n++; if (!(t in hit)) ok = 0; list = list " " t }
            if (n != want || !ok) exit 1
            print substr(list, 2)
        }' "$1"
}

# left_behind ENV_ENTRY: host processes (not zombies) whose environment holds ENV_ENTRY and whose
# command line names the mock agent; each is printed. Emulated agents (Wine, qemu) are host
# processes too, so /proc sees them.
left_behind() {
    local env pid state found=0
    for env in /proc/[0-9]*/environ; do
        pid=${env#/proc/} pid=${pid%/environ}
        [[ $pid != "$$" ]] || continue
        grep -qzx -- "$1" "$env" 2>/dev/null || continue
        tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q acp-mock-agent || continue
        state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo gone)
        [[ $state == Z || $state == gone ]] && continue
        log "left behind: pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
        found=1
    done
    [[ $found -eq 0 ]]
}

# finish: the table, one summary line with the wall time, exit status.
finish() {
    printf '%s\n' "${rows[@]}" >&2
    [[ ${#failures[@]} -eq 0 ]] || log "failed: ${failures[*]}"
    echo "$NAME: $total_pass passed, $total_skip skipped, $total_fail failed in $(elapsed "$t_start")s"
    [[ $total_fail -eq 0 ]]
}
