#!/usr/bin/env bash
# bench-torch-eps.sh — the committed MNIST ε-network (mnist/checkpoints/eps.dfxckpt:
# 400-component mixture skip + patch-network residual) through dfx's host contract
# against its PyTorch twin (scripts/bench_torch_eps.py: the same weights and
# function, the skip in float64 and in float32, the residual in float32), interleaved:
#   Go:    go test -run '^$' -bench '^BenchmarkEpsNetwork(VJP)?$' ./mnist/
#          (forward and skip alone: mnist/skipbench_test.go; the Fisher VJP
#          (1/σ)∂⟨ε̂, v⟩/∂x, access.VJPMatVec: mnist/epstwin_test.go), at batch 1 and 64,
#          every row at t = 0.5 (the shared-t path)
#   Torch: /usr/bin/python3 scripts/bench_torch_eps.py --bench FIXTURE, on the Go
#          benchmark's own rows, for each "threads/dtype" of TORCH_EPS (the skip's dtype)
# First the twin is checked: TestEpsTwinFixture writes the Go network's ε̂, ε_mix and
# VJP on 3 rows at t = 0.02, 0.5, 0.95 and the benchmark's rows (DFX_EPS_TWIN_FIXTURE),
# and the twin must agree to 1e-4 relative (exit 1 otherwise). Then ROUNDS rounds, Go
# and PyTorch alternating (odd rounds Go first), each PyTorch run beside a measurement
# of this machine's limits (bench_torch_eps.py --machine: 1024³ product rates in f32
# and f64, copy bandwidth). The table: Go ms, PyTorch ms and Go/PyTorch per case
# (medians over the rounds), the same in process CPU time per call (steadier on a
# shared machine), then each case's dense arithmetic and memory lower
# bounds from the best rates measured, and Go's and PyTorch's ratios to them.
#
# Usage: scripts/bench-torch-eps.sh [--no-setup] [--check-only]   (make bench-torch-eps)
#   --no-setup    do not apt-get install python3-torch / python3-numpy / libopenblas0-pthread
#   --check-only  only the twin's check against Go
# Environment: ROUNDS (2), BENCHTIME (5x: go test -benchtime), TORCH_EPS ("2/f64 1/f64
#   2/f32 1/f32": PyTorch thread counts / skip dtypes; "2p/f32": 2 threads with
#   OMP_WAIT_POLICY=PASSIVE, against the spinning of OpenMP threads on shared cores), TORCH_ARGS ("--warmup 2
#   --repeats 3": extra bench_torch_eps.py flags). Output: stdout (make writes it to
#   figures/bench/torch-eps.txt). Quick re-run: ROUNDS=1 TORCH_EPS="1/f64 1/f32".
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"
cd "$here/.."
PY=/usr/bin/python3 setup=1 checkonly=0
: "${ROUNDS:=2}" "${BENCHTIME:=5x}" "${TORCH_EPS:=2/f64 1/f64 2/f32 1/f32}" "${TORCH_ARGS:=--warmup 2 --repeats 3}"
parse_opts bench-torch-eps 2,29 "--no-setup=setup=0 --check-only=checkonly=1" "$@"
go_env
need_torch bench-torch-eps "$PY" || exit 1

tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
rows="$tmp/rows"    # source<TAB>case<TAB>value: "go", "pt-T/dtype" (ms) or "rate:" (machine rates)
fixture="$tmp/fixture.json"
: >"$rows"
status=0

torch_header bench-torch-eps "$PY"
echo "rounds $ROUNDS; Go -benchtime $BENCHTIME; PyTorch '$TORCH_EPS' (threads/skip dtype), args '$TORCH_ARGS'"
load_line
echo "busiest processes:"; ps -eo pid,pcpu,etime,comm --sort=-pcpu | sed -n '2,6p'

echo; echo "== the twin against Go (go test ./mnist/ -run TestEpsTwinFixture; bench_torch_eps.py --check)"
if ! DFX_EPS_TWIN_FIXTURE="$fixture" go test -run '^TestEpsTwinFixture$' -count 1 ./mnist/ >"$tmp/fx.log" 2>&1; then
  cat "$tmp/fx.log"; echo "bench-torch-eps: the Go fixture failed"; exit 1
fi
for dt in float64 float32; do
  echo "-- skip in $dt"
  "$PY" "$here/bench_torch_eps.py" --check "$fixture" --skip-dtype "$dt" || status=1
done
[ "$checkonly" = 1 ] && exit $status

go_round() {
  # BenchmarkEpsNetwork/forward/B=1-2 … ns/op → eps/B=1/forward
  go_bench bench-torch-eps ./mnist/ '^BenchmarkEpsNetwork(VJP)?$' '/^Benchmark/ && NF >= 4 {
      name = $1; sub(/-[0-9]+$/, "", name); n = split(name, p, "/")
      for (i = 3; i < NF; i += 2) if (n == 3 && ($(i+1) == "ns/op" || $(i+1) == "cpu-ns/op"))
        printf "%s\teps/%s/%s\t%.6f\n", ($(i+1) == "ns/op" ? "go" : "go-cpu"), p[3], p[2], $i / 1e6
    }'
}

torch_round() {
  local cfg dt
  for cfg in $TORCH_EPS; do
    dt="${cfg#*/}"
    # shellcheck disable=SC2086
    torch_bench bench-torch-eps "pt-$cfg" "${cfg%/*}" "scripts/bench_torch_eps.py --bench FIXTURE --skip-dtype float${dt#f} $TORCH_ARGS" \
      "$here/bench_torch_eps.py" --bench "$fixture" --skip-dtype "float${dt#f}" $TORCH_ARGS
  done
}

interleave_rounds "$ROUNDS"

echo
echo "Go: the committed ε-network through access.Net (EpsAt; VJPMatVec.Apply), GOMAXPROCS=${GOMAXPROCS:-$(nproc)}, median over $ROUNDS rounds of -benchtime $BENCHTIME."
echo "PyTorch: the twin, 'PT T/dtype' = torch.set_num_threads(T), the skip in that dtype (the residual in float32); median over $ROUNDS rounds of each round's median. Ratio > 1: Go is slower."
"$PY" "$here/bench_torch_eps.py" --table "$rows" || status=1
echo
load_line
exit $status
