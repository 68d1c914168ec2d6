#!/usr/bin/env bash
# Runs every paper config (configs/paper/*.json, forward-pass ones) and the stage attribution
# (configs/analysis/attribution.json), writes `attndev report` tables and the figures.
#
#   scripts/reproduce.sh [--smoke] [--sram M] [--out DIR] [--figures DIR] [--attndev PATH] [-j N]
#
#   --smoke       each config with its small "_smoke" override set (the CI smoke test: seconds)
#   --sram M      FA-1's tile rule for the configs that do not sweep tiles (figs. 3, 4, 5):
#                 Bc = ceil(M / 4d), Br = min(Bc, d), M = on-chip memory in elements
#   --out DIR     results folders go to DIR/<experiment> (default results/paper, or
#                 results/paper-smoke with --smoke)
#   --figures DIR PNG/SVG figures (default DIR/figures; docs/figures holds the committed ones)
#   --attndev P   the binary (default: build/release/apps/attndev/attndev, then PATH)
#   -j N          threads per attention call (default 0: all)
#
# Each run prints its wall time; a results folder of an earlier run of the same config resumes.
set -euo pipefail
cd "$(dirname "$0")/.."

smoke=0 sram="" out="" figures="" threads=0
attndev="build/release/apps/attndev/attndev"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --smoke) smoke=1 ;;
    --sram) sram="$2"; shift ;;
    --out) out="$2"; shift ;;
    --figures) figures="$2"; shift ;;
    --attndev) attndev="$2"; shift ;;
    -j) threads="$2"; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "reproduce.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [[ ! -x "$attndev" ]]; then
  if command -v attndev >/dev/null; then attndev=$(command -v attndev); else
    echo "reproduce.sh: no attndev binary at $attndev; build it (scripts/build.sh) or pass --attndev" >&2
    exit 2
  fi
fi
if [[ -n "$sram" && ! "$sram" =~ ^[1-9][0-9]*$ ]]; then
  echo "reproduce.sh: --sram needs a positive integer (elements of on-chip memory), got '$sram'" >&2
  exit 2
fi
# plot.py needs matplotlib: the project's plotting environment (build/venv-plot, created from PyPI
# on first use by scripts/plot-venv.sh, as `attndev plot` does), never the system's Python.
plot_python=""
if ! plot_python=$(scripts/plot-venv.sh); then
  plot_python=""
  echo "reproduce.sh: no plotting environment (scripts/plot-venv.sh said why above): tables only, no figures" >&2
fi
[[ -z "$out" ]] && out=$([[ $smoke == 1 ]] && echo results/paper-smoke || echo results/paper)
[[ -z "$figures" ]] && figures="$out/figures"
mkdir -p "$out"

configs=()
for cfg in configs/paper/*.json configs/analysis/attribution.json; do
  # Forward-pass configs carry "_smoke"; the training study (figs. 7-8) runs with `attndev train`.
  if python3 -c 'import json,sys; sys.exit(0 if "_smoke" in json.load(open(sys.argv[1])) else 1)' "$cfg"; then
    configs+=("$cfg")
  fi
done

status=0
for cfg in "${configs[@]}"; do
  name=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["name"])' "$cfg")
  args=()
  if [[ $smoke == 1 ]]; then
    while IFS= read -r o; do args+=(-a "$o"); done < <(python3 -c \
      'import json,sys; [print(o) for o in json.load(open(sys.argv[1]))["_smoke"]]' "$cfg")
  fi
  if [[ -n "$sram" && "$name" =~ fig3|fig4|fig5 ]]; then
    d=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["axes"].get("head_dim", 64))' "$cfg")
    bc=$(( (sram + 4 * d - 1) / (4 * d) ))
    br=$(( bc < d ? bc : d ))
    args+=(-a "block_r=$br" -a "block_c=$bc")
  fi
  dir="$out/$name"
  echo "== $name: $attndev run $cfg -o $dir ${args[*]:-}"
  start=$(date +%s)
  if "$attndev" run "$cfg" -o "$dir" -j "$threads" --no-summary --force-new "${args[@]}"; then
    echo "== $name: $(( $(date +%s) - start )) s"
    "$attndev" report "$dir" > "$dir/report.md"
    if [[ "$name" == attribution ]]; then
      # The stage attribution draws itself; the run above is complete, so this only tabulates.
      draw=(--no-draw)
      [[ -n "$plot_python" ]] && draw=()
      if "$attndev" -q attribute "$cfg" -o "$dir" "${args[@]}" "${draw[@]}" > /dev/null; then
        [[ -n "$plot_python" ]] && mkdir -p "$figures" && cp "$dir/attribution.png" "$figures/attribution.png"
      else
        status=1
      fi
    elif [[ -n "$plot_python" ]]; then
      "$plot_python" scripts/plot.py "$dir" -o "$figures" || status=1
    fi
  else
    echo "== $name: FAILED after $(( $(date +%s) - start )) s" >&2
    status=1
  fi
done
exit $status
