#!/usr/bin/env python3
"""onnx-fixtures.py — reference networks for `dfx import`, built and exported by PyTorch.

Usage: /usr/bin/python3 scripts/onnx-fixtures.py [OUT_DIR]   (default models/testdata/onnx)

Needs Debian's python3-torch and python3-onnx (apt-get install python3-torch
python3-onnx). It writes, at fixed seeds, two noise-prediction networks as
ONNX files (torch.onnx.export, opset 17) and, beside each, a JSON file with
PyTorch's own values at fixed points, which the Go tests compare the import
against (CI reads only these files, it never runs PyTorch):

  mlp.onnx   an MLP ε-network on flat vectors (d = 8): sinusoidal embedding
             of its time input, SiLU; imported with -param eps -schedule ve
             -time sigma (the network receives σ).
  unet.onnx  a DDPM-style conv U-Net on 1×8×8 images: nn.GroupNorm, SiLU,
             sinusoidal time embedding, a class embedding (class input "y",
             4 classes and the null class 4), a residual block, stride-2
             convolution down, a single-head self-attention block, nearest
             upsampling, a skip connection; imported with -param v -schedule
             vp -time t -time-scale 999 -class-input y -classes 4.
  unet28.onnx the same U-Net, narrower, on 1×28×28 images with 10 classes
             (untrained; dfx sample -checkpoint runs it in the tests).

Each JSON holds, for B points: "t" (the schedule time), "time_input" (what
the network receives: S·t or S·σ), "x" [B][d] (flat C-order rows of the
network's input layout), "class" (U-Net), "out" [B][d] (the raw network
output), "weights" [B][d] and "grad" [B][d] = ∂(Σ weights·out)/∂x, and
"jac_trace" [B] = tr ∂out/∂x (exact: d VJPs per point).
"""
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def sinusoidal(t, dim):
    """The DDPM/transformer embedding of a time input t [B]: [sin(t f_k), cos(t f_k)]."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    arg = t[:, None].float() * freqs[None, :]
    return torch.cat([torch.sin(arg), torch.cos(arg)], dim=1)


class MLP(nn.Module):
    def __init__(self, d=8, width=64, emb=16):
        super().__init__()
        self.emb = emb
        self.temb = nn.Linear(emb, width)
        self.inp = nn.Linear(d, width)
        self.h1 = nn.Linear(width, width)
        self.h2 = nn.Linear(width, width)
        self.out = nn.Linear(width, d)

    def forward(self, x, t):
        e = F.silu(self.temb(sinusoidal(torch.log(t), self.emb)))
        h = F.silu(self.inp(x) + e)
        h = h + self.h2(F.silu(self.h1(h)))
        return self.out(F.silu(h))


class ResBlock(nn.Module):
    def __init__(self, cin, cout, temb, groups=4):
        super().__init__()
        self.n1 = nn.GroupNorm(groups, cin)
        self.c1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.t = nn.Linear(temb, cout)
        self.n2 = nn.GroupNorm(groups, cout)
        self.c2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, e):
        h = self.c1(F.silu(self.n1(x)))
        h = h + self.t(e)[:, :, None, None]
        h = self.c2(F.silu(self.n2(h)))
        return self.skip(x) + h


class Attention(nn.Module):
    """Single-head self-attention over the pixels: [B, HW, C] queries, keys, values."""

    def __init__(self, c, groups=4):
        super().__init__()
        self.norm = nn.GroupNorm(groups, c)
        self.qkv = nn.Linear(c, 3 * c)
        self.proj = nn.Linear(c, c)

    def forward(self, x):
        b, c, h, w = x.shape
        u = self.norm(x).reshape(b, c, h * w).transpose(1, 2)
        q, k, v = self.qkv(u).chunk(3, dim=-1)
        a = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(c), dim=-1)
        o = self.proj(a @ v).transpose(1, 2).reshape(b, c, h, w)
        return x + o


class UNet(nn.Module):
    def __init__(self, ch=16, temb=32, classes=4):
        super().__init__()
        self.temb_dim = temb
        self.t1 = nn.Linear(temb, temb)
        self.t2 = nn.Linear(temb, temb)
        self.cls = nn.Embedding(classes + 1, temb)  # row `classes` is the null class
        self.inp = nn.Conv2d(1, ch, 3, padding=1)
        self.r1 = ResBlock(ch, ch, temb)
        self.down = nn.Conv2d(ch, 2 * ch, 3, stride=2, padding=1)
        self.r2 = ResBlock(2 * ch, 2 * ch, temb)
        self.attn = Attention(2 * ch)
        self.upconv = nn.Conv2d(2 * ch, ch, 3, padding=1)
        self.r3 = ResBlock(2 * ch, ch, temb)
        self.norm = nn.GroupNorm(4, ch)
        self.out = nn.Conv2d(ch, 1, 3, padding=1)

    def forward(self, x, t, y):
        e = self.t2(F.silu(self.t1(sinusoidal(t, self.temb_dim)))) + self.cls(y)
        h1 = self.r1(self.inp(x), e)
        h2 = self.attn(self.r2(self.down(h1), e))
        u = self.upconv(F.interpolate(h2, scale_factor=2.0, mode="nearest"))
        h3 = self.r3(torch.cat([u, h1], dim=1), e)
        return self.out(F.silu(self.norm(h3)))


def vp_alpha_sigma(t, beta_min=0.1, beta_max=20.0):
    log_alpha = -0.25 * t * t * (beta_max - beta_min) - 0.5 * t * beta_min
    return math.exp(log_alpha), math.sqrt(-math.expm1(2 * log_alpha))


def ve_sigma(t, sigma_min=0.01, sigma_max=50.0):
    return sigma_min * (sigma_max / sigma_min) ** t


def references(net, x, inputs, seed):
    """Raw outputs, the gradient of a fixed scalar and exact Jacobian traces."""
    b = x.shape[0]
    d = x[0].numel()
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(x.shape, generator=g)
    xg = x.clone().requires_grad_(True)
    out = net(xg, *inputs)
    (grad,) = torch.autograd.grad((out * w).sum(), xg)
    traces = []
    for i in range(b):
        xi = x[i:i + 1].clone().requires_grad_(True)
        oi = net(xi, *[a[i:i + 1] for a in inputs]).reshape(-1)
        tr = 0.0
        for j in range(d):
            (gj,) = torch.autograd.grad(oi[j], xi, retain_graph=True)
            tr += gj.reshape(-1)[j].item()
        traces.append(tr)
    flat = lambda a: a.detach().reshape(b, d).tolist()
    return {"out": flat(out), "weights": flat(w), "grad": flat(grad), "jac_trace": traces}


def export(net, args, names, dynamic, path):
    torch.onnx.export(net, args, path, input_names=names, output_names=["out"], opset_version=17,
                      dynamic_axes={**{n: {0: "B"} for n in dynamic}, "out": {0: "B"}})


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join("models", "testdata", "onnx")
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)

    torch.manual_seed(1)
    mlp = MLP().eval()
    ts = [0.05, 0.3, 0.6, 0.9]
    x = torch.randn(len(ts), 8, generator=torch.Generator().manual_seed(2)) * 2
    sig = torch.tensor([ve_sigma(t) for t in ts], dtype=torch.float32)
    export(mlp, (x, sig), ["x", "t"], ["x", "t"], os.path.join(out_dir, "mlp.onnx"))
    ref = {"t": ts, "time_input": sig.tolist(), "x": x.tolist(), **references(mlp, x, [sig], 3)}
    with open(os.path.join(out_dir, "mlp.json"), "w") as f:
        json.dump(ref, f)

    torch.manual_seed(4)
    unet = UNet().eval()
    ts = [0.1, 0.5, 0.9]
    x = torch.randn(len(ts), 1, 8, 8, generator=torch.Generator().manual_seed(5))
    tin = torch.tensor([999.0 * t for t in ts], dtype=torch.float32)
    y = torch.tensor([0, 3, 4], dtype=torch.int64)  # 4 is the null class
    export(unet, (x, tin, y), ["x", "t", "y"], ["x", "t", "y"], os.path.join(out_dir, "unet.onnx"))
    ref = {"t": ts, "time_input": tin.tolist(), "x": x.reshape(len(ts), -1).tolist(), "class": y.tolist(),
           **references(unet, x, [tin, y], 6)}
    with open(os.path.join(out_dir, "unet.json"), "w") as f:
        json.dump(ref, f)
    # The same U-Net, narrower, on MNIST's 1×28×28 images with its 10 classes (null class 10), untrained: what
    # dfx sample -checkpoint runs in the tests (no reference values).
    torch.manual_seed(7)
    small = UNet(ch=8, temb=16, classes=10).eval()
    x = torch.zeros(2, 1, 28, 28)
    export(small, (x, torch.tensor([500.0, 10.0]), torch.tensor([3, 10])), ["x", "t", "y"], ["x", "t", "y"],
           os.path.join(out_dir, "unet28.onnx"))
    for name in ("mlp", "unet", "unet28"):
        print(name, os.path.getsize(os.path.join(out_dir, name + ".onnx")), "bytes")


if __name__ == "__main__":
    main()
