"""The status message of a deployment, rendered from its board (handlers.slack.board.StatusBoard): a title, one
row per step, the diagnosis and live figures if any, a progress bar; and the one-line summaries the board's rows
hold (what the probe saw, what the plan is, where the server answers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from slack_sdk.models.blocks import Block

from bot.events import Probed, Ready
from bot.models import LaunchPlan
from handlers.slack.blocks.mrkdwn import (
    MAX_STEP_CHARS,
    clip,
    context,
    escape,
    escape_keeping_mentions,
    fallback_text,
    gib,
    human_count,
    plural,
    section,
)

if TYPE_CHECKING:  # the board imports these summaries; rendering needs only its shape
    from handlers.slack.board import StatusBoard

#: One icon per step status (handlers.slack.board.StepStatus).
STATUS_ICON: dict[str, str] = {"pending": "⚪", "running": "⏳", "done": "✅", "failed": "❌"}


def probe_summary(event: Probed) -> str:
    facts = event.facts
    parts = [facts.host + (f" ({facts.hostname})" if facts.hostname and facts.hostname != facts.host else "")]
    if facts.gpus:
        names = sorted({gpu.name for gpu in facts.gpus})
        free = sum(gpu.memory_free_bytes for gpu in facts.gpus)
        total = sum(gpu.memory_total_bytes for gpu in facts.gpus)
        parts.append(f"{len(facts.gpus)}× {', '.join(names)}, {gib(free)} free of {gib(total)}")
    else:
        parts.append("no GPU seen" + (f" ({facts.gpu_error})" if facts.gpu_error else ""))
    engines = [f"{name} {install.version}" for name, install in facts.engines.items() if install.version]
    if engines:
        parts.append(", ".join(engines))
    parts.append(f"{event.seconds:.1f} s")
    return " · ".join(parts)


def plan_summary(plan: LaunchPlan) -> str:
    engine = plan.engine + (f" {plan.engine_version}" if plan.engine_version else "")
    parts = [
        engine,
        f"TP {plan.tp} on GPU {','.join(str(g) for g in plan.gpus)}",
        f"port {plan.port}",
        f"weights {gib(plan.weights_bytes)}",
    ]
    if plan.per_gpu:
        # With tensor parallelism every GPU holds a slice of the same tokens: the smallest share is the cache.
        parts.append(f"KV cache {human_count(min(b.kv_tokens for b in plan.per_gpu))} tokens")
        parts.append(f"margin {gib(min(b.margin_bytes for b in plan.per_gpu))}/GPU")
    if plan.speculative == "mtp":
        parts.append("MTP speculative decoding")
    if plan.context_length:
        parts.append(f"context {human_count(plan.context_length)}")
    warnings = [risk for risk in plan.risks if risk.severity != "info"]
    if warnings:
        parts.append(f"⚠ {plural(len(warnings), 'risk')}")
    return " · ".join(parts)


def ready_text(event: Ready) -> str:
    text = f"ready at {event.endpoint} in {event.seconds:.0f} s"
    if event.kv_tokens is not None:
        text += f", KV cache {human_count(event.kv_tokens)} tokens"
    return text


def _progress_bar(done: int, total: int, failed: bool) -> str:
    filled = "▰" * done
    empty = "▱" * (total - done)
    return f"{filled}{empty}  {done}/{total}" + ("  · stopped on an error" if failed else "")


def status_blocks(steps: StatusBoard) -> list[Block]:
    """The status message: title, one row per step (icon, step, short text), the diagnosis if any, a progress bar."""
    board = steps
    rows = [
        f"{STATUS_ICON[state.status]} *{name}*" + (f"  {escape_keeping_mentions(clip(state.text, MAX_STEP_CHARS))}" if state.text else "")
        for name, state in board.visible()
    ]
    blocks: list[Block] = [
        section(f"*{escape(clip(board.title, 200))}*"),
        section("\n".join(rows)),
    ]
    if board.diagnosis:
        blocks.append(section(f"🩺 *diagnosis*  {escape(clip(board.diagnosis, 1000))}"))
    if board.live:
        blocks.append(context(f"📈 live: {escape(clip(board.live, 500))}"))
    done, total = board.progress()
    blocks.append(context(_progress_bar(done, total, board.failed())))
    return blocks


def status_text(board: StatusBoard) -> str:
    """The plain fallback of the status message (notifications, screen readers)."""
    done, total = board.progress()
    current = board.current()
    where = f" · {current}" if current and not board.failed() else ""
    failed = next((name for name, state in board.visible() if state.status == "failed"), None)
    if failed:
        where = f" · {failed} failed"
    return fallback_text(f"{board.title}: {done}/{total} steps{where}")


