"""A log pasted whole in some wrapping reads as the log itself (bot/diagnose/paste.py).

The logs are the engines' crash fixtures (tests/engines/<engine>/crashes/*.json, each with its source); the wrappings
are those people paste through: Slack's entity escaping of &, < and > (api.slack.com/reference/surfaces/formatting,
"Escaping text"), a page's HTML escaping, a Markdown / e-mail quote, ``cat -n``'s numbers, a whole log in one JSON
string (a log shipper's record) and a Python repr of captured output (``stderr: b'...'``).
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.diagnose import diagnose
from bot.diagnose.paste import undo_paste

_FIXTURES = sorted(Path(__file__).parent.joinpath("engines").glob("*/crashes/*.json"))

WRAPPINGS: dict[str, Callable[[str], str]] = {
    "slack entities": lambda log: log.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"),
    "html escaped": html.escape,
    "markdown quote": lambda log: "\n".join(f"> {line}" for line in log.split("\n")),
    "quote in a quote": lambda log: "\n".join(f"> > {line}" for line in log.split("\n")),
    "cat -n": lambda log: "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(log.split("\n"), start=1)),
    "editor gutter": lambda log: "\n".join(f"{n} | {line}" for n, line in enumerate(log.split("\n"), start=120)),
    "one json string": lambda log: json.dumps({"ts": "2025-06-01T10:00:00Z", "log": log}),
    "python repr": lambda log: f"server exited (code 1), stderr: {(log + chr(10)).encode()!r}",
    "markdown code fence": lambda log: f"```log\n{log}\n```",
}


def _fixture(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize("wrapping", WRAPPINGS)
@pytest.mark.parametrize("path", _FIXTURES, ids=lambda p: f"{p.parent.parent.name}-{p.stem}")
def test_a_wrapped_paste_gets_the_verdict_of_the_log(path: Path, wrapping: str) -> None:
    log = _fixture(path)["log"]
    plain = diagnose(log)
    wrapped = diagnose(WRAPPINGS[wrapping](log))
    assert (wrapped.category, wrapped.cause) == (plain.category, plain.cause)


def test_the_fixtures_are_there() -> None:
    assert len(_FIXTURES) >= 20  # both engines, a crash of every category


def test_a_log_of_no_wrapping_comes_back_unchanged() -> None:
    log = ("[2025-06-01 10:00:00 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, mem usage=14.3 GB\n"
           "8 GPUs found, 2 nodes\n"
           "9 ranks joined\n"
           "> 0 tokens pending (a line that begins with its own '>')\n"
           "ERROR: cannot parse 'a&b' (a message of its own ampersand)\n"
           "ValueError: bad value '\\n' for --stop (one escaped newline in a message is kept)\n"
           'Traceback (most recent call last):\n'
           '  File "/x/triton/backends/nvidia/compiler.py", line 9, in make_cubin\n'
           '    raise PTXASError(f"{error}\\n\\n{log}")  (the code under a frame keeps its literals)')
    # Only one line in nine is quoted and the leading numbers do not go up one a line: neither is a wrapping.
    assert undo_paste(log) == list(enumerate(log.split("\n"), start=1))


def test_numbers_that_do_not_count_lines_stay() -> None:
    log = "\n".join(f"{rank} NCCL INFO Channel 00/02 : 0 1" for rank in (0, 0, 1, 1, 3, 2))
    assert [line for _, line in undo_paste(log)] == log.split("\n")


def test_a_repr_keeps_what_surrounds_it_on_lines_of_its_own() -> None:
    pasted = "job failed: stderr: b'Traceback (most recent call last):\\n  File \"/x.py\", line 3, in <module>\\n" \
             "ModuleNotFoundError: No module named \\'vllm\\'\\n' (exit 1)"
    assert undo_paste(pasted) == [(1, line) for line in [
        "job failed: stderr:", "Traceback (most recent call last):", '  File "/x.py", line 3, in <module>',
        "ModuleNotFoundError: No module named 'vllm'", "", "(exit 1)"]]
    assert diagnose(pasted).category == "missing_dependency"


def test_evidence_in_a_squashed_log_names_the_line_that_held_it() -> None:
    pasted = "INFO starting\n" + json.dumps("Traceback (most recent call last):\n  File \"/x.py\", line 3\n"
                                           "OSError: [Errno 98] Address already in use\n")
    result = diagnose(pasted)
    assert result.category == "port_in_use"
    assert result.evidence[0].line == 2


def test_a_line_in_markdown_emphasis_or_inline_code_reads_as_the_line() -> None:
    assert undo_paste("[rank1]: **RuntimeError: world_size (8) is not equal to tensor_model_parallel_size (4)**") == [
        (1, "[rank1]: RuntimeError: world_size (8) is not equal to tensor_model_parallel_size (4)")]
    assert undo_paste("`ValueError: bad`") == [(1, "ValueError: bad")]
    # (marks inside a line are the line's own: an option quoted in a message, a product's **bold** name)
    assert undo_paste("use `--model` here\n**a** and **b**") == [(1, "use `--model` here"), (2, "**a** and **b**")]


def test_inline_code_that_spans_lines_loses_only_its_unmatched_edge_marks() -> None:
    # (a code span opened on the error's line and closed on the next, or closed after a traceback's last line)
    assert undo_paste("`ConnectionError: can't be reached at 0.0.0.0:8000. Run `trl vllm-serve`.\n`") == [
        (1, "ConnectionError: can't be reached at 0.0.0.0:8000. Run `trl vllm-serve`."), (2, "")]
    assert undo_paste("    assert isinstance(config_dict, dict)\nAssertionError`") == [
        (1, "    assert isinstance(config_dict, dict)"), (2, "AssertionError")]
    assert undo_paste("a `b` c") == [(1, "a `b` c")]


def test_an_ipython_traceback_frame_reads_as_python_s_own() -> None:
    # IPython.core.ultratb's frame line (Jupyter, Colab): path:line, then the function with its arguments
    frame = ("File ~/envs/rl/lib/python3.10/site-packages/vllm/v1/worker/gpu_model_runner.py:2874, in "
             "GPUModelRunner._dummy_sampler_run(self, hidden_states)")
    assert undo_paste(frame) == [(1, 'File "~/envs/rl/lib/python3.10/site-packages/vllm/v1/worker/gpu_model_runner.py", '
                                     "line 2874, in GPUModelRunner._dummy_sampler_run")]
    log = "\n".join(["INFO 11-01 23:47:29 [gpu_model_runner.py:3118] Graph capturing finished in 23 secs, took 2.28 GiB",
                     "OutOfMemoryError                          Traceback (most recent call last)", frame,
                     "   2873 try:"])
    # (the frame below IPython's header, not the capture that finished above it, says where the OOM struck)
    assert diagnose(log).category == "kv_cache_insufficient"
