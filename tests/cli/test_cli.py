"""The command line: `xlsxplan eval` and `xlsxplan functions`, in-process and as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import REPO
from xlsxplan import registry
from xlsxplan.cli import format_value, main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_eval_prints_the_bare_value(capsys):
    # The first example a user tries: `xlsxplan eval "=ROUND(DECODE_TOKS(72.7,1,2,3.35),0)"` prints `92`
    assert run(capsys, "eval", "=ROUND(DECODE_TOKS(72.7,1,2,3.35),0)") == (0, "92\n", "")
    assert run(capsys, "eval", "=KV_BYTES_PER_TOKEN(80,8,128,2)")[1] == "327680\n"
    assert run(capsys, "eval", '=MODEL_SPEC("Qwen2.5-72B","layers")')[1] == "80\n"
    assert run(capsys, "eval", '=GPU_SPEC("H200","bandwidth_tb_s")')[1] == "4.8\n"
    assert run(capsys, "eval", "=DECODE_TOKS_TOTAL(72.7,1,2,3.35,94,327680,2300)")[1] == "4387.492161311242\n"
    assert run(capsys, "eval", "=TRAIN_FLOPS(7,140e9)")[1] == "5.88e+21\n"
    assert run(capsys, "eval", '=MODEL_SOURCE("Qwen2.5-72B","params_b")')[1].startswith(
        "Qwen/Qwen2.5-72B-Instruct model card"
    )


def test_eval_without_equals_sign(capsys):
    assert run(capsys, "eval", "WEIGHTS_GB(72.7)")[1] == "145.4\n"


def test_eval_format_adds_grouping_and_unit(capsys):
    assert run(capsys, "eval", "--format", "=DECODE_TOKS_TOTAL(72.7,1,2,3.35,94,327680,2300)")[1] == "4,387 tokens/s\n"
    assert run(capsys, "eval", "--format", "=KV_GB(327680,2300)")[1] == "0.7537 GB\n"


def test_eval_array_prints_rows(capsys):
    assert run(capsys, "eval", "=WEIGHTS_GB({7;70},{2,1})")[1] == "14\t7\n140\t70\n"


def test_eval_error_prints_value_and_message_with_status_1(capsys):
    code, out, _ = run(capsys, "eval", "=KV_BYTES_PER_TOKEN(80,-1,128)")
    assert code == 1
    assert out == "#NUM! kv_heads must be a whole number from 1 to 1,000,000, got -1\n"
    code, out, _ = run(capsys, "eval", '=GPU_SPEC("H1000","memory_gb")')
    assert (code, out) == (1, "#N/A gpu 'H1000' is not in the catalog; did you mean H100-SXM, V100, H800?\n")


def test_functions_lists_every_function_with_argument_docs(capsys):
    code, out, _ = run(capsys, "functions")
    assert code == 0
    for fn in registry.FUNCTIONS.values():
        assert fn.signature() in out
        for arg in fn.args:
            assert f"{arg.name}: {arg.doc} [{arg.unit}]" in out


def test_functions_json(capsys):
    code, out, _ = run(capsys, "functions", "--json")
    data = json.loads(out)
    assert [d["name"] for d in data] == list(registry.FUNCTIONS)
    kv = data[0]
    assert kv["name"] == "KV_BYTES_PER_TOKEN"
    assert kv["args"][3] == {
        "name": "bytes_per_value",
        "doc": "Bytes per cached number, or a precision name: 2 for BF16, 1 for FP8.",
        "unit": "bytes",
        "optional": True,
        "default": 2,
        "allowed": "a positive number of bytes up to 64 or a precision name such as bf16, fp8 or int4",
    }


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["eval"])
    assert info.value.code == 2


@pytest.mark.parametrize(
    "value, text", [(92.0, "92"), (0.1, "0.1"), (327680, "327680"), (True, "TRUE"), ("x", "x"), (5.88e21, "5.88e+21")]
)
def test_format_value(value, text):
    assert format_value(value) == text


@pytest.mark.slow
def test_installed_command_runs_as_a_subprocess():
    proc = subprocess.run(
        [sys.executable, "-m", "xlsxplan", "eval", "=ROUND(DECODE_TOKS(72.7,1,2,3.35),0)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (proc.returncode, proc.stdout) == (0, "92\n")
    proc = subprocess.run(
        [sys.executable, "-m", "xlsxplan", "eval", "=PREFILL_S(72.7,2000,2,0)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and proc.stdout.startswith("#NUM! tflops must be")
    assert "Traceback" not in proc.stdout + proc.stderr


_LOADED = """
import sys
from xlsxplan.cli import main
code = main(sys.argv[1:])
print("loaded:" + ",".join(sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[0].split(",")))))
"""
UNUSED = "openpyxl,xlwings,tqdm,scipy,formulas,schedula,defusedxml"


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv, unused",
    [
        (["eval", "=ROUND(DECODE_TOKS(72.7,1,2,3.35),0)"], UNUSED),  # no workbook: no XML or workbook library
        (["recalc", "workbooks/training_plan.xlsx", "-o", "{out}", "-q"], "openpyxl,xlwings,tqdm,scipy,formulas"),
    ],
)
def test_a_command_imports_only_what_it_uses(argv, unused, tmp_path):
    # start-up time: eval and recalc load neither openpyxl (recalc edits the package itself) nor a progress bar
    # when nothing is shown, nor anything of the Excel face

    root = REPO
    argv = [a.format(out=tmp_path / "out.xlsx") for a in argv]
    proc = subprocess.run(
        [sys.executable, "-c", _LOADED.replace("sys.argv[0]", repr(unused)), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "loaded:"


def test_eval_warns_about_an_implausible_unit_but_still_answers(capsys):
    # A bandwidth of 3350 where TB/s is meant is legal but suspicious: a warning, not a refusal
    code, out, err = run(capsys, "eval", "=DECODE_TOKS(72.7,1,2,3350)")
    assert code == 0 and float(out) > 90_000
    assert err == "xlsxplan: warning: bandwidth_tb_s = 3,350 is outside the usual range 0.01 to 50: check its unit\n"
    assert run(capsys, "eval", "=DECODE_TOKS(72.7,1,2,3.35)")[2] == ""


def test_a_closed_pipe_ends_quietly():
    # `xlsxplan functions --json | head -1`: no traceback when the reader leaves early. The JSON (over 100 KB) is
    # larger than a pipe's buffer (64 KB on Linux), so the writer is still writing when the pipe closes.
    proc = subprocess.Popen(
        [sys.executable, "-m", "xlsxplan", "functions", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.readline()
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 141
    assert b"Traceback" not in err


def test_eval_array_prints_each_failed_elements_reason(capsys):
    # Each failed element of an array result prints its reason, not a bare #NUM!
    code, out, _ = run(capsys, "eval", "=WEIGHTS_GB({-1;7},{2;-1})")
    assert code == 1  # an array with a failed element exits 1, as a failed scalar does
    assert out == (
        "#NUM! params_b must be a positive number up to 1,000,000, got -1\n"
        "#NUM! bytes_per_param must be a positive number of bytes up to 64 or a precision name such as bf16, fp8 or "
        "int4, got -1\n"
    )


def test_docs_refuses_a_checkout_it_cannot_read_in_one_line(capsys, tmp_path):
    # A missing root or a bad file is one line and an exit status, never a FileNotFoundError or ValueError traceback
    missing = tmp_path / "missing"
    assert run(capsys, "docs", "--check", "--root", str(missing)) == (
        2,
        "",
        f"xlsxplan: error: cannot read {missing / 'README.md'}: no such file (--root names the checkout holding "
        "README.md)\n",
    )
    assert run(capsys, "docs", "--root", str(missing))[0] == 2 and not missing.exists()
    (tmp_path / "README.md").write_text("# A README without the markers\n", encoding="utf-8")
    for argv in (["docs", "--check"], ["docs"]):
        code, out, err = run(capsys, *argv, "--root", str(tmp_path))
        assert (code, out) == (2, "")
        assert err.startswith(f"xlsxplan: error: {tmp_path / 'README.md'} has no function-reference markers: put ")
        assert err.count("\n") == 1
    from xlsxplan.cli.reference import END, START

    (tmp_path / "README.md").write_text(f"# Stale\n{START}\nold\n{END}\n", encoding="utf-8")
    assert run(capsys, "docs", "--check", "--root", str(tmp_path)) == (
        1,
        "stale: README.md (run `xlsxplan docs`)\nstale: docs/FUNCTIONS.md (run `xlsxplan docs`)\n",
        "",
    )
    (tmp_path / "docs").write_text("a file where the folder goes", encoding="utf-8")
    assert run(capsys, "docs", "--check", "--root", str(tmp_path)) == (
        2,
        "",
        f"xlsxplan: error: cannot read {tmp_path / 'docs' / 'FUNCTIONS.md'}: Not a directory\n",
    )
    assert run(capsys, "docs", "--root", str(tmp_path)) == (
        2,
        "",
        f"xlsxplan: error: cannot use {tmp_path / 'docs'} as a folder: it is a file\n",
    )


def test_build_and_excel_lite_refuse_an_output_folder_they_cannot_make_in_one_line(capsys, tmp_path):
    # A folder that cannot be made is one line, never a FileExistsError / FileNotFoundError traceback from mkdir
    afile = tmp_path / "afile"
    afile.write_text("not a folder", encoding="utf-8")
    assert run(capsys, "build", "--out", str(afile)) == (
        2,
        "",
        f"xlsxplan: error: cannot use {afile} as a folder: it is a file\n",
    )
    code, out, err = run(capsys, "build", "--out", str(afile / "sub"))
    assert (code, out) == (
        2,
        "",
    ) and err == f"xlsxplan: error: cannot create the folder {afile / 'sub'}: Not a directory\n"
    code, out, err = run(capsys, "excel", "--checks-only", "--lite", str(afile / "sub"))
    assert (code, out) == (
        2,
        "",
    ) and err == f"xlsxplan: error: cannot create the folder {afile / 'sub'}: Not a directory\n"


def test_eval_format_adds_a_unit_only_to_a_formula_that_is_one_registry_call(capsys):
    # FLOPs over FLOP/s is seconds: a formula's unit is the result's, not the first function's
    assert run(capsys, "eval", "--format", "=TRAIN_FLOPS(7,1E11)/FLOPS_6N(7,1000)")[1] == "100,000,000\n"
    assert run(capsys, "eval", "--format", '=WEIGHTS_GB(7)+LEN(")")')[1] == "15.00\n"
    assert run(capsys, "eval", "--format", " = WEIGHTS_GB( 7 , 2 ) ")[1] == "14.00 GB\n"


@pytest.mark.parametrize(
    "text, unit",
    [
        ("=KV_GB(327680,2300)", "GB"),
        ('=WEIGHTS_GB(MODEL_SPEC("a)b(","params_b"))', "GB"),  # parentheses inside text do not count
        ('=WEIGHTS_GB(MODEL_SPEC("say ""x)"" twice","params_b"))', "GB"),
        ("=WEIGHTS_GB(7)*2", ""),
        ("=WEIGHTS_GB(7)/KV_GB(327680,2300)", ""),
        ('=WEIGHTS_GB(7)+LEN(")")', ""),
        ("=TRAIN_FLOPS(7,1E11)/FLOPS_6N(7,1000)", ""),
        ('=WEIGHTS_GB(7)&")"', ""),
        ("=ROUND(WEIGHTS_GB(7),0)", ""),
        ("=WEIGHTS_GB(7", ""),
        ("=NOT_A_FUNCTION(7)", ""),
    ],
)
def test_the_unit_of_a_formula(text, unit):
    from xlsxplan.cli.cmd_eval import _result_kind

    assert _result_kind(text)[0] == unit


@pytest.mark.parametrize(
    "x, text",
    [
        (0, "0"),
        (0.0, "0"),
        (-0.0, "0"),
        (4387.49, "4,387"),
        (0.753664, "0.7537"),
        (5.88e21, "5.880e+21"),
        (1e-5, "1.000e-05"),
    ],
)
def test_human_number(x, text):
    # Zero prints as "0", not "0.0"
    from xlsxplan.cli.common import human_number

    assert human_number(x) == text


def test_eval_format_prints_zero_as_zero(capsys):
    assert run(capsys, "eval", "--format", '=IFERROR(GPU_SPEC("A100","fp8_tflops"),0)')[1] == "0\n"


def test_a_bad_user_preset_is_warned_about_once_and_fails_only_its_own_lookups(capsys, tmp_path, monkeypatch):
    # One hand-edited preset that breaks the schema must not make every MODEL_SPEC and GPU_SPEC #VALUE!
    from xlsxplan import catalog

    monkeypatch.setenv("XLSXPLAN_CATALOG_DIR", str(tmp_path))
    path = tmp_path / "models.toml"
    path.write_text('[sources]\ns = "mine"\n[models.Mine]\nsource = "s"\nparams_b = true\n', encoding="utf-8")
    catalog.refresh()
    problem = f"{path}: Mine.params_b: Input should be a valid number, got true"
    warning = f"xlsxplan: warning: {problem} (left out until fixed; the rest of the catalog works)\n"
    assert run(capsys, "eval", '=MODEL_SPEC("Qwen2.5-72B","layers")') == (0, "80\n", warning)
    assert run(capsys, "eval", '=GPU_SPEC("H100","memory_gb")') == (0, "80\n", "")  # once per process
    code, out, err = run(capsys, "eval", '=MODEL_SPEC("Mine","layers")')
    assert (code, out, err) == (1, f"#VALUE! model preset 'Mine' cannot be used: {problem}\n", "")
    code, out, err = run(capsys, "model", "show", "mine")
    assert (code, out, err) == (2, "", f"xlsxplan: error: model preset 'mine' cannot be used: {problem}\n")
    code, out, _ = run(capsys, "excel", "--checks-only")
    assert code == 1 and f"FAIL  the user's catalog: {problem} (left out; the rest works)" in out


def test_model_list_names_a_user_preset_left_out(capsys, tmp_path, monkeypatch):
    from xlsxplan.cli import common

    monkeypatch.setenv("XLSXPLAN_CATALOG_DIR", str(tmp_path))
    monkeypatch.setattr(common, "_warned", set())
    (tmp_path / "models.toml").write_text("[models.Mine\n", encoding="utf-8")
    code, out, err = run(capsys, "model", "list")
    assert code == 0 and "Qwen2.5-72B" in out and "Mine" not in out
    assert err.startswith(f"xlsxplan: warning: {tmp_path / 'models.toml'}: not valid TOML: ") and err.count("\n") == 1


@pytest.mark.parametrize(
    "formula, text",
    [
        # *_SPEC prints each field's own unit, never the placeholder "field unit", and whole counts without decimals
        ('=GPU_SPEC("H200","bandwidth_tb_s")', "4.800 TB/s"),
        ('=GPU_SPEC("H200", " Memory_GB ")', "141.0 GB"),
        ('=GPU_SPEC("H100","bf16_tflops")', "989.4 TFLOP/s"),
        ('=MODEL_SPEC("Qwen2.5-72B","layers")', "80"),
        ('=MODEL_SPEC("Qwen2.5-72B","context")', "131,072 tokens"),
        ('=MODEL_SPEC("Qwen2.5-72B","params_b")', "72.70 B params"),
        ('=MODEL_SPEC("Qwen2.5-72B",LOWER("LAYERS"))', "80.00"),  # a field that is not written out: unit unknown
        (
            '=MODEL_SPEC("say ""a,b""","layers")',
            "#N/A model 'say \"a,b\"' is not in the catalog; see MODELS() for the list",
        ),
        ("=MAX_BATCH(72.7,1,327680,2300,2,80)", "94 sequences"),
        ("=REPLICAS(20833,4387)", "5"),
        ("=REPLICAS(20833,4387,2)", "7"),
        ("=KV_BYTES_PER_TOKEN(80,8,128)", "327,680 bytes"),
        ("=WEIGHTS_GB(7)", "14.00 GB"),  # not a count: four figures, as before
    ],
)
def test_eval_format_prints_each_results_own_unit_and_whole_counts_whole(capsys, formula, text):
    assert run(capsys, "eval", "--format", formula)[1] == text + "\n"


def test_eval_exits_1_when_any_element_of_an_array_is_an_error(capsys):
    code, out, _ = run(capsys, "eval", '=KV_BYTES_PER_TOKEN(80,8,128,{1,2,"x"})')
    assert code == 1
    assert out.startswith("163840\t327680\t#N/A bytes_per_value: precision 'x' is not a known format; known: ")
    assert run(capsys, "eval", "=KV_BYTES_PER_TOKEN(80,8,128,{1,2})") == (0, "163840\t327680\n", "")
    assert run(capsys, "eval", "={1,2}/0")[0] == 1  # a native function's error elements too


def test_functions_output_starts_with_the_first_category(capsys):
    code, out, _ = run(capsys, "functions")
    assert code == 0 and out.startswith("xlsxplan Serving\n  KV_BYTES_PER_TOKEN(")
    assert "\n\nxlsxplan Training\n" in out and "\n\n\n" not in out


def test_plan_names_every_missing_required_option_at_once(capsys):
    assert main(["plan", "--prompt-tokens", "2000"]) == 2
    assert capsys.readouterr().err == (
        "xlsxplan plan: error: --model (a preset name, shipped or imported with `xlsxplan model add`), "
        "--requests-per-day, --output-tokens are required\n"
    )


def test_a_command_builds_its_own_parser_alone_and_its_help_is_the_same(monkeypatch, capsys):
    # `xlsxplan recalc ...` imports one command module (cmd_recalc), where it imported all twelve and the planning
    # modules they import; each command's --help, built alone, is what the parser of every command prints
    import importlib

    from xlsxplan import cli

    imported = []
    real = importlib.import_module
    monkeypatch.setattr(importlib, "import_module", lambda name, *a: imported.append(name) or real(name, *a))
    cli._parser(["recalc", "in.xlsx", "-q"])
    assert imported == ["xlsxplan.cli.cmd_recalc"]
    imported.clear()
    cli._parser([])
    commands = [name.removeprefix("xlsxplan.cli.cmd_") for name in imported]
    assert len(commands) == 12 and "recalc" in commands
    for command in commands:
        helps = []
        for parser in (cli._parser([]), cli._parser([command])):
            with pytest.raises(SystemExit, match="^0$"):
                parser.parse_args([command, "--help"])
            helps.append(capsys.readouterr().out)
        assert helps[0] == helps[1] and f"usage: xlsxplan {command} " in helps[0]
