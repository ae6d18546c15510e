"""`make engine-check`: the real engines' own validation over every plan deploybot makes (not part of `make test`).

    .venv/bin/python tools/engine_check.py [--work /tmp/engine-venvs] [--only sglang-0.5.23] [--jobs 2]

Plans: tools/engine_check_plans.py (every model config in bot/simhost/configs x every captured release x the
request variants, on 8 simulated GPUs of 24 / 48 / 80 / 141 GB). Each release is installed into its throwaway
venv as tools/capture_engine_help.py does; tools/engine_validate.py then runs SGLang's prepare_server_args /
check_server_args / ModelConfig, or vLLM's parser / AsyncEngineArgs.from_cli_args / create_engine_config, with the
device queries answered for that GPU kind. Prints each rejection with the engine's own message, a summary, and
exits 1 when a plan deploybot made is rejected or a negative control is accepted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
sys.path[:0] = [str(TOOLS), str(TOOLS.parent)]

from capture_engine_help import base_venv, engine_venv  # noqa: E402
from engine_check_plans import GPU_COUNT, GPU_KINDS, Case, controls, plans  # noqa: E402

MISSING_MARK = "No module named"


def sitecustomize(folder: Path, kind: str) -> Path:
    name, mib, cc = GPU_KINDS[kind]
    major, minor = cc.split(".")
    site = folder / f"site-{kind}"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(TOOLS)!r})\n"
        "import engine_device, engine_stubs\n"
        "engine_stubs.install_stubs()\n"
        f"engine_device.patch_devices(engine_device.SimGpu({name!r}, {mib}, ({major}, {minor}), count={GPU_COUNT}))\n"
    )
    # SGLang sizes its defaults from `nvidia-smi --query-gpu=memory.total` (sglang/srt/utils/common.py): answer it
    smi = site / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + "".join(f"echo {mib}\n" for _ in range(GPU_COUNT)))
    smi.chmod(0o755)
    return site


def validate(work: Path, engine: str, version: str, kind: str, batch: list[Case]) -> list[dict]:
    """One process per release and GPU kind (engines cache device facts); a missing pure-Python module is
    installed and the batch rerun, as in the capture."""
    base = base_venv(work)
    venv, _ = engine_venv(work, base, engine, version)
    site = sitecustomize(work, kind)
    with tempfile.TemporaryDirectory() as tmp:
        plans_file, results_file = Path(tmp) / "plans.json", Path(tmp) / "results.json"
        plans_file.write_text(json.dumps([{"id": c.id, "argv": c.argv, "env": c.env} for c in batch]))
        installed: list[str] = []
        for _ in range(8):
            env = {**os.environ, "PYTHONPATH": str(site), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                   "PATH": f"{site}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
            done = subprocess.run([str(venv / "bin" / "python"), str(TOOLS / "engine_validate.py"), engine,
                                   str(plans_file), str(results_file)], capture_output=True, text=True, env=env,
                                  cwd=tmp, timeout=3600)
            if done.returncode:
                return [{"id": c.id, "accepted": False, "message": "validator crashed: " + done.stderr[-500:]}
                        for c in batch]
            results = json.loads(results_file.read_text())
            missing = sorted({r["message"].split("'")[1] for r in results
                              if not r["accepted"] and MISSING_MARK in r.get("message", "") and "'" in r["message"]})
            missing = [m.split(".")[0] for m in missing if m.split(".")[0] not in installed]
            if not missing:
                return results
            for name in missing:
                installed.append(name)
                subprocess.run([str(base / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
                                name.replace("_", "-")], capture_output=True)
        return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/engine-venvs"))
    ap.add_argument("--only", nargs="*", default=None, help="releases to check, e.g. sglang-0.5.23")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--report", type=Path, default=None, help="write every verdict as JSON here")
    ap.add_argument("--reprint", type=Path, default=None, help="print a saved --report again, run nothing")
    args = ap.parse_args()
    if args.reprint:
        return reprint(args.reprint)
    models = args.work / "models"
    made, refused = plans(models)
    from_plain = {c.id: c.argv for c in plans(models, plain_help=True)[0]}
    differ = [c.id for c in made if from_plain.get(c.id) != c.argv]
    print(f"plans made from each release's complete help (vLLM --help=all); {len(differ)} of them differ from the "
          f"plans made from the plain --help the bot's probe captures" + (f": {', '.join(differ[:5])}" if differ else ""))
    cases = made + controls(models)
    if args.only:
        cases = [c for c in cases if f"{c.engine}-{c.version}" in args.only]
    groups: dict[tuple, list[Case]] = defaultdict(list)
    for case in cases:
        groups[(case.engine, case.version, case.gpu)].append(case)
    verdicts: dict[str, dict] = {}
    with ThreadPoolExecutor(args.jobs) as pool:
        for results in pool.map(lambda key: validate(args.work, *key, groups[key]), sorted(groups)):
            verdicts.update({r["id"]: r for r in results})
    return report(cases, verdicts, refused, len(made), args.report)


def control_ok(case: Case, verdicts: dict[str, dict]) -> bool:
    """A negative control holds when the engine rejected it, with a message showing the reason it breaks."""
    verdict = verdicts.get(case.id, {"accepted": False, "message": "no verdict"})
    said = f"{verdict.get('message', '')} [{verdict.get('where')}]"
    return not verdict["accepted"] and bool(case.expect) and re.search(case.expect, said, re.S) is not None


def release_order(label: str) -> tuple:
    engine, _, version = label.partition("-")
    return engine, tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def reprint(saved: Path) -> int:
    """Print the verdicts of a saved --report again (the summary and exit status as the run that wrote it)."""
    data = json.loads(saved.read_text())
    cases = [Case(**c) for c in data["cases"]]
    made = sum(1 for c in cases if c.control is None)
    return report(cases, data["verdicts"], data["refused"], made, None)


def report(cases: list[Case], verdicts: dict[str, dict], refused: list[str], matrix_plans: int, out: Path | None) -> int:
    failures = 0
    per_release: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for case in cases:
        verdict = verdicts.get(case.id, {"accepted": False, "message": "no verdict"})
        label = f"{case.engine}-{case.version}"
        if case.control is None:
            per_release[label][0] += verdict["accepted"]
            per_release[label][1] += 1
            if not verdict["accepted"]:
                failures += 1
                print(f"REJECTED {case.id}: {verdict.get('message')} [{verdict.get('where')}]\n    {' '.join(case.argv)}")
        else:
            said = f"{verdict.get('message', '')} [{verdict.get('where')}]"
            ok = control_ok(case, verdicts)
            failures += not ok
            outcome = "accepted" if verdict["accepted"] else ("rejected" if ok else "rejected for another reason")
            print(f"control {'ok  ' if ok else 'FAIL'} {case.id} ({case.control}): {outcome}"
                  + (f": {said[:300]}" if not verdict["accepted"] else ""))
    for label, (accepted, total) in sorted(per_release.items(), key=lambda item: release_order(item[0])):
        held = sum(1 for c in cases if c.control and f"{c.engine}-{c.version}" == label and control_ok(c, verdicts))
        controls_here = sum(1 for c in cases if c.control and f"{c.engine}-{c.version}" == label)
        print(f"{label}: {accepted}/{total} plans accepted, {total - accepted} rejected; "
              f"negative controls rejected for their reason: {held}/{controls_here}")
    accepted = sum(a for a, _ in per_release.values())
    total = sum(t for _, t in per_release.values())
    print(f"matrix: {matrix_plans + len(refused)} requests, {matrix_plans} plans made, {len(refused)} refused by "
          f"the planner; engine verdict: {accepted}/{total} plans accepted")
    if out:
        out.write_text(json.dumps({"verdicts": verdicts, "cases": [asdict(c) for c in cases], "refused": refused},
                                  indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
