#!/usr/bin/env bash
# ctest's plot_draw (test/plot/extra.cmake): `attndev run` on a small sweep with three trials,
# then `attndev plot` drawing SVG (checked for its legend and error bars), PNG and PDF (checked
# by their magic bytes), each with its CSV and markdown beside it.
#   test/plot/draw_test.sh ATTNDEV_BIN
set -euo pipefail
bin="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "plot_draw: FAILED: $*" >&2; exit 1; }

cat > "$work/sweep.json" <<'JSON'
{
  "name": "plot-draw",
  "axes": {"seq_len": [32, 64, 128], "head_dim": 16, "block_r": 16, "block_c": [8, 16]},
  "trials": 3,
  "variants": [
    {"name": "baseline-bf16", "algorithm": "baseline", "policy": "torch-math-bf16"},
    {"name": "flash2-bf16", "algorithm": "flash2", "policy": "kernel-bf16",
     "ratio_to": "baseline-bf16"}
  ]
}
JSON
"$bin" -q run "$work/sweep.json" -o "$work/out" --no-summary

# Where the plotting environment goes: with the scripts' tree where its build folder can be
# written, else in the user's cache (a tree whose build/ cannot hold it stands in for an installed,
# read-only one: as root every folder is writable).
scripts="$(cd "$(dirname "$0")/../../scripts" && pwd)"
[ "$(ATTNDEV_PLOT_VENV=/x/y bash "$scripts/plot-venv.sh" --where)" = /x/y ] || fail "ATTNDEV_PLOT_VENV ignored"
[ "$(bash "$scripts/plot-venv.sh" --where)" = "$(dirname "$scripts")/build/venv-plot" ] ||
  fail "the environment is not beside the scripts' tree"
mkdir -p "$work/tree/scripts" && cp "$scripts/plot-venv.sh" "$work/tree/scripts/" && : > "$work/tree/build"
[ "$(XDG_CACHE_HOME="$work/cache" bash "$work/tree/scripts/plot-venv.sh" --where)" = "$work/cache/attndev/venv-plot" ] ||
  fail "a tree whose build/ cannot hold the environment does not fall back to the user's cache"

status=0
"$bin" plot "$work/out" --metric ratio_max_abs --x seq_len --series block_c --format svg \
  >"$work/stdout" 2>"$work/stderr" || status=$?
cat "$work/stderr" >&2
if [ "$status" -ne 0 ]; then
  if grep -q "PyPI cannot be reached" "$work/stderr"; then
    echo "plot_draw: SKIPPED: PyPI cannot be reached, so build/venv-plot has no matplotlib" >&2
    exit 77
  fi
  fail "attndev plot exited $status"
fi
svg="$work/out/plot-ratio_max_abs-by-seq_len-block_c.svg"
[ -s "$svg" ] || fail "$svg not written"
grep -q "<svg" "$svg" || fail "$svg is not SVG"
grep -q "tile columns Bc" "$svg" || fail "$svg has no legend titled by the series' label"
grep -q "variant / reference" "$svg" || fail "$svg does not label the ratio metric in words"
grep -q "dashed:" "$svg" && grep -q "ratio 1" "$svg" || fail "$svg does not say what the line at 1 is"
[ "$(grep -c "<g id=\"legend_" "$svg")" = 1 ] || fail "$svg has not exactly one legend"
for f in csv md; do [ -s "${svg%.svg}.$f" ] || fail "${svg%.svg}.$f not written beside the figure"; done

"$bin" -q plot "$work/out" --metric rmse --x seq_len --col block_c --spread std \
  -o "$work/fig.png" >/dev/null
head -c 8 "$work/fig.png" | od -An -c | grep -q "P   N   G" || fail "fig.png is not a PNG"
[ -s "$work/fig.csv" ] && [ -s "$work/fig.md" ] || fail "tables not beside -o fig.png"

"$bin" -q plot "$work/out" --metric max_abs --x block_c --series variant --row seq_len \
  --format pdf -o "$work/fig2" >/dev/null
head -c 5 "$work/fig2.pdf" | grep -q "%PDF-" || fail "fig2.pdf is not a PDF"

# Paper options: 95% intervals, labels, a title, log y, shared y; the table says which interval.
"$bin" -q plot "$work/out" --metric rmse --x seq_len --col block_c --spread ci --sharey --logy \
  --label seq_len=N --label baseline-bf16="baseline (bf16)" --title "RMSE by N" --size 7x3 \
  --format svg -o "$work/fig3" >/dev/null
grep -q "RMSE by N" "$work/fig3.svg" || fail "fig3.svg has no title"
grep -q "baseline (bf16)" "$work/fig3.svg" || fail "fig3.svg does not use --label for a series"
grep -q "95% interval of the mean" "$work/fig3.svg" || fail "fig3.svg does not say what its bars are"
grep -q "95% CI of the mean: t = Student" "$work/fig3.md" || fail "fig3.md does not say which interval"
echo "plot_draw: svg, png and pdf drawn" >&2

# Two series on top of each other: both drawn (the second hollow) and the legend says so.
cat > "$work/same.json" <<'JSON'
{
  "name": "plot-same",
  "axes": {"seq_len": [32, 64], "head_dim": 16, "block_r": 16, "block_c": 16},
  "variants": [
    {"name": "math", "algorithm": "baseline", "policy": "torch-math-bf16"},
    {"name": "math-again", "algorithm": "baseline", "policy": "torch-math-bf16"}
  ]
}
JSON
"$bin" -q run "$work/same.json" -o "$work/same" --no-summary
"$bin" -q plot "$work/same" --metric rmse --x seq_len --format svg -o "$work/same.svg" >/dev/null
grep -q "math-again (identical to math)" "$work/same.svg" || fail "same.svg does not say the series coincide"
echo "plot_draw: ci, labels, title and coinciding series drawn" >&2
