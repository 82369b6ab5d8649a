# Runs inside Pyodide (see run.mjs): import lite/main.py as xlwings Lite does, read every function's registration
# metadata, call every function on its example, and return the results as JSON (the driver compares them).
import json
import os
import sys

os.environ.setdefault("XLWINGS_ON_SERVER", "true")  # as in Lite: xlwings.func registers (elsewhere it is a no-op)
os.environ.setdefault("XLWINGS_LICENSE_KEY", "noncommercial")  # xlwings.server asks for one outside the add-in
sys.path.insert(0, "/home/pyodide/lite")
import main  # noqa: E402
from xlwings.server import custom_functions_meta  # noqa: E402


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


given = json.loads(INPUT_JSON)  # noqa: F821 (set by run.mjs)
meta = custom_functions_meta(main)
out = {
    "platform": sys.platform,
    "python": sys.version.split()[0],
    "meta": {f["id"]: [p["name"] for p in f["parameters"]] for f in meta["functions"]},
    "calls": {},
}
for name, args in given["examples"].items():
    try:
        out["calls"][name] = norm(getattr(main, name)(*args))
    except Exception as err:
        out["calls"][name] = f"{type(err).__name__}: {err}"
out["numpy"] = "numpy" in sys.modules
json.dumps(out)
