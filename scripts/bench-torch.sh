#!/usr/bin/env bash
# bench-torch.sh — dfx's GoMLX v0.28 networks (Go backend with GOEXPERIMENT=simd,
# models.TrainBackendConfig; GoMLX's VJPs with identity transposes elided, the host optimiser) against PyTorch 1.13 CPU (Debian's
# python3-torch, float32) on identical networks, interleaved in one run:
#   Go:    go test -run '^$' -bench 'BenchmarkMLP'      ./models/  (plain tanh MLP,
#                                                                   models/torchcompare_test.go)
#          go test -run '^$' -bench 'BenchmarkScoreNet' ./models/  (the residual-MLP networks:
#                 toy-scale configs and the MNIST ε-network and t_θ, models/bench_test.go)
#   Torch: /usr/bin/python3 scripts/bench_torch.py --threads T, for each T in TORCH_THREADS
# repeated ROUNDS times, Go and PyTorch alternating (odd rounds Go first, even rounds
# PyTorch first), so that a load that comes and goes hits both. Then a table: case,
# Go ms, PyTorch ms and the ratio Go/PyTorch per thread count (medians over the
# rounds); each framework's cost of a gradient / training step relative to its
# forward; and the goals (Go: grad-x ≤ 2× forward, train-step ≤ 3× forward at the
# training batch; Go/PyTorch ≤ 1.5× for every case, against the fastest PyTorch
# column). Cases: forward, grad-x (and grad-all for the score networks) at batch 1,
# 64 and the training batch; the train step at the training batch.
#
# A fair PyTorch needs a fast BLAS: Debian's python3-torch multiplies with whatever
# libblas.so.3 is installed (the reference BLAS: ≈ 6 GFLOP/s). The set-up installs
# libopenblas0-pthread, and the header prints PyTorch's measured f32 1024³ rate.
#
# Usage: scripts/bench-torch.sh [--no-setup] [--go-only] [--torch-only]
#   --no-setup  do not apt-get install python3-torch / python3-numpy / libopenblas0-pthread
# Environment: ROUNDS (3; COUNT is accepted as its old name), BENCHTIME_MLP (10x),
#   BENCHTIME_NET (5x) (go test -benchtime, one -count per round), TORCH_THREADS ("2 1":
#   thread counts; a trailing p runs that count with OMP_WAIT_POLICY=PASSIVE),
#   TORCH_ARGS ("--warmup 2 --repeats 3": extra bench_torch.py flags).
# Every go command runs with GOEXPERIMENT=simd exported and GOMLX_BACKEND unset.
#
# Caveat: PyTorch runs OpenMP worker threads that spin at barriers; when the 2 cores
# are shared with another busy process, 2 spinning threads can be many times slower
# than 1 thread. That is why 1 thread (and optionally "2p", passive waiting) is timed
# as well; check the load lines printed.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
PY=/usr/bin/python3
ROUNDS="${ROUNDS:-${COUNT:-3}}"
BENCHTIME_MLP="${BENCHTIME_MLP:-10x}"
BENCHTIME_NET="${BENCHTIME_NET:-5x}"
TORCH_THREADS="${TORCH_THREADS:-2 1}"
TORCH_ARGS="${TORCH_ARGS:---warmup 2 --repeats 3}"
setup=1 gobench=1 torchbench=1
. "$here/lib.sh"
parse_opts bench-torch 2,28 "--no-setup=setup=0 --go-only=torchbench=0 --torch-only=gobench=0" "$@"
go_env # GOEXPERIMENT=simd; GOMLX_BACKEND unset: the library's own backend config (models.TrainBackendConfig)
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
rows="$tmp/rows"   # source<TAB>case<TAB>ms, one line per measurement
: >"$rows"
status=0
load() { load_line; }
backend_opts="$(sed -n 's/^const goBackendOptions = "\(.*\)".*/\1/p' models/backendconfig.go)"

if [ "$torchbench" = 1 ]; then
  need_torch bench-torch "$PY" || exit 1
fi
torch_header bench-torch "$PY"
if [ "$torchbench" = 1 ]; then
  # PyTorch's BLAS, measured: without OpenBLAS every PyTorch number below is meaningless.
  "$PY" - <<'PYEOF' || status=1
import time, torch
torch.set_num_threads(1)
a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
a @ b
t = time.perf_counter(); [a @ b for _ in range(5)]; dt = (time.perf_counter() - t) / 5
rate = 2 * 1024 ** 3 / dt / 1e9
print("torch BLAS: f32 1024^3 product %.1f ms = %.0f GFLOP/s at 1 thread%s" % (dt * 1e3, rate, "" if rate > 40 else " -- TOO SLOW: no fast BLAS (install libopenblas0-pthread)"))
raise SystemExit(0 if rate > 40 else 1)
PYEOF
fi
echo "rounds $ROUNDS; Go -benchtime $BENCHTIME_MLP (MLP) / $BENCHTIME_NET (score net); PyTorch threads '$TORCH_THREADS', args '$TORCH_ARGS'"
load
echo "busiest processes:"; ps -eo pid,pcpu,etime,comm --sort=-pcpu | sed -n '2,6p'

# parse_go LOG: "go<TAB><case><TAB>ms" for each Benchmark line. The case is the
# benchmark name without "Benchmark" and the -GOMAXPROCS suffix; ScoreNetGradAll's
# cases join ScoreNet's.
parse_go() {
  awk -F'[ \t]+' '/^Benchmark/ && NF >= 4 {
    name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name); sub(/^ScoreNetGradAll\//, "ScoreNet/", name)
    for (i = 3; i < NF; i += 2) if ($(i+1) == "ns/op") printf "go\t%s\t%.6f\n", name, $i / 1e6
  }' "$1"
}

run_go() { # run_go BENCHTIME REGEX
  local log="$tmp/go.log"
  echo "== Go: go test -run '^\$' -bench '$2' -benchtime $1 -count 1 ./models/"
  if go test -run '^$' -bench "$2" -benchtime "$1" -count 1 ./models/ >"$log" 2>&1; then
    grep -E '^(Benchmark|cpu|dfx:)' "$log"
    parse_go "$log" >>"$rows"
    grep -q "^Benchmark" "$log" || { echo "bench-torch: no benchmark line in the Go output"; cat "$log"; status=1; }
  else
    tail -n 30 "$log"; echo "bench-torch: Go benchmark '$2' failed"; status=1
  fi
}

go_round() {
  if [ "$gobench" = 1 ]; then
    run_go "$BENCHTIME_MLP" 'BenchmarkMLP'
    run_go "$BENCHTIME_NET" 'BenchmarkScoreNet'
    load
  fi
}

torch_round() {
  [ "$torchbench" = 1 ] || return 0
  local t envs
  for t in $TORCH_THREADS; do
    envs=(); [ "${t%p}" != "$t" ] && envs=(OMP_WAIT_POLICY=PASSIVE)
    echo "== PyTorch: ${envs[*]-} $PY scripts/bench_torch.py --threads ${t%p} $TORCH_ARGS"
    # shellcheck disable=SC2086
    if env "${envs[@]}" "$PY" "$here/bench_torch.py" --threads "${t%p}" $TORCH_ARGS >"$tmp/torch.log" 2>&1; then
      grep -v '^RESULT ' "$tmp/torch.log"
      awk -v src="torch-$t" '/^RESULT /{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = substr($i, length(kv[1]) + 2) }
                       printf "%s\t%s\t%s\n", src, v["name"], v["ms"] }' "$tmp/torch.log" >>"$rows"
      grep '^RESULT ' "$tmp/torch.log" | sed 's/^RESULT //'
    else
      cat "$tmp/torch.log"; echo "bench-torch: PyTorch benchmark (threads $t) failed"; status=1
    fi
    load
  done
}

interleave_rounds "$ROUNDS"

echo
echo "Go: GoMLX v0.28.8 Go backend (go:$backend_opts), GOEXPERIMENT=$GOEXPERIMENT, GOMAXPROCS=${GOMAXPROCS:-$(nproc)}, $(nproc) cores, GoMLX's VJPs (identity transposes elided), the host optimiser for the score nets; median over $ROUNDS rounds (each the mean of $BENCHTIME_MLP MLP / $BENCHTIME_NET score-net calls)."
echo "PyTorch: $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo '?') CPU float32; median over $ROUNDS rounds of each round's median; 'PT T' = torch.set_num_threads(T), 'PT Tp' the same with OMP_WAIT_POLICY=PASSIVE. Ratio > 1: Go is slower."
awk -F'\t' -v threads="$TORCH_THREADS" '
  function median(src, c,    n, i, j, a, t) {
    n = cnt[src SUBSEP c]; if (n == 0) return ""
    for (i = 1; i <= n; i++) a[i] = val[src SUBSEP c SUBSEP i] + 0
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
    return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
  }
  function fmt(x) { return x == "" ? "-" : (x < 10 ? sprintf("%.3f", x) : (x < 100 ? sprintf("%.2f", x) : sprintf("%.1f", x))) }
  function ratio(a, b) { return (a == "" || b == "" || b + 0 <= 0) ? "-" : sprintf("%.2fx", a / b) }
  function bestpt(c,    i, p, b) { b = ""; for (i = 1; i <= nt; i++) { p = median("torch-" th[i], c); if (p != "" && (b == "" || p + 0 < b + 0)) b = p } return b }
  function goal(r, lim) { return r == "-" ? "-" : ((r + 0 <= lim) ? "ok" : "MISS") }
  { k = $1 SUBSEP $2; cnt[k]++; val[k SUBSEP cnt[k]] = $3; seenCase[$2] = 1
    g = $2; sub(/\/[^\/]*$/, "", g); m = $2; sub(/.*\//, "", m); has[g SUBSEP m] = 1
    if (!(g in seen)) { seen[g] = 1; group[++ngroup] = g } }
  END {
    nm = split("forward grad-x grad-all train-step", modes, " ")
    for (n = 1; n <= ngroup; n++) for (i = 1; i <= nm; i++) if ((group[n] SUBSEP modes[i]) in has) order[++ncase] = group[n] "/" modes[i]
    nt = split(threads, th, /[ \t]+/)
    line = sprintf("%-44s %10s", "case", "Go ms")
    for (i = 1; i <= nt; i++) line = line sprintf(" %10s %9s", "PT " th[i] " ms", "Go/PT " th[i])
    print line
    for (n = 1; n <= ncase; n++) {
      c = order[n]; g = median("go", c)
      line = sprintf("%-44s %10s", c, fmt(g))
      for (i = 1; i <= nt; i++) { p = median("torch-" th[i], c); line = line sprintf(" %10s %9s", fmt(p), ratio(g, p)) }
      print line
    }
    print ""
    print "Cost relative to the same framework'"'"'s forward pass (gradient or step / forward):"
    line = sprintf("%-44s %8s", "case", "Go")
    for (i = 1; i <= nt; i++) line = line sprintf(" %8s", "PT " th[i])
    print line
    for (n = 1; n <= ncase; n++) {
      c = order[n]; if (c ~ /\/forward$/) continue
      f = c; sub(/\/[^\/]*$/, "/forward", f)
      line = sprintf("%-44s %8s", c, ratio(median("go", c), median("go", f)))
      for (i = 1; i <= nt; i++) line = line sprintf(" %8s", ratio(median("torch-" th[i], c), median("torch-" th[i], f)))
      print line
    }
    print ""
    print "Goals (Go: grad-x <= 2x forward, train-step <= 3x forward; Go/PT <= 1.5x, PT = the fastest thread count):"
    printf "%-44s %14s %14s %14s %14s %14s\n", "config", "grad-x/fwd", "step/fwd", "fwd Go/PT", "grad-x Go/PT", "step Go/PT"
    for (n = 1; n <= ngroup; n++) {
      c = group[n]
      r1 = ratio(median("go", c "/grad-x"), median("go", c "/forward"))
      r2 = ((c "/train-step") in seenCase) ? ratio(median("go", c "/train-step"), median("go", c "/forward")) : "-"
      r3 = ratio(median("go", c "/forward"), bestpt(c "/forward"))
      r5 = ratio(median("go", c "/grad-x"), bestpt(c "/grad-x"))
      r4 = ratio(median("go", c "/train-step"), bestpt(c "/train-step"))
      printf "%-44s %9s %4s %9s %4s %9s %4s %9s %4s %9s %4s\n", c, r1, goal(r1, 2), r2, goal(r2, 3), r3, goal(r3, 1.5), r5, goal(r5, 1.5), r4, goal(r4, 1.5)
    }
  }' "$rows"
echo
load
exit $status
