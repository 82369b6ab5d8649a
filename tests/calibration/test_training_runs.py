"""The published training runs (xlsxplan/calibration/data/training_runs.csv) and their loader.

The file's figures are checked against their own sources' arithmetic where a source publishes two figures of one run
(the Megatron-Core table's per-GPU rate x GPUs against its aggregate, NeMo AutoModel's step time against its tokens
per second), and against the published goodput figures the lost-time model is to reproduce.
"""

from __future__ import annotations

import csv
import io
import re

import pytest

from xlsxplan.calibration.training_runs import (
    COLUMNS,
    GOODPUT_METRICS,
    MEMORY_METRICS,
    THROUGHPUT_METRICS,
    TRAINING_RUNS_PATH,
    TrainingRun,
    parse_training_runs,
    read_training_runs,
)
from xlsxplan.catalog import load_catalog
from xlsxplan.errors import CatalogError


@pytest.fixture(scope="module")
def runs() -> list[TrainingRun]:
    return read_training_runs()


def _row(**cells: str) -> str:
    """A one-row CSV in the file's schema: a valid throughput row with ``cells`` replacing its cells."""
    base = dict(
        name="test run",
        gpu="H100-SXM",
        n_gpus="16",
        tp="2",
        pp="2",
        dp="4",
        cp="1",
        micro_batch="1",
        grad_accum="8",
        global_batch="32",
        seq_len="4096",
        metric="tokens_per_sec_per_gpu",
        value="1000",
        unit="tok/s/GPU",
        source="github.com/example/repo@0123456789abcdef0123456789abcdef01234567:README.md, table 1",
    )
    base.update(cells)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerow({c: base.get(c, "") for c in COLUMNS})
    return out.getvalue()


def test_every_row_has_an_exact_source(runs: list[TrainingRun]) -> None:
    commit = re.compile(r"github\.com/[\w.-]+/[\w.-]+@[0-9a-f]{40}:\S+")
    for run in runs:
        assert run.source, run.name
        # A repository file at a full commit, or a paper with its table, section or figure.
        # A transcription that does not say where in the paper a figure is must say so.
        located = commit.search(run.source) or re.search(
            r"(Table|Sec\.|section|Figure|location in the paper not given)", run.source
        )
        assert located, f"row {run.line - 1} ({run.name}): source names no commit and no table/section"
        if "third-party" in run.source:
            assert "[TRANSCRIBED" in run.source, f"row {run.line - 1}: a third-party copy must say [TRANSCRIBED]"


def test_layouts_multiply_out_or_say_why(runs: list[TrainingRun]) -> None:
    mismatched = []
    for run in runs:
        gpus = run.layout_gpus
        if gpus is not None and run.n_gpus is not None and gpus != run.n_gpus:
            mismatched.append(run)
            assert "multiply out" in run.note, f"row {run.line - 1} ({run.name}): {gpus} != {run.n_gpus}, no note"
        if None not in (run.global_batch, run.micro_batch, run.dp, run.grad_accum):
            implied = (run.micro_batch or 0) * (run.dp or 0) * (run.grad_accum or 0)
            if implied != run.global_batch:
                assert "disagrees" in run.note, f"row {run.line - 1} ({run.name}): batch {implied} unexplained"
    # Llama 3's Table 4 long-context row is the one published layout that does not multiply out (8,192 GPUs).
    assert [r.seq_len for r in mismatched] == [131072]


def test_enough_step_and_memory_rows_with_layouts(runs: list[TrainingRun]) -> None:
    step = [r for r in runs if r.metric in THROUGHPUT_METRICS and r.has_layout and r.seq_len]
    memory = [r for r in runs if r.metric in MEMORY_METRICS and r.has_layout]
    assert len(step) >= 40
    assert len(memory) >= 8
    # Leave-one-source-out needs several independent publications, none holding most of the rows.
    publications = {r.publication for r in step}
    assert len(publications) >= 6
    assert max(sum(r.publication == p for r in step) for p in publications) < len(step) / 2
    # A row a model can cost needs a shape: a catalog preset, or layers and width of its own.
    for run in step + memory:
        assert run.model or (run.layers and run.hidden), f"row {run.line - 1} ({run.name}) has no shape"


def test_models_and_gpus_are_catalog_ids(runs: list[TrainingRun]) -> None:
    catalog = load_catalog()
    models, gpus = set(catalog.models.names()), set(catalog.accelerators.names())
    for run in runs:
        assert not run.model or run.model in models, f"row {run.line - 1}: model {run.model!r} is not a preset id"
        assert not run.gpu or run.gpu in gpus, f"row {run.line - 1}: gpu {run.gpu!r} is not an accelerator id"


def test_numeric_cells_parse_as_published(runs: list[TrainingRun]) -> None:
    """Every non-empty numeric cell of the raw file is the number the loader holds (no cell silently dropped)."""
    with TRAINING_RUNS_PATH.open(encoding="utf-8") as f:
        raw_rows = list(csv.DictReader(f))
    assert len(raw_rows) == len(runs)
    numeric = [
        f
        for f in COLUMNS
        if f
        not in {
            "name",
            "model",
            "gpu",
            "zero",
            "recompute",
            "precision",
            "metric",
            "unit",
            "flops_basis",
            "source",
            "engine",
            "date",
            "note",
        }
    ]
    for raw, run in zip(raw_rows, runs):
        for column in numeric:
            if raw[column]:
                assert float(raw[column]) == getattr(run, column), (run.line, column)
            else:
                assert getattr(run, column) is None


def test_two_figures_of_one_run_agree(runs: list[TrainingRun]) -> None:
    """Where a source publishes a run's rate twice, the two agree to the source's rounding."""
    # NeMo AutoModel: tokens/s/GPU = global batch x sequence / step time / GPUs (its note carries the published rate).
    for run in (r for r in runs if r.engine == "NeMo AutoModel"):
        published = float(re.search(r"Tokens/sec/GPU ([\d,]+)", run.note).group(1).replace(",", ""))  # type: ignore[union-attr]
        implied = (run.tokens_per_step or 0) / run.value / (run.n_gpus or 1)
        assert implied == pytest.approx(published, rel=0.002), run.name
    # Megatron-Core weak scaling: MFU (in the note) = per-GPU rate / 989 TFLOP/s (NVIDIA's rounded H100 dense BF16
    # peak), to the published whole percent.
    for run in (r for r in runs if r.engine == "Megatron-Core" and r.metric == "tflops_per_gpu"):
        mfu = float(re.search(r"MFU (\d+)%", run.note).group(1))  # type: ignore[union-attr]
        assert run.value / 989 * 100 == pytest.approx(mfu, abs=0.5), run.name


def test_goodput_inputs_are_the_published_ones(runs: list[TrainingRun]) -> None:
    goodput = {(r.publication, r.metric): r for r in runs if r.metric in GOODPUT_METRICS}
    llama = goodput[("arXiv:2407.21783", "interruptions")]
    # Llama 3 (Sec. 3.3.4): 466 interruptions in a 54-day snapshot, 47 planned and 419 unexpected; >90% effective.
    assert (llama.value, llama.period_days, llama.n_gpus) == (466, 54, 16384)
    planned = goodput[("arXiv:2407.21783", "planned_interruptions")].value
    assert planned + goodput[("arXiv:2407.21783", "unexpected_interruptions")].value == llama.value
    assert llama.per_day == pytest.approx(466 / 54)
    assert goodput[("arXiv:2407.21783", "effective_time_ratio")].value == 0.9
    # Meta's reliability paper: job MTTF falls with job size (8 GPUs 47.7 days ... 1,024 GPUs 7.9 h).
    mttf = sorted((r.n_gpus or 0, r.base_value) for r in runs if r.metric == "mttf")
    assert [n for n, _ in mttf] == [8, 1024, 16384, 131072]
    assert all(a[1] > b[1] for a, b in zip(mttf, mttf[1:]))
    assert mttf[1][1] == pytest.approx(7.9 * 3600)


def test_units_convert_to_base_units(runs: list[TrainingRun]) -> None:
    gib = next(r for r in runs if r.metric == "peak_memory_per_gpu" and r.unit == "GiB")
    assert gib.base_value == gib.value * 2**30
    days = next(r for r in runs if r.metric == "mttf" and r.unit == "days")
    assert days.base_value == days.value * 86400
    bandwidth = next(r for r in runs if r.metric == "checkpoint_write_bandwidth")
    assert bandwidth.base_value == bandwidth.value * 1e9
    # DeepSeek-V3: 180K H800 GPU-hours per trillion tokens is 1,543 tokens/s/GPU (the figure its note gives).
    deepseek = next(r for r in runs if r.metric == "gpu_hours_per_trillion_tokens")
    assert 1e12 / deepseek.base_value == pytest.approx(1543, abs=0.5)


@pytest.mark.parametrize(
    ("cells", "column", "fragment"),
    [
        ({"value": "fast"}, "value", "must be a number"),
        ({"tp": "1.5"}, "tp", "whole number"),
        ({"n_gpus": "-8"}, "n_gpus", "above 0"),
        ({"metric": "speed"}, "metric", "must be one of"),
        ({"unit": "tok/s"}, "unit", "tokens_per_sec_per_gpu must be one of"),
        ({"source": ""}, "source", "every row needs"),
        ({"zero": "4"}, "zero", "0, 1, 2, 3, fsdp"),
        ({"recompute": "some"}, "recompute", "none, selective, full"),
        ({"metric": "mfu", "unit": "fraction", "value": "45"}, "value", "fraction of at most 1"),
        ({"metric": "tflops_per_gpu", "unit": "TFLOP/s"}, "flops_basis", "model or hardware"),
        ({"metric": "interruptions", "unit": "count"}, "period_days", "span the count covers"),
        ({"dp": "8"}, "n_gpus", "tp x pp x dp x cp is 32, not 16"),
        ({"grad_accum": "4"}, "global_batch", "is 16, not 32"),
        ({"date": "May 2024"}, "date", "YYYY"),
    ],
)
def test_bad_cell_is_one_line_naming_file_row_and_column(cells: dict[str, str], column: str, fragment: str) -> None:
    with pytest.raises(CatalogError) as err:
        parse_training_runs(_row(**cells), "runs.csv")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"runs.csv: row 1 (line 2), column {column}: ")
    assert fragment in message


def test_a_note_keeps_a_published_layout_that_does_not_multiply_out() -> None:
    (run,) = parse_training_runs(_row(dp="8", note="the layout does not multiply out in the source"), "runs.csv")
    assert run.layout_gpus == 32 and run.n_gpus == 16


def test_missing_column_and_unreadable_file(tmp_path) -> None:
    with pytest.raises(CatalogError, match=r"runs\.csv: missing column\(s\) note"):
        parse_training_runs(_row().replace(",note", "", 1), "runs.csv")
    with pytest.raises(CatalogError, match="cannot be read"):
        read_training_runs(tmp_path / "absent.csv")
