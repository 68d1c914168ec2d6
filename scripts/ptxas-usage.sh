#!/usr/bin/env bash
# Registers, spills, stack and static shared memory of every CUDA kernel, from ptxas itself
# (`nvcc -Xptxas -v`): no GPU needed. Compiles each lib/cuda/*.cu with lib/cuda/CMakeLists.txt's
# flags (--fmad=false, C++20, -O3) for the given architectures and prints one Markdown row per
# kernel instantiation and architecture. Dynamic shared memory (flash2-tc's tiles) is chosen at
# launch and is not in ptxas's figures: docs/cuda.md gives it.
# Usage: scripts/ptxas-usage.sh [ARCH...]   (default: 80 90; CUDA_HOME or nvcc on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
archs=("$@")
[[ ${#archs[@]} -gt 0 ]] || archs=(80 90)
nvcc_bin="$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")"
[[ -x "$nvcc_bin" ]] || { echo "ptxas-usage.sh: no nvcc (set CUDA_HOME or put nvcc on PATH)" >&2; exit 3; }
gencode=()
for a in "${archs[@]}"; do
  [[ "$a" =~ ^[0-9]+$ ]] || { echo "ptxas-usage.sh: architecture '$a' is not a number like 90" >&2; exit 2; }
  gencode+=("--generate-code=arch=compute_$a,code=sm_$a")
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
log="$tmp/ptxas.log"
for cu in lib/cuda/*.cu; do
  echo "ptxas-usage.sh: $cu" >&2
  "$nvcc_bin" -DATTNDEV_HAVE_CUDA=1 -Ilib -O3 -DNDEBUG "${gencode[@]}" --fmad=false \
    --expt-relaxed-constexpr -std=c++20 -Xcompiler=-ffp-contract=off -Xptxas -v \
    -x cu -c "$cu" -o "$tmp/out.o" 2>>"$log"
done
"$nvcc_bin" --version | tail -n 2 | head -n 1 >&2
python3 - "$log" <<'PY'
import re, subprocess, sys
rows, current = [], None
for line in open(sys.argv[1]):
    m = re.search(r"Compiling entry function '([^']+)' for '(sm_\d+)'", line)
    if m:
        current = {"name": m.group(1), "arch": m.group(2)}
        continue
    if current is None:
        continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m:
        current["stack"], current["spill_st"], current["spill_ld"] = map(int, m.groups())
    m = re.search(r"Used (\d+) registers", line)
    if m:
        current["regs"] = int(m.group(1))
        s = re.search(r"(\d+) bytes smem", line)
        current["smem"] = int(s.group(1)) if s else 0
        rows.append(current)
        current = None
def strip_parameters(name):
    """Drops the trailing (parameter list) of a demangled name; template arguments may hold
    parentheses themselves ((int)64), so the list is found by matching from the end."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i]
    return name


names = subprocess.run(["c++filt"], input="\n".join(r["name"] for r in rows), text=True,
                       capture_output=True, check=True).stdout.splitlines()
print("| kernel | arch | registers | stack B | spill stores/loads B | static smem B |")
print("|---|---|---|---|---|---|")
for r, n in sorted(zip(rows, names), key=lambda x: (x[1], x[0]["arch"])):
    n = strip_parameters(n).replace("attndev::cuda::", "").replace("|", "\\|")
    print(f"| `{n}` | {r['arch']} | {r['regs']} | {r.get('stack', 0)} | "
          f"{r.get('spill_st', 0)}/{r.get('spill_ld', 0)} | {r['smem']} |")
print(f"\n{len(rows)} kernel instantiations x architectures", file=sys.stderr)
PY
