"""A process known to be gone whose log shows no error: never "healthy", whatever its last lines say.

The pipeline diagnoses a deployment after its follower saw the engine end. With an exit status the silent-log cases
are in ``unknown`` (137: SIGKILL, 139: SIGSEGV, ...). Without one, or with 0, the log alone reads like a server
still starting or idling, and a thread that just said "crashed" must not be told "healthy". Two ends remain:

- no exit status at all: the launch supervisor (bot/agents/launch_agent.py) writes the engine's status next to the
  log whenever the engine ends, so a missing one means the supervisor went with it: a SIGKILL of the whole process
  group (a person's ``kill -9``, an OOM killer or cgroup taking the group), the container or the host restarting;
- status 0 with no error: the engine shut down on request (it handles SIGTERM / SIGINT and exits 0), so someone
  or something stopped it.
"""

from __future__ import annotations

from bot.diagnose.health import Health
from bot.diagnose.render import last_line
from bot.diagnose.rules import SELF_KILL
from bot.diagnose.types import Finding, LogLine
from bot.diagnose.unknown import exit_only


def ended_quietly(lines: list[LogLine], exit_code: int | None, health: Health,
                  earlier: LogLine | None = None) -> Finding | None:
    """The crash of a process that ended with no error line (``earlier``: an error it had outlived, quoted as
    support)."""
    if exit_code not in (None, 0):  # (a signal, a code: what the silent-log rules say of it)
        return exit_only(lines, exit_code, any(SELF_KILL.search(line.text) for line in lines))
    when = "while the server was up" if health.alive_pos >= 0 else "before the server came up"
    quiet = "no error in its log" if earlier is None else "no error after the one it had outlived (quoted)"
    if exit_code is None:
        cause = (f"the engine is gone ({when}) with {quiet} and no exit status recorded: it was killed "
                 f"together with its supervisor (a SIGKILL of the whole process group, the OOM killer, the container "
                 f"or the host restarting)")
        kind = "vanished"
    else:
        cause = (f"the engine exited with status 0 ({when}) and {quiet}: it shut down on request "
                 f"(SIGTERM or Ctrl-C, which it handles), so something stopped it")
        kind = "clean_exit"
    decisive = last_line(lines)  # (the last thing the engine said: how far it got)
    pos = next((pos for pos, line in enumerate(lines) if line is decisive), -1)
    return Finding(category="other", confidence=0.3, decisive=decisive, pos=pos, cause=cause, kind=kind,
                   support=[earlier] if earlier is not None and earlier is not decisive else [],
                   alternatives=["host_oom_killed"] if kind == "vanished" else [])
