"""The healthy path of a tail: is the server up, serving, or still starting; and the ``none`` diagnosis for it.

Lines the engine's healthy path explains (weights loaded, KV cache allocated, decode statistics) are never matched
against the crash rules; an error followed by a server that kept serving is not a crash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.diagnose.reading import in_traceback
from bot.diagnose.rules import GENERIC_ERROR
from bot.diagnose.types import LogLine
from bot.diagnose.render import evidence_of, last_line
from bot.logevents import DecodeStats, LogReader, NormalizedLine, ServerReady
from bot.models import Diagnosis

#: Access-log and scheduler lines of a working server: never an error, so never matched against the rules.
#: (not a 4xx: a client of another server logs those too, SGLang's warm-up through an HTTP proxy that refused it)
_ROUTINE = re.compile(r'"(?:GET|POST|PUT|DELETE|HEAD) [^"]*HTTP/[\d.]+" [1-3]\d\d\b|^Prefill batch(?: \[\d{1,12}\])?[.,] #new-seq')
#: vLLM's per-request handlers log under their own module names (entrypoints/openai/serving_chat.py,
#: serving_completion.py, serving_engine.py, chat_completion/serving.py, protocol.py, tool_parsers/*_tool_parser.py,
#: reasoning/*_reasoning_parser.py): a request rejected ("This model's maximum context length is ...", "At most 1
#: image(s) may be provided in one request", "Error in extracting tool call from response") is answered with an HTTP
#: error and the server goes on, so such a line is proof the server was serving, never the crash -- unless it says
#: the engine under it is gone.
_REQUEST_HANDLER = re.compile(r"(?:\[|\s)(?:serving(?:_\w{1,30})?|\w{1,30}_tool_parser|\w{1,30}_reasoning_parser"
                              r"|protocol)\.py:\d{1,6}\]")
#: Lines that say the engine under a running server is gone for good (vLLM v1/engine/exceptions.py EngineDeadError,
#: V0's AsyncEngineDeadError "Background loop has errored already"; SGLang's scheduler giving up after repeated
#: errors, scheduler.py "Scheduler terminated after N consecutive errors"; V0's launcher "MQLLMEngine is already
#: dead, terminating server process"): requests answered after such a line are
#: the in-flight ones being failed, not proof of life, so the server is down.
ENGINE_DEAD = re.compile(r"\bEngineDeadError\b|\bAsyncEngineDeadError\b|Background loop has errored already"
                         r"|Scheduler terminated after \d{1,6} consecutive errors|Engine loop has died"
                         # (V0's API server over its engine process: entrypoints/launcher.py)
                         r"|\bMQLLMEngine is already dead\b"
                         # (V1's executor and client when a process under them dies: the engine is shut down, and what
                         # the API server logs after it are stale stats and failed requests; vllm-project/vllm#23582)
                         r"|died unexpectedly, shutting down (?:executor|client)\b", re.IGNORECASE)
#: A request handler's line that names the engine under it, or says it is gone, is not one request's error.
_ENGINE_GONE = re.compile(r"EngineDead|engine (?:is )?dead|EngineCore|Engine loop|shutting down|"
                          + ENGINE_DEAD.pattern, re.IGNORECASE)
#: vLLM before 0.8 logs "No platform detected" before a platform plugin (vllm-ascend) activates: routine then.
_NO_PLATFORM_YET = re.compile(r"No platform detected, vLLM is running on UnspecifiedPlatform")
_PLUGIN_PLATFORM = re.compile(r"Platform plugin (?!cuda\b)\w+ is activated", re.IGNORECASE)
#: The line that says the server listens: the first proof of life a person looks for.
_LISTENING = re.compile(r"Starting vLLM (?:API )?server(?: \d+)?(?: \([^)\n]{1,60}\))? on|Uvicorn running on"
                        r"|fired up and ready to roll")
_HTTP_UP = re.compile(r"Uvicorn running on|Application startup complete|\"GET /(?:get_)?model_info HTTP/1\.1\" 200")


@dataclass
class Health:
    ready: LogLine | None = None
    ready_pos: int = -1
    decode: DecodeStats | None = None
    decode_line: LogLine | None = None
    decode_pos: int = -1
    last_step: LogLine | None = None  # the last milestone of the start (weights, KV cache, graphs)
    http_up: LogLine | None = None  # the HTTP server listens (SGLang: warm-up not finished yet)
    listening: LogLine | None = None  # "Starting vLLM server on ...", "Uvicorn running on ...", "fired up"
    listening_pos: int = -1
    served: LogLine | None = None  # the last request answered
    served_pos: int = -1  # the last request the server answered (an access-log line with a 2xx/3xx status)
    routine: set[int] = field(default_factory=set)  # positions of lines that are healthy progress, not errors

    dead_pos: int = -1  # the first line saying the engine under the server is gone (ENGINE_DEAD), -1: none

    @property
    def died_while_up(self) -> bool:
        """The engine said it is gone and no ready line came after that (no restart): whatever the server answered
        after it were the requests in flight being failed."""
        return self.dead_pos >= 0 and self.ready_pos < self.dead_pos

    @property
    def alive_pos(self) -> int:
        """The last position where the server showed it was up (listening, ready, decoding or answering requests);
        -1: never. An engine only opens its HTTP server once its model is loaded, so an error above that line did
        not stop the start."""
        return max(self.ready_pos, self.decode_pos, self.served_pos, self.listening_pos)


def read_health(lines: list[LogLine], engine: str | None) -> Health:
    reader = LogReader(engine)
    health = Health()
    plugin_platform = any(_PLUGIN_PLATFORM.search(line.text) for line in lines)
    in_request_traceback = False
    for pos, line in enumerate(lines):
        if _HTTP_UP.search(line.text):
            health.http_up = line
        if health.dead_pos < 0 and ENGINE_DEAD.search(line.text):
            health.dead_pos = pos
        request = _REQUEST_HANDLER.search(line.raw) and not _ENGINE_GONE.search(line.text)
        # logger.exception prints the handler's traceback without the prefix: it is the request's too
        in_request_traceback = bool(request) or (
            in_request_traceback and (in_traceback(line) or bool(GENERIC_ERROR.search(line.text)))
            and not _ENGINE_GONE.search(line.text))
        if _ROUTINE.search(line.text) or in_request_traceback:
            health.routine.add(pos)
            health.served, health.served_pos = line, pos
        if plugin_platform and _NO_PLATFORM_YET.search(line.text):
            health.routine.add(pos)
        if health.listening is None and _LISTENING.search(line.text):
            health.listening, health.listening_pos = line, pos
        for event in reader.feed_normalized(NormalizedLine(line.text, line.level, None), line.raw):
            if event.kind == "error_line":
                continue
            health.routine.add(pos)
            if isinstance(event, ServerReady):
                health.ready, health.ready_pos = line, pos
            elif isinstance(event, DecodeStats):
                health.decode, health.decode_line, health.decode_pos = event, line, pos
            else:
                health.last_step = line
    return health


#: Where a start-up tail without an error stopped, when that place says more than "still starting": the corpus's
#: tails that end there without an error line were mostly crashes whose error the paste cut off (dev, 2026-12-04:
#: right after the arguments were read 5 crashes of 6; while CUDA graphs were captured 2 of 2), so the verdict is
#: less sure and names the other reading. (confidence, alternatives, what the place says)
_STOPPED_AT: dict[str, tuple[float, list[str], str]] = {
    "args_parsed": (0.4, ["other"], "; it ends right after the engine read its arguments: if the process is gone, "
                                    "its error is not in this tail"),
    "graphs_capturing": (0.45, ["cuda_graph_oom"], "; it ends while CUDA graphs are being captured: still "
                                                    "capturing, or the capture hung or died there"),
}


def healthy_diagnosis(lines: list[LogLine], health: Health, error: LogLine | None = None,
                      error_last: LogLine | None = None, phase: str | None = None) -> Diagnosis:
    """``error``: an error the server outlived (it served after it); ``error_last``: an error after the server came
    up on which the tail ends, so whether it outlived it is not in the log; ``phase``: the last start-up milestone
    the tail reached (bot/diagnose/structure.py)."""
    alternatives: list[str] = []
    # Proof of life first (the server listens, answers, decodes), then the error it survived.
    alive = (health.listening or health.ready, health.served, health.decode_line, error or error_last)
    evidence = [line for line in alive if line is not None]
    if error is not None:
        cause = "an error was logged but the server kept serving after it"
        confidence = 0.6
        steps = [f"keep an eye on line {error.number}; nothing to relaunch"]
    elif error_last is not None:
        cause = ("the server came up, then an error was logged and the tail ends on it: one request's error, or the "
                 "server's crash; the log does not say which")
        confidence = 0.5
        steps = [f"ask the server's /health (or send one request): if it answers, line {error_last.number} was one "
                 f"request's error; if not, that line is the crash"]
    elif health.decode is not None:
        d = health.decode
        extra = f", accept length {d.accept_len:.2f}" if d.accept_len is not None else ""
        cause = (f"healthy: serving ({d.running} running, {d.throughput_tok_s:.0f} tok/s{extra}); no error in the log")
        confidence, steps = 0.9, []
    elif health.ready is not None:
        cause = "healthy: the server is up and no error follows (an idle engine logs nothing more)"
        confidence, steps = 0.9, []
    elif health.served is not None:
        cause = "healthy: the server was answering requests (an error of one request is logged, not a crash)"
        confidence, steps = 0.8, []
    elif health.http_up is not None:
        evidence.append(health.http_up)
        cause = "healthy so far: the HTTP server is up and no error follows (the warm-up / ready line is next)"
        confidence, steps = 0.8, []
    else:
        last = health.last_step or last_line(lines)
        if last is not None:
            evidence.append(last)
        cause = "no error in the log: the server is still starting (no ready line yet)" if lines \
            else "the log is empty"
        confidence = 0.6 if lines else 0.3
        steps = ["wait for the ready line; if nothing moves for minutes, look at the last line"] if lines else []
        if lines and phase in _STOPPED_AT:
            confidence, alternatives, where = _STOPPED_AT[phase]
            cause += where
            steps.append("if the process is gone, send the log from the launch on, or its end (the error is below "
                         "the last line here)")
    return Diagnosis(category="none", cause=cause, evidence=evidence_of(evidence, None, ()),
                     next_steps=steps, confidence=confidence, alternatives=list(alternatives))
