"""The lifecycle every simulated engine shares: scenario, GPU placement and memory registration, timed startup,
HTTP endpoints, periodic lines, crash replay, and a clean exit on SIGTERM.

An engine module (sglang, vllm) supplies the words; this module supplies the behaviour.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.request import Request, urlopen

from simengine import state as gpu_state
from simengine.load import SimLoad

MIB = 1 << 20
GIB = 1 << 30


class Stopped(Exception):
    """SIGTERM/SIGINT arrived; unwinds the startup or serving loop to the cleanup."""


class EngineCrash(Exception):
    """The simulated engine failed; `exit_code` is what the process exits with after printing."""

    def __init__(self, exit_code: int = 1) -> None:
        super().__init__(exit_code)
        self.exit_code = exit_code


class LogWriter:
    """One line at a time, flushed, so `tail -f` and the follower see each line as it happens; a lock keeps
    lines from the HTTP threads whole."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        with self._lock:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
            sys.stdout.flush()


def visible_gpus(state: dict) -> list[int]:
    """Indices of the GPUs this process may use, from CUDA_VISIBLE_DEVICES (indices or UUIDs), default all."""
    indices = [g["index"] for g in state["gpus"]]
    raw = os.environ.get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return indices
    chosen = []
    for item in (s.strip() for s in raw.split(",") if s.strip()):
        if item.isdigit() and int(item) in indices:
            chosen.append(int(item))
        else:
            match = [g["index"] for g in state["gpus"] if g["uuid"] == item]
            if not match:
                break  # CUDA stops at the first invalid entry
            chosen.append(match[0])
    return chosen


class EndpointServer(ThreadingHTTPServer):
    """The engine's HTTP port: /health 503 until ready then 200, /v1/models, /get_model_info, a tiny completion."""

    daemon_threads = True
    allow_reuse_address = True  # uvicorn sets SO_REUSEADDR too

    def __init__(self, address: tuple[str, int], engine: SimEngine) -> None:
        super().__init__(address, _Handler, bind_and_activate=False)
        self.engine = engine


class _Handler(BaseHTTPRequestHandler):
    server: EndpointServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - signature from the base class
        pass  # the uvicorn-style access line is written in _send

    def _send(self, status: int, body: bytes = b"", content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)
        engine = self.server.engine
        reason = {200: "OK", 404: "Not Found", 503: "Service Unavailable"}.get(status, "")
        host, port = self.client_address[:2]
        engine.log_access(f'{host}:{port} - "{self.command} {self.path} HTTP/1.1" {status} {reason}'.rstrip())

    def _json(self, payload: object, status: int = 200) -> None:
        self._send(status, json.dumps(payload).encode())

    def do_GET(self) -> None:
        engine = self.server.engine
        path = self.path.split("?", 1)[0]
        if path in ("/health", "/health_generate"):
            self._send(200 if engine.ready.is_set() and not engine.stopping.is_set() else 503)
        elif path == "/v1/models":
            self._json(
                {
                    "object": "list",
                    "data": [
                        {
                            "id": engine.served_model_name,
                            "object": "model",
                            "created": int(engine.started_wall),
                            "owned_by": engine.name,
                            "root": engine.model_path,
                            "max_model_len": engine.context_length,
                        }
                    ],
                }
            )
        elif path in ("/get_model_info", "/model_info") and engine.name == "sglang":
            if path == "/get_model_info":
                engine.log(
                    "Endpoint '/get_model_info' is deprecated and will be removed in a future version. "
                    "Please use '/model_info' instead."
                )
            self._json(
                {
                    "model_path": engine.model_path,
                    "tokenizer_path": engine.model_path,
                    "is_generation": True,
                    "preferred_sampling_params": None,
                    "weight_version": "default",
                    "has_image_understanding": False,
                    "has_audio_understanding": False,
                }
            )
        elif path == "/ping":
            self._send(200)
        elif path == "/metrics" and (text := engine.metrics_text()) is not None:
            self._send(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")
        else:
            self._json({"detail": "Not Found"}, 404)

    def do_POST(self) -> None:
        engine = self.server.engine
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        path = self.path.split("?", 1)[0]
        if not engine.ready.is_set() and path != "/generate":  # the warm-up request itself comes before ready
            self._send(503)
        elif path in ("/v1/chat/completions", "/v1/completions", "/generate"):
            if engine.load is not None:
                with engine.load.request(prompt_tokens=8, completion_tokens=2):
                    time.sleep(float(engine.scenario.get("request_s", 0.0)))
            text = "Paris."  # a canned answer: this engine serves no model, it only behaves like a server
            if path == "/v1/chat/completions":
                choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            else:
                choice = {"index": 0, "text": text, "finish_reason": "stop"}
            self._json(
                {
                    "id": "cmpl-sim",
                    "object": "chat.completion" if path == "/v1/chat/completions" else "text_completion",
                    "model": engine.served_model_name,
                    "choices": [choice],
                    "usage": {"prompt_tokens": 8, "completion_tokens": 2, "total_tokens": 10},
                }
            )
        else:
            self._json({"detail": "Not Found"}, 404)


class SimEngine:
    """Base of a simulated engine process. Subclasses fill in `startup()` and `periodic_line()`."""

    name = "engine"

    def __init__(self, *, model_path: str, served_model_name: str, host: str, port: int, tp: int) -> None:
        self.model_path = model_path
        self.served_model_name = served_model_name
        self.host = host
        self.port = port
        self.tp = tp
        self.context_length = 0
        self.out = LogWriter()
        self.ready = threading.Event()
        self.stopping = threading.Event()
        self.pid = os.getpid()
        self.started = time.monotonic()
        self.started_wall = time.time()
        self.scenario = gpu_state.read_scenario()
        self.ready_after_s = float(self.scenario.get("ready_after_s", 1.0))
        self.periodic_interval_s = float(self.scenario.get("periodic_interval_s", 2.0))
        self.state = gpu_state.read_state()
        self.placement: list[int] = []  # GPU indices this engine runs on, rank order
        self.server: EndpointServer | None = None
        self._serving = False
        self._registered = False
        self.load: SimLoad | None = None  # the simulated traffic, from ready on (the /metrics figures)

    # ----------------------------------------------------------------------------- hooks for engines
    def log(self, message: str) -> None:
        raise NotImplementedError

    def log_access(self, line: str) -> None:
        self.log(f"INFO:     {line}")

    def startup(self) -> None:
        raise NotImplementedError

    def periodic_line(self, tick: int) -> list[str]:
        return []

    def metrics_text(self) -> str | None:
        """The body of GET /metrics, or None where the engine serves none (404)."""
        return None

    def start_load(self, kv_tokens: int, *, spec_tokens: int = 0, accept_length: float = 1.0) -> None:
        self.load = SimLoad(self.scenario.get("traffic") or {}, kv_tokens=kv_tokens, spec_tokens=spec_tokens,
                            accept_length=accept_length)

    def log_periodic(self, line: str) -> None:
        self.log(line)

    def log_shutdown(self, line: str) -> None:
        self.log(line)

    def shutdown_lines(self) -> list[str]:
        return [
            "INFO:     Shutting down",
            "INFO:     Waiting for application shutdown.",
            "INFO:     Application shutdown complete.",
            f"INFO:     Finished server process [{self.pid}]",
        ]

    # ----------------------------------------------------------------------------- helpers for engines
    def at(self, fraction: float) -> None:
        """Wait until `fraction` of ready_after_s has passed since start; raise Stopped on SIGTERM."""
        deadline = self.started + fraction * self.ready_after_s
        if self.stopping.wait(max(0.0, deadline - time.monotonic())):
            raise Stopped

    def visible(self) -> list[int]:
        return visible_gpus(self.state)

    def gpu(self, index: int) -> dict:
        return next(g for g in self.state["gpus"] if g["index"] == index)

    def free_gib(self, index: int) -> float:
        used = gpu_state.used_mib_by_others(self.state, index, self.pid)
        return (self.gpu(index)["memory_total_mib"] - used) / 1024

    def register_memory(self, used_mib: float) -> None:
        """Show this process on its GPUs (self.placement) in nvidia-smi with `used_mib` each."""
        gpu_state.register_engine(self.pid, self.placement, int(used_mib), sys.executable)
        self._registered = True

    def bind_port(self) -> EndpointServer:
        """Bind the HTTP port (raises the real OSError when it is taken); listening starts in `serve()`."""
        server = EndpointServer((self.host, self.port), self)
        try:
            server.server_bind()
        except OSError:
            server.server_close()
            raise
        self.server = server
        return server

    def serve(self) -> None:
        assert self.server is not None
        self.server.server_activate()
        threading.Thread(target=self._serve_forever, name="http", daemon=True).start()
        self._serving = True

    def _serve_forever(self) -> None:
        # SIGTERM must be delivered to the main thread: one landing on an HTTP thread would only be handled when the
        # main thread's wait times out. Request threads inherit this mask from the serving thread.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        assert self.server is not None
        self.server.serve_forever(poll_interval=0.1)  # a short poll so that shutdown on SIGTERM is prompt

    def request_self(self, method: str, path: str, body: dict | None = None) -> int:
        """A real HTTP request to our own port (the warm-up), so the access line and the open port are genuine."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host
        data = json.dumps(body).encode() if body is not None else None
        request = Request(
            f"http://{host}:{self.port}{path}", data=data, method=method, headers={"content-type": "application/json"}
        )
        with urlopen(request, timeout=5) as response:
            return response.status

    def traceback_text(self) -> str:
        return traceback.format_exc().rstrip("\n")

    def hold_port_elsewhere(self) -> socket.socket:
        """For the `crash:port` scenario: another listener takes our port first, as a forgotten server would."""
        holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        holder.bind((self.host if self.host not in ("", "::") else "0.0.0.0", self.port))
        holder.listen(1)
        return holder

    # ----------------------------------------------------------------------------- the process
    def _on_signal(self, signum: int, frame: object) -> None:
        # Not `self.stopping.set()` here: the handler runs on the main thread between two bytecodes, and when that is
        # inside `stopping.wait()` while it holds the event's (non-reentrant) lock, set() would wait on that lock
        # forever: SIGTERM then did nothing until a SIGKILL (one stop in a few in the tests took 5 s). Another
        # thread sets it once the main thread lets go of the lock.
        threading.Thread(target=self.stopping.set, name="stop", daemon=True).start()

    def _cleanup(self) -> None:
        if self._registered:
            self._registered = False
            # FileNotFoundError: the host folder was removed under us (a test's tmp dir): nothing left to clean
            with contextlib.suppress(FileNotFoundError):
                gpu_state.unregister_engine(self.pid)

    def port_conflict(self) -> bool:
        """The `crash:port` scenario: this launch finds its port taken (with `heals_when_changed`, only while it
        asks for the ports the first one did)."""
        if not self.scenario.get("port_conflict"):
            return False
        flags = self.scenario.get("heals_when_changed")
        return self._same_as_first_crash(flags) if flags else True

    def crash_log(self) -> dict | None:
        crash = self.scenario.get("crash") or {}
        record = crash.get(self.name) or crash.get("any")
        if record is not None and self.scenario.get("heals_when_changed"):
            return record if self._same_as_first_crash(self.scenario["heals_when_changed"]) else None
        return record

    def _same_as_first_crash(self, flags: list[str]) -> bool:
        """A crash that depends on the command line, as a real one does: the first launch records how it set
        `flags`; a later launch crashes again only while it sets them the same way (a fix that changes none of
        them does not help, as it would not on a real GPU)."""
        seen = {flag: _flag_value(sys.argv[1:], flag) for flag in flags}
        path = gpu_state.sim_root() / "scenario_first_crash.json"
        try:
            first = json.loads(path.read_text())
        except FileNotFoundError:
            path.write_text(json.dumps(seen))
            return True
        return first == seen

    def replay_crash(self, record: dict, first_lines: Callable[[], None]) -> int:
        """Print a few real startup lines, then the corpus log verbatim, and fail."""
        first_lines()
        self.at(0.3)
        for line in record["log"].splitlines():
            self.out.write(line)
        return 1

    def main(self) -> int:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        atexit.register(self._cleanup)
        try:
            self.startup()
            tick = 0
            while not self.stopping.wait(self.periodic_interval_s):
                tick += 1
                for line in self.periodic_line(tick):
                    self.log_periodic(line)
            raise Stopped
        except Stopped:
            self.stopping.set()
            for line in self.shutdown_lines():
                self.log_shutdown(line)
            return 0
        except EngineCrash as crash:
            return crash.exit_code
        finally:
            if self.server is not None:
                if self._serving:
                    self.server.shutdown()  # waits for serve_forever to return (it was started, so it will)
                self.server.server_close()
            self._cleanup()


def _flag_value(argv: list[str], flag: str) -> str | None:
    """The value a command line gives `flag` ("" for a bare switch), or None when it does not give it."""
    for i, word in enumerate(argv):
        if word == flag:
            follows = argv[i + 1] if i + 1 < len(argv) else ""
            return "" if follows.startswith("--") else follows
        if word.startswith(flag + "="):
            return word.split("=", 1)[1]
    return None
