#!/usr/bin/env bash
# run-notebooks.sh — execute GoNB notebooks headless and fail on any failed cell.
#
# Usage: scripts/run-notebooks.sh [--exec | --full] [--inplace] [--keep] [NOTEBOOK.ipynb ...]
#   default notebooks: notebooks/*.ipynb; default mode: quick (DFX_QUICK=1, read by
#   report.QuickProfile in dfx/report — the one place the profile is chosen).
#   Notebooks are executed into a temporary folder: the committed ones are not
#   touched unless --inplace (or --exec) is given.
#   --full     run with the full configurations (DFX_QUICK unset).
#   --inplace  on success, write the executed notebook over the committed one
#              (without nbconvert's per-cell timestamps).
#   --exec     --full --inplace: regenerate the committed, executed notebooks
#              (`make notebooks-exec`; ≈ 25 min on 2 cores).
#   --keep     keep the executed copies (their folder is printed).
#
# The notebooks find this module through DFX_ROOT (exported here as the repo
# root); their first cell runs scripts/notebook-setup.sh, which builds a go.work
# with it. Widgets (dfx/notebook.Knobs) run once at their defaults:
# DFX_NOTEBOOK_HEADLESS=1 says no browser is attached.
# GoNB reports failing cells as output streams, so nbconvert's exit status is not
# enough: every executed notebook is inspected by scripts/check_notebook.py
# (error outputs, anything on stderr, a Go cell without output).
# A cell may run 30 min (quick) or 2 h (full); DFX_TEST_WAIT (seconds, or 45m, 2h) sets it.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
quick=1 inplace=0 keep=0
nbs=()
for a in "$@"; do
  case "$a" in
    --full) quick=0 ;;
    --inplace) inplace=1 ;;
    --exec) quick=0 inplace=1 ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,23p' "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) echo "run-notebooks: unknown flag $a" >&2; exit 2 ;;
    *) nbs+=("$a") ;;
  esac
done
if [ ${#nbs[@]} -eq 0 ]; then
  shopt -s nullglob
  nbs=("$root"/notebooks/*.ipynb)
  shopt -u nullglob
  if [ ${#nbs[@]} -eq 0 ]; then echo "run-notebooks: no notebooks in $root/notebooks"; exit 0; fi
fi

# The gonb kernel needs go, goimports and gopls on PATH; Jupyter lives on Debian's python3.
[ -d /usr/local/go/bin ] && PATH="$PATH:/usr/local/go/bin"
PATH="$(go env GOPATH)/bin:$PATH"
export PATH
JUPYTER=/usr/bin/jupyter
PY=/usr/bin/python3
[ -x "$JUPYTER" ] || { echo "run-notebooks: $JUPYTER missing: run 'make setup'" >&2; exit 1; }
if ! "$JUPYTER" kernelspec list 2>/dev/null | awk '{print $1}' | grep -qx gonb; then
  echo "run-notebooks: the gonb kernel is not installed: run 'make setup'" >&2; exit 1
fi

export DFX_ROOT="$root"
export DFX_NOTEBOOK_HEADLESS=1   # dfx/notebook: no browser, knobs at their defaults
export GOEXPERIMENT=simd   # also in the gonb kernel's kernel.json (scripts/setup.sh)
if [ "$quick" = 1 ]; then export DFX_QUICK=1; else unset DFX_QUICK; fi
# A cell's time limit, generous for a loaded 2-core machine (the first Go cell builds the
# module's packages; the full mnist and adjoint runs take ≈ 6 min each on an idle one);
# DFX_TEST_WAIT (seconds, or 45m, 2h) sets it. The kernel's start and its last outputs
# get the same limit: nbconvert's 60 s and 4 s defaults are waits a loaded machine misses.
timeout=1800
[ "$quick" = 1 ] || timeout=7200
if [ -n "${DFX_TEST_WAIT:-}" ]; then
  if ! [[ "$DFX_TEST_WAIT" =~ ^([0-9]+)(h|m|s)?$ ]]; then
    echo "run-notebooks: DFX_TEST_WAIT=$DFX_TEST_WAIT: want seconds or a duration such as 45m" >&2; exit 2
  fi
  unit=1
  case "${BASH_REMATCH[2]}" in h) unit=3600 ;; m) unit=60 ;; esac
  timeout=$(( 10#${BASH_REMATCH[1]} * unit ))
fi
out="$(mktemp -d "${TMPDIR:-/tmp}/dfx-notebooks.XXXXXX")"
[ "$keep" = 1 ] || trap 'rm -rf "$out"' EXIT

clean=""   # --clean: the stored copy without nbconvert's timestamps (kept ones keep them)
[ "$inplace" = 1 ] && clean=--clean
failed=()
for nb in "${nbs[@]}"; do
  name="$(basename "$nb")"
  [ -f "$nb" ] || { echo "run-notebooks: $nb: no such file" >&2; failed+=("$name"); continue; }
  start=$(date +%s)
  log="$out/${name%.ipynb}.log"
  if "$JUPYTER" nbconvert --to notebook --execute \
      --ExecutePreprocessor.kernel_name=gonb --ExecutePreprocessor.timeout="$timeout" \
      --ExecutePreprocessor.startup_timeout="$timeout" --ExecutePreprocessor.iopub_timeout="$timeout" \
      --output-dir="$out" --output "$name" "$nb" >"$log" 2>&1 \
     && "$PY" "$here/check_notebook.py" $clean "$out/$name" "$name"; then
    echo "ok    $name ($(( $(date +%s) - start ))s)"
    if [ "$inplace" = 1 ]; then cp "$out/$name" "$nb"; fi
  else
    echo "FAIL  $name ($(( $(date +%s) - start ))s)"
    if grep -qE 'timed out|TimeoutError' "$log"; then
      echo "  $name: waited ${timeout}s for a cell or the kernel (DFX_TEST_WAIT raises the limit)"
    fi
    if grep -q 'An error occurred while executing' "$log"; then
      # nbconvert stopped on a cell GoNB reported as failed (e.g. a compile error).
      sed -n '/An error occurred while executing/,$p' "$log" | head -n 40 | sed 's/^/  | /'
    elif ! [ -s "$out/$name" ]; then
      tail -n 40 "$log" | sed 's/^/  | /'
    fi
    failed+=("$name")
  fi
done
[ "$keep" = 1 ] && echo "executed notebooks kept in $out"
if [ ${#failed[@]} -gt 0 ]; then
  echo "run-notebooks: ${#failed[@]} of ${#nbs[@]} notebook(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "run-notebooks: all ${#nbs[@]} notebook(s) passed (quick=$quick)"
