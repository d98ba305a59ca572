#!/usr/bin/python3
"""bench_trace_numpy.py — NumPy (float64, OpenBLAS) reference timing for the exact
Fisher trace of a Dirac mixture, the kernel of dfx/mixture at MNIST scale.

For data y_n (N×d, weights π_n) and queries x_b (B×d) at noise level (α, σ):
  L_bn  = log π_n − ‖x_b − α y_n‖² / (2σ²),  with ‖x−αy‖² = ‖x‖² − 2α x·y + α²‖y‖²
  w_bn  = softmax_n(L_bn)
  ȳ_b   = Σ_n w_bn y_n,   m2_b = Σ_n w_bn ‖y_n‖²
  tr F  = d/σ² − α²/σ⁴ (m2_b − ‖ȳ_b‖²)
Two matrix products of B·N·d multiply-adds each: 4·B·N·d flops in all.
Variants: "onego" (all N at once) and "chunked" (N in blocks with a running
log-sum-exp, as the Go version does). Prints the best of --repeats runs.
Run with Debian's interpreter: /usr/bin/python3 (python3-numpy).
Machine-readable lines start with "RESULT ".
"""
import argparse
import os
import sys
import time

import numpy as np


def trace_onego(X, Y, y2, logpi, alpha, sigma):
    d = X.shape[1]
    x2 = np.einsum("bd,bd->b", X, X)
    G = X @ Y.T                                                  # B×N, 2BNd flops
    L = logpi[None, :] - (x2[:, None] - 2 * alpha * G + alpha * alpha * y2[None, :]) / (2 * sigma * sigma)
    L -= L.max(axis=1, keepdims=True)
    np.exp(L, out=L)
    L /= L.sum(axis=1, keepdims=True)                            # weights W
    ybar = L @ Y                                                 # B×d, 2BNd flops
    m2 = L @ y2
    return d / sigma**2 - alpha**2 / sigma**4 * (m2 - np.einsum("bd,bd->b", ybar, ybar))


def trace_chunked(X, Y, y2, logpi, alpha, sigma, chunk):
    B, d = X.shape
    x2 = np.einsum("bd,bd->b", X, X)
    run_max = np.full(B, -np.inf)
    run_sum = np.zeros(B)
    acc_y = np.zeros((B, d))
    acc_m2 = np.zeros(B)
    for s in range(0, Y.shape[0], chunk):
        Yc, y2c = Y[s:s + chunk], y2[s:s + chunk]
        L = logpi[None, s:s + chunk] - (x2[:, None] - 2 * alpha * (X @ Yc.T) + alpha * alpha * y2c[None, :]) / (2 * sigma * sigma)
        new_max = np.maximum(run_max, L.max(axis=1))
        scale = np.exp(run_max - new_max)                        # rescale what was summed so far
        L -= new_max[:, None]
        np.exp(L, out=L)
        run_sum = run_sum * scale + L.sum(axis=1)
        acc_y = acc_y * scale[:, None] + L @ Yc
        acc_m2 = acc_m2 * scale + L @ y2c
        run_max = new_max
    ybar = acc_y / run_sum[:, None]
    m2 = acc_m2 / run_sum
    return d / sigma**2 - alpha**2 / sigma**4 * (m2 - np.einsum("bd,bd->b", ybar, ybar))


def best_of(fn, repeats):
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def blas_name():
    try:
        cfg = np.show_config(mode="dicts")  # NumPy >= 1.25
        return cfg["Build Dependencies"]["blas"]["name"]
    except Exception:
        pass
    # Debian's numpy links libblas.so.3, an alternative (OpenBLAS when installed).
    lib = "/usr/lib/x86_64-linux-gnu/libblas.so.3"
    return os.path.realpath(lib) if os.path.exists(lib) else "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=60000, help="data points N")
    ap.add_argument("--d", type=int, default=784, help="dimension d")
    ap.add_argument("--b", type=int, default=256, help="queries B")
    ap.add_argument("--sigma", type=float, default=0.5, help="noise level σ (VE-like)")
    ap.add_argument("--alpha", type=float, default=1.0, help="signal scale α (1 for VE)")
    ap.add_argument("--chunk", type=int, default=4096, help="rows of data per block in the chunked variant (0: skip it)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-onego", action="store_true", help="only the chunked variant")
    a = ap.parse_args()
    if min(a.n, a.d, a.b, a.repeats) < 1 or not a.sigma > 0:
        ap.error("need N, d, B, repeats >= 1 and sigma > 0")

    rng = np.random.default_rng(a.seed)
    Y = rng.random((a.n, a.d))                                   # data in [0, 1), like pixels
    logpi = np.full(a.n, -np.log(a.n))
    pick = rng.integers(0, a.n, a.b)
    X = a.alpha * Y[pick] + a.sigma * rng.standard_normal((a.b, a.d))  # queries near the data
    y2 = np.einsum("nd,nd->n", Y, Y)
    flops = 4.0 * a.b * a.n * a.d

    print("numpy %s (BLAS: %s), OPENBLAS_NUM_THREADS=%s, cpus=%d" % (
        np.__version__, blas_name(), os.environ.get("OPENBLAS_NUM_THREADS", "unset"), os.cpu_count()))
    print("N=%d d=%d B=%d sigma=%g alpha=%g chunk=%d repeats=%d, %.1f GFLOP per call" % (
        a.n, a.d, a.b, a.sigma, a.alpha, a.chunk, a.repeats, flops / 1e9))
    results = {}
    if not a.skip_onego:
        t, tr1 = best_of(lambda: trace_onego(X, Y, y2, logpi, a.alpha, a.sigma), a.repeats)
        results["onego"] = (t, tr1)
    if a.chunk > 0:
        t, tr2 = best_of(lambda: trace_chunked(X, Y, y2, logpi, a.alpha, a.sigma, a.chunk), a.repeats)
        results["chunked"] = (t, tr2)
    if not results:
        ap.error("nothing to run")
    traces = [r[1] for r in results.values()]
    for name, (t, tr) in results.items():
        print("RESULT name=numpy-%s seconds=%.6f gflops=%.2f trace_mean=%.6g" % (name, t, flops / t / 1e9, tr.mean()))
    if len(traces) == 2:
        rel = np.max(np.abs(traces[0] - traces[1]) / np.maximum(np.abs(traces[0]), 1e-300))
        print("onego vs chunked: max relative difference of the traces %.2e" % rel)
        if not rel < 1e-8:
            print("bench_trace_numpy: the two variants disagree", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
