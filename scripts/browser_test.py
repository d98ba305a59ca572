#!/usr/bin/python3
"""browser_test.py — open the committed notebooks as a reader would, in a real browser.

Starts a Jupyter notebook server (headless, on a copy of the notebooks, so that
nothing can be saved over them), opens each notebook in headless Chromium
through the DevTools protocol, waits until Jupyter has rendered its outputs, and
fails (exit 1) when
  - a figure does not render (an <img> that is not loaded or has no size), or
    fewer images render than the notebook holds;
  - an error is shown (an error output, a stderr output);
  - a notebook holds no output at all (it was committed unexecuted).
It writes one screenshot per notebook (the top of the page, as a reader first
sees it) into the output folder (default figures/notebooks/).

Then it turns a knob as a reader would (unless --no-live): in a live kernel it runs
the set-up cell and the first dfx/notebook.Knobs cell of the OT notebook, waits for
GoNB's widgets, picks another schedule, checks that the result is recomputed for
it, presses Done, and checks that no error was shown (screenshot *-live.png).

Usage: browser_test.py [--out DIR] [--height PX] [--no-live] [NOTEBOOK.ipynb ...]
Needs Debian's chromium and jupyter-notebook (make setup); uses tornado's
websocket client (a Jupyter dependency), nothing else.
"""
import argparse
import base64
import glob
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from tornado import ioloop, websocket

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_http(url, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return r.read()
        except OSError:
            time.sleep(0.3)
    raise RuntimeError("%s did not answer at %s within %ds" % (what, url, timeout))


def expected_images(path):
    """Images and tables a notebook's outputs hold: image/png outputs and <img> in HTML
    outputs; the tables of each output, as many as its HTML's <table> or its Markdown's
    pipe tables, whichever is more (the browser must show them all); and the outputs
    whose HTML lost a table its Markdown has."""
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    n, tables, outputs, lost = 0, 0, 0, []
    text = lambda v: "".join(v) if isinstance(v, list) else v
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            outputs += 1
            data = out.get("data", {})
            if "image/png" in data or "image/svg+xml" in data:
                n += 1
            elif "text/html" in data:
                html = text(data["text/html"])
                n += len(re.findall(r"<img\b", html))
            in_md = len(RULE_ROW.findall(text(data["text/markdown"]))) if "text/markdown" in data else 0
            in_html = len(re.findall(r"<table\b", text(data["text/html"]), re.I)) if "text/html" in data else 0
            if "text/html" in data and in_html < in_md:
                lost.append("an output's HTML has %d tables, its Markdown %d" % (in_html, in_md))
            tables += max(in_html, in_md)
    return n, tables, outputs, lost


# a pipe table's rule row: "| --- | ---: |"
RULE_ROW = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$", re.M)


class Page:
    """A minimal Chrome DevTools Protocol client for one page."""

    def __init__(self, ws_url):
        self.loop = ioloop.IOLoop.current()
        self.conn = self.loop.run_sync(lambda: websocket.websocket_connect(ws_url, max_message_size=256 << 20))
        self.next_id = 0

    def call(self, method, timeout=60, **params):
        self.next_id += 1
        mid = self.next_id
        self.conn.write_message(json.dumps({"id": mid, "method": method, "params": params}))

        async def reply():
            while True:
                msg = await self.conn.read_message()
                if msg is None:
                    raise RuntimeError("browser closed the connection")
                m = json.loads(msg)
                if m.get("id") == mid:
                    if "error" in m:
                        raise RuntimeError("%s: %s" % (method, m["error"]))
                    return m.get("result", {})

        return self.loop.run_sync(reply, timeout=timeout)

    def js(self, expr, timeout=60):
        r = self.call("Runtime.evaluate", timeout=timeout, expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("JavaScript failed: %s" % r["exceptionDetails"])
        return r["result"].get("value")


# Waits until the classic notebook has loaded and rendered every output and
# every image has finished loading, then reports what the page shows.
INSPECT = r"""
(async () => {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const t0 = Date.now();
  while (!(window.IPython && IPython.notebook && IPython.notebook._fully_loaded) && Date.now() - t0 < 60000) await sleep(200);
  let last = -1;
  while (Date.now() - t0 < 60000) {
    const n = document.querySelectorAll('.output_area').length;
    if (n === last) break;
    last = n; await sleep(700);
  }
  const imgs = [...document.querySelectorAll('.output_area img')];
  await Promise.all(imgs.map(i => i.complete ? null : new Promise(r => { i.onload = i.onerror = r; setTimeout(r, 10000); })));
  return {
    loaded: !!(window.IPython && IPython.notebook && IPython.notebook._fully_loaded),
    outputs: document.querySelectorAll('.output_area').length,
    images: imgs.length,
    tables: document.querySelectorAll('.output_area table').length,
    broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().width > 0)).map(i => i.alt || i.src.slice(0, 40)),
    errors: [...document.querySelectorAll('.output_error, .output_stderr')].map(e => e.innerText.slice(0, 300)),
    height: document.querySelector('#notebook-container') ? document.querySelector('#notebook-container').scrollHeight : 0,
  };
})()
"""


# Runs the set-up cell and the first Knobs cell in the live kernel, waits for
# the widgets, picks the last option of the first drop-down list, waits for the
# result to be recomputed with it, presses Done. Returns what it saw.
LIVE = r"""
(async () => {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const until = async (f, ms) => { const t0 = Date.now(); while (!f() && Date.now() - t0 < ms) await sleep(300); return f(); };
  const nb = () => IPython.notebook;
  const out = {};
  out.kernel = await until(() => window.IPython && nb() && nb()._fully_loaded && nb().kernel && nb().kernel.is_connected(), 90000);
  if (!out.kernel) return out;
  const cells = nb().get_cells();
  const k = cells.findIndex(c => c.cell_type === 'code' && c.get_text().includes('NewKnobs()'));
  out.knobCell = k;
  if (k < 0) return out;
  cells.forEach(c => { if (c.cell_type === 'code') c.clear_output(); });
  const setup = cells.findIndex(c => c.cell_type === 'code' && c.get_text().includes('notebook-setup.sh'));
  nb().execute_cells(setup >= 0 ? [setup, k] : [k]);
  const area = cells[k].output_area.element[0];
  const live = () => area.querySelector('select:not([disabled])');
  const failed = () => document.querySelector('.output_stderr, .output_error');
  await until(() => (live() && area.querySelector('h4')) || failed(), 240000);
  out.widgets = !!(live() && area.querySelector('h4'));
  if (!out.widgets) { out.text = area.innerText.slice(0, 500); return out; }
  const sel = live();
  out.before = area.querySelector('h4').innerText;
  const want = sel.options[sel.options.length - 1];
  out.picked = want.text;
  sel.value = want.value;
  sel.dispatchEvent(new Event('change'));
  out.recomputed = await until(() => (area.querySelector('h4') || {}).innerText !== out.before &&
                                     ((area.querySelector('h4') || {}).innerText || '').includes(want.text), 120000);
  out.after = (area.querySelector('h4') || {}).innerText;
  const done = [...area.querySelectorAll('button')].find(b => b.innerText.trim() === 'Done');
  if (done) done.click();
  out.finished = await until(() => !nb().kernel_busy && area.querySelector('select[disabled]'), 60000);
  out.errors = [...document.querySelectorAll('.output_error, .output_stderr')].map(e => e.innerText.slice(0, 300));
  out.images = [...area.querySelectorAll('img')].filter(i => i.complete && i.naturalWidth > 0).length;
  cells[k].element[0].scrollIntoView();
  await sleep(500);
  return out;
})()
"""


def live_knob(page, port, token, name):
    page.call("Page.navigate", url="http://127.0.0.1:%d/notebooks/notebooks/%s?token=%s" % (port, name, token))
    time.sleep(1)
    got = page.js(LIVE, timeout=600)
    problems = []
    if not got.get("kernel"):
        problems.append("the gonb kernel did not start")
    elif got.get("knobCell", -1) < 0:
        problems.append("no Knobs cell")
    elif not got.get("widgets"):
        problems.append("no live widgets appeared: %s" % got.get("text", "").replace("\n", " | "))
    elif not got.get("recomputed"):
        problems.append("picking %r did not recompute the result (still %r)" % (got.get("picked"), got.get("after")))
    elif not got.get("finished"):
        problems.append("Done did not end the cell with the knobs kept at their values")
    for e in got.get("errors") or []:
        problems.append("error shown: %s" % e.strip().replace("\n", " | "))
    if got.get("widgets") and not got.get("images"):
        problems.append("the recomputed result shows no figure")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "figures", "notebooks"))
    ap.add_argument("--height", type=int, default=1600, help="screenshot height in CSS pixels")
    ap.add_argument("--width", type=int, default=1150)
    ap.add_argument("--no-live", action="store_true", help="skip turning a knob in a live kernel")
    ap.add_argument("--live-notebook", default="01-ot.ipynb")
    ap.add_argument("notebooks", nargs="*")
    args = ap.parse_args()
    nbs = args.notebooks or sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    jupyter = "/usr/bin/jupyter"
    if not chromium or not os.path.exists(jupyter):
        print("browser-test: needs chromium and jupyter-notebook (make setup)", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="dfx-browser-")
    served = os.path.join(work, "notebooks")
    os.makedirs(served)
    for nb in nbs:
        shutil.copy(nb, served)
    token = secrets.token_hex(16)
    port = free_port()
    # The kernel of the live check builds against this repository (scripts/notebook-setup.sh).
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=os.path.join(work, "runtime"), DFX_ROOT=ROOT, GOEXPERIMENT="simd")
    env.pop("DFX_NOTEBOOK_HEADLESS", None)
    gobin = subprocess.run(["go", "env", "GOPATH"], capture_output=True, text=True).stdout.strip()
    env["PATH"] = os.pathsep.join([os.path.join(gobin, "bin"), env.get("PATH", ""), "/usr/local/go/bin"]) if gobin else env.get("PATH", "")
    server = subprocess.Popen([jupyter, "notebook", "--no-browser", "--port", str(port), "--ip", "127.0.0.1",
                               "--NotebookApp.token=" + token, "--notebook-dir", work, "--allow-root"],
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "jupyter.log"), "w"), env=env)
    browser = None
    failed = []
    try:
        wait_http("http://127.0.0.1:%d/api/status?token=%s" % (port, token), 60, "Jupyter")
        dport = free_port()
        browser = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                    "--remote-debugging-port=%d" % dport, "--user-data-dir=" + os.path.join(work, "chrome"),
                                    "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        targets = json.loads(wait_http("http://127.0.0.1:%d/json/list" % dport, 60, "Chromium"))
        page = Page([t for t in targets if t.get("type") == "page"][0]["webSocketDebuggerUrl"])
        page.call("Page.enable")
        os.makedirs(args.out, exist_ok=True)
        for nb in nbs:
            name = os.path.basename(nb)
            start = time.time()
            want, want_tables, outputs, lost = expected_images(nb)
            page.call("Emulation.setDeviceMetricsOverride", width=args.width, height=args.height, deviceScaleFactor=1, mobile=False)
            page.call("Page.navigate", url="http://127.0.0.1:%d/notebooks/notebooks/%s?token=%s" % (port, name, token))
            time.sleep(1)
            got = page.js(INSPECT, timeout=120)
            problems = []
            if not got["loaded"]:
                problems.append("the notebook did not load")
            if outputs == 0:
                problems.append("no outputs: the notebook was committed unexecuted")
            if got["images"] < want:
                problems.append("%d of %d images shown" % (got["images"], want))
            problems.extend(lost)
            if got["tables"] < want_tables:
                problems.append("%d of %d tables shown" % (got["tables"], want_tables))
            if got["broken"]:
                problems.append("images not rendered: %s" % ", ".join(got["broken"]))
            for e in got["errors"]:
                problems.append("error shown: %s" % e.strip().replace("\n", " | "))
            shot = page.call("Page.captureScreenshot", format="png")
            png = os.path.join(args.out, name.replace(".ipynb", ".png"))
            with open(png, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
            status = "ok  " if not problems else "FAIL"
            print("%s  %s: %d outputs, %d images and %d tables rendered, screenshot %s (%.1fs)" % (
                status, name, got["outputs"], got["images"], got["tables"], os.path.relpath(png, ROOT), time.time() - start))
            for p in problems:
                print("      " + p)
            if problems:
                failed.append(name)
        live = [nb for nb in nbs if os.path.basename(nb) == args.live_notebook]
        if live and not args.no_live:
            name = args.live_notebook
            start = time.time()
            problems = live_knob(page, port, token, name)
            png = os.path.join(args.out, name.replace(".ipynb", "-live.png"))
            shot = page.call("Page.captureScreenshot", format="png")
            with open(png, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
            print("%s  %s, live: a knob turned, the result recomputed, screenshot %s (%.1fs)" % (
                "ok  " if not problems else "FAIL", name, os.path.relpath(png, ROOT), time.time() - start))
            for p in problems:
                print("      " + p)
            if problems:
                failed.append(name + " (live)")
    finally:
        if browser:
            browser.terminate()
            browser.wait(10)
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(work, ignore_errors=True)
    if failed:
        print("browser-test: %d of %d notebook(s) failed: %s" % (len(failed), len(nbs), " ".join(failed)), file=sys.stderr)
        return 1
    print("browser-test: all %d notebook(s) render in Chromium" % len(nbs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
