#!/usr/bin/env bash
# Cross-checks attndev's presets against PyTorch's real CPU implementations and regenerates the
# measured section of docs/validation.md.
#
#   scripts/validate-torch.sh [--out DIR] [--config FILE] [--no-docs] [-j N] [--smoke]
#
#   --out DIR      results folder (default results/validation-torch-cpu; a rerun resumes it)
#   --config FILE  default configs/validation/torch-cpu.json
#   --no-docs      run only; leave docs/validation.md alone
#   --smoke        N = 256 and one trial only (minutes instead of half an hour); implies --no-docs
#   -j N           threads per emulated attention call (default 0: all)
#
# PyTorch comes from PyPI into a virtual environment, build/venv-torch (git-ignored; never the
# system python): `python3 -m venv` + pip install of ATTNDEV_TORCH_SPEC (default the version the
# committed figures were measured with). The plain PyPI wheel runs on the CPU; it also pulls
# NVIDIA's CUDA libraries (about 5 GiB in the environment, a few minutes to install). With the
# environment's python3 first on PATH, the config's external variants
# (scripts/external/torch_attention.py) run PyTorch's kernels on the same rounded inputs as
# their emulated twins; scripts/validation_report.py turns the rows into the tables of
# docs/validation.md (between its "generated" markers).
set -euo pipefail
cd "$(dirname "$0")/.."

out=results/validation-torch-cpu config=configs/validation/torch-cpu.json docs=1 threads=0
smoke=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="$2"; shift ;;
    --config) config="$2"; shift ;;
    --no-docs) docs=0 ;;
    --smoke) smoke=1; docs=0 ;;
    -j) threads="$2"; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "validate-torch.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
torch_spec="${ATTNDEV_TORCH_SPEC:-torch==2.15.0}"
venv=build/venv-torch

# System packages (python3-venv for `python3 -m venv`), then the binary alone.
ATTNDEV_SETUP_EXTRA="python3-venv ${ATTNDEV_SETUP_EXTRA:-}" scripts/setup.sh
cmake --preset release >/dev/null
cmake --build build/release --target attndev -j "${ATTNDEV_JOBS:-$(nproc)}"
attndev=build/release/apps/attndev/attndev

if ! "$venv/bin/python3" -c 'import torch, numpy' 2>/dev/null; then
  # Debian's interpreter: a pyenv or another venv first on PATH may lack ensurepip.
  base_python=$(command -v /usr/bin/python3 || command -v python3)
  echo "validate-torch.sh: creating $venv with $base_python, installing $torch_spec from PyPI" >&2
  "$base_python" -m venv "$venv"
  start=$(date +%s)
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check "$torch_spec" numpy
  echo "validate-torch.sh: installed in $(( $(date +%s) - start )) s ($(du -sh "$venv" | cut -f1))" >&2
fi
torch_version=$("$venv/bin/python3" -c 'import torch; print(torch.__version__)')
echo "validate-torch.sh: PyTorch $torch_version ($("$venv/bin/python3" -c \
  'import torch; print(torch.backends.cpu.get_cpu_capability())') CPU kernels)" >&2

overrides=()
if [[ $smoke == 1 ]]; then
  overrides=(-a "seq_len=256")
  out="${out}-smoke"
  config_smoke=$(mktemp)
  trap 'rm -f "$config_smoke"' EXIT
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["trials"]=1; json.dump(c,open(sys.argv[2],"w"))' \
    "$config" "$config_smoke"
  config="$config_smoke"
fi

start=$(date +%s)
PATH="$PWD/$venv/bin:$PATH" "$attndev" run "$config" -o "$out" -j "$threads" "${overrides[@]}"
echo "validate-torch.sh: run took $(( $(date +%s) - start )) s; results in $out" >&2

if [[ $docs == 1 ]]; then
  python3 scripts/validation_report.py "$out" --torch "$torch_version" \
    --command "scripts/validate-torch.sh" --update docs/validation.md
  echo "validate-torch.sh: docs/validation.md regenerated from $out" >&2
fi
