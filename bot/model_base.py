"""The base every domain value builds on (bot/models.py, bot/host_facts.py): frozen pydantic models, engine
names checked against the registry, the GiB, the clock."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict


def _registered_engine(name: str) -> str:
    # the set of engines is the registry's (planners/engines/registry.py); imported here, at validation time,
    # because the engine packages import this module
    from planners.engines.registry import validate_name  # noqa: PLC0415

    return validate_name(name)


#: An engine's name: any engine in planners/engines/registry.py.
EngineName = Annotated[str, AfterValidator(_registered_engine)]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


#: Bytes in a GiB: defined once here, for every module that shows or plans memory.
GIB = 1 << 30


class Frozen(BaseModel):
    # (frozen: a value that crosses a boundary is never changed in place; extra: a typo in a field is refused)
    model_config = ConfigDict(frozen=True, extra="forbid")
