#!/usr/bin/python3
"""bench_torch_unet.py — the MNIST U-Net of scripts/mnist-unet.py in PyTorch (Debian's python3-torch
1.13, CPU, float32), the twin of its dfx import (examples/mnist-unet/unet.dfxckpt), for
scripts/bench-torch-unet.sh: the script's own UNet class (imported from it, not copied) with the
EMA weights it exported beside the ONNX file (examples/mnist-unet/unet.pt), taking x [B, 1, 28, 28]
and 999·t [B] (the script's TIME_SCALE) and returning ε.

  forward  ε_θ(x, t) under torch.no_grad
  vjp      (1/σ) ∂⟨ε_θ(x), v⟩/∂x by torch.autograd.grad (access.VJPMatVec)
  trace    the exact Fisher trace of one image, (1/σ) Σᵢ eᵢᵀ (∂ε_θ/∂x) eᵢ, by 784 VJP rows: the
           image repeated R times a call, row i against the basis vector eᵢ (access.VJPTrace);
           R = the fixture's TraceRows (Go's calls) and each --trace-rows

Modes (run with /usr/bin/python3):
  --check FIXTURE   the twin's ε, VJP and trace against the Go values there (written by
                    DFX_UNET_TWIN_FIXTURE=FIXTURE go test ./models/onnximport -run
                    TestMNISTUNetTwinFixture), and its schedule (mnist-unet.py's vp) against
                    the fixture's α, σ; exit 1 beyond tolerance
  --bench FIXTURE   time the cases on the Go benchmark's own rows (the fixture's batch at
                    t = 0.5): forward/B=<1|64>, vjp/B=<1|64>, trace/rows=<R>; "RESULT name=… ms=…"
                    lines (bench_torch_eps.py's timing)
  --table ROWS      the table from bench-torch-unet.sh's rows file, with each case's dense
                    arithmetic from the network's products (counted on a forward pass)
The machine's rates come from bench_torch_eps.py --machine.
"""
import argparse
import importlib.util
import json
import os
import sys

import bench_torch_eps as common

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CASES = ("forward/B=1", "forward/B=64", "vjp/B=1", "vjp/B=64")


def fail(msg):
    print("bench_torch_unet: " + msg, file=sys.stderr)
    sys.exit(2)


def training_script():
    """scripts/mnist-unet.py as a module: its UNet, TIME_SCALE and vp."""
    spec = importlib.util.spec_from_file_location("mnist_unet", os.path.join(HERE, "mnist-unet.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class UNetTwin:
    """The exported EMA weights in mnist-unet.py's UNet, evaluated on flat rows [B, 784]."""

    def __init__(self, weights, time_scale=None):
        import torch
        self.torch, self.script = torch, training_script()
        state = torch.load(weights)
        self.net = self.script.UNet(ch=state["ch"])
        self.net.load_state_dict(state["ema"])
        self.net.eval()
        for p in self.net.parameters():
            p.requires_grad_(False)
        self.time_scale = self.script.TIME_SCALE if time_scale is None else time_scale

    def eps(self, x, t):
        """ε_θ(x, t) [B, 784] for float32 rows x [B, 784] at one time t."""
        b = x.shape[0]
        tt = self.time_scale * self.torch.full((b,), t, dtype=self.torch.float32)  # in float32, as in training
        return self.net(x.reshape(b, 1, 28, 28), tt).reshape(b, -1)

    def vjp(self, x, v, t, sigma):
        """(1/σ) ∂⟨ε_θ(x), v⟩/∂x [B, 784], row-wise."""
        x = x.detach().requires_grad_(True)
        return self.torch.autograd.grad((self.eps(x, t) * v).sum(), x)[0] / sigma

    def trace(self, x, t, sigma, rows):
        """The exact Fisher trace of one row x [1, d] by d VJP rows, rows a call."""
        torch = self.torch
        d = x.shape[1]
        total = 0.0
        for start in range(0, d, rows):
            n = min(rows, d - start)
            idx = torch.arange(n)
            basis = torch.zeros(n, d)
            basis[idx, start + idx] = 1
            jv = self.vjp(x.expand(n, d), basis, t, sigma)
            total += float(jv[idx, start + idx].double().sum())
        return total


def load_fixture(path):
    with open(path) as f:
        fx = json.load(f)
    d = fx["Dim"]
    if d != 784 or fx["TraceRows"] < 1:
        fail("%s: dimension %d, trace rows %d: want 784 and ≥ 1" % (path, d, fx["TraceRows"]))
    for c in [fx["Bench"]] + fx["Check"]:
        for k in ("X", "V", "Eps", "VJP"):
            if c.get(k) is not None and len(c[k]) != c["Rows"] * d:
                fail("%s: %s of %d values, want %d" % (path, k, len(c[k]), c["Rows"] * d))
    return fx


def rows_of(torch, c, key, dtype):
    return torch.tensor(c[key], dtype=dtype).reshape(c["Rows"], -1)


def check(twin, fx, tol, trace_rows):
    """Relative errors ‖twin − Go‖/‖Go‖ of ε and the VJP at each time, of the exact
    trace at the benchmark's first row (each row count), and of α, σ."""
    torch = twin.torch
    f32, f64 = torch.float32, torch.float64
    worst = 0.0
    for c in fx["Check"]:
        x, v = rows_of(torch, c, "X", f32), rows_of(torch, c, "V", f32)
        with torch.no_grad():
            eps = twin.eps(x, c["T"])
        jv = twin.vjp(x, v, c["T"], c["Sigma"])
        alpha, sigma = twin.script.vp(torch.tensor(c["T"], dtype=f64))
        errs = []
        for name, got, want in (("eps", eps.double(), rows_of(torch, c, "Eps", f64)), ("vjp", jv.double(), rows_of(torch, c, "VJP", f64)),
                                ("alpha", alpha, torch.tensor(c["Alpha"], dtype=f64)), ("sigma", sigma, torch.tensor(c["Sigma"], dtype=f64))):
            e = float((got - want).norm() / want.norm())
            errs.append("%s %.2e" % (name, e))
            worst = max(worst, e)
        print("check t=%g (%d rows, alpha %.4f, sigma %.4f): relative error vs Go: %s" % (
            c["T"], c["Rows"], c["Alpha"], c["Sigma"], ", ".join(errs)))
    b = fx["Bench"]
    x0 = rows_of(torch, b, "X", f32)[:1]
    for rows in sorted({fx["TraceRows"]} | set(trace_rows)):
        tr = twin.trace(x0, b["T"], b["Sigma"], rows)
        e = abs(tr - b["Trace"]) / abs(b["Trace"])
        worst = max(worst, e)
        print("check t=%g exact trace of row 1 by %d-row calls: %.6g, Go %.6g (%d-row calls): relative error %.2e" % (
            b["T"], rows, tr, b["Trace"], fx["TraceRows"], e))
    print("check: worst %.2e, tolerance %.0e: %s" % (worst, tol, "ok" if worst <= tol else "FAIL"))
    return worst <= tol


def bench(twin, fx, args):
    torch = twin.torch
    c = fx["Bench"]
    X, V = rows_of(torch, c, "X", torch.float32), rows_of(torch, c, "V", torch.float32)
    t, s = c["T"], c["Sigma"]
    calls = []
    for b in (1, c["Rows"]):
        x, v = X[:b].contiguous(), V[:b].contiguous()

        def forward(x=x):
            with torch.no_grad():
                twin.eps(x, t)

        calls += [("forward/B=%d" % b, forward, args.warmup), ("vjp/B=%d" % b, lambda x=x, v=v: twin.vjp(x, v, t, s), args.warmup)]
    for rows in [fx["TraceRows"]] + [r for r in args.trace_rows if r != fx["TraceRows"]]:
        # one warm-up call: a trace is hundreds of VJP calls already
        calls.append(("trace/rows=%d" % rows, lambda rows=rows: twin.trace(X[:1], t, s, rows), min(args.warmup, 1)))
    for name, fn, warmup in calls:
        ms, mn, inner, cpu = common.time_call(fn, warmup, args.repeats, args.min_time)
        print("RESULT name=%s ms=%.4f min_ms=%.4f inner=%d cpu_ms=%.4f" % (name, ms, mn, inner, cpu), flush=True)


def products_flops(twin):
    """FLOPs of one image's forward pass in the network's products: every Conv2d and Linear
    (2·inputs·outputs per output position) by forward hooks, and the attention's two
    [hw, hw]·[hw, c] products (q kᵀ, a v)."""
    torch = twin.torch
    nn = torch.nn
    total = [0]

    def hook(mod, inp, out):
        if isinstance(mod, nn.Conv2d):
            k = mod.in_channels // mod.groups * mod.kernel_size[0] * mod.kernel_size[1]
            total[0] += 2 * k * out.numel()
        elif isinstance(mod, nn.Linear):
            total[0] += 2 * mod.in_features * out.numel()
        else:  # Attention: x [1, c, h, w]
            _, ch, h, w = inp[0].shape
            total[0] += 2 * 2 * (h * w) ** 2 * ch

    hooks = [m.register_forward_hook(hook) for m in twin.net.modules()
             if isinstance(m, (nn.Conv2d, nn.Linear, twin.script.Attention))]
    with torch.no_grad():
        twin.eps(torch.zeros(1, 784), 0.5)
    for h in hooks:
        h.remove()
    return total[0]


def table(args):
    """Go and PyTorch medians per case with Go's ratios (wall and CPU), and each case's
    arithmetic bound from this run's best f32 product rate."""
    rows, rates = common.read_rows(args.table)
    pts = sorted((k for k in rows if k.startswith("pt-")), key=lambda k: (int(k[3:].rstrip("p")), k))
    traces = sorted({c for r in rows.values() for c in r if c.startswith("trace/")}, key=lambda c: int(c.split("=")[1]))
    cases = list(CASES) + traces
    common.timings(rows, cases, "go", pts, "ms")
    print()
    print("Process CPU time per call (ms; Go: cpu-ms/op, both cores; PyTorch: time.process_time, every thread, spinning "
          "included): steadier than the wall clock while other jobs share the cores.")
    common.timings(rows, cases, "go-cpu", ["cpu-" + k for k in pts], "cpu")
    r32, bw = rates.get("gemm-float32"), max(rates.get("copy-numpy", 0), rates.get("copy-torch", 0)) or None
    print()
    if not r32:
        print("arithmetic bounds: no machine rates measured (bench_torch_eps.py --machine)")
        return 0
    twin = UNetTwin(args.weights)
    flops = products_flops(twin)
    print("Arithmetic bound on this machine: the FLOPs of the products (convolutions, dense layers, the attention's two "
          "products: %.1f MFLOP a forward image, counted on the twin) / PyTorch's f32 1024^3 product rate, the best of this "
          "run (%.0f GFLOP/s); a VJP row counts twice a forward image (its backward repeats each product against its "
          "input), a trace 784 VJP rows. The weights (%.2f MB f32) read once at the copy bandwidth (%.1f GB/s) take "
          "under 0.1 ms, and one image's activations fit in the caches: the data movement that bounds these calls is in "
          "the element-wise passes (GroupNorm, SiLU, pads, slices), which no dense bound counts. Go/bound: Go's median "
          "over the bound (wall; CPU in brackets); PT/bound: the fastest PyTorch column's." % (
              flops / 1e6, r32, 4 * sum(p.numel() for p in twin.net.parameters()) / 1e6, bw or 0))
    print("%-20s %9s %10s %16s %16s" % ("case", "GFLOP", "bound ms", "Go/bound", "PT/bound"))
    for c in cases:
        kind, n = c.split("/")[0], int(c.split("=")[1])
        images = n if kind == "forward" else (2 * n if kind == "vjp" else 2 * 784)
        fl = images * flops
        bound = fl / r32 / 1e6
        med = lambda k: common.median(rows.get(k, {}).get(c, []))
        best = min((k for k in pts if med(k) is not None), key=med, default=None)
        go = "%s (%s)" % (common.ratio(med("go"), bound), common.ratio(med("go-cpu"), bound))
        pt = "-" if best is None else "%s (%s)" % (common.ratio(med(best), bound), common.ratio(med("cpu-" + best), bound))
        print("%-20s %9.3f %10s %16s %16s" % (c, fl / 1e9, common.fmt(bound), go, pt))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weights", default=os.path.join(ROOT, "examples/mnist-unet/unet.pt"))
    common.mode_args(ap)
    ap.add_argument("--trace-rows", type=lambda s: [int(r) for r in s.split(",") if r], default=[16, 196],
                    help="comma-separated rows a call of the exact trace besides the fixture's (default 16,196)")
    ap.add_argument("--time-scale", type=float, help="the network's time input per unit t (default mnist-unet.py's)")
    args = ap.parse_args()
    if sum(x is not None for x in (args.check, args.bench, args.table)) != 1:
        fail("want exactly one of --check, --bench, --table")
    if any(r < 1 or r > 784 for r in args.trace_rows):
        fail("--trace-rows: each between 1 and 784")
    import torch
    torch.set_num_threads(args.threads)
    if args.table:
        return table(args)
    twin = UNetTwin(args.weights, args.time_scale)
    if args.check:
        return 0 if check(twin, load_fixture(args.check), args.tol, args.trace_rows) else 1
    return bench(twin, load_fixture(args.bench), args)


if __name__ == "__main__":
    common.run(main, fail)
