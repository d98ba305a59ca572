#!/usr/bin/env bash
# bench-trace.sh — the exact Fisher trace of a Dirac mixture at MNIST scale
# (N=60000, d=784, B=256, 4·B·N·d = 48.2 GFLOP per call), interleaved in one run:
#   go-default  the default build (cgo on): products on dfx's pure-Go blocked GEMM
#               (AVX-512 assembly micro-kernel; gonum's pure-Go Gemm without AVX-512)
#   go-nocgo    CGO_ENABLED=0: the same pure-Go path
#   go-openblas CGO_ENABLED=1 -tags openblas: OpenBLAS's cblas_dgemm (libopenblas-dev)
#   numpy       NumPy float64 on OpenBLAS (scripts/bench_trace_numpy.py, /usr/bin/python3)
# ROUNDS rounds of the three, one after the other; then a table of medians and
# the speed ratios against NumPy's best variant. Every Go build has GOEXPERIMENT=simd.
#
# Usage: scripts/bench-trace.sh [--no-openblas] [--numpy-only] [--no-setup]
#   ROUNDS (default 3), BENCHTIME (default 3x, per Go round) and SIGMA (default 0.5,
#   the Go benchmark's σ) can be set.
#   --no-openblas: skip the -tags openblas build.
#   --no-setup: do not apt-get install python3-numpy / libopenblas-dev when missing.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
BENCH=BenchmarkTraceMNISTScale
PKG=./dfx/mixture/
ROUNDS="${ROUNDS:-3}"
BENCHTIME="${BENCHTIME:-3x}"
SIGMA="${SIGMA:-0.5}"
PY=/usr/bin/python3
openblas=1 gobench=1 setup=1
. "$here/lib.sh"
parse_opts bench-trace 2,16 "--no-openblas=openblas=0 --numpy-only=gobench=0 --no-setup=setup=0" "$@"
go_env
apt_install() { apt_install_as bench-trace "$@"; }

tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
rows="$tmp/rows"   # round<TAB>name<TAB>seconds<TAB>GFLOP/s
: >"$rows"
status=0

cpu="$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)"
simd="$(grep -o -m1 -w 'avx512f' /proc/cpuinfo 2>/dev/null || grep -o -m1 -w 'avx2' /proc/cpuinfo 2>/dev/null)"
echo "machine: ${cpu:-unknown CPU} (${simd:-no AVX}), nproc $(nproc), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "go: $(go version 2>/dev/null), GOEXPERIMENT=$GOEXPERIMENT"

# parse_go ROUND NAME LOG: the benchmark line of a test-binary log, as a table row.
parse_go() {
  awk -v round="$1" -v tag="$2" -F'[ \t]+' '/^Benchmark/ && NF >= 4 {
    sec = ""; gf = ""
    for (i = 3; i < NF; i += 2) {
      if ($(i+1) == "s/op") sec = $i
      else if ($(i+1) == "ns/op" && sec == "" && $i > 0) sec = $i / 1e9
      else if ($(i+1) == "GFLOP/s") gf = $i
    }
    printf "%s\t%s\t%s\t%s\n", round, tag, sec, gf
  }' "$3"
}

# build_go NAME ENV...: compile the package's test binary once per build.
builds=()
build_go() { # build_go NAME ENV... [-- GOFLAGS...]
  local name="$1"; shift
  local envs=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done; [ $# -gt 0 ] && shift
  echo "== build $name: env ${envs[*]} GOEXPERIMENT=simd go test -c $* $PKG"
  if env "${envs[@]}" go test -c "$@" -o "$tmp/$name.test" "$PKG" >"$tmp/$name.build.log" 2>&1; then
    builds+=("$name")
  else
    cat "$tmp/$name.build.log"; echo "bench-trace: build $name failed"; status=1
  fi
}

run_go() { # run_go ROUND NAME
  local log="$tmp/$2.$1.log"
  if "$tmp/$2.test" -test.run '^$' -test.bench "^$BENCH\$" -test.benchtime "$BENCHTIME" >"$log" 2>&1 &&
     grep -q '^Benchmark' "$log"; then
    parse_go "$1" "$2" "$log" >>"$rows"
    [ -s "$tmp/$2.blas" ] || sed -n 's/.*BLAS: //p' "$log" | head -n 1 >"$tmp/$2.blas"
    printf '  %-12s %s\n' "$2" "$(grep '^Benchmark' "$log")"
  else
    tail -n 30 "$log"; echo "bench-trace: Go benchmark $2 failed"; status=1
  fi
}

if [ "$gobench" = 1 ]; then
  if ! grep -qs "^func $BENCH(" "$PKG"*_test.go; then
    echo "bench-trace: $BENCH is not in $PKG; running the NumPy half only" >&2
    status=1
  else
    if [ "$openblas" = 1 ]; then
      if ! { [ -e /usr/include/x86_64-linux-gnu/openblas_config.h ] || dpkg -s libopenblas-dev >/dev/null 2>&1; }; then
        apt_install libopenblas-dev || echo "bench-trace: libopenblas-dev missing (make setup)" >&2
      fi
      command -v cc >/dev/null 2>&1 || apt_install gcc libc6-dev || echo "bench-trace: no C compiler for cgo" >&2
    fi
    build_go go-default CGO_ENABLED=1
    build_go go-nocgo CGO_ENABLED=0
    [ "$openblas" = 1 ] && build_go go-openblas CGO_ENABLED=1 -- -tags openblas
  fi
fi

if ! "$PY" -c 'import numpy' >/dev/null 2>&1; then
  apt_install python3-numpy || echo "bench-trace: python3-numpy missing for $PY" >&2
fi
numpy=1
"$PY" -c 'import numpy' >/dev/null 2>&1 || { numpy=0; status=1; }

for ((r = 1; r <= ROUNDS; r++)); do
  echo "== round $r/$ROUNDS (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  for b in "${builds[@]}"; do run_go "$r" "$b"; done
  if [ "$numpy" = 1 ]; then
    if "$PY" "$here/bench_trace_numpy.py" --sigma "$SIGMA" >"$tmp/numpy.$r.log" 2>&1; then
      [ "$r" = 1 ] && grep -v '^RESULT ' "$tmp/numpy.$r.log" | sed 's/^/  /'
      awk -v round="$r" '/^RESULT /{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                     printf "%s\t%s\t%s\t%s\n", round, v["name"], v["seconds"], v["gflops"] }' \
        "$tmp/numpy.$r.log" >>"$rows"
      awk -F'\t' -v round="$r" '$1 == round && $2 ~ /^numpy/ { printf "  %-12s %s s/call, %s GFLOP/s\n", $2, $3, $4 }' "$rows"
    else
      cat "$tmp/numpy.$r.log"; echo "bench-trace: NumPy benchmark failed"; status=1
    fi
  fi
done

echo
echo "Exact Fisher trace, Dirac mixture N=60000 d=784 B=256 (4·B·N·d = 48.2 GFLOP per call)"
echo "machine: ${cpu:-unknown CPU}, nproc $(nproc), load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "medians over $ROUNDS interleaved rounds (Go: mean of $BENCHTIME per round; NumPy: best of 3 per round)"
for b in "${builds[@]}"; do
  [ -s "$tmp/$b.blas" ] && printf '  %-12s BLAS: %s\n' "$b" "$(cat "$tmp/$b.blas")"
done
awk -F'\t' '
  function median(list,    a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j+1] = a[j]; a[j+1] = t }
    return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
  }
  $3 != "" {
    if (!($2 in secs)) order[++k] = $2
    secs[$2] = secs[$2] " " $3; cnt[$2]++
    if ($4 != "") gfs[$2] = gfs[$2] " " $4
  }
  END {
    for (i = 1; i <= k; i++) { nm = order[i]; ms[nm] = median(secs[nm]); mg[nm] = (nm in gfs) ? median(gfs[nm]) : 48.17 / ms[nm]
      if (nm ~ /^numpy/ && (best == "" || ms[nm] < ms[best])) best = nm }
    printf "%-16s %6s %10s %9s %15s %16s\n", "implementation", "rounds", "s/call", "GFLOP/s", "speed vs NumPy", "time vs NumPy"
    for (i = 1; i <= k; i++) { nm = order[i]
      printf "%-16s %6d %10.3f %9.1f %15s %16s\n", nm, cnt[nm], ms[nm], mg[nm],
        (best == "" ? "-" : sprintf("%.2fx", ms[best] / ms[nm])), (best == "" ? "-" : sprintf("%.2fx", ms[nm] / ms[best])) }
    if (best != "") printf "NumPy reference: %s (median %.3f s). speed vs NumPy > 1: faster than NumPy.\n", best, ms[best]
  }' "$rows"
exit $status
