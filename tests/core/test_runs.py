"""A benchmark run of a known number of requests, step by step (xlsxplan.core.runs): the figures it reports come out
as the engine's steps add up, worked by hand with steps of fixed length."""

from __future__ import annotations

import pytest

from xlsxplan.core.runs import simulate_run

C = 0.02  # a step of fixed length [s], whatever it computes


def _fixed(decoded: int, read: int) -> float:
    return C


def test_one_request_reads_its_prompt_then_decodes_alone():
    def step(decoded: int, read: int) -> float:
        return {(0, 500): 0.3, (1, 0): 0.01}[(decoded, read)]

    run = simulate_run(1, None, 500, 100, 10_000, 0, 8192, step)
    assert run.ttft_s == pytest.approx(0.3)  # the prompt's step gives the first token
    assert run.tpot_s == pytest.approx(0.01)
    assert run.output_tokens_per_s == pytest.approx(100 / (0.3 + 99 * 0.01))
    assert (run.steps, run.most_decoded) == (100, 1)


def test_requests_sent_at_once_are_read_together_then_decode_as_one_batch():
    seen = []

    def step(decoded: int, read: int) -> float:
        seen.append((decoded, read))
        return 0.5 if read else 0.001 * decoded

    run = simulate_run(8, None, 100, 50, 10_000, 0, 8192, step)
    assert seen == [(0, 800), (8, 0)]  # each step's time asked once: every step after the first is alike
    assert run.ttft_s == pytest.approx(0.5)
    assert run.tpot_s == pytest.approx(0.008)  # the batch of eight, decoding
    assert (run.steps, run.most_decoded) == (50, 8)


def test_a_full_kv_cache_makes_the_later_requests_wait_for_the_earlier_to_finish():
    # room for two requests (prompt + output each): four sent at once run as two pairs, the second pair admitted when
    # the first finishes at step O, read in the step after
    prompt, output = 100, 10
    run = simulate_run(4, None, prompt, output, 2 * (prompt + output), 0, 8192, _fixed)
    assert run.ttft_s == pytest.approx((C + C + (C * output + C) * 2) / 4)
    assert run.tpot_s == pytest.approx(C)
    assert run.output_tokens_per_s == pytest.approx(4 * output / (2 * C * output))
    assert run.most_decoded == 2


def test_the_step_budget_reads_as_many_prompts_as_it_holds():
    # 300 tokens a step, each decoded sequence one of them: three 100-token prompts in the first step, two beside the
    # three decoding (297 tokens left), the last beside five, then six decoding
    seen = []

    def step(decoded: int, read: int) -> float:
        seen.append((decoded, read))
        return C

    simulate_run(6, None, 100, 5, 100_000, 0, 300, step)
    assert seen[:4] == [(0, 300), (3, 200), (5, 100), (6, 0)]
    run = simulate_run(6, None, 100, 5, 100_000, 4, 0, _fixed)
    assert run.most_decoded == 4  # the engine's max_batch holds the batch


def test_a_rate_the_engine_keeps_up_with_gives_that_rate_of_output():
    run = simulate_run(2_000, 10.0, 200, 100, 1e9, 0, 8192, lambda d, p: 0.005 + 0.0001 * d + 0.00001 * p)
    # the last request arrives at 199.9 s and takes about a second: the run's output rate is the arrival rate's
    assert run.output_tokens_per_s == pytest.approx(10.0 * 100, rel=0.01)
    assert run.most_decoded < 100  # the batch Little's law puts it at, not what memory holds


def test_a_request_that_cannot_fit_is_refused():
    with pytest.raises(ValueError, match="does not fit a step of 50: reading it in chunks is not modelled"):
        simulate_run(3, None, 100, 10, 1e6, 0, 50, _fixed)
    with pytest.raises(ValueError, match="rate must be above 0"):
        simulate_run(3, 0.0, 100, 10, 1e6, 0, 8192, _fixed)
    with pytest.raises(ValueError, match="a step must take some time"):
        simulate_run(3, None, 100, 10, 1e6, 0, 8192, lambda d, p: 0.0)
    with pytest.raises(ValueError, match="0 \\(no limit\\) or more"):
        simulate_run(3, None, 100, 10, 1e6, -1, 8192, _fixed)
    with pytest.raises(ValueError, match="does not fit in the KV cache"):
        simulate_run(1, None, 1_000, 100, 500, 0, 8192, _fixed)
    with pytest.raises(ValueError, match="at least one request"):
        simulate_run(0, None, 100, 10, 1e6, 0, 8192, _fixed)
