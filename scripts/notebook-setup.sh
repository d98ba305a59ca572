#!/usr/bin/env bash
# notebook-setup.sh — the first cell of every notebook runs this (`!*…/scripts/notebook-setup.sh`)
# in GoNB's temporary module: it makes the cells build against this repository's dfx module
# (a go.work using it, plus the replace rule `%goworkfix` would add, so that goimports and gopls
# see it too) and pins GoNB's own module with `go get` (the Go proxy here refuses `@latest`).
# The resulting module versions are the ones the Dockerfile's warm-up builds into the image's
# caches, so the cells build there without network. It prints nothing unless something fails.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
gonb="$(sed -n 's/^\s*github.com\/janpfeifer\/gonb \(v[^ ]*\).*/\1/p' "$root/go.mod")"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! { rm -f go.work && go work init && go work use . "$root" &&
       go get "github.com/janpfeifer/gonb@${gonb:-v0.11.5}" &&
       go mod edit -replace="github.com/dfx-lab/dfx=$root"; } >"$log" 2>&1; then
  echo "notebook set-up failed in $PWD:" >&2
  cat "$log" >&2
  exit 1
fi
