#!/usr/bin/env bash
# The probe noise of a PF-ODE likelihood measured with a Hutchinson-type trace
# (the measurement of `dfx reproduce mnist-density`): the same N unconditional
# samples of the committed networks, dopri5 at rtol 1e-3 from t_min, once per
# probe seed, for each trace; prints each sample's NLL per seed and its standard
# deviation over the seeds (nats and bits per dimension).
#
#   scripts/probe-noise.sh [N=4] [seeds="11 12 13"] [traces="skip-hutchinson:4 hutchinson:16"]
#
# Hours on the 2-core VM (each solve is ~800 evaluations of 4·K VJPs); the
# intermediate files go to ${DFX_PROBE_DIR:-/tmp/dfx-probe-noise}.
set -euo pipefail
n=${1:-4}
seeds=${2:-11 12 13}
traces=${3:-skip-hutchinson:4 hutchinson:16}
root=$(cd "$(dirname "$0")/.." && pwd)
export GOEXPERIMENT=simd
dir=${DFX_PROBE_DIR:-/tmp/dfx-probe-noise}
mkdir -p "$dir"
dfx="$dir/dfx"
(cd "$root" && go build -o "$dfx" ./cmd/dfx)
"$dfx" sample -class 0 -scale 0 -n "$n" -npy "$dir/samples.npy" >/dev/null
for tr in $traces; do
  for s in $seeds; do
    out="$dir/nll-${tr/:/-}-$s.json"
    [ -s "$out" ] || "$dfx" nll --checkpoint "$root/mnist/checkpoints/eps.dfxckpt" --trace "$tr" \
      --points "$dir/samples.npy" --rtol 1e-3 --solver-error=false --seed "$s" -json >"$out.tmp" 2>/dev/null
    [ -s "$out" ] || mv "$out.tmp" "$out"
  done
  echo "$tr: NLL [nats] per sample (rows) and seed (columns), then the standard deviation over seeds"
  for s in $seeds; do
    grep -o '"nll":[-0-9.eE+]*' "$dir/nll-${tr/:/-}-$s.json" | cut -d: -f2 | paste -sd' '
  done | awk -v d=784 '
    { for (i = 1; i <= NF; i++) { v[NR, i] = $i }; if (NF > m) m = NF; r = NR }
    END {
      for (i = 1; i <= m; i++) {
        s = 0; for (j = 1; j <= r; j++) s += v[j, i]; mean = s / r
        q = 0; for (j = 1; j <= r; j++) q += (v[j, i] - mean)^2
        sd = (r > 1) ? sqrt(q / (r - 1)) : 0
        line = sprintf("  sample %d:", i - 1)
        for (j = 1; j <= r; j++) line = line sprintf(" %9.1f", v[j, i])
        printf "%s   sd %6.1f nats = %.3f bpd\n", line, sd, sd / (d * log(2))
      }
    }'
done
