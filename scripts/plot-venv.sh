#!/usr/bin/env bash
# The Python that draws `attndev plot` figures: prints the path of build/venv-plot/bin/python3,
# creating that virtual environment on first use with matplotlib from PyPI (never the system's
# Python; `attndev plot` calls this script, and so can a person).
#
#   scripts/plot-venv.sh            ATTNDEV_PLOT_VENV=DIR overrides the folder
#
# Exit 0: the path on stdout. Exit 3: PyPI cannot be reached (what pip needs to install
# matplotlib). Exit 4: the environment cannot be created for another reason (no python3, no
# venv module). Messages go to stderr.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${ATTNDEV_PLOT_VENV:-$root/build/venv-plot}"
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
