"""Next steps for a port clash: which port, what it is for (the HTTP port of the plan, or an internal one: the
metrics exporter, ZMQ sockets between the engine's processes, torch.distributed's TCPStore / NCCL init), and who
holds it. Only a clash on the HTTP port moves the plan's --port; an internal port has its own flag or is picked
again on relaunch.

Port wordings: uvicorn "error while attempting to bind on address ('0.0.0.0', 8000)", ZMQ "(addr='tcp://127.0.0.1:
5570')" (vllm-project/vllm#7196), torch "failed to bind to [::]:29500 (errno: 98 ...)", SGLang "metrics_port at
40290 is not available".
"""

from __future__ import annotations

import re

from bot.diagnose.advice.plan_view import PlanView
from bot.diagnose.types import Advice, Finding, LogLine
from bot.models import Fix, PlanOverrides

_PORT = re.compile(r"\('[^']{0,100}',\s*(\d{2,5})\)|tcp://[^\s:'\"]{1,100}:(\d{2,5})|\[[^\]\s]{0,60}\]:(\d{2,5})\b"
                   r"|(?:\b|_)port\w{0,10}(?: at| =|=|:| is)? ?(\d{2,5})\b|\b(?:localhost|[\d.]{7,15}):(\d{2,5})\b",
                   re.IGNORECASE)
#: What an internal port is for, read from the line that names it, and the flag that moves it.
_ROLES: tuple[tuple[re.Pattern[str], str, dict[str, str]], ...] = (
    (re.compile(r"metrics|prometheus", re.IGNORECASE), "the metrics exporter",
     {"sglang": "--metrics-port (or drop --enable-metrics)", "vllm": "the port of the launcher's metrics exporter"}),
    (re.compile(r"zmq|tcp://|ZMQError", re.IGNORECASE), "a ZMQ socket between the engine's processes",
     {"sglang": "--port (SGLang derives its ZMQ ports from it)", "vllm": "VLLM_PORT / another --port"}),
    (re.compile(r"TCPStore|rendezvous|dist[-_ ]init|MASTER_PORT|nccl|torch\.distributed|server socket|29500",
                re.IGNORECASE), "torch.distributed's rendezvous (NCCL init)",
     {"sglang": "--nccl-port / --dist-init-addr", "vllm": "MASTER_PORT / VLLM_PORT"}),
)


def port_in_text(lines: list[LogLine], f: Finding) -> int | None:
    """The port named by the decisive line, else by the error lines just before it."""
    start = max(0, f.pos - 5) if f.pos >= 0 else len(lines)
    around = ([f.decisive] if f.decisive else []) + lines[start:max(f.pos, 0)][::-1]
    for line in around:
        match = _PORT.search(line.text)
        if match:
            return int(next(g for g in match.groups() if g))
    return None


def _role(lines: list[LogLine], f: Finding) -> tuple[str, dict[str, str]] | None:
    start = max(0, f.pos - 8) if f.pos >= 0 else 0
    texts = [f.decisive.text] if f.decisive else []
    texts += [line.text for line in lines[start:max(f.pos, 0)]]
    for pattern, role, flags in _ROLES:
        if any(pattern.search(text) for text in texts):
            return role, flags
    return None


def _next_free_port(setup: PlanView, taken: int) -> int:
    busy = set(setup.facts.listening_ports) if setup.facts else set()
    busy.add(taken)
    port = taken + 1
    while port in busy and port < 65535:
        port += 1
    return port


def _owner(s: PlanView, port: int) -> str | None:
    for proc in s.facts.gpu_processes if s.facts else []:
        if proc.server and proc.server.port == port:
            return f"a {proc.server.engine} server (PID {proc.pid}" + (
                f", {proc.server.model_path}" if proc.server.model_path else "") + ")"
    return None


def advise_port(f: Finding, s: PlanView, lines: list[LogLine]) -> Advice:
    seen = port_in_text(lines, f)
    planned = s.plan.port if s.plan else None
    role = _role(lines, f)
    if (seen and planned and seen != planned) or (role and not (seen and seen == planned)):
        what, flags = role or ("an internal (distributed init) port of the engine", {})
        flag = flags.get(s.engine or "", " / ".join(sorted(set(flags.values()))) or "its internal port settings")
        where = f"port {seen}" if seen else "the port"
        http = f" (the HTTP port is {planned})" if planned else ""
        return ([f"{where} is not the HTTP port{http}: it belongs to {what}, and another process (often an earlier "
                 f"server still running) holds it; stop that process (`ss -ltnp` shows it) or move it with {flag}"],
                None)
    port = seen or planned
    if port is None:
        return (["another process listens on the port: choose another --port, or stop the old server "
                 "(`ss -ltnp` shows who holds it)"], None)
    owner = _owner(s, port)
    new = _next_free_port(s, port)
    steps = [f"port {port} is taken" + (f" by {owner}" if owner else "") + f": relaunch on port {new}",
             f"or stop what listens on {port} (`ss -ltnp 'sport = :{port}'` shows it)"]
    return steps, Fix(summary=f"port {port} -> {new}", overrides=PlanOverrides(port=new))
