#!/usr/bin/env bash
# The plumbing of the device groups scripts/gpu-check/{tc-mma,exp2-table,fixtures,twins}.sh on a
# machine without a GPU: a fake build folder whose gpu-check-targets.txt names stub programs, a
# stub nvidia-smi and a stub python, so that each group's pass, fail, "nothing compared" and usage
# paths run before the first real device run does. The real twin_shares.py parses the stub
# attndev's match JSON, so its share arithmetic and thresholds are what is tested there.
#
# Usage: groups_test.sh SOURCE_DIR
set -uo pipefail
src="$(cd "${1:?usage: groups_test.sh SOURCE_DIR}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fails=0
check() {  # check NAME EXPECTED_EXIT ACTUAL_EXIT [OUTPUT_FILE PATTERN]
  local name="$1" want="$2" got="$3"
  if [[ "$want" != "$got" ]]; then
    echo "FAIL: $name: exit $got, expected $want"
    [[ $# -ge 4 ]] && sed 's/^/    /' "$4"
    fails=$((fails + 1))
    return
  fi
  if [[ $# -ge 5 ]] && ! grep -q -- "$5" "$4"; then
    echo "FAIL: $name: output lacks \"$5\""
    sed 's/^/    /' "$4"
    fails=$((fails + 1))
    return
  fi
  echo "ok: $name"
}

# ---- the fake build and device ----
build="$work/build" bin="$work/bin"
mkdir -p "$build" "$bin"
stub() {  # stub PATH BODY
  printf '#!/usr/bin/env bash\n%s\n' "$2" >"$1"
  chmod +x "$1"
}
stub "$build/tc_probe" 'echo "tc-mma: mma.sync m16n8k16 bf16 fake: 8/8 identical (100.0000%) PASS"
[[ "$1" == --out ]] && echo "{}" >"$2"
exit "${STUB_RC:-0}"'
stub "$build/exp2_probe" 'echo "exp2-table: hypothesis fraction(22, floor) 12 exceptions"
[[ "${STUB_WRITE:-1}" == 1 ]] && printf "attndev-exp2-table 1\nend\n" >"$2"
exit "${STUB_RC:-0}"'
# attndev match --json: the share of each twin candidate from STUB_SHARE (one value for all).
stub "$build/attndev" 'share="${STUB_SHARE:-1.0}"
[[ "$1" == match ]] || exit 2
cat <<JSON
{"verdict": "stub", "twin_exp2": "${ATTNDEV_EXP2_TABLE:-none}", "candidates": [
 {"candidate": "baseline kernel-bf16", "algorithm": "baseline", "policy_label": "kernel-bf16", "status": "ok", "identical_fraction": 0.1},
 {"candidate": "fa2-cuda kernel-bf16+mma=sm90", "algorithm": "fa2-cuda", "policy_label": "kernel-bf16+mma=sm90", "status": "ok", "identical_fraction": $share},
 {"candidate": "fa2-cuda-unfused kernel-bf16+mma=sm90", "algorithm": "fa2-cuda-unfused", "policy_label": "kernel-bf16+mma=sm90", "status": "ok", "identical_fraction": 0.5},
 {"candidate": "mem-efficient kernel-bf16+mma=sm90", "algorithm": "mem-efficient", "policy_label": "kernel-bf16+mma=sm90", "status": "ok", "identical_fraction": $share},
 {"candidate": "flash2-tc-twin kernel-bf16+mma=sm90", "algorithm": "flash2-tc-twin", "policy_label": "kernel-bf16+mma=sm90", "status": "ok", "identical_fraction": $share}]}
JSON'
printf 'app attndev %s\ntool attndev_tc_mma_probe %s\ntool attndev_exp2_probe %s\n' \
  "$build/attndev" "$build/tc_probe" "$build/exp2_probe" >"$build/gpu-check-targets.txt"
stub "$bin/nvidia-smi" 'echo "9.0"'
# A python that writes one fixture case (the real torch_fixtures.py needs CUDA PyTorch).
stub "$bin/fake-python" 'out="$2"
[[ "${STUB_RC:-0}" == 77 ]] && { echo "fixtures: SKIPPED: PyTorch sees no CUDA device"; exit 77; }
mkdir -p "$out/bf16-n256-d64"
for f in inputs flash efficient flash2-tc cudnn math; do : >"$out/bf16-n256-d64/$f.safetensors"; done
echo "fixtures: bf16-n256-d64: flash, efficient, cudnn, math, flash2-tc"
exit "${STUB_RC:-0}"'
export PATH="$bin:$PATH"
groups="$src/scripts/gpu-check"
log="$work/log"

# ---- tc-mma ----
"$groups/tc-mma.sh" >"$log" 2>&1
check "tc-mma: wrong arguments are a usage error" 2 $? "$log" "Usage"
o="$work/o1"
"$groups/tc-mma.sh" "$build" "$o" >"$log" 2>&1
check "tc-mma: all identical passes and prints the probe's lines" 0 $? "$log" "8/8 identical"
STUB_RC=1 "$groups/tc-mma.sh" "$build" "$o" >"$log" 2>&1
check "tc-mma: a mismatch fails" 1 $? "$log" "FAIL"
STUB_RC=77 "$groups/tc-mma.sh" "$build" "$o" >"$log" 2>&1
check "tc-mma: no device compares nothing" 3 $? "$log" "nothing compared"
"$groups/tc-mma.sh" "$work/nobuild" "$o" >"$log" 2>&1
check "tc-mma: a build without the probe compares nothing" 3 $? "$log" "not built"

# ---- exp2-table ----
"$groups/exp2-table.sh" "$build" "$o" >"$log" 2>&1
check "exp2-table: a written table passes" 0 $? "$log" "PASS"
rm -f "$o/ex2.approx.ftz.f32.table"
STUB_WRITE=0 "$groups/exp2-table.sh" "$build" "$o" >"$log" 2>&1
check "exp2-table: a probe that writes no table fails" 1 $? "$log" "missing"
STUB_RC=1 "$groups/exp2-table.sh" "$build" "$o" >"$log" 2>&1
check "exp2-table: a value not reproduced fails" 1 $? "$log" "FAIL"
STUB_RC=77 "$groups/exp2-table.sh" "$build" "$o" >"$log" 2>&1
check "exp2-table: no device measures nothing" 3 $? "$log" "nothing measured"

# ---- fixtures ----
o2="$work/o2"
PYTHON=fake-python "$groups/fixtures.sh" "$build" "$o2" >"$log" 2>&1
check "fixtures: written fixtures pass" 0 $? "$log" "bf16-n256-d64"
STUB_RC=77 PYTHON=fake-python "$groups/fixtures.sh" "$build" "$work/o3" >"$log" 2>&1
check "fixtures: no CUDA PyTorch writes nothing" 3 $? "$log" "nothing written"

# ---- twins (fixtures from o2; the exp2 table decides whether shares are enforced) ----
STUB_SHARE=0.98 "$groups/twins.sh" "$build" "$o2" >"$log" 2>&1
check "twins: without the exp2 table a 98% share is reported, not failed" 0 $? "$log" "98.00% identical report"
printf 'attndev-exp2-table 1\nend\n' >"$o2/ex2.approx.ftz.f32.table"
STUB_SHARE=0.995 "$groups/twins.sh" "$build" "$o2" >"$log" 2>&1
check "twins: with the table 99.5% passes" 0 $? "$log" "flash: best fa2-cuda kernel-bf16+mma=sm90 99.50% identical PASS"
grep -q "twin_exp2\": \"$o2/ex2.approx.ftz.f32.table" "$o2"/match-bf16-n256-d64-flash.json
check "twins: the table is handed to attndev" 0 $?
STUB_SHARE=0.98 "$groups/twins.sh" "$build" "$o2" >"$log" 2>&1
check "twins: with the table 98% fails" 1 $? "$log" "flash2-tc: best flash2-tc-twin kernel-bf16+mma=sm90 98.00% identical FAIL"
grep -q "cudnn: best" "$log"
check "twins: cuDNN's best twin is reported" 0 $?
STUB_SHARE=0.995 "$groups/twins.sh" "$build" "$work/empty" >"$log" 2>&1
check "twins: no fixtures and no way to make them compares nothing" 3 $? "$log" "no fixtures"

echo "$fails failure(s)"
[[ $fails -eq 0 ]]
