"""browser_wait.py — what scripts/browser_test.py waits with: a minimal Chrome
DevTools Protocol client for one page, and polling waits.

Every wait polls for a condition (a server answering, a page loaded, MathJax
idle) up to one generous limit, 20 min by default (DFX_TEST_WAIT: seconds, or
30m, 1h), and raises Timeout naming what it waited for and for how long: a
loaded machine makes the check slower, not failed.
"""
import json
import os
import re
import subprocess
import time
import urllib.request

from tornado import ioloop, websocket


def wait_limit():
    """Seconds a wait may last: DFX_TEST_WAIT (seconds, or Go-style 20m, 1h30m, 900s), else 20 min."""
    v = os.environ.get("DFX_TEST_WAIT", "").strip()
    if re.fullmatch(r"\d+(\.\d+)?", v):
        return float(v)
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s)", v)
    if v and "".join(a + b for a, b in parts) == v:
        return sum(float(a) * {"h": 3600, "m": 60, "s": 1, "ms": 0.001}[b] for a, b in parts)
    if v:
        raise SystemExit("browser-test: DFX_TEST_WAIT=%r: want seconds or a duration such as 20m" % v)
    return 1200.0


LIMIT = wait_limit()


class Timeout(Exception):
    pass


class Retry(Exception):
    """Raised by a polled condition that cannot be read yet (a page being replaced)."""


def wait_for(what, cond, seen=None, limit=None):
    """Polls cond until it returns a true value, which it returns; after limit
    seconds (LIMIT) raises Timeout naming what it waited for, how long, and
    seen(), what it last saw."""
    limit = LIMIT if limit is None else limit
    start, pause = time.time(), 0.1
    while True:
        try:
            v = cond()
            if v:
                return v
        except Retry:
            pass
        waited = time.time() - start
        if waited > limit:
            msg = "waited %.0f s for %s (DFX_TEST_WAIT raises the limit)" % (waited, what)
            try:
                last = seen() if seen else ""
            except Exception as e:  # what was last seen is a courtesy: the timeout is the message
                last = "(unreadable: %s)" % e
            raise Timeout(msg + ("; last seen: " + last if last else ""))
        time.sleep(pause)
        pause = min(pause * 1.5, 2.0)


def wait_http(url, what, proc):
    """The body at url, once it answers; fails early when proc, the server, has ended."""
    def get():
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("%s ended (exit %s) before answering at %s" % (what, proc.returncode, url))
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return r.read()
        except OSError:
            return None
    return wait_for("%s to answer at %s" % (what, url), get)


def stop(proc):
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Page:
    """A minimal Chrome DevTools Protocol client for one page."""

    def __init__(self, ws_url):
        self.loop = ioloop.IOLoop.current()
        self.conn = self.loop.run_sync(lambda: websocket.websocket_connect(ws_url, max_message_size=256 << 20))
        self.next_id = 0

    def call(self, method, **params):
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

        try:
            return self.loop.run_sync(reply, timeout=LIMIT)
        except TimeoutError:
            raise Timeout("waited %.0f s for Chromium to answer %s" % (LIMIT, method))

    def js(self, expr):
        """The value of expr in the page; Retry while the page is being replaced
        (its JavaScript context is gone, or not there yet)."""
        try:
            r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        except RuntimeError as e:
            if "context" in str(e).lower():
                raise Retry()
            raise
        if "exceptionDetails" in r:
            raise RuntimeError("JavaScript failed: %s" % r["exceptionDetails"])
        return r["result"].get("value")

    def open_notebook(self, port, token, name):
        """Navigates to the notebook and waits until its page (not the one before) has loaded."""
        self.js("window.__dfxLeaving = true")
        self.call("Page.navigate", url="http://127.0.0.1:%d/notebooks/notebooks/%s?token=%s" % (port, name, token))
        wait_for("the page of %s to load" % name, lambda: self.js(
            "!window.__dfxLeaving && document.readyState === 'complete' && location.pathname.endsWith(%s)" % json.dumps("/" + name)))
        wait_for("the classic notebook to load %s" % name,
                 lambda: self.js("!!(window.IPython && IPython.notebook && IPython.notebook._fully_loaded)"))

    def settled(self, what):
        """Waits until MathJax has typeset the page and no finite animation runs (a
        dialog fading in), then until the browser has painted that: what a screenshot shows."""
        wait_for("MathJax and the animations of %s to finish" % what, lambda: self.js(SETTLED))
        self.js("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")


# MathJax (v2, the classic notebook's) idle and its message box gone, no finite animation running.
SETTLED = r"""
(() => {
  const hub = window.MathJax && MathJax.Hub, msg = document.getElementById('MathJax_Message');
  const typeset = !hub || (hub.queue.pending === 0 && hub.queue.running === 0 && (!msg || getComputedStyle(msg).display === 'none'));
  const moving = document.getAnimations().filter(a => a.playState === 'running' && isFinite(a.effect.getComputedTiming().endTime));
  return typeset && moving.length === 0;
})()
"""
