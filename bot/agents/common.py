"""Helpers shared by the agents. `bot.probe.agent_source` puts this text in front of an agent's own before it is
sent to a host, so each agent still travels as one self-contained script (standard library only)."""

import os


def alive(pid):
    """True while the process runs; a zombie (exited, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True
