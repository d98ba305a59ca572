#!/usr/bin/env bash
# bench-torch-unet.sh — the MNIST U-Net of scripts/mnist-unet.py as dfx imported it
# (examples/mnist-unet/unet.dfxckpt) on dfx's Go backend against the same network in
# PyTorch (scripts/bench_torch_unet.py: mnist-unet.py's UNet with the same EMA weights,
# examples/mnist-unet/unet.pt, float32), interleaved:
#   Go:    go test -run '^$' -bench '^BenchmarkMNISTUNet$' ./models/onnximport/
#          (forward ε_θ and the Fisher VJP (1/σ)∂⟨ε_θ, v⟩/∂x, access.VJPMatVec, at batch 1
#          and 64; the exact Fisher trace of one image by 784 VJP rows in calls of
#          access.PromptRows = 28 rows, access.VJPTrace), every row at t = 0.5
#   Torch: /usr/bin/python3 scripts/bench_torch_unet.py --bench FIXTURE on the Go
#          benchmark's own rows, for each thread count of TORCH_UNET: the same cases, the
#          trace also in calls of each TRACE_ROWS rows (16: about PyTorch's fastest; 196)
# First the twin is checked: TestMNISTUNetTwinFixture writes the Go network's ε̂ and VJP on
# 3 rows at t = 0.02, 0.5, 0.95, the benchmark's rows and the exact trace of its first
# (DFX_UNET_TWIN_FIXTURE); the twin must agree to 1e-4 relative, or the script exits 1
# before timing anything. Then ROUNDS rounds, Go and PyTorch alternating (odd rounds Go
# first), each PyTorch run beside bench_torch_eps.py --machine (1024³ product rates, copy
# bandwidth). The table: Go ms, PyTorch ms and Go/PyTorch per case (medians over the
# rounds), the same in process CPU time per call (steadier on a shared machine), and each
# case's dense arithmetic bound from the best f32 product rate measured.
#
# Usage: scripts/bench-torch-unet.sh [--no-setup] [--check-only]   (make bench-torch-unet)
#   --no-setup    do not apt-get install python3-torch / python3-numpy / libopenblas0-pthread
#   --check-only  only the twin's check against Go
# Environment: ROUNDS (2), BENCHTIME (3x: go test -benchtime), TORCH_UNET ("1 2": PyTorch
#   thread counts; "2p": 2 threads with OMP_WAIT_POLICY=PASSIVE), TRACE_ROWS (16,196: rows a call of
#   PyTorch's other exact traces, comma-separated), TORCH_ARGS ("--warmup 2 --repeats 3": extra
#   bench_torch_unet.py flags). Output: stdout (make writes it to figures/bench/torch-unet.txt).
#   Quick re-run: ROUNDS=1 TORCH_UNET=1 BENCHTIME=1x.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"
cd "$here/.."
PY=/usr/bin/python3 setup=1 checkonly=0
: "${ROUNDS:=2}" "${BENCHTIME:=3x}" "${TORCH_UNET:=1 2}" "${TRACE_ROWS:=16,196}" "${TORCH_ARGS:=--warmup 2 --repeats 3}"
parse_opts bench-torch-unet 2,29 "--no-setup=setup=0 --check-only=checkonly=1" "$@"
go_env
need_torch bench-torch-unet "$PY" || exit 1

tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
rows="$tmp/rows"    # source<TAB>case<TAB>value: "go", "go-cpu", "pt-T", "cpu-pt-T" (ms) or "rate:"
fixture="$tmp/fixture.json"
: >"$rows"
status=0

torch_header bench-torch-unet "$PY"
echo "rounds $ROUNDS; Go -benchtime $BENCHTIME; PyTorch threads '$TORCH_UNET', trace also in $TRACE_ROWS-row calls, args '$TORCH_ARGS'"
load_line
echo "busiest processes:"; ps -eo pid,ni,pcpu,etime,comm --sort=-pcpu | sed -n '2,6p'

echo; echo "== the twin against Go (go test ./models/onnximport/ -run TestMNISTUNetTwinFixture; bench_torch_unet.py --check)"
if ! DFX_UNET_TWIN_FIXTURE="$fixture" go test -run '^TestMNISTUNetTwinFixture$' -count 1 ./models/onnximport/ >"$tmp/fx.log" 2>&1; then
  cat "$tmp/fx.log"; echo "bench-torch-unet: the Go fixture failed"; exit 1
fi
if ! "$PY" "$here/bench_torch_unet.py" --check "$fixture" --trace-rows "$TRACE_ROWS"; then
  echo "bench-torch-unet: the twin disagrees with Go: nothing timed"; exit 1
fi
load_line
[ "$checkonly" = 1 ] && exit 0

go_round() {
  # BenchmarkMNISTUNet/vjp/B=64-2  3  … ns/op  … cpu-ms/op → vjp/B=64
  go_bench bench-torch-unet ./models/onnximport/ '^BenchmarkMNISTUNet$' '/^BenchmarkMNISTUNet\// && NF >= 4 {
      name = $1; sub(/-[0-9]+$/, "", name); sub(/^BenchmarkMNISTUNet\//, "", name)
      for (i = 3; i < NF; i++) {
        if ($(i+1) == "ns/op") printf "go\t%s\t%.6f\n", name, $i / 1e6
        if ($(i+1) == "cpu-ms/op") printf "go-cpu\t%s\t%.6f\n", name, $i
      }
    }'
}

torch_round() {
  local t
  for t in $TORCH_UNET; do
    # shellcheck disable=SC2086
    torch_bench bench-torch-unet "pt-$t" "$t" "scripts/bench_torch_unet.py --bench FIXTURE --trace-rows $TRACE_ROWS $TORCH_ARGS" \
      "$here/bench_torch_unet.py" --bench "$fixture" --trace-rows "$TRACE_ROWS" $TORCH_ARGS
  done
}

interleave_rounds "$ROUNDS"

echo
echo "Go: the imported U-Net through access.Net (EpsAt; VJPMatVec.Apply; VJPTrace.Trace in 28-row calls), GOMAXPROCS=${GOMAXPROCS:-$(nproc)}," \
  "median over $ROUNDS rounds of -benchtime $BENCHTIME."
echo "PyTorch: the twin, 'PT T' = torch.set_num_threads(T), float32; median over $ROUNDS rounds of each round's median. Ratio > 1: Go is slower."
"$PY" "$here/bench_torch_unet.py" --table "$rows" || status=1
echo
load_line
exit $status
