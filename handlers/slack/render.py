"""Block Kit rendering of deploybot's events and values (pure: no I/O, no Slack client).

Everything that reaches Slack as mrkdwn passes through `escape` (Slack's three control characters), and every
message stays inside Slack's limits (50 blocks per message, 3000 characters per section text, 100 blocks per
view): long output is shortened and says what was cut. Blocks are slack_sdk model objects, so building them
validates them (`Block.to_dict()` raises on a limit we missed).
"""

from __future__ import annotations

import re
import shlex
from datetime import datetime, timezone
from typing import Literal, Sequence

from pydantic import BaseModel, Field
from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from bot.events import (
    ApprovalDecided,
    ApprovalRequested,
    Crashed,
    Diagnosed,
    EngineLoad,
    Event,
    Failed,
    Info,
    Launched,
    Parsed,
    ParseFailed,
    PlanRejected,
    Planned,
    Probed,
    Ready,
    Step,
    Stopped,
)
from bot.mentions import mention as bot_mention
from bot.mentions import resolve as resolve_mentions
from bot.models import GIB, Action, DeploymentState, Diagnosis, EngineName, Frozen, GpuInfo, LaunchPlan, ParseError, PlanFailure

# Slack's limits (https://api.slack.com/reference/block-kit/blocks).
MAX_MESSAGE_BLOCKS = 50
MAX_VIEW_BLOCKS = 100
MAX_SECTION_TEXT = 3000
MAX_CONTEXT_TEXT = 2000  # not enforced by slack_sdk; Slack rejects longer context texts
#: One log line longer than this is shortened in place: a single runaway line must not push out all the others.
MAX_LINE_CHARS = 400
#: A step's text on the status board; seven such lines stay well under one section's 3000 characters.
MAX_STEP_CHARS = 300

APPROVE_ACTION_ID = "deploybot_approve"
DENY_ACTION_ID = "deploybot_deny"
APPROVAL_BLOCK_PREFIX = "deploybot_approval:"



# --------------------------------------------------------------------------------------------- text helpers


def escape(text: str) -> str:
    """Escape Slack's mrkdwn control characters (&, <, >) so user or log text shows literally, never as a link
    or a mention (`<!channel>`)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_keeping_mentions(text: str) -> str:
    """`escape`, except that the mentions the bot wrote itself (``bot.mentions.mention``: `started by @alice`)
    become real mentions. Whatever a host or a user wrote is escaped, `<@U123>` and `<!channel>` included: only the
    bot's own marks, which hold a key of this process, turn into `<@U…>` / `<#C…>`."""
    return resolve_mentions(escape(text), lambda target: f"<{target}>")


def fallback_text(plain: str, limit: int = 300) -> str:
    """The `text` of a message that has blocks: what notifications, the sidebar and screen readers show. Slack
    reads it as mrkdwn too (a `<!channel>` in it notifies the channel), so it is escaped like the blocks are, with
    the bot's own mentions kept (bot.mentions); every message's fallback is built here."""
    return escape_keeping_mentions(clip(plain, limit))


def clip(text: str, limit: int) -> str:
    """Shorten `text` to `limit` characters, saying how much went."""
    if len(text) <= limit:
        return text
    # Room for the note is taken with the widest number it could show, so text and note stay within `limit`.
    keep = max(0, limit - len(f"… (+{len(text)} chars)"))
    return text[:keep] + f"… (+{len(text) - keep} chars)"


_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,30}$")


def mention(user: str) -> str:
    """`<@U123>` for a Slack user ID (rendered as the person's name); anything else is shown as escaped text."""
    return f"<@{user}>" if _USER_ID.match(user) else escape(user)


def utc_time(moment: datetime) -> str:
    """`14:02 UTC` (naive datetimes are taken as UTC, as the store keeps them)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%H:%M UTC")


def gib(n_bytes: int | float) -> str:
    return f"{n_bytes / GIB:.1f} GiB"


def human_count(n: int) -> str:
    """412345 -> `412k`, 1_250_000 -> `1.25M` (KV-cache token counts read at a glance)."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.3g}M"
    if n >= 10_000:
        return f"{round(n / 1000)}k"
    return str(n)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _mrkdwn(text: str) -> MarkdownTextObject:
    return MarkdownTextObject(text=text)


def _section(text: str) -> SectionBlock:
    return SectionBlock(text=_mrkdwn(clip(text, MAX_SECTION_TEXT)))


def _context(text: str) -> ContextBlock:
    return ContextBlock(elements=[_mrkdwn(clip(text, MAX_CONTEXT_TEXT))])


def cut_note(n_lines: int) -> str:
    return f"… {plural(n_lines, 'line')} cut"


def _code_safe(line: str) -> str:
    # A ``` inside the text would close the code block early; a zero-width space keeps the backticks visible.
    return escape(line).replace("```", "``\u200b`")


def fit_code_block(
    lines: Sequence[str], *, budget: int = MAX_SECTION_TEXT, keep: Literal["tail", "head"] = "tail"
) -> tuple[str | None, int]:
    """Fit whole lines into one mrkdwn code block of at most `budget` characters.

    Returns (the block's text or None when no line fits, the number of lines left out). `keep="tail"` keeps the
    newest lines (logs: what happened last matters most); `keep="head"` keeps the first ones (a diff, a list).
    """
    fence = "```\n", "\n```"
    room = budget - len(fence[0]) - len(fence[1])
    ordered = list(reversed(lines)) if keep == "tail" else list(lines)
    kept: list[str] = []
    used = 0
    for line in ordered:
        rendered = _code_safe(clip(line.rstrip("\n"), MAX_LINE_CHARS))
        cost = len(rendered) + (1 if kept else 0)
        if used + cost > room:
            break
        kept.append(rendered)
        used += cost
    if keep == "tail":
        kept.reverse()
    cut = len(lines) - len(kept)
    if not kept:
        return None, cut
    return fence[0] + "\n".join(kept) + fence[1], cut


def _bullets(items: Sequence[str], *, limit: int = MAX_SECTION_TEXT) -> str:
    """An escaped bullet list that fits `limit`, ending with `… N more` when items were left out."""
    out: list[str] = []
    used = 0
    for index, item in enumerate(items):
        line = "• " + escape_keeping_mentions(clip(item, MAX_STEP_CHARS))
        more = f"\n… {len(items) - index} more"
        reserve = 0 if index == len(items) - 1 else len(more)  # the last item needs no room for a "more" note
        if used + len(line) + 1 + reserve > limit:
            out.append(more.strip())
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out)


# --------------------------------------------------------------------------------------------- status board

StepStatus = Literal["pending", "running", "done", "failed"]

#: Row order per action. Every step is listed so an unexpected event still has a row; a step outside the action's
#: REQUIRED_STEPS (approval, a stop during a start) is shown only once something happened in it.
STEP_ORDER: dict[Action, tuple[Step, ...]] = {
    "start": ("parse", "probe", "plan", "approve", "launch", "ready", "stop"),
    "restart": ("parse", "stop", "probe", "plan", "approve", "launch", "ready"),
    "stop": ("parse", "approve", "stop", "probe", "plan", "launch", "ready"),
    "status": ("parse", "probe", "plan", "approve", "launch", "ready", "stop"),
    "logs": ("parse", "probe", "plan", "approve", "launch", "ready", "stop"),
}
REQUIRED_STEPS: dict[Action, frozenset[Step]] = {
    "start": frozenset({"parse", "probe", "plan", "launch", "ready"}),
    "restart": frozenset({"parse", "stop", "probe", "plan", "launch", "ready"}),
    "stop": frozenset({"parse", "stop"}),
    "status": frozenset({"parse"}),
    "logs": frozenset({"parse"}),
}
#: What a step shows while it runs, before an event says more.
STEP_WAITING: dict[Step, str] = {
    "probe": "probing the host",
    "plan": "planning",
    "ready": "waiting for the server to answer",
    "stop": "stopping",
}

STATUS_ICON: dict[StepStatus, str] = {"pending": "⚪", "running": "⏳", "done": "✅", "failed": "❌"}


class StepState(BaseModel):
    status: StepStatus = "pending"
    text: str = ""  # raw text (escaped when rendered)


def _initial_steps() -> dict[Step, StepState]:
    return {step: StepState() for step in STEP_ORDER["start"]}


class StatusBoard(BaseModel):
    """The state behind the ONE status message of a deployment: a progress list, one row per step.

    `apply(event)` moves it forward; `status_blocks(board)` renders it. It is a plain model so the store can keep
    it (`model_dump_json`) and a restarted bot can go on updating the same message.
    """

    title: str = "deployment request"
    action: Action = "start"
    steps: dict[Step, StepState] = Field(default_factory=_initial_steps)
    diagnosis: str | None = None
    live: str | None = None  # a ready server's latest figures from its engine's /metrics

    def visible(self) -> list[tuple[Step, StepState]]:
        required = REQUIRED_STEPS[self.action]
        return [
            (name, self.steps[name])
            for name in STEP_ORDER[self.action]
            if name in required or self.steps[name].status != "pending"
        ]

    def current(self) -> Step | None:
        """The step in progress: the last running one, else the first pending one."""
        rows = self.visible()
        running = [name for name, state in rows if state.status == "running"]
        if running:
            return running[-1]
        return next((name for name, state in rows if state.status == "pending"), None)

    def _set(self, step: Step, status: StepStatus, text: str | None = None) -> None:
        # Steps only move forward: a step that starts or ends closes any earlier one still shown as running.
        order = STEP_ORDER[self.action]
        for name in order[: order.index(step)]:
            if self.steps[name].status == "running":
                self.steps[name].status = "done"
        self.steps[step].status = status
        if text is not None:
            self.steps[step].text = text
        if status == "done":
            self._start_next(step)

    def _start_next(self, step: Step) -> None:
        order = STEP_ORDER[self.action]
        required = REQUIRED_STEPS[self.action]
        following = next((name for name in order[order.index(step) + 1 :] if name in required), None)
        # "launch" waits for its own event: after planning the pipeline may first ask for an approval.
        if following and following != "launch" and self.steps[following].status == "pending":
            self.steps[following] = StepState(status="running", text=STEP_WAITING.get(following, ""))

    def apply(self, event: Event) -> None:
        if isinstance(event, Parsed):
            self.action = event.request.action
            request = event.request
            self.title = " ".join(filter(None, [request.action, request.model, request.host and f"on {request.host}"]))
            self._set("parse", "done", event.request.summary() + (f" · {event.note}" if event.note else ""))
        elif isinstance(event, ParseFailed):
            self._set("parse", "failed", event.error.message)
        elif isinstance(event, Probed):
            self._set("probe", "done", probe_summary(event))
        elif isinstance(event, Planned):
            self._set("plan", "done", plan_summary(event.plan))
        elif isinstance(event, PlanRejected):
            self._set("plan", "failed", event.failure.reason)
        elif isinstance(event, Launched):
            if event.already_running:
                text = f"already running as PID {event.pid} (nothing new started)"
            else:
                text = f"PID {event.pid} · log {event.log_path}"
            self._set("launch", "done", text)
        elif isinstance(event, Ready):
            self._set("ready", "done", ready_text(event))
        elif isinstance(event, Crashed):
            step = self.current() or "ready"
            code = f"exit code {event.exit_code}" if event.exit_code is not None else "exit code unknown"
            self._set(step, "failed", f"the server stopped ({code})")
        elif isinstance(event, Diagnosed):
            self.diagnosis = event.diagnosis.cause
            self.live = None
        elif isinstance(event, EngineLoad):
            self.live = event.summary + (f" · ⚠️ {event.trouble}" if event.trouble else "")
        elif isinstance(event, Stopped):
            self._set("stop", "done", event.message)
            self.live = None
        elif isinstance(event, Failed):
            self._set(event.step or self.current() or "launch", "failed", event.message)
        elif isinstance(event, Info) and event.step is not None:
            if self.steps[event.step].status in ("pending", "running"):
                self._set(event.step, "running", event.message)
        elif isinstance(event, ApprovalRequested):
            # A relaunch offered under a crash has its own message; that board keeps showing the crash.
            if not (event.action == "relaunch" and self.failed()):
                self._set("approve", "running", "waiting for an approver: " + "; ".join(event.reasons))
        elif isinstance(event, ApprovalDecided):
            if self.steps["approve"].status == "running":
                self._approval_decided(event)
        # LogExcerpt and step-less Info do not change the board.

    def _approval_decided(self, event: ApprovalDecided) -> None:
        who = event.decided_by
        by = f" by {bot_mention(who)}" if who else ""  # board text is escaped when shown: a mark, not <@...>
        at = f" at {utc_time(event.decided_at)}"
        if event.decision == "approved":
            self._set("approve", "done", f"approved{by}{at}")
        elif event.decision == "superseded":
            self._set("approve", "running", "the host changed since it was asked: approve the new plan")
        else:
            self._set("approve", "failed", f"{event.decision}{by}{at}: nothing was changed")

    def progress(self) -> tuple[int, int]:
        rows = self.visible()
        return sum(1 for _, state in rows if state.status == "done"), len(rows)

    def failed(self) -> bool:
        return any(state.status == "failed" for state in self.steps.values())


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
        _section(f"*{escape(clip(board.title, 200))}*"),
        _section("\n".join(rows)),
    ]
    if board.diagnosis:
        blocks.append(_section(f"🩺 *diagnosis*  {escape(clip(board.diagnosis, 1000))}"))
    if board.live:
        blocks.append(_context(f"📈 live: {escape(clip(board.live, 500))}"))
    done, total = board.progress()
    blocks.append(_context(_progress_bar(done, total, board.failed())))
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


# --------------------------------------------------------------------------------------------- excerpts


def excerpt_blocks(lines: list[str], omitted: int) -> list[Block]:
    """A log excerpt as one code block (the newest lines that fit in 3000 characters), with a note of what was cut
    (`omitted` lines already cut by the caller plus any cut here). Lines must be redacted by the caller."""
    text, cut_here = fit_code_block(lines, budget=MAX_SECTION_TEXT)
    cut = omitted + cut_here
    blocks: list[Block] = []
    if cut:
        blocks.append(_context(cut_note(cut)))
    if text is not None:
        blocks.append(_section(text))
    if not blocks:
        blocks.append(_context("(no output)"))
    return blocks


def excerpt_counts(blocks: list[Block]) -> tuple[int, int]:
    """(lines shown, lines cut) of blocks made by `excerpt_blocks`: what a reader of the message sees."""
    shown = cut = 0
    for block in blocks:
        data = block.to_dict()
        text = (data.get("text") or {}).get("text") or " ".join(e.get("text", "") for e in data.get("elements", []))
        if text.startswith("```"):
            shown += text.count("\n") - 1
        match = re.match(r"^… (\d+) lines? cut", text)
        if match:
            cut += int(match.group(1))
    return shown, cut


# --------------------------------------------------------------------------------------------- approvals

ApprovalState = Literal["pending", "approved", "denied", "expired", "superseded"]


class ApprovalView(Frozen):
    """What an approval message shows; the store's approval row renders to this."""

    approval_id: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,100}$")  # goes into button values and block ids
    title: str
    why: list[str] = Field(default_factory=list)
    argv_diff: list[str] = Field(default_factory=list)
    requested_by: str
    expires_at: datetime
    state: ApprovalState = "pending"
    decided_by: str | None = None
    decided_at: datetime | None = None


_APPROVAL_ICON: dict[ApprovalState, str] = {
    "pending": "🔐",
    "approved": "✅",
    "denied": "⛔",
    "expired": "⌛",
    "superseded": "↪️",
}


def _decision_line(view: ApprovalView) -> str:
    at = f" at {utc_time(view.decided_at)}" if view.decided_at else ""
    by = f" by {mention(view.decided_by)}" if view.decided_by else ""
    if view.state == "approved":
        return f"Approved{by}{at}"
    if view.state == "denied":
        return f"Denied{by}{at}"
    if view.state == "expired":
        return f"Expired at {utc_time(view.decided_at or view.expires_at)}: nothing was changed"
    return f"Superseded by a newer plan{at}: nothing was changed"


def approval_blocks(view: ApprovalView) -> list[Block]:
    """The approval request: what and why, the argv change, who asked; buttons while pending, the decision after."""
    head = f"*{_APPROVAL_ICON[view.state]} {escape(clip(view.title, 200))}*"
    if view.why:
        head += "\n" + _bullets(view.why, limit=MAX_SECTION_TEXT - len(head) - 1)
    blocks: list[Block] = [_section(head)]
    if view.argv_diff:
        text, cut = fit_code_block(view.argv_diff, budget=MAX_SECTION_TEXT, keep="head")
        if text:
            blocks.append(_section(text))
        if cut:
            blocks.append(_context(f"… {plural(cut, 'more line')} not shown"))
    if view.state == "pending":
        blocks.append(
            _context(f"Requested by {mention(view.requested_by)} · expires {utc_time(view.expires_at)}")
        )
        blocks.append(
            ActionsBlock(
                block_id=APPROVAL_BLOCK_PREFIX + view.approval_id,
                elements=[
                    ButtonElement(
                        text=PlainTextObject(text="Approve"),
                        action_id=APPROVE_ACTION_ID,
                        value=view.approval_id,
                        style="primary",
                    ),
                    ButtonElement(
                        text=PlainTextObject(text="Deny"),
                        action_id=DENY_ACTION_ID,
                        value=view.approval_id,
                        style="danger",
                    ),
                ],
            )
        )
    else:
        blocks.append(_context(f"Requested by {mention(view.requested_by)} · {_decision_line(view)}"))
    return blocks


def approval_view(event: ApprovalRequested) -> ApprovalView:
    """The pending approval message for a pipeline's request: why, and what would change on the command line."""
    # A stop changes no command line: its reasons say whose server it is.
    shows_argv = event.plan is not None and event.action != "stop"
    return ApprovalView(
        approval_id=event.approval_id,
        title=event.title,
        why=list(event.reasons),
        argv_diff=argv_diff(event.previous_argv, event.plan.argv) if shows_argv and event.plan else [],
        requested_by=event.requested_by or "the terminal",
        expires_at=event.expires_at,
    )


def decided_view(view: ApprovalView, event: ApprovalDecided) -> ApprovalView:
    """The same approval once decided: who and when, no buttons."""
    return view.model_copy(update={"state": event.decision, "decided_by": event.decided_by,
                                   "decided_at": event.decided_at})


def approval_text(view: ApprovalView) -> str:
    if view.state == "pending":
        return fallback_text(f"Approval needed: {view.title}")
    return clip(f"{escape_keeping_mentions(view.title)}: {_decision_line(view)}", 300)  # the line is mrkdwn


# --------------------------------------------------------------------------------------------- diagnosis


def diagnosis_blocks(d: Diagnosis, *, approval: ApprovalView | None) -> list[Block]:
    """Cause, the evidence lines from the log (a code block), next steps, the proposed fix, then the approval."""
    unsure = f" · unsure between {escape(', '.join([d.category, *d.alternatives]))}" if d.alternatives else ""
    head = (f"🩺 *{escape(clip(d.cause, 1500))}*\n_category `{escape(d.category)}` · confidence "
            f"{d.confidence:.0%}{unsure}_")
    blocks: list[Block] = [_section(head)]
    if d.evidence:
        width = len(str(max(e.line for e in d.evidence)))
        text, cut = fit_code_block([f"{e.line:>{width}}: {e.text}" for e in d.evidence], keep="head")
        blocks.append(_context("Evidence from the log" + (f" ({cut_note(cut)})" if cut else "") + ":"))
        if text:
            blocks.append(_section(text))
    if d.next_steps:
        blocks.append(_section("*Next steps*\n" + _bullets(d.next_steps, limit=MAX_SECTION_TEXT - 20)))
    if d.fix is not None:
        blocks.append(_section(f"🔧 *Proposed fix:* {escape(clip(d.fix.summary, 1000))}"))
    if approval is not None:
        blocks.append(DividerBlock())
        blocks.extend(approval_blocks(approval))
    return blocks


def diagnosis_text(d: Diagnosis) -> str:
    return fallback_text(f"Diagnosis: {d.cause}")


# --------------------------------------------------------------------------------------------- argv diff

_NEGATIVE_NUMBER = re.compile(r"^-\d")


def _is_flag(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NEGATIVE_NUMBER.match(token)


def _flag_groups(argv: list[str]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Split argv into its leading words (program, subcommand, positionals) and (flag, values) groups.

    `--flag=value` counts as `--flag value`; a flag's values are the words up to the next flag.
    """
    head: list[str] = []
    groups: list[tuple[str, list[str]]] = []
    for token in argv:
        if _is_flag(token):
            name, sep, value = token.partition("=") if token.startswith("--") else (token, "", "")
            groups.append((name, [value] if sep else []))
        elif groups:
            groups[-1][1].append(token)
        else:
            head.append(token)
    return head, groups


def _keyed(groups: list[tuple[str, list[str]]]) -> dict[tuple[str, int], list[str]]:
    # A flag given twice (`--env A --env B`) is kept as two entries: its first, its second occurrence.
    seen: dict[str, int] = {}
    keyed: dict[tuple[str, int], list[str]] = {}
    for name, values in groups:
        occurrence = seen.get(name, 0)
        seen[name] = occurrence + 1
        keyed[(name, occurrence)] = values
    return keyed


def _show(name: str, values: list[str]) -> str:
    return shlex.join([name, *values])


def argv_diff(old: list[str] | None, new: list[str]) -> list[str]:
    """What changes between two command lines, flag by flag: `- --tp 1` / `+ --tp 2`, added and removed flags.

    Without `old`, the full new command line, one flag (with its values) per line.
    """
    new_head, new_groups = _flag_groups(new)
    if old is None:
        full = [shlex.join(new_head)] if new_head else []
        return full + [_show(name, values) for name, values in new_groups]
    old_head, old_groups = _flag_groups(old)
    lines: list[str] = []
    if old_head != new_head:
        lines += [f"- {shlex.join(old_head)}", f"+ {shlex.join(new_head)}"]
    old_keyed, new_keyed = _keyed(old_groups), _keyed(new_groups)
    for key, values in new_keyed.items():
        before = old_keyed.get(key)
        if before is None:
            lines.append(f"+ {_show(key[0], values)}")
        elif before != values:
            lines += [f"- {_show(key[0], before)}", f"+ {_show(key[0], values)}"]
    for key, values in old_keyed.items():
        if key not in new_keyed:
            lines.append(f"- {_show(key[0], values)}")
    return lines


# --------------------------------------------------------------------------------------------- replies


def parent_text(user: str, request_text: str) -> str:
    """The parent message in the channel: who asked, and what (quoted, escaped, shortened)."""
    quoted = "\n".join("> " + escape(line) for line in clip(request_text.strip(), 1000).splitlines() or [""])
    return f"{mention(user)} asked deploybot:\n{quoted}"


def parse_error_text(error: ParseError) -> str:
    text = f"❓ {escape(error.message)}"
    if error.suggestions:
        text += "\nTry: " + " · ".join(f"`{escape(s)}`" for s in error.suggestions[:5])
    return clip(text, MAX_SECTION_TEXT)


def plan_failure_blocks(failure: PlanFailure) -> list[Block]:
    text = f"🚫 *{escape(clip(failure.reason, 1000))}*"
    if failure.details:
        text += "\n" + _bullets(failure.details, limit=MAX_SECTION_TEXT - len(text) - 300)
    if failure.nearest:
        text += f"\n*Nearest plan that would work:* {escape(clip(failure.nearest, 250))}"
    return [_section(text)]


#: What a person can write in a deployment's thread (the bot reads replies there).
THREAD_COMMANDS: tuple[tuple[str, str], ...] = (
    ("status", "GPUs of the host and what runs there"),
    ("logs [N]", "the last N lines of the server's log (default 30, at most 200)"),
    ("stop", "stop this server (frees its GPUs and port)"),
    ("restart", "stop it and start it again with the same plan"),
    ("diagnose", "read the end of the log again and say what went wrong"),
    ("help", "this list"),
)


def thread_help_text() -> str:
    rows = "\n".join(f"• `{name}`: {escape(what)}" for name, what in THREAD_COMMANDS)
    return f"In this thread I understand:\n{rows}"


def help_blocks(text: str) -> list[Block]:
    """Help text (mrkdwn, escaped so `<model>` placeholders show), one section per paragraph, within limits."""
    paragraphs = [p.strip("\n") for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    blocks: list[Block] = []
    for index, paragraph in enumerate(paragraphs):
        if len(blocks) == MAX_MESSAGE_BLOCKS - 1 and index < len(paragraphs) - 1:
            blocks.append(_context(f"… {plural(len(paragraphs) - index, 'more paragraph')} not shown"))
            break
        blocks.append(_section(escape(paragraph)))
    return blocks or [_section("(no help text)")]


# --------------------------------------------------------------------------------------------- App Home

#: A GPU with more memory in use than this holds something (the driver alone takes a few hundred MiB).
GPU_BUSY_BYTES = 1 * GIB


class DeploymentSummary(Frozen):
    id: str
    model: str
    engine: EngineName
    port: int
    state: DeploymentState
    pid: int | None = None
    endpoint: str | None = None
    requested_by: str | None = None
    thread_url: str | None = None  # chat.getPermalink of the deployment's thread
    live: str | None = None  # a ready server's figures from its engine's /metrics (or why there are none)


class HostSummary(Frozen):
    name: str
    address: str | None = None
    gpus: list[GpuInfo] = Field(default_factory=list)
    deployments: list[DeploymentSummary] = Field(default_factory=list)
    error: str | None = None  # why the host could not be probed
    checked_at: datetime | None = None


_SAFE_URL = re.compile(r"^https?://[^\s|<>]+$")


def _link(url: str | None, label: str) -> str:
    if url and _SAFE_URL.match(url):
        return f"<{url.replace('&', '&amp;')}|{escape(label)}>"
    return ""


def _host_section(host: HostSummary) -> str:
    title = f"🖥️ *{escape(host.name)}*" + (f"  `{escape(host.address)}`" if host.address else "")
    if host.error:
        return f"{title}\n⚠️ {escape(clip(host.error, 500))}"
    if not host.gpus:
        return f"{title}\nno GPU seen"
    busy = {g.index for g in host.gpus if g.memory_used_bytes > GPU_BUSY_BYTES}
    lines = [f"{title}\n{len(busy)} of {plural(len(host.gpus), 'GPU')} in use, {len(host.gpus) - len(busy)} free"]
    for gpu in host.gpus[:16]:
        mark = "🟥" if gpu.index in busy else "🟩"
        lines.append(
            f"{mark} GPU{gpu.index} {escape(gpu.name)}: {gib(gpu.memory_used_bytes)} / {gib(gpu.memory_total_bytes)} used"
        )
    if len(host.gpus) > 16:
        lines.append(f"… {len(host.gpus) - 16} more GPUs")
    if host.checked_at:
        lines.append(f"_checked {utc_time(host.checked_at)}_")
    return "\n".join(lines)


def _deployments_section(host: HostSummary) -> str:
    if not host.deployments:
        return "_no deployments_"
    rows = []
    for dep in host.deployments:
        row = f"• *{escape(dep.model)}* {dep.engine} :{dep.port} — {dep.state}"
        if dep.pid:
            row += f" · PID {dep.pid}"
        if dep.endpoint:
            row += f" · {escape(dep.endpoint)}"
        if dep.requested_by:
            row += f" · by {mention(dep.requested_by)}"
        link = _link(dep.thread_url, "thread")
        if link:
            row += f" · {link}"
        if dep.live:
            row += f"\n    📈 {escape(clip(dep.live, 300))}"
        rows.append(row)
    return _fit_rows(rows)


def _fit_rows(rows: list[str]) -> str:
    out: list[str] = []
    used = 0
    for index, row in enumerate(rows):
        if used + len(row) + 1 > MAX_SECTION_TEXT - 40:
            out.append(f"… {len(rows) - index} more")
            break
        out.append(row)
        used += len(row) + 1
    return "\n".join(out)


def home_view(hosts: list[HostSummary]) -> View:
    """App Home: each host with its GPUs used/free and its deployments (with links to their threads)."""
    blocks: list[Block] = [
        HeaderBlock(text=PlainTextObject(text="deploybot")),
        _context("Start a server with `/deploy MODEL on HOST`; `/deploy help` shows more."),
    ]
    per_host = 3
    room = (MAX_VIEW_BLOCKS - len(blocks) - 1) // per_host
    for host in hosts[:room]:
        blocks += [DividerBlock(), _section(_host_section(host)), _section(_deployments_section(host))]
    if len(hosts) > room:
        blocks.append(_context(f"… {plural(len(hosts) - room, 'more host')} not shown"))
    if not hosts:
        blocks.append(_section("_no hosts configured (app.yaml)_"))
    return View(type="home", blocks=blocks)
