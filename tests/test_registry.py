"""The registry: the published interface, and documentation that cannot drift from the code."""

from __future__ import annotations

import inspect
import re

import pytest

from xlsxplan import registry
from xlsxplan.domains import Fraction, ParamsB, checked
from xlsxplan.registry import EXCEL_TEXT_LIMIT, FUNCTIONS, describe

# These names and argument orders are a published interface: workbooks call them, so they never change.
PUBLISHED = [
    "KV_BYTES_PER_TOKEN(layers, kv_heads, head_dim, [bytes_per_value=2])",
    "WEIGHTS_GB(params_b, [bytes_per_param=2])",
    "KV_GB(kv_bytes_per_token, tokens, [sequences=1])",
    "USABLE_GB(n_gpus, memory_gb, [usable_fraction=0.9])",
    "MAX_BATCH(params_b, bytes_per_param, kv_bytes_per_token, context_tokens, n_gpus, memory_gb, [usable_fraction=0.9])",
    "DECODE_TOKS(params_b, bytes_per_param, n_gpus, bandwidth_tb_s, [batch=1], [kv_bytes_per_token=0], "
    "[context_tokens=0], [efficiency=1])",
    "DECODE_TOKS_TOTAL(params_b, bytes_per_param, n_gpus, bandwidth_tb_s, [batch=1], [kv_bytes_per_token=0], "
    "[context_tokens=0], [efficiency=1])",
    "PREFILL_S(params_b, prompt_tokens, n_gpus, tflops, [utilisation=0.5])",
    "COST_PER_M_TOKENS(n_gpus, usd_per_gpu_hour, tokens_per_s, [utilisation=1])",
    "PEAK_TOKS(requests_per_day, tokens_per_request, [peak_factor=3])",
    "REPLICAS(demand_tokens_per_s, capacity_tokens_per_s, [spare=0])",
    "TRAIN_FLOPS(params_b, tokens)",
    "TRAIN_TOKENS(params_b, flops_per_s, seconds)",
    "CHINCHILLA_TOKENS(params_b, [tokens_per_param=20])",
    "OPTIMAL_PARAMS_B(flops_per_s, seconds, [tokens_per_param=20])",
    "FLOPS_6N(params_b, tokens_per_s)",
    "MFU(params_b, tokens_per_s, n_gpus, tflops)",
    "TRAIN_SECONDS(params_b, tokens, n_gpus, tflops, [mfu=0.4])",
    "TRAIN_MEMORY_GB(params_b, [bytes_per_param=16])",
    "COMPUTE_TOKS(params_b, tflops)",
    "MODEL_SPEC(model, field)",
    "GPU_SPEC(gpu, field)",
]

# VBA keywords and built-in names that break the generated `xlwings_udfs` module when used as parameter names.
VBA_RESERVED = set(
    """and as boolean byref byte byval call case cbool cbyte ccur cdate cdbl cdec cint clng clnglng clngptr close
    const csng cstr currency cvar cverr date decimal declare defbool defbyte defcur defdate defdbl defdec defint
    deflng deflnglng deflngptr defobj defsng defstr defvar dim do double each else elseif empty end endif enum eqv
    erase error event exit false for friend function get global gosub goto if imp implements in input integer is len
    let lib like line load lock long longlong longptr loop lset me mid mod name new next not nothing null object on
    open option optional or paramarray preserve print private property public put raiseevent redim rem resume
    return rset seek select set single spc static step stop string sub tab then to true type typeof unload unlock
    until variant wend while width with withevents write xor format""".split()
)


def test_published_signatures_are_stable():
    for signature in PUBLISHED:
        name = signature.split("(", 1)[0]
        assert FUNCTIONS[name].signature() == signature


def test_every_function_is_documented_within_excels_limits_and_nothing_is_cut():
    # The texts used to be cut to 255 characters with "...", so a length test could never fail, and
    # BATCH_FOR_TTFT's description lost its unit
    for fn in FUNCTIONS.values():
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", fn.name)
        assert fn.summary.endswith(".") and "\n" not in fn.summary, fn.name
        assert fn.unit, fn.name
        description = fn.description()
        assert len(description) <= EXCEL_TEXT_LIMIT, fn.name
        assert description.startswith(" ".join(fn.summary.split())), fn.name
        assert description.endswith(f"[{fn.unit}]."), fn.name
        assert not description.rstrip(".").endswith(".."), fn.name
        for arg in fn.args:
            assert arg.doc and arg.unit, (fn.name, arg.name)
            text = arg.help()
            assert len(text) <= EXCEL_TEXT_LIMIT, (fn.name, arg.name)
            assert text.startswith(" ".join(arg.doc.split()).rstrip(".")) and f"[{arg.unit}]" in text, (fn.name, arg)
            assert not text.endswith("..."), (fn.name, arg.name)
            if arg.optional:
                assert text.endswith(f" Optional, default {arg.default_text()}."), (fn.name, arg.name)


def test_batch_for_ttft_fits_the_wizard_whole_and_a_short_text_is_whole():
    # BATCH_FOR_TTFT's Returns text was once cut at 255 characters; shortened at its source, it now fits whole
    # (test_describe_fits_or_refuses_texts_over_excels_limit covers a text that does not)
    assert FUNCTIONS["BATCH_FOR_TTFT"].description() == (
        "Largest batch that leaves each chunked-prefill step room to read a prompt within a time-to-first-token "
        "target. Returns batch size, at most 1,000,000,000; 0 when the prompt cannot be read in time even alone "
        "[sequences]."
    )
    assert FUNCTIONS["KV_GB"].description() == (
        "KV cache held by one or more sequences of a given length. Returns KV cache [GB]."
    )  # a short one is whole


def _documented(summary: str = "Something.", returns: str = "A number", param: str = "Parameters"):
    @checked
    def fn(params_b: ParamsB) -> float:
        return params_b

    fn.__doc__ = f"""{summary}

    Parameters
    ----------
    params_b : float
        {param} [B params].

    Returns
    -------
    float
        {returns} [GB].
    """
    return fn


def test_describe_fits_or_refuses_texts_over_excels_limit():
    long = "word " * 60  # 300 characters
    fn = describe("LONG_RETURNS", _documented(returns=f"A number; {long}"), "test")
    assert fn.description() == "Something. Returns a number [GB]."
    fn = describe("NO_ROOM", _documented(returns=long), "test")
    assert fn.description() == "Something. [GB]."
    with pytest.raises(
        TypeError,
        match=r"^LONG_SUMMARY .*: the summary and unit take 306 characters; Excel shows at "
        r"most 255: shorten the summary line$",
    ):
        describe("LONG_SUMMARY", _documented(summary=long.strip() + "."), "test")
    with pytest.raises(TypeError, match=r"parameter params_b: its help takes 311 characters; Excel shows at most 255"):
        describe("LONG_ARG", _documented(param=long), "test")


def test_argument_names_are_safe_as_vba_parameter_names():
    for fn in FUNCTIONS.values():
        for arg in fn.args:
            assert arg.name.lower() not in VBA_RESERVED, (fn.name, arg.name)
            assert re.fullmatch(r"[a-z][a-z0-9_]*", arg.name)


def test_no_registry_name_shadows_a_native_excel_function():
    from openpyxl.utils import FORMULAE  # Excel's own function names, as openpyxl knows them

    from xlsxplan.headless.engine import native_function

    assert not set(FUNCTIONS) & {name.removeprefix("_xlfn.").upper() for name in FORMULAE}
    assert not [name for name in FUNCTIONS if native_function(name)]  # nor one the headless engine has
    assert native_function("SUM") and native_function("_xlfn.XLOOKUP")


def test_every_function_takes_positional_or_keyword_arguments_with_literal_defaults():
    for fn in FUNCTIONS.values():
        for param in inspect.signature(fn.func).parameters.values():
            assert param.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
            assert param.default is inspect.Parameter.empty or isinstance(param.default, (int, float, str))


def test_registry_defaults_are_the_function_defaults():
    for fn in FUNCTIONS.values():
        params = inspect.signature(fn.func).parameters
        for arg in fn.args:
            if arg.optional:
                assert params[arg.name].default == arg.default


def test_argument_docs_carry_what_is_allowed():
    kv_heads = FUNCTIONS["KV_BYTES_PER_TOKEN"].args[1]
    assert kv_heads.domain.describe() == "a whole number from 1 to 1,000,000"
    assert FUNCTIONS["USABLE_GB"].args[2].help() == (
        'Share of memory the serving engine can use ("Back-of-the-Envelope Estimation for LLM Systems" plans on 90%). '
        "[fraction] Optional, default 0.9."
    )


def test_get_is_case_insensitive():
    assert registry.get("decode_toks") is FUNCTIONS["DECODE_TOKS"]
    with pytest.raises(KeyError):
        registry.get("NOPE")


def test_describe_refuses_undocumented_parameters():
    @checked
    def bad(params_b: ParamsB, efficiency: Fraction = 1) -> float:
        """Something.

        Parameters
        ----------
        params_b : float
            Parameters [B params].

        Returns
        -------
        float
            A number [GB].
        """
        return params_b

    with pytest.raises(TypeError, match=r"documented parameters \['params_b'\] differ from the signature"):
        describe("BAD", bad, "test")


def test_describe_refuses_a_missing_unit():
    @checked
    def bad(params_b: ParamsB) -> float:
        """Something.

        Parameters
        ----------
        params_b : float
            Parameters, no unit.

        Returns
        -------
        float
            A number [GB].
        """
        return params_b

    with pytest.raises(TypeError, match=r"parameter params_b: the description must end with its unit"):
        describe("BAD", bad, "test")


def test_checked_refuses_an_argument_without_a_domain():
    def loose(a: float) -> float:
        return a

    with pytest.raises(TypeError, match=r"loose: parameter a has no Domain annotation"):
        checked(loose)
