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
If the kernel found no browser and ran the cell unattended, the check says so,
runs the cell again as a reader would, and prints the kernel's log.
--break-first-connection makes GoNB's first browser connection fail, to check
that the Knobs draw their widgets again (dfx/notebook WidgetRetry).

Every wait polls for what it waits for (the server answering, the page loaded,
every image decoded, the widgets shown, the kernel idle) with one generous limit,
20 min by default (DFX_TEST_WAIT: seconds, or 30m, 1h; scripts/browser_wait.py),
and a wait that reaches it fails naming what it waited for: a loaded machine makes
the check slower, not failed.

Usage: browser_test.py [--out DIR] [--height PX] [--no-live] [--break-first-connection] [NOTEBOOK.ipynb ...]
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

sys.dont_write_bytecode = True  # no scripts/__pycache__ from the import below
from browser_wait import Page, Timeout, stop, wait_for, wait_http

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


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


# What the page shows, read at once (the caller polls it until it is final).
INSPECT = r"""
(() => {
  const imgs = [...document.querySelectorAll('.output_area img')];
  return {
    outputs: document.querySelectorAll('.output_area').length,
    images: imgs.length,
    pending: imgs.filter(i => !i.complete).length,
    tables: document.querySelectorAll('.output_area table').length,
    broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().width > 0)).map(i => i.alt || i.src.slice(0, 40)),
    errors: [...document.querySelectorAll('.output_error, .output_stderr')].map(e => e.innerText.slice(0, 300)),
  };
})()
"""


def inspect(page, name, want, want_tables, settle=30):
    """What the loaded notebook shows once every image has loaded and every image
    and table it holds is shown, or, when some are missing, once nothing has
    changed for settle seconds (what is missing then is reported, not awaited)."""
    state = {"last": None, "since": time.time()}

    def final():
        got = page.js(INSPECT)
        key = (got["outputs"], got["images"], got["tables"], got["pending"])
        if key != state["last"]:
            state["last"], state["since"] = key, time.time()
        state["got"] = got
        if got["pending"]:
            return None
        if got["images"] >= want and got["tables"] >= want_tables:
            return got
        return got if time.time() - state["since"] > settle else None

    return wait_for("%s to show its images and tables" % name, final, seen=lambda: json.dumps(state.get("got")))


# The live check, in steps that each return at once; Python polls between them.
LIVE_START = r"""
((withSetup) => {
  const nb = IPython.notebook, cells = nb.get_cells();
  const k = cells.findIndex(c => c.cell_type === 'code' && c.get_text().includes('NewKnobs()'));
  if (k < 0) return k;
  cells.forEach(c => { if (c.cell_type === 'code') c.clear_output(); });
  const setup = cells.findIndex(c => c.cell_type === 'code' && c.get_text().includes('notebook-setup.sh'));
  window.__dfxArea = cells[k].output_area.element[0];
  window.__dfxCell = cells[k].element[0];
  nb.execute_cells(withSetup && setup >= 0 ? [setup, k] : [k]);
  return k;
})(%s)
"""

# --break-first-connection: the first WebSocket GoNB's browser code opens goes
# nowhere, as when GoNB's first connection fails on a fresh page (the kernel
# logs "Failed to install WebSocket"); the Knobs cell must still come live.
BREAK_FIRST_CONNECTION = r"""
(() => {
  const W = window.WebSocket;
  let armed = true;
  window.WebSocket = function(url, protocols) {
    if (armed && url.endsWith('/channels')) {
      armed = false;
      return new W(url.replace(/\/channels$/, '/nowhere'), protocols);
    }
    return new W(url, protocols);
  };
  window.WebSocket.prototype = W.prototype;
  Object.assign(window.WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
  return true;
})()
"""

LIVE_STATE = r"""
(() => {
  const area = window.__dfxArea, h4 = area.querySelector('h4'), imgs = [...area.querySelectorAll('img')];
  return {
    widgets: !!(area.querySelector('select:not([disabled])') && h4),
    kept: !!area.querySelector('select[disabled]'),
    busy: !!IPython.notebook.kernel_busy,
    failed: !!document.querySelector('.output_stderr, .output_error'),
    heading: h4 ? h4.innerText : null,
    text: area.innerText.slice(0, 500),
    images: imgs.filter(i => i.complete && i.naturalWidth > 0).length,
    pending: imgs.filter(i => !i.complete).length,
    errors: [...document.querySelectorAll('.output_error, .output_stderr')].map(e => e.innerText.slice(0, 300)),
  };
})()
"""

LIVE_PICK = r"""
(() => {
  const sel = window.__dfxArea.querySelector('select:not([disabled])');
  const want = sel.options[sel.options.length - 1];
  sel.value = want.value;
  sel.dispatchEvent(new Event('change'));
  return want.text;
})()
"""

LIVE_DONE = r"""
(() => {
  const done = [...window.__dfxArea.querySelectorAll('button')].find(b => b.innerText.trim() === 'Done');
  if (done) done.click();
  return !!done;
})()
"""


def live_knob(page, port, token, name, notes, break_first=False):
    """Runs the set-up cell and the first Knobs cell in the live kernel, waits for
    the widgets, picks the last option of the first drop-down list, waits for the
    result to be recomputed with it, presses Done. Returns the problems seen;
    what a reader should know but is no failure goes to notes."""
    problems = []
    state = lambda: page.js(LIVE_STATE)
    shown = lambda: "the cell shows %r" % state()["text"].replace("\n", " | ")
    # Widgets, an error, or the knobs drawn disabled: the kernel gave up on the
    # browser (dfx/notebook FrontEndWait) and ran the cell unattended.
    settled = lambda s: s if s["widgets"] or s["failed"] or s["kept"] else None
    try:
        page.open_notebook(port, token, name)
        wait_for("the gonb kernel to connect", lambda: page.js("!!(IPython.notebook.kernel && IPython.notebook.kernel.is_connected())"))
        if break_first:
            page.js(BREAK_FIRST_CONNECTION)
        if page.js(LIVE_START % "true") < 0:
            return ["no Knobs cell"]
        got = wait_for("the Knobs cell's live widgets (the set-up cell builds the Go code first)",
                       lambda: settled(state()), seen=shown)
        if not got["widgets"] and not got["failed"]:
            if break_first:
                problems.append("the Knobs did not redraw their widgets after the broken first connection: "
                                "the cell ran unattended")
            else:
                # What a reader would do: run the cell again, in the same kernel.
                notes.append("the first run found no browser and ran unattended; the cell was run again")
                wait_for("the cell's unattended run to end", lambda: not state()["busy"], seen=shown)
                page.js(LIVE_START % "false")
                got = wait_for("the Knobs cell's live widgets, run again", lambda: settled(state()), seen=shown)
        if not got["widgets"] and not problems:
            problems.append("no live widgets appeared: %s" % got["text"].replace("\n", " | "))
        elif got["widgets"]:
            before, picked = got["heading"], page.js(LIVE_PICK)
            wait_for("the result recomputed for %r (was %r)" % (picked, before),
                     lambda: (lambda s: s["heading"] and s["heading"] != before and picked in s["heading"])(state()), seen=shown)
            if not page.js(LIVE_DONE):
                problems.append("no Done button")
            got = wait_for("the cell to end after Done, the knobs kept at their values",
                           lambda: (lambda s: s if not s["busy"] and s["kept"] and not s["pending"] else None)(state()), seen=shown)
            if not got["images"]:
                problems.append("the recomputed result shows no figure")
        for e in state()["errors"]:
            problems.append("error shown: %s" % e.strip().replace("\n", " | "))
        page.js("window.__dfxCell.scrollIntoView(), true")
        page.settled(name + ", live")
    except Timeout as e:
        problems.append(str(e))
    return problems


def print_tail(path, what, lines=40):
    """Prints the last lines of a log, indented: what a failed run in CI leaves to read."""
    try:
        with open(path, errors="replace") as f:
            tail = f.readlines()[-lines:]
    except OSError as e:
        print("      (%s unreadable: %s)" % (what, e))
        return
    print("      last %d lines of %s:" % (len(tail), what))
    for line in tail:
        print("        " + line.rstrip()[:300])


def check_static(page, port, token, nb, args):
    """Opens one notebook as a reader would, prints what it shows and its problems,
    writes its screenshot; returns the problems."""
    name = os.path.basename(nb)
    start = time.time()
    want, want_tables, outputs, lost = expected_images(nb)
    page.call("Emulation.setDeviceMetricsOverride", width=args.width, height=args.height, deviceScaleFactor=1, mobile=False)
    problems = []
    got = {"outputs": 0, "images": 0, "tables": 0, "broken": [], "errors": []}
    try:
        page.open_notebook(port, token, name)
        got = inspect(page, name, want, want_tables)
        page.settled(name)
    except Timeout as e:
        problems.append(str(e))
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
    print("%s  %s: %d outputs, %d images and %d tables rendered, screenshot %s (%.1fs)" % (
        "ok  " if not problems else "FAIL", name, got["outputs"], got["images"], got["tables"], os.path.relpath(png, ROOT), time.time() - start))
    for p in problems:
        print("      " + p)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "figures", "notebooks"))
    ap.add_argument("--height", type=int, default=1600, help="screenshot height in CSS pixels")
    ap.add_argument("--width", type=int, default=1150)
    ap.add_argument("--no-live", action="store_true", help="skip turning a knob in a live kernel")
    ap.add_argument("--live-notebook", default="01-ot.ipynb")
    ap.add_argument("--break-first-connection", action="store_true",
                    help="make GoNB's first browser connection fail: the live check then tests the widgets' redraw")
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
        wait_http("http://127.0.0.1:%d/api/status?token=%s" % (port, token), "Jupyter", server)
        dport = free_port()
        browser = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                    "--remote-debugging-port=%d" % dport, "--user-data-dir=" + os.path.join(work, "chrome"),
                                    "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pages = lambda: [t for t in json.loads(wait_http("http://127.0.0.1:%d/json/list" % dport, "Chromium", browser))
                         if t.get("type") == "page"]
        page = Page(wait_for("Chromium to open its page", pages)[0]["webSocketDebuggerUrl"])
        page.call("Page.enable")
        os.makedirs(args.out, exist_ok=True)
        for nb in nbs:
            if check_static(page, port, token, nb, args):
                failed.append(os.path.basename(nb))
        live = [nb for nb in nbs if os.path.basename(nb) == args.live_notebook]
        if live and not args.no_live:
            name = args.live_notebook
            start = time.time()
            notes = []
            problems = live_knob(page, port, token, name, notes, args.break_first_connection)
            png = os.path.join(args.out, name.replace(".ipynb", "-live.png"))
            shot = page.call("Page.captureScreenshot", format="png")
            with open(png, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
            print("%s  %s, live: a knob turned, the result recomputed, screenshot %s (%.1fs)" % (
                "ok  " if not problems else "FAIL", name, os.path.relpath(png, ROOT), time.time() - start))
            for p in notes + problems:
                print("      " + p)
            if notes or problems:
                print_tail(os.path.join(work, "jupyter.log"), "the Jupyter server's and GoNB kernel's log")
            if problems:
                failed.append(name + " (live)")
    except Timeout as e:
        print("browser-test: %s" % e, file=sys.stderr)
        return 1
    finally:
        if browser:
            stop(browser)
        stop(server)
        shutil.rmtree(work, ignore_errors=True)
    if failed:
        print("browser-test: %d of %d notebook(s) failed: %s" % (len(failed), len(nbs), " ".join(failed)), file=sys.stderr)
        return 1
    print("browser-test: all %d notebook(s) render in Chromium" % len(nbs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
