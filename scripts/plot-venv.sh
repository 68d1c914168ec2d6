#!/usr/bin/env bash
# The Python that draws `attndev plot` and `attndev attribute` figures: prints the path of the
# plotting environment's python3, creating that virtual environment on first use with matplotlib
# from PyPI (never the system's Python; attndev calls this script, and so can a person).
#
#   scripts/plot-venv.sh            ATTNDEV_PLOT_VENV=DIR overrides the folder
#   scripts/plot-venv.sh --where    prints the folder it uses (or would create), changes nothing
#
# Where it lives: with the attndev it serves, not with the folder a command runs in (results
# folders are many; one environment of about 150 MB serves them all): build/venv-plot of the
# source tree these scripts belong to, where the binary's own build is, as long as that folder can
# be written; otherwise (an installed attndev whose scripts sit in a read-only folder) in the
# user's cache, ${XDG_CACHE_HOME:-~/.cache}/attndev/venv-plot.
#
# Exit 0: the path on stdout. Exit 3: PyPI cannot be reached (what pip needs to install
# matplotlib). Exit 4: the environment cannot be created for another reason (no python3, no
# venv module). Messages go to stderr.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ -n "${ATTNDEV_PLOT_VENV:-}" ]; then
  venv="$ATTNDEV_PLOT_VENV"
elif [ -d "$root/build/venv-plot" ] || { [ -d "$root/build" ] && [ -w "$root/build" ]; } ||
     { [ ! -e "$root/build" ] && [ -w "$root" ]; }; then
  venv="$root/build/venv-plot"
else
  venv="${XDG_CACHE_HOME:-$HOME/.cache}/attndev/venv-plot"
fi
if [ "${1:-}" = "--where" ]; then
  echo "$venv"
  exit 0
fi
ready="$venv/.attndev-plot-ready"
py="$venv/bin/python3"
pip_quiet=(--quiet --disable-pip-version-check)

# The marker is written last: a run interrupted while installing leaves no marker, and the next
# run installs again rather than using a half-made environment.
if [ -f "$ready" ] && "$py" -c 'import matplotlib' >/dev/null 2>&1; then
  echo "$py"
  exit 0
fi

base=$(command -v /usr/bin/python3 || command -v python3 || true)
if [ -z "$base" ]; then
  echo "plot-venv.sh: no python3 found: install python3 and python3-venv (scripts/setup.sh run)" >&2
  exit 4
fi
echo "attndev plot: first use: installing matplotlib from PyPI into $venv" \
     "(once, about a minute; nothing goes into the system's Python)" >&2
if [ ! -x "$py" ]; then
  mkdir -p "$(dirname "$venv")"
  if ! "$base" -m venv "$venv" >&2; then
    rm -rf "$venv"
    echo "plot-venv.sh: '$base -m venv $venv' failed: install python3-venv (Debian:" \
         "apt-get install python3-venv), or set ATTNDEV_PLOT_VENV to a writable folder" >&2
    exit 4
  fi
fi
if ! "$py" -m pip install "${pip_quiet[@]}" 'matplotlib>=3.6' >&2; then
  tmp=$(mktemp -d)
  if ! "$py" -m pip download "${pip_quiet[@]}" --no-deps --timeout 15 --retries 1 -d "$tmp" pip \
       >/dev/null 2>&1; then
    rm -rf "$tmp"
    echo "plot-venv.sh: PyPI cannot be reached, so matplotlib cannot be installed into $venv;" \
         "set pip's proxy or index (PIP_INDEX_URL) and run again" >&2
    exit 3
  fi
  rm -rf "$tmp"
  echo "plot-venv.sh: pip could not install matplotlib into $venv although PyPI is reachable" \
       "(see pip's message above)" >&2
  exit 4
fi
touch "$ready"
echo "$py"
