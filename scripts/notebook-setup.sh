#!/usr/bin/env bash
# notebook-setup.sh — the first cell of every notebook runs this (`!*…/scripts/notebook-setup.sh`)
# in GoNB's temporary module: it makes the cells build against this repository's dfx module
# (a go.work using it, plus the replace rule `%goworkfix` would add, so that goimports and gopls
# see it too) and pins GoNB's own module, since the Go proxy here refuses `@latest`; the
# repository's go.sum comes along, so that the `go get` GoNB runs for a cell's imports verifies
# every module offline (the Docker image has no network: GOPROXY=off, no checksum database).
# It prints nothing unless something fails.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
gonb="$(sed -n 's/^\s*github.com\/janpfeifer\/gonb \(v[^ ]*\).*/\1/p' "$root/go.mod")"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! { rm -f go.work && go work init && go work use . "$root" && cp "$root/go.sum" go.sum &&
       go mod edit -require="github.com/janpfeifer/gonb@${gonb:-v0.11.5}" \
         -replace="github.com/dfx-lab/dfx=$root" \
         -require=github.com/dfx-lab/dfx@v0.0.0-00010101000000-000000000000; } >"$log" 2>&1; then
  echo "notebook set-up failed in $PWD:" >&2
  cat "$log" >&2
  exit 1
fi
