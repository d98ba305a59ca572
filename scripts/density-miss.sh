#!/usr/bin/env bash
# Why density-guided MNIST samples miss their quantile level when every
# Hutchinson-type trace tracks them onto it (figures/mnist-density/NOTES.md):
# TestDensityMissDiagnosis on the committed networks, 4 samples guided to the
# median level with skip-hutchinson:4. It compares the measurement at dopri5
# rtol 1e-3 and 1e-4, RK4 with 100 and 400 steps, the guide's premise
# c = ∂_h log p(x + h s/‖s‖²) = 1 by central differences (checked on the exact
# skip mixture), the same c_t along the guided path at t ≈ 0.3 … 0.003 (along),
# and guidance stopped at t = 0.002, 0.005, 0.02.
#
#   scripts/density-miss.sh [work folder of mnist-density, or none] [subtest: steps|premise|along|until]
#
# The levels are read from the work folder (DFX_MNIST_DENSITY_WORK of the full
# run) or, with none, computed (64 reference samples, ~10 min more). About 25
# minutes on the 2-core VM without along; DFX_DENSITY_MISS_N sets the number of
# samples (along with all 16 of the run: about 25 minutes alone,
# figures/diagnostics/density-miss-along.log).
set -euo pipefail
work=${1:-none}
sub=${2:-}
case "$sub" in
  ""|steps|premise|along|until) ;;
  *) echo "density-miss.sh: subtest $sub: want steps, premise, along or until" >&2; exit 2 ;;
esac
if [ "$work" != none ] && [ ! -d "$work" ]; then
  echo "density-miss.sh: work folder $work does not exist (give the mnist-density work folder, or none)" >&2; exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
export GOEXPERIMENT=simd
cd "$root"
DFX_DENSITY_MISS="$work" go test ./studies/density -run "TestDensityMissDiagnosis${sub:+/$sub}" -v -count=1 -timeout 3h
