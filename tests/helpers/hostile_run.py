"""Run hostile cases one after another in this process, each timed, and print one JSON line per case.

Run by tests/headless/test_untrusted_corpus.py as ``python hostile_run.py JOBS.json`` in a child process whose address space
is capped (``RLIMIT_AS``), so that no case can take the machine's memory, and under a timeout, so that none can
block the suite. A job is ``{"name", "kind", ...}``:

* ``book``: ``Workbook.load(path, Limits(**limits))``, then, with ``ref``, the value of that cell;
* ``cli``: ``xlsxplan.cli.main(argv)``, its exit status and what it wrote on stderr.

Each line: ``{"name", "ok", "message", "value", "status", "seconds", "peak_mb"}``; ``peak_mb`` is this process's
peak resident memory after the case (the most any case so far has needed).
"""

from __future__ import annotations

import contextlib
import io
import json
import resource
import sys
import time


def _peak_mb() -> float:
    """This process's peak resident memory: VmHWM, which a new program image starts afresh, where Linux has it;
    getrusage's ru_maxrss otherwise, which execve keeps from the parent (a large pytest worker would count)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(job: dict) -> dict:
    from xlsxplan.errors import CellError, XlsxplanError
    from xlsxplan.headless import Limits, Workbook

    out: dict = {"name": job["name"], "ok": False, "message": "", "value": None, "status": None}
    start = time.perf_counter()
    if job["kind"] == "book":
        try:
            book = Workbook.load(job["path"], limits=Limits(**job.get("limits", {})))
            out["ok"] = True
            if job.get("ref"):
                value = book.get(job["ref"])
                out["value"] = {"code": value.code, "message": value.message} if isinstance(value, CellError) else value
        except XlsxplanError as err:
            out["message"] = err.message
        except Exception as err:  # a traceback the user would have seen: the test fails on it
            out["message"] = f"UNCAUGHT {type(err).__name__}: {err}"
    else:
        from xlsxplan.cli import main

        err_text = io.StringIO()
        with contextlib.redirect_stderr(err_text), contextlib.redirect_stdout(io.StringIO()):
            try:
                out["status"] = main(job["argv"])
            except SystemExit as exc:  # argparse
                out["status"] = exc.code
            except BaseException as exc:
                out["status"] = f"UNCAUGHT {type(exc).__name__}: {exc}"
        out["message"] = err_text.getvalue()
        out["ok"] = out["status"] == 0
    out["seconds"] = time.perf_counter() - start
    out["peak_mb"] = _peak_mb()
    return out


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        jobs = json.load(f)
    for job in jobs:
        print(json.dumps(run(job)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
