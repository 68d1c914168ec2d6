#!/usr/bin/env bash
# gpu-check group twins: the identical share of each twin against its kernel's output on the
# fixtures (scripts/gpu-check/fixtures.sh; run first when OUT_DIR/fixtures is absent), through
# `attndev match --json` with the GPU's tensor-core profile (tools/tc_probe/twin_shares.py):
#   flash.safetensors      fa2-cuda, fa2-cuda-unfused   (PyTorch's FlashAttention-2)
#   efficient.safetensors  mem-efficient
#   flash2-tc.safetensors  flash2-tc-twin
#   cudnn, math            every twin, reported only (cuDNN is closed; MATH is not a kernel twin)
# With the measured exp2 table in use (ATTNDEV_EXP2_TABLE, default OUT_DIR/ex2.approx.ftz.f32.table
# when the exp2-table group wrote it) FlashAttention-2 and flash2-tc must reach 99% identical; without
# it every share is reported and none fails. One line per (case, kernel); twins.tsv in OUT_DIR.
# needs: torch
#
# Usage: scripts/gpu-check/twins.sh BUILD_DIR OUT_DIR
# Environment: ATTNDEV_PROFILE (default: from nvidia-smi's compute capability), PYTHON.
# Exit: 0 passed; 1 a share below 99% (with the table) or a run failed; 2 usage; 3 nothing compared.
set -uo pipefail
if [[ $# -ne 2 ]]; then
  sed -n '/^# Usage:/,/^# Exit:/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
build="$1" out="$2"
here="$(cd "$(dirname "$0")/../.." && pwd)"
py="${PYTHON:-python3}"
mkdir -p "$out" || { echo "twins: cannot create $out" >&2; exit 2; }
attndev="$(awk '$2 == "attndev" { print $3 }' "$build/gpu-check-targets.txt" 2>/dev/null)"
if [[ -z "$attndev" || ! -x "$attndev" ]]; then
  echo "twins: FAIL: attndev not built in $build (gpu-check-targets.txt)"
  exit 3
fi
if [[ ! -d "$out/fixtures" ]] || ! compgen -G "$out/fixtures/*/inputs.safetensors" >/dev/null; then
  "$here/scripts/gpu-check/fixtures.sh" "$build" "$out" || { echo "twins: FAIL: no fixtures"; exit 3; }
fi
profile="${ATTNDEV_PROFILE:-}"
if [[ -z "$profile" ]]; then
  cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ')"
  case "$cap" in
    8.9) profile=sm89 ;; 8.*) profile=sm80 ;; 9.*) profile=sm90 ;; 10.*|12.*) profile=sm100 ;;
    *) echo "twins: FAIL: unknown compute capability \"$cap\" (set ATTNDEV_PROFILE)"; exit 3 ;;
  esac
fi
table="${ATTNDEV_EXP2_TABLE:-$out/ex2.approx.ftz.f32.table}"
threshold_note="exp2 table $table in use: FlashAttention-2 and flash2-tc must reach 99%"
if [[ -f "$table" ]]; then
  export ATTNDEV_EXP2_TABLE="$table"
  enforce=1
else
  unset ATTNDEV_EXP2_TABLE
  enforce=0
  threshold_note="no exp2 table: shares reported, none enforced (run the exp2-table group first)"
fi
echo "twins: profile $profile; $threshold_note"
tsv="$out/twins.tsv"
printf 'case\tkernel\tbest twin\tpolicy\tidentical\tresult\n' >"$tsv"
failed=0 compared=0
for dir in "$out"/fixtures/*/; do
  case_name="$(basename "$dir")"
  causal=()
  [[ "$case_name" == *-causal ]] && causal=(--causal)
  dtype="${case_name%%-*}"
  for kernel in flash efficient flash2-tc cudnn math; do
    file="$dir/$kernel.safetensors"
    [[ -f "$file" ]] || continue
    require=()
    twins=(--twin fa2-cuda --twin fa2-cuda-unfused --twin mem-efficient --twin flash2-tc-twin)
    case "$kernel" in
      flash) twins=(--twin fa2-cuda --twin fa2-cuda-unfused); require=(fa2-cuda fa2-cuda-unfused) ;;
      efficient) twins=(--twin mem-efficient) ;;
      flash2-tc) twins=(--twin flash2-tc-twin); require=(flash2-tc-twin) ;;
    esac
    [[ $enforce -eq 1 ]] || require=()
    json="$out/match-$case_name-$kernel.json"
    if ! "$attndev" match "$file" --inputs "$dir/inputs.safetensors" "${causal[@]}" \
        --algorithm baseline --policy "kernel-$dtype" "${twins[@]}" --profile "$profile" --json \
        >"$json" 2>"$json.log"; then
      echo "twins: $case_name $kernel: FAIL: attndev match failed (see $json.log)"
      failed=1
      continue
    fi
    "$py" "$here/tools/tc_probe/twin_shares.py" "$case_name" "$kernel" "$json" --table "$tsv" \
      ${require[@]:+--require "${require[@]}"} || failed=1
    compared=$((compared + 1))
  done
done
if [[ $compared -eq 0 ]]; then
  echo "twins: FAIL: nothing compared (no fixture outputs in $out/fixtures)"
  exit 3
fi
[[ $failed -eq 0 ]] && echo "twins: PASS ($compared outputs)" || echo "twins: FAIL"
exit $failed
