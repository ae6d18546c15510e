"""Adding a host to app.yaml without losing what a person wrote there: comments, order and layout stay.

ruamel.yaml's round-trip mode keeps comments and key order (PyYAML drops both). The edited text is validated as
a whole (bot.config.parse_config) before it replaces the file, and it replaces it atomically (a temporary file
in the same folder, then os.replace), so a bad edit or a crash mid-write never leaves a broken app.yaml.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from bot.config import AppConfig, ConfigError, parse_config

NEW_FILE_HEADER = "# deploybot configuration (README.md, Configuration). Hosts added by `deploybot host add`.\n"


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 120
    return yaml


def with_host(path: Path, name: str, entry: dict[str, Any]) -> tuple[str, AppConfig]:
    """The text app.yaml would have with host `name` added, and that text validated. Writes nothing."""
    yaml = _yaml()
    if path.exists():
        original = path.read_text()
        document = yaml.load(original) if original.strip() else None
    else:
        original = ""
        document = None
    if document is None:
        document = CommentedMap()
    if not isinstance(document, CommentedMap):
        raise ConfigError(f"{path} is not a mapping; fix it by hand (it needs a `hosts:` key) and run again")
    hosts = document.get("hosts")
    if hosts is None:
        hosts = CommentedMap()
        document["hosts"] = hosts
    if not isinstance(hosts, CommentedMap):
        raise ConfigError(f"{path}: `hosts:` is not a mapping; fix it by hand and run again")
    if name in hosts:
        raise ConfigError(
            f"host {name!r} is already in {path}; remove its entry first, or add this one under another name"
        )
    hosts[name] = CommentedMap(entry)
    out = io.StringIO()
    if not original.strip():
        out.write(NEW_FILE_HEADER)
    yaml.dump(document, out)
    text = out.getvalue()
    from yaml import safe_load  # the loader the bot itself uses: what it will read back

    return text, parse_config(safe_load(text), str(path))


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
