#!/usr/bin/env bash
# Installs what attndev needs from Debian's packages, only what is missing; quiet and idempotent.
# Usage: scripts/setup.sh run     what building attndev and running configs needs (scripts/run.sh)
#        scripts/setup.sh [test]  run's packages + what the test suite, fuzzing, the SLURM test,
#                                 the training corpora and plotting need (scripts/test.sh; default)
#        ATTNDEV_SETUP_EXTRA="pkg …"  more packages
set -euo pipefail

mode="${1:-test}"
# Compiler, build tools and the header libraries attndev is built from (run.sh configures without
# the tests, so Catch2 belongs to the test set-up).
run_packages=(cmake ninja-build g++ git ccache
              libcli11-dev nlohmann-json3-dev libspdlog-dev libeigen3-dev)
test_packages=(catch2 pkg-config                                # the test framework
               python3 python3-numpy python3-scipy python3-matplotlib  # test oracles, plots
               python3-venv python3-dev                     # the Python package (test/python)
               clang libclang-rt-14-dev                     # libFuzzer targets (scripts/fuzz.sh)
               clang-19                                     # the second compiler (clang-check.sh)
               slurmctld slurmd slurm-client munge          # the real one-node SLURM test
               fortunes-min                                 # default text corpus of `attndev train`
               fortunes)                                    # full corpus of the paper weight study
case "$mode" in
  run) packages=("${run_packages[@]}") ;;
  test) packages=("${run_packages[@]}" "${test_packages[@]}") ;;
  *) echo "setup.sh: unknown mode '$mode' (run or test)" >&2; exit 2 ;;
esac
# shellcheck disable=SC2206
packages+=(${ATTNDEV_SETUP_EXTRA:-})

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "setup.sh: missing packages ${missing[*]} and not root (no sudo): install them and rerun" >&2
    exit 1
  fi
fi
echo "setup.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
