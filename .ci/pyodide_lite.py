"""CI: run the xlwings Lite bundle (lite/main.py) in a real Pyodide under Node and check it.

Installs Node's ``pyodide`` package (npm) and, from PyPI, the wheels lite/requirements.txt names, built for that
Pyodide (pydantic-core and xlwings have emscripten wheels there; numpy has none, and the bundle does without it),
loads main.py as Lite does, and checks that every registry function is registered with its parameters in order and
that every function's worked example (tests/helpers/examples.py) gives in Pyodide, without numpy, what the same
bundle gives in CPython. Prints the results; exits 1 on any difference.
Usage: ``.venv/bin/python .ci/pyodide_lite.py [CACHE]``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYODIDE = "pyodide@314"


def norm(value):
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [norm(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return repr(value)


def expected(examples: dict) -> tuple[dict, dict]:
    """What CPython's Lite build of the functions registers and gives: {name: parameter names}, {name: result}."""
    import inspect

    from xlsxplan.excel import udfs
    from xlsxplan.registry import FUNCTIONS

    lite = udfs.build(lite=True)
    params = {name: list(inspect.signature(lite[name]).parameters) for name in FUNCTIONS}
    calls = {}
    for name, args in examples.items():
        try:
            calls[name] = norm(lite[name](*args))
        except Exception as err:
            calls[name] = f"{type(err).__name__}: {err}"
    return params, calls


def main(cache: Path) -> int:
    sys.path.insert(0, str(ROOT))
    from tests.helpers.examples import EXAMPLES
    from xlsxplan.excel.lite import lite_bundle

    if shutil.which("node") is None or shutil.which("npm") is None:
        print("pyodide: error: node and npm are needed (apt-get install nodejs npm)", file=sys.stderr)
        return 1
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["npm", "install", "--prefix", str(cache), "--no-audit", "--no-fund", "--silent", PYODIDE], check=True
    )
    dist = cache / "node_modules" / "pyodide"
    info = json.loads((dist / "pyodide-lock.json").read_text(encoding="utf-8"))["info"]
    major, minor = info["python"].split(".")[:2]
    platform = f"pyemscripten_{info['abi_version']}_{info['arch']}"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        wheels = work / "wheels"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--only-binary=:all:",
                "--platform",
                platform,
                "--platform",
                "any",
                "--python-version",
                f"{major}.{minor}",
                "--implementation",
                "cp",
                "--abi",
                f"cp{major}{minor}",
                "--abi",
                "none",
                "-d",
                str(wheels),
                "-r",
                str(ROOT / "lite" / "requirements.txt"),
            ],
            check=True,
        )
        main_py = work / "main.py"
        main_py.write_text(lite_bundle(), encoding="utf-8")
        given = work / "input.json"
        examples = {name: list(args) for name, args in EXAMPLES.items()}
        given.write_text(json.dumps({"examples": examples}), encoding="utf-8")
        here = ROOT / ".ci" / "pyodide"
        proc = subprocess.run(
            ["node", str(here / "run.mjs"), str(dist), str(wheels), str(main_py), str(here / "check.py"), str(given)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            print(f"pyodide: error: lite/main.py failed in Pyodide:\n{proc.stderr}", file=sys.stderr)
            return 1
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        installed = sorted(p.name.split("-")[0] for p in wheels.glob("*.whl"))
    params, calls = expected(examples)
    problems = []
    for name, names in params.items():
        if got["meta"].get(name) != names:
            problems.append(f"{name}: registered with {got['meta'].get(name)}, expected {names}")
    problems += [f"{n}: registered but not a registry function" for n in sorted(set(got["meta"]) - set(params))]
    for name, value in calls.items():
        if got["calls"].get(name) != value:
            problems.append(
                f"{name}{tuple(examples[name])}: {got['calls'].get(name)!r} in Pyodide, {value!r} in CPython"
            )
    if got["numpy"]:
        problems.append("numpy was loaded in Pyodide")
    print(
        f"pyodide: Python {got['python']} on {got['platform']} ({PYODIDE}, {platform}); wheels: {', '.join(installed)}"
    )
    print(
        f"pyodide: {len(got['meta'])} functions registered ({len(params)} in the registry); "
        f"{sum(got['calls'].get(n) == v for n, v in calls.items())} of {len(calls)} worked examples as in CPython; "
        f"numpy {'loaded' if got['numpy'] else 'not loaded'}"
    )
    for key in ("KV_BYTES_PER_TOKEN", "MAX_BATCH", "DECODE_TOKS_TOTAL"):
        print(f"pyodide:   {key}{tuple(examples[key])} = {got['calls'].get(key)}")
    for problem in problems:
        print(f"pyodide: error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / ".ci" / ".cache"))
