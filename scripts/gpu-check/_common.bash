# Sourced by every group script of scripts/gpu-check.sh (not a group itself: groups are the
# *.sh files here whose names do not start with "_"). The interface of a group:
#   scripts/gpu-check/<group>.sh BUILD_DIR OUT_DIR
#   - BUILD_DIR is a configured and built CUDA build (gpu-check-targets.txt names the binaries);
#   - everything the group writes goes under OUT_DIR (gpu-check.sh tars it into <group>.tar.gz);
#   - one summary line per check on stdout: "PASS|FAIL|INFO <check>: <detail>" (INFO never fails);
#   - exit 0 when every check passed, 77 when no usable device was found, else 1.
# A group that needs more than the build declares it in a header line, read by gpu-check.sh
# before anything is built:  "# needs: torch" (python3 with a CUDA PyTorch).
set -uo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $(basename "$0") BUILD_DIR OUT_DIR" >&2
  exit 2
fi
build="$1"
out="$2"
mkdir -p "$out" || exit 2
out="$(cd "$out" && pwd)"
[[ -d "$build" ]] && build="$(cd "$build" && pwd)"
# Paths in the groups (configs/...) are the repository's.
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
targets_file="$build/gpu-check-targets.txt"
if [[ ! -f "$targets_file" ]]; then
  echo "FAIL targets: $targets_file missing (is $build a built CUDA build?)"
  exit 1
fi
group_status=0
group_skipped=0

target_path() { awk -v n="$1" '$2 == n { print $3 }' "$targets_file"; }
check_tool="$(target_path attndev_cuda_check)"
attndev_bin="$(target_path attndev)"

# check VERDICT NAME [DETAIL]: one summary line; a verdict other than PASS or INFO fails the group.
check() {
  echo "$1 $2${3:+: $3}"
  case "$1" in
    PASS|INFO) ;;
    SKIP) group_skipped=1; group_status=1 ;;
    *) group_status=1 ;;
  esac
}

# run_to FILE COMMAND...: the command's output to the log and to OUT_DIR/FILE; its exit status.
run_to() {
  local file="$1"; shift
  echo "== $*" >&2
  "$@" >"$out/$file" 2>&1
  local rc=$?
  sed 's/^/    /' "$out/$file" >&2
  return "$rc"
}

# verdict_of RC: PASS for 0, SKIP for 77 (no device: a failure here), FAIL(rc=N) otherwise.
verdict_of() {
  case "$1" in
    0) echo PASS ;;
    77) echo SKIP ;;
    *) echo "FAIL(rc=$1)" ;;
  esac
}

# The device tool's lines ("PASS|FAIL part case: detail") become the group's, and its count line
# must say that something was compared and nothing failed.
forward_tool_lines() {  # forward_tool_lines FILE NAME
  local file="$1" name="$2"
  grep -E '^(PASS|FAIL) ' "$out/$file" || true
  if grep -qE '^FAIL ' "$out/$file"; then group_status=1; fi
  if ! grep -qE '^[1-9][0-9]* checks compared, 0 failed' "$out/$file"; then
    check FAIL "$name count" "no '<n> checks compared, 0 failed' line in $file"
  fi
}

finish_group() {
  if [[ $group_skipped -eq 1 ]]; then exit 77; fi
  exit "$group_status"
}
