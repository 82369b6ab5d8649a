"""`xlsxplan validate` and `xlsxplan calibrate` as a user runs them."""

from __future__ import annotations

import json

import pytest

from tests.helpers import DATA, REPO
from xlsxplan import calibration
from xlsxplan.calibration import measurements
from xlsxplan.cli import main
from xlsxplan.errors import CatalogError
from xlsxplan.headless.engine import evaluate_formula

HEADER = ",".join(measurements.COLUMNS)


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


FIGURES = REPO / "docs" / "calibration_figures.json"


@pytest.fixture(scope="module")
def measured():
    """One quick numpy measurement of this machine (``machine.measure``, about a second of CPU), for the tests that
    save figures as a preset: what is saved, not the measuring, is what they check (the measuring is
    test_calibrate_quick_measures_sane_figures's)."""
    from xlsxplan.calibration import machine

    return machine.measure(quick=True, backend="numpy")


def _measured_once(monkeypatch, figures) -> None:
    """``calibrate --quick --backend numpy`` in this test gets ``figures`` without measuring again."""
    from xlsxplan.calibration import machine

    def measure(**kwargs):
        assert kwargs == {"quick": True, "backend": "numpy", "device": "auto"}, kwargs
        return figures

    monkeypatch.setattr(machine, "measure", measure)


@pytest.fixture(scope="module")
def validated() -> tuple[int, str]:
    """``xlsxplan validate --json`` on the shipped measurements (leave one source out: a refit for each), run once
    for the tests that read it: its exit status and what it printed."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["validate", "--json"])
    return code, out.getvalue()


@pytest.mark.slow
def test_validate_prints_each_row_and_the_summary(capsys):
    # the figures are docs/calibration_figures.json's, which `calibrate --fit --shipped` regenerates
    fig = json.loads(FIGURES.read_text(encoding="utf-8"))
    loo, first = fig["leave_one_source_out"], fig["rows"][0]
    code, out, _ = run(capsys, "validate", "--data", str(calibration.measurements_path()))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["line", "name", "metric", "measured", "predicted", "P10-P90", "ratio", "note"]
    assert lines[1].split()[:4] == ["2", "LLaMA-7B", "gpu_hours", "82,432"]
    assert float(lines[1].split()[6]) == pytest.approx(first["ratio"], abs=0.006)  # the file keeps 3 decimals
    worst = loo["worst_ratio"]  # (the coverage from the counts: the file keeps 4 decimals, 0.8175 of 0.81749)
    assert lines[-1].startswith(
        f"{loo['rows']} rows, {loo['predicted']} predicted (coverage {100 * loo['predicted'] / loo['rows']:.1f}%); "
        "median absolute "
        f"error {100 * loo['median_abs_error']:.1f}%, within 2x {100 * loo['within_2x']:.1f}%; inside their own "
        f"P10-P90 range "
        f"{100 * loo['band_coverage']:.1f}% of {loo['rows_with_band']} (fitted on the file's rows and the shipped "
        f"measurements, leaving out each row's publication); worst: line {worst['line']} {worst['name']}"
    )


@pytest.mark.slow
def test_validate_factors_as_is_refits_nothing(capsys, validated):
    fig = json.loads(FIGURES.read_text(encoding="utf-8"))["factors_as_is"]
    code, out, _ = run(capsys, "validate", "--factors-as-is", "--json")
    summary = json.loads(out)["summary"]
    assert code == 0 and summary["fit"].startswith("the shipped factors (") and "nothing refitted" in summary["fit"]
    assert summary["median_abs_error"] == pytest.approx(fig["median_abs_error"], abs=1e-4)
    # the shipped factors were fitted on these rows: as they are, they do at least as well as leaving each run out
    code, out = validated
    assert code == 0 and summary["median_abs_error"] <= json.loads(out)["summary"]["median_abs_error"]


@pytest.mark.slow
def test_validate_json_has_one_row_per_input_row_in_order(validated):
    code, out = validated
    data = json.loads(out)
    rows = measurements.read_measurements(calibration.measurements_path())
    assert code == 0 and len(data["rows"]) == len(rows) >= 80
    assert [(r["name"], r["metric"], r["measured"]) for r in data["rows"]] == [
        (m.name, m.metric, m.value) for m in rows
    ]
    first = data["rows"][0]
    assert {"name", "metric", "measured", "predicted", "ratio", "p10", "p90", "inside_p10_p90", "reason"} <= set(first)
    assert first["ratio"] == pytest.approx(first["predicted"] / first["measured"])
    assert first["p10"] < first["predicted"] < first["p90"]
    summary = data["summary"]
    fig = json.loads(FIGURES.read_text(encoding="utf-8"))["leave_one_source_out"]
    assert (summary["rows"], summary["predicted"]) == (len(rows), fig["predicted"])
    assert summary["within_2x"] == pytest.approx(fig["within_2x"], abs=1e-4)
    assert all(r["reason"] for r in data["rows"] if r["ratio"] is None)  # every row not predicted says why
    inside = [r["inside_p10_p90"] for r in data["rows"] if r["inside_p10_p90"] is not None]
    assert summary["band_coverage"] == pytest.approx(sum(inside) / len(inside))


def test_validate_a_users_file_with_rows_it_cannot_predict(capsys, tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text(
        HEADER + "\n"
        "serve,ours,Llama-2-7B,6.74,,,A100-80GB,1,fp16,,1024,1,decode_tokens_per_sec,70,tok/s,our lab\n"
        "serve,ours,Llama-2-7B,6.74,,,TPU-v9,1,fp16,,1024,1,decode_tokens_per_sec,70,tok/s,our lab\n",
        encoding="utf-8",
    )
    code, out, _ = run(capsys, "validate", "--data", str(path), "--json", "--data-only")
    rows = json.loads(out)["rows"]
    assert code == 0
    assert rows[0]["predicted"] is not None
    assert rows[0]["reason"] == "no decode_bandwidth row in this fit: the source documents' 0.70"
    assert rows[1]["predicted"] is None and rows[1]["ratio"] is None
    assert rows[1]["reason"].startswith("gpu 'TPU-v9' is not in the catalog")
    # fitted on the file alone: its one decode row is left out, so decode falls back to Back-of-the-Envelope's 70%
    assert rows[0]["basis"].startswith("decode_bandwidth 0.700")
    code, out, _ = run(capsys, "validate", "--data", str(path))
    assert "not predicted: gpu 'TPU-v9' is not in the catalog" in out
    assert "1 predicted (coverage 50.0%)" in out


def test_validate_check_fails_below_the_bar(capsys, tmp_path):
    path = tmp_path / "odd.csv"
    path.write_text(
        HEADER + "\nserve,x,Llama-2-7B,6.74,,,A100-80GB,1,fp16,,1024,1,decode_tokens_per_sec,7,tok/s,typo\n",
        encoding="utf-8",
    )
    code, out, err = run(capsys, "validate", "--data", str(path), "--check")
    assert code == 1
    assert "OUTSIDE 2x" in out
    assert "check failed: needs coverage >= 90%" in err


def test_validate_refuses_a_file_without_the_schema(capsys, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("model,gpu,value\nx,H100,1\n", encoding="utf-8")
    code, _, err = run(capsys, "validate", "--data", str(path))
    assert code == 2
    assert err.startswith(f"xlsxplan: error: {path}: missing column(s) kind, name, params_b")
    code, _, err = run(capsys, "validate", "--data", str(tmp_path / "none.csv"))
    assert code == 2 and err == f"xlsxplan: error: cannot read {tmp_path / 'none.csv'}: no such file\n"


@pytest.mark.slow
def test_a_refit_on_a_users_file_is_one_command_and_used_at_once(capsys, tmp_path, monkeypatch):
    # Changing the data file and re-running the fit is one command. The user's copy of the measurements,
    # with the FP8 time-to-first-token rows made twice as fast: `calibrate --fit --data FILE` writes the user's
    # factors into the user catalog folder, and EFFICIENCY, validate and the templates use them from then on.
    import os

    from xlsxplan.catalog import user_catalog_dir

    # the first 115 rows (the file's oldest publications, which hold the three rows): a fit of thousands of rows
    # costs seconds and shows nothing more here. Their own fit, unchanged, is the baseline.
    shipped_fp8 = calibration.efficiency("prefill", "H100", "fp8")
    head = "".join(calibration.measurements_path().read_text(encoding="utf-8").splitlines(keepends=True)[:116])
    base = tmp_path / "base.csv"
    base.write_text(head, encoding="utf-8")
    assert run(capsys, "calibrate", "--fit", "--data", str(base))[0] == 0
    base_fp8 = calibration.efficiency("prefill", "H100", "fp8")
    text = (
        head.replace("H100-SXM,1,fp8,2048,1,1,ttft,36,", "H100-SXM,1,fp8,2048,1,1,ttft,18,")
        .replace("H100-SXM,4,fp8,2048,1,1,ttft,109,", "H100-SXM,4,fp8,2048,1,1,ttft,54.5,")
        .replace("L40S,1,fp8,2048,1,1,ttft,73,", "L40S,1,fp8,2048,1,1,ttft,36.5,")
    )
    mine = tmp_path / "mine.csv"
    mine.write_text(text, encoding="utf-8")
    code, out, _ = run(capsys, "calibrate", "--fit", "--data", str(mine))
    written = user_catalog_dir() / "calibration.json"
    assert code == 0 and f"wrote {written} (your factors" in out
    assert "apple (class): no rows, multiplier 1 (assumed)" in out  # prefill: Apple publishes no FLOP/s
    stored = json.loads(written.read_text(encoding="utf-8"))
    assert stored["data"]["path"] == str(mine.resolve()) and stored["data"]["sha256"] == calibration.sha256(mine)
    assert calibration.active().origin == "user"
    assert calibration.efficiency("prefill", "H100", "fp8") == pytest.approx(2 * base_fp8, rel=0.03)
    assert evaluate_formula('=EFFICIENCY("prefill","H100","fp8")').value == pytest.approx(2 * base_fp8, rel=0.03)
    # validate fits on the rows behind the factors in use, and says so
    # (validating one row, the file's first: the whole shipped file, a refit on the pool for each of its
    # publications, costs seconds and says nothing more about which rows the fit uses; the words are those of
    # `validate --json` on the shipped file)
    one = tmp_path / "one.csv"
    one.write_text("".join(head.splitlines(keepends=True)[:2]), encoding="utf-8")
    code, out, _ = run(capsys, "validate", "--json", "--data", str(one))
    summary = json.loads(out)["summary"]
    assert f"the measurements behind your factors ({mine.resolve()})" in summary["fit"]
    assert summary["factors"].startswith(f"user factors ({written})")
    # the choice: the shipped fit on demand, for one command or through the environment
    code, out, _ = run(capsys, "validate", "--json", "--calibration", "shipped", "--data", str(one))
    assert "the shipped measurements" in json.loads(out)["summary"]["fit"]
    assert os.environ.get(calibration.FACTORS_ENV) is None  # --calibration is for that command only
    monkeypatch.setenv(calibration.FACTORS_ENV, "shipped")
    assert calibration.efficiency("prefill", "H100", "fp8") == pytest.approx(shipped_fp8)
    monkeypatch.setenv(calibration.FACTORS_ENV, str(written))
    assert calibration.active().origin == "file"
    monkeypatch.setenv(calibration.FACTORS_ENV, str(tmp_path / "nowhere.json"))
    with pytest.raises(CatalogError, match=r"XLSXPLAN_CALIBRATION=.*nowhere.json: no such factors file"):
        calibration.efficiency("prefill")
    monkeypatch.delenv(calibration.FACTORS_ENV)
    # a data file that changed after the fit is caught, not silently mixed
    mine.write_text(text + "\n", encoding="utf-8")
    code, _, err = run(capsys, "validate")
    assert code == 2 and "which has changed since: run `xlsxplan calibrate --fit --data" in err
    written.unlink()
    calibration.refresh()  # a deleted or edited file is seen within a second; at once after refresh
    assert calibration.active().origin == "shipped"


def test_calibrate_option_errors(capsys):
    code, _, err = run(capsys, "calibrate", "--out", "x.json")
    assert code == 2 and "--data, --out and --shipped go with --fit" in err
    code, _, err = run(capsys, "calibrate", "--fit", "--shipped", "--data", str(DATA / "trtllm_llama31_8b.csv"))
    assert code == 2 and "--shipped refits the shipped factors on the shipped measurements" in err
    code, _, err = run(capsys, "calibrate", "--fit", "--shipped", "--out", "x.json")
    assert code == 2 and "--shipped and --out are two destinations" in err


@pytest.mark.slow
def test_calibrate_quick_measures_sane_figures(capsys):
    # ranges, not values: a 2-core CI machine and a GPU server both fall inside them
    code, out, _ = run(capsys, "calibrate", "--quick", "--json", "--backend", "numpy", "--gpu", "H100")
    f = json.loads(out)
    assert code == 0
    assert 1e-4 < f["matmul_tflops"] < 1e4  # 0.1 GFLOP/s to 10 PFLOP/s
    assert 1e-4 < f["bandwidth_tb_s"] < 100  # 0.1 GB/s to 100 TB/s
    assert 1e6 < f["train_6n_flops"] < 1e16
    assert f["train_params"] == 2 * 2 * 128 * 512  # two blocks of 128 -> 512 -> 128
    assert f["train_6n_flops"] == pytest.approx(6 * f["train_params"] * f["train_tokens_per_s"])
    assert f["optimal_params_b_10_minutes"] == pytest.approx((f["train_6n_flops"] * 600 / 120) ** 0.5 / 1e9)
    assert f["datasheet"]["bandwidth_tb_s"]["datasheet"] == 3.35
    assert f["memory_gb"] >= 0


@pytest.mark.slow
def test_calibrate_save_makes_a_preset_usable_in_formulas(capsys, monkeypatch, measured):
    _measured_once(monkeypatch, measured)
    code, out, _ = run(capsys, "calibrate", "--quick", "--backend", "numpy", "--save", "this-laptop")
    assert code == 0 and "saved as accelerator 'this-laptop'" in out
    bandwidth = evaluate_formula('=GPU_SPEC("this-laptop","bandwidth_tb_s")').value
    assert 1e-4 < bandwidth < 100
    assert evaluate_formula('=GPU_SOURCE("this-laptop","bandwidth_tb_s")').value.startswith(
        "measured by `xlsxplan calibrate` on"
    )
    assert evaluate_formula('=GPU_SPEC("this-laptop","fp8_tflops")').error.code == "#N/A"
    # saving again needs --replace; a shipped name is refused
    code, _, err = run(capsys, "calibrate", "--quick", "--backend", "numpy", "--save", "this-laptop")
    assert code == 2 and "exists already" in err
    assert run(capsys, "calibrate", "--quick", "--backend", "numpy", "--save", "this-laptop", "--replace")[0] == 0
    code, _, err = run(capsys, "calibrate", "--quick", "--backend", "numpy", "--save", "H100")
    assert code == 2 and "shipped preset" in err


def test_calibrate_unknown_gpu_fails_before_measuring(capsys):
    code, out, err = run(capsys, "calibrate", "--quick", "--gpu", "H1000")
    assert (code, out) == (2, "")
    assert "gpu 'H1000' is not in the catalog; did you mean H100-SXM" in err


def test_the_numpy_training_step_is_real_backpropagation():
    import numpy as np

    from xlsxplan.calibration.machine import _NumpyMLP

    model = _NumpyMLP(8, 2, dtype=np.float64)
    rng = np.random.default_rng(3)
    x, target = rng.standard_normal((5, 8)), rng.standard_normal((5, 8))
    _, grads = model.loss_and_grads(x, target)
    for k, w in enumerate(model.weights):
        i, eps = (1, 2), 1e-6
        w[i] += eps
        up, _ = model.loss_and_grads(x, target)
        w[i] -= 2 * eps
        down, _ = model.loss_and_grads(x, target)
        w[i] += eps
        assert (up - down) / (2 * eps) == pytest.approx(grads[k][i], rel=1e-6, abs=1e-10)
    losses = [model.step(x, target, lr=1e-2) for _ in range(30)]
    assert losses[-1] < losses[0] / 10


def test_figures_that_contradict_each_other_carry_a_warning():
    from xlsxplan.calibration.machine import Figures

    def figures(matmul_tflops, train_6n_flops):
        return Figures("cpu", "numpy", matmul_tflops, "float32", 0.02, train_6n_flops, 1.0, 1, "mlp", 8.0, 1.0)

    assert figures(0.1, 0.05e12).warning() == ""
    assert figures(0.05, 0.1e12).warning().startswith("the 6N training rate exceeds the matmul rate")
    assert figures(0.05, 0.1e12).as_dict()["warning"].endswith("run again on an idle machine")


def test_calibrate_with_torch_measures_sane_figures(capsys):
    pytest.importorskip("torch")
    code, out, _ = run(capsys, "calibrate", "--quick", "--json", "--backend", "torch")
    f = json.loads(out)
    assert code == 0 and f["backend"].startswith("torch")
    assert 1e-4 < f["matmul_tflops"] < 1e5
    assert 1e-4 < f["bandwidth_tb_s"] < 100
    assert 0 < f["train_6n_flops"] < 1e17


def test_calibrate_checks_backend_and_device_before_measuring(capsys, monkeypatch):
    # --backend torch without PyTorch must not end in ModuleNotFoundError, nor any --device reach
    # PyTorch unchecked: both are one line and exit 2, before anything is measured.
    from xlsxplan.calibration import machine
    from xlsxplan.errors import ArgumentError

    monkeypatch.setattr(machine, "torch_available", lambda: False)
    monkeypatch.setattr(machine, "_numpy_matmul", lambda *a: pytest.fail("measured before checking"))
    code, out, err = run(capsys, "calibrate", "--quick", "--backend", "torch")
    assert (code, out) == (2, "")
    assert (
        err == "xlsxplan: error: backend torch needs PyTorch, which is not installed: install it (pip install "
        "torch) or use --backend numpy\n"
    )
    code, _, err = run(capsys, "calibrate", "--quick", "--device", "gpu0")
    assert code == 2 and err == "xlsxplan: error: device must be auto, cpu, cuda, cuda:N or mps, got 'gpu0'\n"
    code, _, err = run(capsys, "calibrate", "--quick", "--device", "cuda")
    assert code == 2 and err == "xlsxplan: error: device 'cuda' needs the torch backend: PyTorch is not installed\n"
    with pytest.raises(ArgumentError, match=r"^device 'mps' needs the torch backend: the numpy backend measures"):
        machine.measure(quick=True, backend="numpy", device="mps")
    with pytest.raises(ArgumentError, match=r"^backend must be one of auto, numpy, torch, got 'jax'$"):
        machine.measure(backend="jax")


def test_a_torch_device_that_is_not_there_is_refused():
    from types import SimpleNamespace

    from xlsxplan.calibration.machine import _torch_device
    from xlsxplan.errors import ArgumentError

    def fake(gpus: int, mps: bool) -> SimpleNamespace:
        cuda = SimpleNamespace(is_available=lambda: gpus > 0, device_count=lambda: gpus)
        return SimpleNamespace(cuda=cuda, backends=SimpleNamespace(mps=SimpleNamespace(is_available=lambda: mps)))

    with pytest.raises(ArgumentError, match=r"^device 'cuda' is not available: this PyTorch sees no CUDA GPU$"):
        _torch_device(fake(0, False), "cuda")
    with pytest.raises(
        ArgumentError,
        match=r"^device 'cuda:2' is not available: this PyTorch sees 2 CUDA GPU\(s\), "
        r"cuda:0 to cuda:1$",
    ):
        _torch_device(fake(2, False), "cuda:2")
    with pytest.raises(ArgumentError, match=r"^device 'mps' is not available: this PyTorch sees no Apple GPU$"):
        _torch_device(fake(1, False), "mps")
    assert _torch_device(fake(2, False), "cuda:1") == "cuda:1"
    assert [_torch_device(fake(g, m), "auto") for g, m in ((1, True), (0, True), (0, False))] == ["cuda", "mps", "cpu"]


@pytest.mark.slow
def test_calibrate_fit_never_rewrites_an_installed_package(capsys, monkeypatch, tmp_path):
    # `calibrate --fit` must not rewrite the installed package's calibration.json: it writes the user's
    # own factors by default, and --shipped (which rewrites the shipped copy) is refused outside a source checkout.
    from xlsxplan.catalog import user_catalog_dir

    installed = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "xlsxplan" / "data"
    installed.mkdir(parents=True)
    (installed / "calibration.json").write_text("{}", encoding="utf-8")
    monkeypatch.setattr(calibration, "factors_path", lambda: installed / "calibration.json")
    code, out, err = run(capsys, "calibrate", "--fit", "--shipped")
    assert (code, out) == (2, "")
    assert err.startswith("xlsxplan: error: --shipped rewrites the shipped factors, which belong to the installed ")
    assert (installed / "calibration.json").read_text(encoding="utf-8") == "{}"
    # where the factors go, not what they are: a fit on the file's first 30 rows is enough (0.07 s of CPU, against
    # 0.8 s for 150 rows and seconds for the whole file)
    small = tmp_path / "small.csv"
    lines = calibration.measurements_path().read_text(encoding="utf-8").splitlines(keepends=True)
    small.write_text("".join(lines[:31]), encoding="utf-8")
    assert run(capsys, "calibrate", "--fit", "--data", str(small))[0] == 0
    assert (user_catalog_dir() / "calibration.json").is_file()
    assert (installed / "calibration.json").read_text(encoding="utf-8") == "{}"
    assert run(capsys, "calibrate", "--fit", "--data", str(small), "--out", str(tmp_path / "mine.json"))[0] == 0
    from xlsxplan.cli.cmd_calibrate import source_checkout

    assert source_checkout(REPO / "xlsxplan" / "calibration" / "data" / "calibration.json")
    assert not source_checkout(installed / "calibration.json")


@pytest.mark.slow
def test_a_preset_measured_by_calibrate_gets_its_own_efficiencies(capsys, monkeypatch, measured):
    # A preset saved by `calibrate --save` holds measured rates, not datasheet peaks: its decode and prefill
    # factors are 1 (times the weights-format multiplier), its train_mfu the measured 6N rate over the measured
    # matmul rate; the datacenter GPUs' 0.54 of peak bandwidth says nothing about it.
    from xlsxplan.catalog import load_catalog

    _measured_once(monkeypatch, measured)
    code, out, _ = run(capsys, "calibrate", "--quick", "--backend", "numpy", "--save", "my-cpu", "--json")
    f = json.loads(out)
    assert code == 0 and calibration.gpu_class("my-cpu") == "measured"
    factors = calibration.load_factors()
    assert calibration.efficiency("decode_bandwidth", "my-cpu", "bf16") == 1.0
    assert calibration.efficiency("decode_bandwidth", "my-cpu", "q4_k_m") == pytest.approx(
        factors.decode_bandwidth.formats["4-bit"]
    )
    assert calibration.efficiency("prefill", "my-cpu", "bf16") == 1.0
    preset = load_catalog().accelerators.get("my-cpu")
    assert calibration.efficiency("train_mfu", "my-cpu") == pytest.approx(
        min(1.0, f["train_6n_flops"] / (preset.bf16_tflops * 1e12)), rel=1e-3
    )
    assert "a measured preset" in calibration.efficiency_basis("decode_bandwidth", "my-cpu")
    # a hand-written user preset named like a CPU is not "measured": it is classed by name, as before
    assert calibration.class_of_id("my-cpu") == "datacenter"


def test_saving_figures_whose_6n_rate_beats_the_matmul_rate_warns(capsys, monkeypatch):
    # acceptance finding: a 6N rate of 0.037 TFLOP/s against a matmul rate of 0.0357 was saved silently, though the
    # preset's training MFU (6N rate / matmul rate) is then held to 100%
    from xlsxplan.calibration import machine
    from xlsxplan.calibration.machine import Figures

    fast = Figures("cpu", "numpy", 0.0357, "float32", 0.02, 0.037e12, 1.0, 1, "mlp", 8.0, 1.0)
    monkeypatch.setattr(machine, "measure", lambda **kw: fast)
    code, out, err = run(capsys, "calibrate", "--quick", "--save", "busy-box")
    assert code == 0 and "saved as accelerator 'busy-box'" in out
    assert err == (
        "xlsxplan: warning: the 6N training rate (0.037 TFLOP/s) exceeds the matmul rate (0.0357 TFLOP/s), "
        "so 'busy-box' gets a training MFU of 100%; measure again on an idle machine and save with "
        "--replace\n"
    )


def _csv(tmp_path, *lines: str):
    header = calibration.measurements_path().read_text(encoding="utf-8").splitlines()[0]
    path = tmp_path / "mine.csv"
    path.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    return path


ROW = "serve,r1,Llama-3.1-8B-Instruct,,,,H100-SXM,1,fp8,128,128,64,output_tokens_per_sec_total,{value},tok/s,me"


@pytest.mark.parametrize(
    "line, said",
    [
        (ROW.format(value="abc"), "1 row of mine.csv could not be read (line 2: value must be a number, got 'abc')"),
        (
            ",".join(ROW.split(",")[:8]),
            "1 row of mine.csv could not be read (line 2: the row has 8 fields where the header has 35, so it lacks "
            "precision, input_len, output_len, concurrency, metric, value, unit, source: a comma missing or one too "
            "many?)",
        ),
        (ROW.format(value="5000") + "," * 26, "the row has 42 fields where the header has 35: a comma missing"),
        (ROW.format(value="5000").replace("H100-SXM", "H900"), "no row of mine.csv could be predicted (line 2: gpu"),
    ],
)
def test_a_users_file_with_nothing_to_score_is_an_error_with_each_row_shown(capsys, tmp_path, line, said):
    # each row is shown with its reason, never dropped; the exit status and one line on stderr say the file failed
    code = main(["validate", "--data", str(_csv(tmp_path, line))])
    out, err = capsys.readouterr()
    assert code == 1 and "not predicted" in out
    err = err.replace(f"{tmp_path}/", "")  # the file as the user named it
    assert err.startswith("xlsxplan: error: ") and said in err and err.count("\n") == 1


def test_a_users_file_whose_rows_leave_the_optional_columns_off_is_read(capsys, tmp_path):
    # the 16 columns of the schema and no more: csv pads the rest, as a spreadsheet saves a row it left short
    code = main(["validate", "--data", str(_csv(tmp_path, ROW.format(value="5000")))])
    out, err = capsys.readouterr()
    assert code == 0 and err == "" and "1 predicted" in out.replace("rows, 1 predicted", "1 predicted")


def test_an_empty_measurements_file_says_so(capsys, tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"empty.csv: empty; a measurements CSV begins with its header row: kind, "):
        measurements.read_measurements(path)
