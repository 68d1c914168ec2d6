#!/usr/bin/env bash
# Group cuda-tests: every CUDA test executable has ctest entries, and every entry passes (a
# skipped entry is a failure here: this group exists to run them on a device).
source "$(dirname "$0")/_common.bash"
ctest_bin="${CTEST:-ctest}"

"$ctest_bin" --test-dir "$build" -N -L cuda --show-only=json-v1 >"$out/ctest-list.json" 2>&1
coverage="$(python3 - "$targets_file" "$out/ctest-list.json" <<'PY'
import json, os, sys
targets = [l.split() for l in open(sys.argv[1]) if l.strip()]
listed = json.load(open(sys.argv[2])).get("tests", [])
commands = [os.path.realpath(t["command"][0]) for t in listed if t.get("command")]
for kind, name, path in targets:
    if kind == "test":
        n = sum(1 for c in commands if c == os.path.realpath(path))
        print(("ok" if n else "MISSING"), name, n)
PY
)"
coverage_rc=$?
echo "$coverage" >"$out/ctest-coverage.txt"
if [[ $coverage_rc -ne 0 || -z "$coverage" ]]; then
  check FAIL "ctest coverage" "could not list the cuda tests (ctest-list.json)"
elif grep -q '^MISSING' <<<"$coverage"; then
  check FAIL "ctest coverage" "no ctest entry: $(grep '^MISSING' <<<"$coverage" | cut -d' ' -f2 | tr '\n' ' ')"
else
  check PASS "ctest coverage" "$(wc -l <<<"$coverage") executables, $(awk '{s += $3} END {print s}' <<<"$coverage") entries"
fi
run_to ctest.log "$ctest_bin" --test-dir "$build" -L cuda --no-tests=error --output-on-failure \
  --timeout 240 -j "${JOBS:-4}"
rc=$?
check "$(verdict_of "$rc")" "ctest -L cuda" "ctest.log"
# ctest exits 0 when a test returned its SKIP_RETURN_CODE: look for skipped entries by name.
skipped="$(grep -E '\*\*\*(Skipped|Not Run)|\((Skipped|Not Run|Disabled)\)' "$out/ctest.log" |
  sed -E 's/.*(Test +#[0-9]+: |[0-9]+ - )([^ ]+).*/\2/' | sort -u | tr '\n' ' ')"
if [[ -n "$skipped" ]]; then
  check FAIL "ctest skipped entries" "skipped: $skipped(a skipped GPU test compared nothing)"
fi
finish_group
