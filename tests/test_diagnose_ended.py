"""A process known to be gone (the pipeline's crash path: ``ended=True``) is never diagnosed ``none``.

The logs are written in the engines' own start-up wording (vLLM 0.8's worker and API server lines, SGLang's
scheduler lines); what they share is that they hold no error, so only how the process ended is evidence.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

STARTING = """INFO 04-29 08:40:16 [llm_engine.py:240] Initializing a V0 LLM engine (v0.8.5) with config: model='/models/q'
INFO 04-29 08:40:31 [model_runner.py:1110] Loading model weights took 14.2466 GB
INFO 04-29 08:40:33 [model_runner.py:1442] Capturing cudagraphs for decoding."""

SERVING = """[2025-09-01 10:00:01] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
[2025-09-01 10:00:02] The server is fired up and ready to roll!
[2025-09-01 10:00:12 TP0] Decode batch. #running-req: 1, #token: 512, token usage: 0.01, cuda graph: True, gen throughput (token/s): 39.57, #queue-req: 0"""

#: A request's error (vLLM's serving_chat.py logs it and answers 400), then more serving: routine, never evidence.
REFUSED = """INFO:     Started server process [7]
INFO:     Application startup complete.
ERROR 05-01 10:00:05 [serving_chat.py:201] Error in preprocessing prompt inputs
INFO:     127.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request
INFO:     127.0.0.1:5002 - "POST /v1/chat/completions HTTP/1.1" 200 OK"""

#: An engine error the server outlived (it answered a request after it).
OUTLIVED = """INFO:     Started server process [7]
INFO:     Application startup complete.
ERROR 05-01 10:00:05 [async_llm.py:420] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
INFO:     127.0.0.1:5002 - "POST /v1/chat/completions HTTP/1.1" 200 OK"""


@pytest.mark.parametrize("log", [STARTING, SERVING, REFUSED], ids=["starting", "serving", "refused"])
def test_a_log_without_an_error_reads_healthy_only_while_the_process_may_live(log: str) -> None:
    assert diagnose(log).category == "none"
    gone = diagnose(log, ended=True)
    assert gone.category == "other" and gone.confidence <= 0.3
    assert "no exit status recorded" in gone.cause
    assert gone.alternatives == ["host_oom_killed"]
    assert gone.evidence[0].text == log.splitlines()[-1]  # how far it got: the last thing it said


def test_when_it_died_is_said_from_the_log() -> None:
    assert "before the server came up" in diagnose(STARTING, ended=True).cause
    assert "while the server was up" in diagnose(SERVING, ended=True).cause


def test_an_exit_status_of_zero_is_a_stop_on_request() -> None:
    gone = diagnose(SERVING, exit_code=0, ended=True)
    assert gone.category == "other" and "status 0" in gone.cause and gone.alternatives == []
    assert gone.next_steps[0].startswith("find who stopped it")
    assert not any("issue tracker" in step for step in gone.next_steps)  # not an engine bug to search for


def test_the_error_a_server_outlived_is_quoted_beside_the_end() -> None:
    assert diagnose(OUTLIVED).category == "none"
    gone = diagnose(OUTLIVED, ended=True)
    assert gone.category == "other" and "no error after the one it had outlived" in gone.cause
    assert any("CUDA out of memory" in line.text for line in gone.evidence)


@pytest.mark.parametrize(("code", "category"), [(137, "host_oom_killed"), (139, "other")])
def test_a_signal_exit_is_read_as_before(code: int, category: str) -> None:
    assert diagnose(STARTING, exit_code=code, ended=True).category == category
    assert diagnose(STARTING, exit_code=code).category == category
