#!/usr/bin/env bash
# bench-before-after.sh — the substrate issue's before/after measurement: the same
# benchmark source (models/bench_test.go and torchcompare_test.go of HEAD) compiled
# against the models package of two commits, run interleaved (before, after,
# before, … in ROUNDS rounds) on the Go backend, medians printed with the ratio.
#
# Usage: scripts/bench-before-after.sh BEFORE_COMMIT [AFTER_COMMIT (default HEAD)] [REGEX]
# Environment: ROUNDS (3), BENCHTIME (5x).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
. scripts/lib.sh
go_env
before="${1:?usage: bench-before-after.sh BEFORE [AFTER] [REGEX]}"
after="${2:-HEAD}"
# go test matches a -bench pattern level by level (split at /): the network is one level.
regex="${3:-BenchmarkScoreNet/./^B=(1|128|256|1024)\$/^(forward|grad-all|train-step)\$}"
ROUNDS="${ROUNDS:-3}"; BENCHTIME="${BENCHTIME:-5x}"
tmp="$(mktemp -d)"; trap 'git worktree remove --force "$tmp/b" >/dev/null 2>&1; git worktree remove --force "$tmp/a" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
for side in b a; do
  commit="$before"; [ "$side" = a ] && commit="$after"
  git worktree add --detach "$tmp/$side" "$commit" >/dev/null 2>&1 ||
    { echo "bench-before-after: cannot check out $commit" >&2; exit 2; }
  cp models/bench_test.go models/torchcompare_test.go "$tmp/$side/models/"
  (cd "$tmp/$side" && go test -c -o "$tmp/$side.test" ./models/)
done
echo "bench-before-after: $(date -u '+%Y-%m-%d %H:%M UTC'); before $(git rev-parse --short "$before"), after $(git rev-parse --short "$after"); benchmark source of $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- models/bench_test.go models/torchcompare_test.go || echo ' (modified)')"
echo "machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), nproc $(nproc); $(go version); GOEXPERIMENT=$GOEXPERIMENT; $ROUNDS rounds of -benchtime $BENCHTIME"
rows="$tmp/rows"; : >"$rows"
for ((r = 1; r <= ROUNDS; r++)); do
  order="b a"; ((r % 2)) || order="a b"
  for side in $order; do
    (cd "$root/models" && "$tmp/$side.test" -test.run '^$' -test.bench "$regex" -test.benchtime "$BENCHTIME") 2>&1 |
      awk -v s="$side" '/^Benchmark/{ n = $1; sub(/-[0-9]+$/, "", n); sub(/^Benchmark/, "", n); printf "%s\t%s\t%.4f\n", s, n, $3 / 1e6 }' >>"$rows"
  done
  echo "round $r done, $(uptime | sed 's/.*load average/load average/')"
done
awk -F'\t' '
  function median(k,    n, i, j, a, t) { n = cnt[k]; for (i = 1; i <= n; i++) a[i] = v[k, i]
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
    return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
  { k = $1 SUBSEP $2; cnt[k]++; v[k, cnt[k]] = $3; if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } }
  END { printf "%-56s %12s %12s %8s\n", "case (median ms per call)", "before", "after", "speed-up"
    for (i = 1; i <= n; i++) { c = order[i]; b = median("b" SUBSEP c); a = median("a" SUBSEP c)
      printf "%-56s %12.3f %12.3f %7.2fx\n", c, b, a, (a > 0 ? b / a : 0) } }' "$rows"
