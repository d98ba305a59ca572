#!/usr/bin/python3
"""bench_torch.py — PyTorch (Debian's python3-torch 1.13, CPU, float32) timings of
the networks timed by dfx's Go benchmarks, for scripts/bench-torch.sh.

Cases (names match the Go sub-benchmarks, without the "/fast" suffix):

  MLP/<dims>/B<batch>/{forward,grad-x,grad-all}     — models/fastgrad BenchmarkMLP
    h ← tanh(h·W_i + b_i) for the hidden layers, last layer linear (no tanh);
    W_i [in,out], b_i [1,out], entries N(0,1)/8, x [B, d_in] N(0,1)/8.
    forward:  out, under torch.no_grad()
    grad-x:   ∂ sum(out⊙out)/∂x          (weights do not require grad)
    grad-all: ∂ sum(out⊙out)/∂(x, every W_i, b_i)
  ScoreNet/d=<d>/w=<width>/B=<batch>/{forward,grad-x,grad-all,train-step}
                                                    — models BenchmarkScoreNet(+GradAll)
    models.ResidualMLP with dfx's defaults (depth 3, SiLU, embed_dim 32 → 16
    frequencies geometric in [1, 8], ε-parameterisation), layer for layer:
      c_in = 1/√(α²+σ²), h₀ = Lin_in(c_in x), λ = log(σ/α),
      e = SiLU(Lin_embed([λ, sin(f λ), cos(f λ)]))          (33 → width)
      3×: u = Lin_1(SiLU(h)) + Lin_e(e);  h ← h + Lin_2(SiLU(u))
      ε̂ = Lin_out(SiLU(h))                                  (width → d)
    Inputs: x [B,d] ~ N(0,1) (data rows), t ~ U[1e-5, 1], α(t), σ(t) of the
    VP schedule (β_min 0.1, β_max 20).
    forward:    ε̂ under torch.no_grad()
    grad-x:     ∂ sum(ε̂²)/∂x            (parameters do not require grad)
    grad-all:   ∂ sum(ε̂²)/∂(x, every parameter)
    train-step: one DSM step as models.Trainer.TrainSteps(1) does it, host
                sampling included: rows drawn from 512 N(0,1) data rows,
                ε ~ N(0,I), t ~ U, x_t = α x₀ + σ ε, loss = mean_b mean_j
                (ε̂−ε)² (weighting "eps", weight 1 per row), backward,
                global-norm clip at 1, Adam (lr 1e-3, β 0.9/0.999, eps 1e-7 as
                GoMLX), EMA 0.999 of every parameter, loss.item().

Differences left on purpose: nn.Linear stores W as [out,in] (same matrix
product), uses fused addmm for x·W+b and F.silu for x·sigmoid(x); the MLP uses
addmm too. Weight initialisation differs (timing only).

Each case: --warmup calls, then --repeats timed repeats of `inner` calls each
(inner chosen so a repeat lasts ≥ --min-time s); the median of the per-call
means is reported, with the min. Machine-readable lines start with "RESULT ".
Run with Debian's interpreter: /usr/bin/python3.
"""
import argparse
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

MLP_CASES = [  # (name, batch, dims) as in models/fastgrad/bench_test.go
    ("3-128-128-1/B1024", 1024, [3, 128, 128, 1]),
    ("64-256-256-256-64/B256", 256, [64, 256, 256, 256, 64]),
]
SCORE_CASES = [(2, 128, 1024), (64, 256, 256), (784, 256, 128)]  # (d, width, batch) as in models/bench_test.go
VP = dict(beta_min=0.1, beta_max=20.0, t_min=1e-5, t_max=1.0)  # schedule.DefaultVP()


def timeit(fn, warmup, repeats, min_time):
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-6)
    inner = max(1, int(math.ceil(min_time / one)))
    per_call = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        per_call.append((time.perf_counter() - t0) / inner)
    return statistics.median(per_call), min(per_call), inner


# ---- plain MLP (models/fastgrad BenchmarkMLP) -------------------------------------------

def mlp_forward(x, Ws, bs):
    h = x
    for i, (W, b) in enumerate(zip(Ws, bs)):
        h = torch.addmm(b, h, W)  # h·W + b
        if i + 1 < len(Ws):
            h = torch.tanh(h)
    return h


def mlp_cases(gen):
    for name, batch, dims in MLP_CASES:
        rnd = lambda *shape: torch.randn(*shape, generator=gen) / 8
        x = rnd(batch, dims[0])
        Ws = [rnd(dims[i], dims[i + 1]) for i in range(len(dims) - 1)]
        bs = [rnd(1, dims[i + 1]) for i in range(len(dims) - 1)]

        def forward():
            with torch.no_grad():
                return mlp_forward(x, Ws, bs)

        xg = x.clone().requires_grad_(True)

        def grad_x():
            out = mlp_forward(xg, Ws, bs)
            return torch.autograd.grad((out * out).sum(), xg)

        Wg = [W.clone().requires_grad_(True) for W in Ws]
        bg = [b.clone().requires_grad_(True) for b in bs]
        wrt = [xg] + Wg + bg

        def grad_all():
            out = mlp_forward(xg, Wg, bg)
            return torch.autograd.grad((out * out).sum(), wrt)

        for mode, fn in (("forward", forward), ("grad-x", grad_x), ("grad-all", grad_all)):
            yield "MLP/%s/%s" % (name, mode), fn


# ---- score network (models.ResidualMLP, models BenchmarkScoreNet) -----------------------

class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.dense1 = nn.Linear(width, width)
        self.embed = nn.Linear(width, width)
        self.dense2 = nn.Linear(width, width)


class ScoreNet(nn.Module):
    def __init__(self, d, width, depth=3, embed_dim=32, max_freq=8.0):
        super().__init__()
        n = max(embed_dim // 2, 1)
        freqs = [max_freq ** (k / max(n - 1, 1)) for k in range(n)]
        self.register_buffer("freqs", torch.tensor([freqs], dtype=torch.float32))  # [1, n]
        self.input = nn.Linear(d, width)
        self.embed = nn.Linear(1 + 2 * n, width)
        self.blocks = nn.ModuleList([Block(width) for _ in range(depth)])
        self.output = nn.Linear(width, d)

    def forward(self, x, alpha, sigma):
        a, s = alpha[:, None], sigma[:, None]
        h = self.input(x * torch.rsqrt(a * a + s * s))
        lam = torch.log(s / a)
        arg = lam * self.freqs
        e = F.silu(self.embed(torch.cat([lam, torch.sin(arg), torch.cos(arg)], -1)))
        for blk in self.blocks:
            u = blk.dense1(F.silu(h)) + blk.embed(e)
            h = h + blk.dense2(F.silu(u))
        return self.output(F.silu(h))  # ε-parameterisation: ε̂ is the output


def vp_alpha_sigma(t):
    """α, σ of schedule.DefaultVP() at t (float64 tensor), as float32."""
    log_a = -0.25 * t * t * (VP["beta_max"] - VP["beta_min"]) - 0.5 * t * VP["beta_min"]
    return torch.exp(log_a).float(), torch.sqrt(-torch.expm1(2 * log_a)).float()


def sample_t(n, gen):
    return VP["t_min"] + (VP["t_max"] - VP["t_min"]) * torch.rand(n, dtype=torch.float64, generator=gen)


def score_cases(gen):
    for d, width, batch in SCORE_CASES:
        name = "ScoreNet/d=%d/w=%d/B=%d" % (d, width, batch)
        net = ScoreNet(d, width)
        params = list(net.parameters())
        data = torch.randn(512, d, generator=gen)
        x = data[torch.randint(0, 512, (batch,), generator=gen)]
        alpha, sigma = vp_alpha_sigma(sample_t(batch, gen))

        def forward():
            with torch.no_grad():
                return net(x, alpha, sigma)

        xg = x.clone().requires_grad_(True)

        def grad_x():
            net.requires_grad_(False)
            try:
                out = net(xg, alpha, sigma)
                return torch.autograd.grad((out * out).sum(), xg)
            finally:
                net.requires_grad_(True)

        wrt = [xg] + params

        def grad_all():
            out = net(xg, alpha, sigma)
            return torch.autograd.grad((out * out).sum(), wrt)

        opt = torch.optim.Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-7, weight_decay=0.0)
        ema = [p.detach().clone() for p in params]

        def train_step():
            idx = torch.randint(0, data.shape[0], (batch,), generator=gen)
            x0 = data[idx]
            eps = torch.randn(batch, d, generator=gen)
            a, s = vp_alpha_sigma(sample_t(batch, gen))
            weight = torch.ones(batch)  # weighting "eps"
            xt = a[:, None] * x0 + s[:, None] * eps
            loss = (((net(xt, a, s) - eps) ** 2).mean(-1) * weight).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            with torch.no_grad():
                torch._foreach_mul_(ema, 0.999)
                torch._foreach_add_(ema, params, alpha=0.001)
            return loss.item()

        print("%s: %d parameters in %d tensors" % (name, sum(p.numel() for p in params), len(params)))
        for mode, fn in (("forward", forward), ("grad-x", grad_x), ("grad-all", grad_all), ("train-step", train_step)):
            yield "%s/%s" % (name, mode), fn


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds per timed repeat (≥ 1 call)")
    ap.add_argument("--only", default="", help="run only cases whose name contains this")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.threads < 1 or a.repeats < 1 or a.warmup < 0:
        ap.error("need threads, repeats >= 1 and warmup >= 0")
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed)
    print("torch %s, threads %d (interop %d), MKL-DNN %s, %s" % (
        torch.__version__, torch.get_num_threads(), torch.get_num_interop_threads(),
        torch.backends.mkldnn.is_available(), torch.backends.cpu.get_cpu_capability()
        if hasattr(torch.backends, "cpu") and hasattr(torch.backends.cpu, "get_cpu_capability") else "cpu"))
    print("warmup %d, %d repeats of ≥ %.2f s; median per-call time (min)" % (a.warmup, a.repeats, a.min_time))
    for gen_cases in (mlp_cases, score_cases):
        for name, fn in gen_cases(gen):
            if a.only and a.only not in name:
                continue
            med, best, inner = timeit(fn, a.warmup, a.repeats, a.min_time)
            print("RESULT name=%s ms=%.4f min_ms=%.4f inner=%d" % (name, med * 1e3, best * 1e3, inner), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
