#!/usr/bin/python3
"""check_notebook.py — decide whether an executed GoNB notebook succeeded.

GoNB reports a failing cell (panic, non-zero exit, failed shell command) as an
output stream, so `jupyter nbconvert --execute` may exit 0 on a broken
notebook. This reads the executed .ipynb and fails (exit 1) when:
  - any output is of type "error";
  - any cell wrote to stderr: the notebooks are quiet, so anything there is
    a failure (a Go compile error, a panic, a non-zero exit — "exit status N",
    which GoNB prints for programs and shell commands alike — or a warning a
    reader would take for one), named by the first pattern it matches;
  - a Go cell (one with %%) has no output at all (it did not run to its display);
  - there are no code cells.
No sentinel cell is needed: the outputs themselves are checked.
Usage: check_notebook.py [--clean] EXECUTED.ipynb [NAME]
  --clean  on success, also drop the per-cell execution timestamps nbconvert
           records, so that a notebook committed with its outputs changes only
           where its outputs do, and mark code cells "scrolled": false, so that
           Jupyter shows their outputs whole rather than in a scrolling box.
"""
import json
import re
import sys

# Patterns that mark a failure when seen on a cell's stderr.
FAILURE_PATTERNS = [
    (re.compile(r"^exit status [1-9][0-9]*\s*$", re.M), "non-zero exit"),
    (re.compile(r"^panic: ", re.M), "panic"),
    (re.compile(r"^fatal error: ", re.M), "Go runtime fatal error"),
    (re.compile(r"^goroutine \d+ \[", re.M), "goroutine dump"),
    (re.compile(r"^\S*\.go:\d+(:\d+)?: ", re.M), "Go compile error"),
    (re.compile(r"^ERROR: ", re.M), "GoNB error"),
]


def text_of(output):
    t = output.get("text", "")
    return "".join(t) if isinstance(t, list) else t


def source_of(cell):
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


def check(path, name):
    try:
        with open(path, encoding="utf-8") as f:
            nb = json.load(f)
    except (OSError, ValueError) as e:
        print("FAIL %s: cannot read the executed notebook: %s" % (name, e))
        return False
    problems = []
    code_cells = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"]
    for i, cell in enumerate(code_cells, 1):
        stderr = []
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            if kind == "error":
                problems.append((i, "error output: %s: %s" % (out.get("ename"), out.get("evalue")),
                                 "\n".join(out.get("traceback", []))))
            elif kind == "stream" and out.get("name") == "stderr":
                stderr.append(text_of(out))
        err = "".join(stderr)
        if err.strip():
            what = "output"
            for pattern, name in FAILURE_PATTERNS:
                if pattern.search(err):
                    what = name
                    break
            problems.append((i, what + " on stderr", err))
        if "%%" in source_of(cell) and not cell.get("outputs"):
            problems.append((i, "no output", ""))
    if not code_cells:
        problems.append((0, "no code cells", ""))
    for i, what, detail in problems:
        cell = code_cells[i - 1] if 0 < i <= len(code_cells) else None
        print("FAIL %s: code cell %d: %s" % (name, i, what))
        if cell is not None:
            src = source_of(cell).strip().splitlines()
            print("  source: %s" % (" | ".join(src[:4]) + (" | ..." if len(src) > 4 else "")))
        detail = detail.strip()
        if detail:
            lines = detail.splitlines()
            print("  " + "\n  ".join(lines[-25:]))
    return not problems


def clean(path):
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    for cell in nb.get("cells", []):
        meta = cell.setdefault("metadata", {})
        meta.pop("execution", None)
        if cell.get("cell_type") == "code":
            meta["scrolled"] = False  # show long outputs whole, not in a scrolling box
    with open(path, "w", encoding="utf-8") as f:
        json.dump(nb, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    do_clean = "--clean" in args
    args = [a for a in args if a != "--clean"]
    if not args:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    ok = check(args[0], args[1] if len(args) > 1 else args[0])
    if ok and do_clean:
        clean(args[0])
    sys.exit(0 if ok else 1)
