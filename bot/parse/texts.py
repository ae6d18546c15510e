"""Text the parser writes: a request read back, examples that work against an inventory, help."""

from __future__ import annotations

from bot.inventory import Inventory
from bot.models import DeployRequest
from bot.parse.normalise import _HELP, _normalise, _strip_prefix


def is_help_request(text: str) -> bool:
    """`/deploy help`, `deploybot help`, `help`, `?`, "what can you do"."""
    normalised = _strip_prefix(_normalise(text)[0])[0].strip().lower()
    return bool(_HELP.match(normalised))


def request_text(request: DeployRequest) -> str:
    """The request written the way the parser reads it best; parsing this gives the same request back."""
    words: list[str] = [request.action]
    if request.model:
        words.append(request.model)
    elif request.action in ("stop", "restart") and request.host and not request.reuse_last:
        words.append("everything")
    if request.host:
        words.append(f"on {request.host}")
    options: list[str] = []
    if request.engine:
        options.append(f"using {request.engine}")
    if request.speculative == "mtp":
        options.append("with mtp")
    elif request.speculative == "none":
        options.append("without mtp")
    elif request.speculative in ("dflash", "eagle3", "draft", "drafter"):
        noun = {"dflash": "dflash drafter", "eagle3": "eagle3 drafter", "draft": "draft model", "drafter": "drafter"}
        if request.draft_model:
            options.append(f"with {noun[request.speculative]} {request.draft_model}")
        else:
            options.append(f"with the {noun[request.speculative]}" if request.speculative != "drafter"
                           else "with our drafter")
    if request.tp is not None:
        options.append(f"tp {request.tp}")
    if request.gpus is not None:
        options.append("gpus " + ",".join(str(g) for g in request.gpus))
    if request.port is not None:
        options.append(f"port {request.port}")
    if request.quantization:
        options.append(f"quantization {request.quantization}")
    if request.context_length is not None:
        options.append(f"context {request.context_length}")
    if request.reuse_last:
        options.append("same as last time")
    return " ".join(words) + (" " + ", ".join(options) if options else "")


def example_requests(inventory: Inventory) -> list[str]:
    """Requests that work against THIS inventory (real host and model names), most useful first."""
    hosts = [h for h in inventory.hosts.values() if h.models]
    if not hosts:
        return ["status"] + [f"status {name}" for name in list(inventory.hosts)[:2]]
    main = max(hosts, key=lambda h: (h.gpu_count or 0) >= 2)  # a multi-GPU host shows the most options
    model = main.models[0]
    other_model = main.models[1] if len(main.models) > 1 else model
    examples = [f"start {model} on {main.name} with MTP"]
    if main.gpu_count and main.gpu_count >= 2:
        examples.append(f"deploy {other_model} on {main.name} using vllm on both GPUs, 32k context")
    else:
        examples.append(f"deploy {other_model} on {main.name} using vllm, 32k context")
    examples.append(f"start {model} on {main.name} port 30001 same as last time")
    examples += [f"stop {model} on {main.name}", f"restart {model} on {main.name}"]
    examples += [f"what's running on {main.name}?", f"logs {model} on {main.name}", "status"]
    return examples


def help_text(inventory: Inventory) -> str:
    """What to write, with examples that work against this inventory, and the hosts and models known."""
    lines = ["I start, stop and watch LLM servers (SGLang, vLLM) on our GPU hosts. Ask in plain words, e.g.:"]
    lines += [f"  • {example}" for example in example_requests(inventory)]
    lines.append("Options: `using sglang|vllm`, `with MTP` / `no MTP`, `tp 2` or `on both GPUs`, `gpus 0-3`, "
                 "`port 30001`, `32k context`, `fp8` (or awq, gptq, ...), `same as last time`.")  # fmt: skip
    lines.append("Actions: start (launch, deploy, serve, spin up), stop (kill, shut down), restart (relaunch, bounce), "
                 "status (what's running), logs (tail).")  # fmt: skip
    lines.append("Hosts and models:")
    for host in inventory.hosts.values():
        gpus = f" ({host.gpu_count} GPUs)" if host.gpu_count else ""
        lines.append(f"  • {host.name}{gpus}: {', '.join(host.models) or 'no models listed yet'}")
    return "\n".join(lines)
