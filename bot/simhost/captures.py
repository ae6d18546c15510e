"""The captured releases of the real engines (bot/simhost/enginehelp, made by tools/capture_engine_help.py) and the
one a simulated host of a given engine version serves: that release, else the newest captured one below it, else
the oldest captured one (a version older than every capture)."""

from __future__ import annotations

import shutil
from pathlib import Path

from packaging.version import InvalidVersion, Version

CAPTURES = Path(__file__).parent / "enginehelp"


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def captured_versions(engine: str) -> list[str]:
    found = [p.name.removeprefix(f"{engine}-").removesuffix(".json") for p in CAPTURES.glob(f"{engine}-*.json")]
    return sorted((v for v in found if _version(v)), key=lambda v: _version(v))  # type: ignore[arg-type,return-value]


def capture_for(engine: str, version: str) -> str:
    """The captured release whose flags a simulated `engine` `version` has."""
    versions = captured_versions(engine)
    if not versions:
        raise FileNotFoundError(f"no captured {engine} release in {CAPTURES}")
    wanted = _version(version)
    if wanted is None:
        return versions[-1]
    at_or_below = [v for v in versions if Version(v).release <= wanted.release]
    return at_or_below[-1] if at_or_below else versions[0]


def help_text(engine: str, version: str) -> str:
    """The `--help` a host with this engine version prints (the bot's probe runs that command)."""
    return (CAPTURES / f"{engine}-{capture_for(engine, version)}.help.txt").read_text()


def install_capture(engine: str, version: str, package_dir: Path) -> str:
    """Copy the capture into the simulated engine package (package_dir/captured); returns the release used."""
    release = capture_for(engine, version)
    target = package_dir / "captured"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    stem = CAPTURES / f"{engine}-{release}"
    shutil.copyfile(f"{stem}.json", target / "options.json")
    shutil.copyfile(f"{stem}.help.txt", target / "help.txt")
    if Path(f"{stem}.help-all.txt").exists():
        shutil.copyfile(f"{stem}.help-all.txt", target / "help-all.txt")
    return release
