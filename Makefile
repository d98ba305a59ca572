# dfx — common tasks. `make reproduce` regenerates figures/ and tables;
# `make test` sets up what it needs (Jupyter, GoNB, goimports, gopls, Chromium) and runs
# vet, the gofmt check, the notebooks (quick mode), the browser test of the
# committed notebooks (when Chromium is installed) and the Go tests.

SHELL := /bin/bash
GO    ?= go
GOFMT ?= gofmt
# GoMLX's Go backend has AVX2/AVX-512 kernels only with GOEXPERIMENT=simd
# (7-11x faster): every build, test and run here sets it.
export GOEXPERIMENT := simd
# Go may live in /usr/local/go; tools installed by `make setup` go to $(go env GOPATH)/bin.
export PATH := $(PATH):/usr/local/go/bin
GOPATH_BIN := $(shell PATH="$(PATH)" $(GO) env GOPATH 2>/dev/null)/bin
export PATH := $(GOPATH_BIN):$(PATH)
# Extra flags for scripts/run-notebooks.sh, e.g. NB_FLAGS="--full --inplace".
NB_FLAGS ?=

.NOTPARALLEL:
.PHONY: all build test setup setup-blas vet fmt-check docker-context-check gotest notebooks notebooks-exec browser-test browser-check reproduce bench bench-torch bench-torch-eps bench-torch-unet profile docker-test help

all: test

help:
	@echo "make build       bin/dfx, stamped with its commit (bin/dfx --version)"
	@echo "make reproduce   regenerate figures/ and tables (go run ./cmd/dfx reproduce all)"
	@echo "make test        set-up if needed, go vet, gofmt check, .dockerignore check, notebooks (DFX_QUICK=1), browser test, go test"
	@echo "make setup       install Jupyter, GoNB (kernel 'gonb'), goimports, gopls, Chromium, OpenBLAS, NumPy when missing"
	@echo "make setup-blas  install only libopenblas-dev and python3-numpy (for make bench, -tags openblas)"
	@echo "make notebooks   run notebooks/*.ipynb headless into a temporary folder (quick mode; NB_FLAGS=--full for full)"
	@echo "make notebooks-exec  regenerate the committed notebooks with their outputs (full profiles, in place)"
	@echo "make browser-test    open the committed notebooks in headless Chromium under Jupyter, check figures and errors,"
	@echo "                 write figures/notebooks/*.png (make test runs it into a temporary folder)"
	@echo "make bench       exact-trace benchmark: Go (default, CGO_ENABLED=0, -tags openblas) vs NumPy"
	@echo "make bench-torch the project's networks vs identical PyTorch twins, interleaved (installs PyTorch + OpenBLAS);"
	@echo "                 output to figures/bench/torch-cpu.txt; then bench-torch-eps and bench-torch-unet"
	@echo "make bench-torch-eps the committed MNIST ε-network vs its PyTorch twin (checked against Go first),"
	@echo "                 forward/skip/VJP at batch 1 and 64, with each case's arithmetic/memory lower bound;"
	@echo "                 output to figures/bench/torch-eps.txt (quick: ROUNDS=1 TORCH_EPS=\"1/f64 1/f32\")"
	@echo "make bench-torch-unet the imported MNIST U-Net (examples/mnist-unet) vs the same network in PyTorch"
	@echo "                 (checked against Go first): forward and VJP at batch 1 and 64, one image's exact VJP trace;"
	@echo "                 output to figures/bench/torch-unet.txt (quick: ROUNDS=1 TORCH_UNET=1 BENCHTIME=1x)"
	@echo "make profile     CPU profiles of every BenchmarkScoreNet case into figures/bench/profiles/ (pprof tops)"
	@echo "make docker-test build the Dockerfile (buildah, stand-in base) and run every notebook inside the image (root)"

# The Go tests run last so that their summary closes the output.
test: setup vet fmt-check docker-context-check notebooks browser-check gotest

setup:
	@scripts/setup.sh

setup-blas:
	@scripts/setup.sh --blas

vet:
	CGO_ENABLED=0 $(GO) vet ./...

fmt-check:
	@out="$$($(GOFMT) -l .)"; if [ -n "$$out" ]; then \
	  echo "gofmt -l lists files that need formatting (run gofmt -w):"; echo "$$out"; exit 1; \
	else echo "gofmt -l .: clean"; fi

gotest:
	CGO_ENABLED=0 $(GO) test -timeout 30m ./...

# The committed notebooks and figures that .dockerignore would leave out of the
# image (make docker-test refuses such an image after a build of minutes; this
# says it in a second, with git's reading of the patterns).
docker-context-check:
	@if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then echo ".dockerignore check skipped: not a git checkout"; exit 0; fi; \
	out="$$(git ls-files -ci --exclude-from=.dockerignore -- notebooks figures)" || { echo ".dockerignore check: git ls-files failed"; exit 1; }; \
	if [ -n "$$out" ]; then \
	  echo ".dockerignore leaves committed files out of the image (add a ! exception):"; echo "$$out"; exit 1; \
	else echo ".dockerignore keeps every committed notebook and figure"; fi

notebooks:
	@scripts/run-notebooks.sh $(NB_FLAGS)

# The committed notebooks as a reader sees them: Jupyter + headless Chromium.
# browser-test refreshes the committed screenshots; browser-check (part of
# make test) writes them to a temporary folder, and is skipped without Chromium.
browser-test:
	@/usr/bin/python3 scripts/browser_test.py --out figures/notebooks

browser-check:
	@if command -v chromium >/dev/null 2>&1; then \
	  d="$${TMPDIR:-/tmp}/dfx-notebook-screenshots"; /usr/bin/python3 scripts/browser_test.py --out "$$d"; \
	else echo "browser test skipped: chromium is not installed (make setup installs it)"; fi

# The committed notebooks, executed with the full profiles and stored with
# their outputs (figures, tables, numbers): what a reader opens.
notebooks-exec:
	@scripts/run-notebooks.sh --exec

# bin/dfx, stamped with the commit it was built from (dfx --version).
build:
	$(GO) build -buildvcs=true -o bin/dfx ./cmd/dfx

reproduce:
	$(GO) run ./cmd/dfx reproduce all

bench:
	@scripts/bench-trace.sh

# Interleaved Go-vs-PyTorch benchmark of every network the experiments use; the
# committed output is figures/bench/torch-cpu.txt (written atomically). Then the
# committed MNIST ε-network (bench-torch-eps: torch-eps.txt) and the imported
# MNIST U-Net (bench-torch-unet: torch-unet.txt) against their PyTorch twins.
bench-torch:
	@set -o pipefail; scripts/bench-torch.sh | tee figures/bench/.torch-cpu.txt.tmp && \
	  mv figures/bench/.torch-cpu.txt.tmp figures/bench/torch-cpu.txt || \
	  { rm -f figures/bench/.torch-cpu.txt.tmp; exit 1; }
	@$(MAKE) --no-print-directory bench-torch-eps
	@$(MAKE) --no-print-directory bench-torch-unet

bench-torch-eps:
	@set -o pipefail; scripts/bench-torch-eps.sh | tee figures/bench/.torch-eps.txt.tmp && \
	  mv figures/bench/.torch-eps.txt.tmp figures/bench/torch-eps.txt || \
	  { rm -f figures/bench/.torch-eps.txt.tmp; exit 1; }

bench-torch-unet:
	@set -o pipefail; scripts/bench-torch-unet.sh | tee figures/bench/.torch-unet.txt.tmp && \
	  mv figures/bench/.torch-unet.txt.tmp figures/bench/torch-unet.txt || \
	  { rm -f figures/bench/.torch-unet.txt.tmp; exit 1; }

profile:
	@scripts/profile.sh

# Builds the Dockerfile with buildah (no daemon, no registry: a stand-in for its FROM image is
# built once and cached), runs every notebook (quick) inside the image, removes what it made.
docker-test:
	@scripts/docker-test.sh
