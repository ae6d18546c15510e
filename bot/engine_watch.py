"""While serve follows a ready server: its engine's figures, read every `policy.engine_watch_interval_s`, shown on
its status message (EngineLoad) and flagged in its thread when it is in trouble: requests waiting while nothing is
generated, or a queue that grew on every one of the last reads. Told once when trouble starts and once when it
ends, never on every read. Bounded: one small round trip per interval, a short history.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

from bot.engine_figures import EngineFigures, read_figures
from bot.events import EngineLoad, Info, Thread
from bot.models import Deployment
from bot.remote import Remote

log = logging.getLogger(__name__)

#: A queue larger on each of this many reads in a row (and not empty) is "growing".
GROWTH_READS = 3


def queue_growth(history: deque[float]) -> str | None:
    values = list(history)
    if len(values) <= GROWTH_READS or values[-1] <= 0:
        return None
    recent = values[-(GROWTH_READS + 1):]
    if all(later > earlier for earlier, later in zip(recent, recent[1:])):
        return f"the queue grew on each of the last {GROWTH_READS} reads ({recent[0]:.0f} -> {recent[-1]:.0f} waiting)"
    return None


async def watch_engine(remote: Remote, python: str, dep: Deployment, thread: Thread, interval_s: float) -> None:
    """Forever (cancelled when the follower ends): read, show, flag."""
    history: deque[float] = deque(maxlen=GROWTH_READS + 1)
    flagged = False
    while True:
        await asyncio.sleep(interval_s)
        got = (await read_figures(remote, python, [dep.port])).get(dep.port)
        if not isinstance(got, EngineFigures):
            log.info("%s: no engine figures: %s", dep.id, got)
            continue
        history.append(got.queued or 0.0)
        trouble = got.trouble() or queue_growth(history)
        await thread.emit(EngineLoad(summary=got.summary(), trouble=trouble))
        if trouble and not flagged:
            await thread.emit(Info(message=f"⚠️ {dep.model} on {dep.host} (port {dep.port}): {trouble}. "
                                           f"Now: {got.summary()}"))
        elif flagged and not trouble:
            await thread.emit(Info(message=f"{dep.model} on {dep.host} is generating again: {got.summary()}"))
        flagged = bool(trouble)
