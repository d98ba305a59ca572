#!/usr/bin/env bash
# profile.sh — CPU profiles of the project's networks on the Go backend, for
# figures/bench/PROFILE.md: for each BenchmarkScoreNet network (models/bench_test.go)
# the forward pass, grad-x and grad-all at batch 1 and at the training batch, and
# the train step; one `go test -bench <case> -cpuprofile` run per case, then
# `go tool pprof -top` (flat, by backend function) written to
# figures/bench/profiles/<case>.txt, and a summary of where the time goes by group
# (SIMD matrix kernels, scalar element-wise ops, transposes, math.*, the host
# optimiser, the rest) to figures/bench/profiles/SUMMARY.txt.
#
# Usage: scripts/profile.sh [REGEX]   (default: every case; REGEX filters the case names)
# Environment: BENCHTIME (default 2s: the set-up — variable initialisation, one training
# step, compilation — stays in each profile, and 2 s of calls make it a small share).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
. "$here/lib.sh"
go_env
filter="${1:-.}"
out="figures/bench/profiles"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/models.test" ./models/
# The case names, as the benchmark builds them (models/bench_test.go, scoreNetCaseNames).
cases=$("$tmp/models.test" -test.run 'TestScoreNetCaseNamesAreUnique' -test.v 2>/dev/null |
  awk '$2 == "case" { print $3 }' |
  grep -E '/B=1/|/train-step$|/B=(128|256|1024)/' | grep -E -- "$filter" || true)
[ -n "$cases" ] || { echo "profile: no case matches $filter" >&2; exit 2; }
mkdir -p "$tmp/profiles"
summary="$tmp/profiles/SUMMARY.txt"
{
  echo "profile.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (modified)')"
  echo "machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), nproc $(nproc); $(go version); GOEXPERIMENT=$GOEXPERIMENT"
  echo "load: $(uptime | sed 's/.*load average/load average/')"
  echo
  echo "Share of each case's CPU samples (set-up included): matmul = the SIMD matrix kernels"
  echo "(packing included), eltwise = the backend's scalar element-wise ops (Add, Mul, Where,"
  echo "reductions, broadcasts), transp = Transpose ops, silu = Logistic and math.Exp (the SiLU's"
  echo "sigmoid), init = variable initialisation (RNG, Box-Muller cos/log: set-up only),"
  echo "hostopt = the host optimiser (models.adamFused32, sumSquares32), other = the rest"
  echo "(scheduling, allocation, copies, the Go runtime)."
  echo
  printf "%-50s %9s %7s %7s %7s %7s %7s %7s %7s\n" "case" "ms/op" "matmul" "eltwise" "transp" "silu" "init" "hostopt" "other"
} >"$summary"
for c in $cases; do
  bt="${BENCHTIME:-2s}"
  name="${c#BenchmarkScoreNet/}"; file="$(echo "$name" | tr '/=' '__')"
  pat=$(echo "$c" | sed 's|[^/]*|^&$|g') # go test matches each /-level separately: anchor each
  "$tmp/models.test" -test.run '^$' -test.bench "$pat" -test.benchtime "$bt" \
    -test.cpuprofile "$tmp/$file.prof" >"$tmp/$file.bench" 2>&1 || { cat "$tmp/$file.bench"; exit 1; }
  ms=$(awk '/^Benchmark/{ printf "%.3f", $3 / 1e6 }' "$tmp/$file.bench")
  {
    echo "case $name: $ms ms/op ($bt; the profile includes set-up and compilation)"
    go tool pprof -top -nodecount 25 "$tmp/models.test" "$tmp/$file.prof" 2>/dev/null | sed -n '4,40p'
  } >"$tmp/profiles/$file.txt"
  # Flat time by group, in percent of the total; the host optimiser by focus (its
  # AVX-512 helpers are inlined as archsimd frames, which the flat groups cannot tell
  # from the matrix kernels').
  host=$(go tool pprof -top -focus 'models\.(adamFused32|adamAVX512|sumSquares32)' "$tmp/models.test" "$tmp/$file.prof" 2>/dev/null |
    sed -n 's/.*accounting for [^,]*, \([0-9.]*\)% of.*/\1/p' | head -n 1)
  go tool pprof -top -nodecount 400 "$tmp/models.test" "$tmp/$file.prof" 2>/dev/null | awk -v name="$name" -v ms="$ms" -v host="${host:-0}" '
    /^ *[0-9.]+[mµ]?s / {
      v = $1; u = v; sub(/[a-zµ]+$/, "", v); if (u ~ /ms$/) v /= 1000; else if (u ~ /µs$/) v /= 1e6; total += v
      f = $6
      if (f ~ /dfx\/models\.(adam|sumSquares)/) { g = "hostflat" }
      else if (f ~ /dot\/matmul|dot\.exec|archsimd/) g = "matmul"
      else if (f ~ /execTranspose|TransposeIterator/) g = "transp"
      else if (f ~ /execLogistic|^math\.(Exp|archExp|exp)/) g = "silu"
      else if (f ~ /^math\.(cos|sin|archLog|log|Log|Sqrt|sqrt)|execRNGBitGenerator|rand\/v2|execCos|execSin|execLog/) g = "init"
      else if (f ~ /gobackend\/ops\.exec|IterFlatIndices|ReduceOutputIterator|BroadcastIterator/) g = "eltwise"
      else g = "other"
      s[g] += v
    }
    END { if (total == 0) total = 1
      # host = the focus share (cumulative); its own flat frames are in "hostflat", its
      # inlined archsimd frames in "matmul": take only the latter out of matmul.
      h = host + 0; hf = 100*s["hostflat"]/total; m = 100*s["matmul"]/total - (h - hf); if (m < 0) m = 0
      printf "%-50s %9s %6.0f%% %6.0f%% %6.0f%% %6.0f%% %6.0f%% %6.0f%% %6.0f%%\n", name, ms, m, 100*s["eltwise"]/total, 100*s["transp"]/total, 100*s["silu"]/total, 100*s["init"]/total, h, 100*s["other"]/total }' >>"$summary"
  echo "profile: $name $ms ms/op" >&2
done
mkdir -p "$(dirname "$out")"
rm -rf "$out.new" && mv "$tmp/profiles" "$out.new" && rm -rf "$out" && mv "$out.new" "$out"
cat "$out/SUMMARY.txt"
