#!/usr/bin/env bash
# bench-trace.sh — the exact Fisher trace of a Dirac mixture at MNIST scale
# (N=60000, d=784, B=256, 4·B·N·d flops per call), in one run:
#   1. Go, pure-Go gonum BLAS          (go test -bench BenchmarkTraceMNISTScale ./dfx/mixture/)
#   2. Go, -tags openblas (cgo)        (needs libopenblas-dev and a C compiler)
#   3. NumPy float64 on OpenBLAS       (scripts/bench_trace_numpy.py, /usr/bin/python3)
# then a table and the ratios Go/NumPy.
#
# Usage: scripts/bench-trace.sh [--no-openblas] [--numpy-only] [--no-setup]
#   BENCHTIME (default 3x) and SIGMA (default 0.5, the Go benchmark's σ) can be set.
#   --no-setup: do not apt-get install python3-numpy / libopenblas-dev when missing.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
BENCH=BenchmarkTraceMNISTScale
PKG=./dfx/mixture/
BENCHTIME="${BENCHTIME:-3x}"
SIGMA="${SIGMA:-0.5}"
PY=/usr/bin/python3
openblas=1 gobench=1 setup=1
for a in "$@"; do
  case "$a" in
    --no-openblas) openblas=0 ;;
    --numpy-only) gobench=0 ;;
    --no-setup) setup=0 ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "bench-trace: unknown argument $a" >&2; exit 2 ;;
  esac
done
[ -d /usr/local/go/bin ] && PATH="$PATH:/usr/local/go/bin"

SUDO=()
[ "$(id -u)" = 0 ] || ! command -v sudo >/dev/null 2>&1 || SUDO=(sudo)
apt_install() {
  [ "$setup" = 1 ] || return 1
  echo "bench-trace: apt-get install $*" >&2
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null >/dev/null &&
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" </dev/null >/dev/null
}

tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
rows="$tmp/rows"   # name<TAB>seconds<TAB>GFLOP/s
: >"$rows"
status=0

# parse_go NAME LOG: the Benchmark lines of a go test -bench log, as table rows.
# The benchmark may report s/op and GFLOP/s itself (and hide ns/op); every
# value/unit pair after the iteration count is read.
parse_go() {
  awk -v tag="$1" -F'[ \t]+' '/^Benchmark/ && NF >= 4 {
    name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
    sec = ""; gf = ""
    for (i = 3; i < NF; i += 2) {
      if ($(i+1) == "s/op") sec = $i
      else if ($(i+1) == "ns/op" && sec == "" && $i > 0) sec = $i / 1e9
      else if ($(i+1) == "GFLOP/s") gf = $i
    }
    printf "go-%s %s\t%s\t%s\n", tag, name, sec, gf
  }' "$2"
}

run_go() { # run_go TAG ENV... -- GOFLAGS...
  local tag="$1"; shift
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  local log="$tmp/go-$tag.log"
  echo "== Go ($tag): go test -run '^\$' -bench $BENCH -benchtime $BENCHTIME $* $PKG"
  if env "${envs[@]}" go test -run '^$' -bench "$BENCH" -benchtime "$BENCHTIME" "$@" "$PKG" >"$log" 2>&1; then
    grep -E '^(Benchmark|goos|goarch|cpu|pkg)' "$log"
    parse_go "$tag" "$log" >>"$rows"
    grep -q "^Benchmark" "$log" || { echo "bench-trace: no benchmark line in the Go output"; cat "$log"; status=1; }
  else
    tail -n 30 "$log"; echo "bench-trace: Go benchmark ($tag) failed"; status=1
  fi
}

if [ "$gobench" = 1 ]; then
  if ! grep -qs "^func $BENCH(" "$PKG"*_test.go; then
    echo "bench-trace: $BENCH is not in $PKG (not written yet?); running the NumPy half only" >&2
    status=1
  else
    run_go purego CGO_ENABLED=0 --
    if [ "$openblas" = 1 ]; then
      if ! { [ -e /usr/include/x86_64-linux-gnu/cblas.h ] || dpkg -s libopenblas-dev >/dev/null 2>&1; }; then
        apt_install libopenblas-dev || echo "bench-trace: libopenblas-dev missing (make setup-blas)" >&2
      fi
      command -v cc >/dev/null 2>&1 || apt_install gcc libc6-dev || echo "bench-trace: no C compiler for cgo" >&2
      if dpkg -s libopenblas-dev >/dev/null 2>&1 && command -v cc >/dev/null 2>&1; then
        run_go openblas CGO_ENABLED=1 -- -tags openblas
      else
        echo "bench-trace: skipping -tags openblas (needs libopenblas-dev and cc)"; status=1
      fi
    fi
  fi
fi

if ! "$PY" -c 'import numpy' >/dev/null 2>&1; then
  apt_install python3-numpy || echo "bench-trace: python3-numpy missing for $PY" >&2
fi
echo "== NumPy: $PY scripts/bench_trace_numpy.py --sigma $SIGMA"
if "$PY" "$here/bench_trace_numpy.py" --sigma "$SIGMA" >"$tmp/numpy.log" 2>&1; then
  grep -v '^RESULT ' "$tmp/numpy.log"
  awk '/^RESULT /{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                   printf "%s\t%s\t%s\n", v["name"], v["seconds"], v["gflops"] }' "$tmp/numpy.log" >>"$rows"
else
  cat "$tmp/numpy.log"; echo "bench-trace: NumPy benchmark failed"; status=1
fi

echo
echo "Exact Fisher trace, Dirac mixture N=60000 d=784 B=256 (4·B·N·d = 48.2 GFLOP per call), $(nproc) cores"
awk -F'\t' '
  { name[NR] = $1; sec[NR] = $2; gf[NR] = $3
    if ($1 ~ /^numpy/ && $2 != "" && (best == "" || $2 + 0 < best + 0)) { best = $2; bestgf = $3; bestname = $1 } }
  END {
    printf "%-34s %10s %9s %14s\n", "implementation", "s/call", "GFLOP/s", "time vs NumPy"
    for (i = 1; i <= NR; i++) {
      r = (best != "" && sec[i] != "") ? sprintf("%.2fx", sec[i] / best) : "-"
      printf "%-34s %10s %9s %14s\n", name[i], (sec[i] == "" ? "-" : sprintf("%.3f", sec[i])), (gf[i] == "" ? "-" : gf[i]), r
    }
    if (best != "") {
      printf "\nRatios Go/NumPy against %s (%.3f s, %s GFLOP/s): time ratio > 1 means Go is slower;\n", bestname, best, bestgf
      for (i = 1; i <= NR; i++) if (name[i] ~ /^go-/ && sec[i] != "")
        printf "  %-32s time %.2fx   speed %.2fx\n", name[i], sec[i] / best, (gf[i] == "" ? best / sec[i] : gf[i] / bestgf)
    }
  }' "$rows"
exit $status
