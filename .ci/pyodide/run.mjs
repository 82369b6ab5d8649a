// Load lite/main.py in a real Pyodide under Node, with the wheels lite/requirements.txt names, and run check.py.
// Usage: node run.mjs PYODIDE_DIR WHEELS_DIR MAIN_PY CHECK_PY INPUT_JSON; prints check.py's JSON result.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [pyodideDir, wheels, mainPy, checkPy, input] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(path.join(pyodideDir, "pyodide.mjs")).href);
const py = await loadPyodide({ indexURL: pyodideDir + path.sep });
const site = py.runPython("import site; site.getsitepackages()[0]");
for (const f of fs.readdirSync(wheels).filter((f) => f.endsWith(".whl")).sort()) {
  py.unpackArchive(new Uint8Array(fs.readFileSync(path.join(wheels, f))), "wheel", { extractDir: site });
}
py.FS.mkdirTree("/home/pyodide/lite");
py.FS.writeFile("/home/pyodide/lite/main.py", fs.readFileSync(mainPy, "utf8"));
py.globals.set("INPUT_JSON", fs.readFileSync(input, "utf8"));
try {
  console.log(await py.runPythonAsync(fs.readFileSync(checkPy, "utf8")));
} catch (err) {
  console.error(String(err.message).split("\n").slice(-12).join("\n"));
  process.exit(1);
}
