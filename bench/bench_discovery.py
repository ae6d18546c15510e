"""Benchmark: how long `serve` takes to learn a 50-host fleet's models at start, and what a name not yet known costs.

The 50-host setup of bench_fleet_probe.py: fifty real OpenSSH servers on loopback (each its own port, host key,
user key, strict known_hosts) front one simulated GPU host folder. Each host gets a models folder of its own,
holding a different 2 to 5 of the shipped models (symlinked folders), so that each host's listing differs; the
host folder's Hugging Face cache holds one more model. The app.yaml lists no models at all.

In a fresh process (as `serve` starts), with an empty store:
- learn: `Pipeline.discovery.refresh_forever()` -- what `SlackService.start()` runs on its story loop -- with the
  refresh interval 0 (one round), timed from the call to every host's view in SQLite; then checked: the
  inventory the parser gets names each host's own models, and only those;
- floor: the same 50 probes sent by plain asyncssh (connect, run the agent, read its JSON), nothing stored;
- unknown name: a model folder copied onto one host after the round; `Pipeline.parse()` of a request naming it
  on that host (one probe of that host, read again), median of several.

    .venv/bin/python bench/bench_discovery.py [--hosts 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, figure, note, ratio, require_sshd, sim_host, sshd_servers, summary  # noqa: E402

CHILD_TIMEOUT_S = 200
SHIPPED = ["Qwen3.6-27B", "Qwen3-32B", "Llama-3.1-8B-Instruct", "Mistral-7B-Instruct-v0.3", "Qwen3-8B",
           "gemma-3-27b-it", "Qwen3-30B-A3B"]
LATE_MODEL = "Llama-3.1-70B-Instruct"


async def child(raw_config: dict, expected: dict, db: str, late_host: str, late_dir: str, source: str, repeats: int,
                floor_first: bool) -> dict:
    import asyncssh

    from bot.config import Secrets, expand, parse_config
    from bot.pipeline import Pipeline
    from bot.probe import agent_source
    from bot.remote import remote_command
    from bot.store import Store

    config = parse_config(raw_config)
    pipeline = Pipeline(config, Store(db), secrets=Secrets())
    out: dict = {}
    try:
        async def learn() -> None:
            started = time.perf_counter()
            await pipeline.discovery.refresh_forever()  # interval 0: one round, as serve's first
            out["learn_s"] = time.perf_counter() - started
            views = pipeline.store.host_views_sync()
            inventory = pipeline.inventory()
            out["hosts_known"] = len(views)
            out["inventory_wrong"] = {n: [sorted(inventory.hosts[n].models), sorted(expected[n])] for n in config.hosts
                                      if set(inventory.hosts[n].models) != set(expected[n])}
            out["inventory_right"] = sum(
                1 for name, host in config.hosts.items()
                if name in views and set(inventory.hosts[name].models) == set(expected[name]))

        async def floor_one(name: str) -> int:
            cfg = config.hosts[name]
            args = {"models_dir": cfg.models_dir, "model": None, "engine_help": []}
            async with asyncssh.connect(cfg.address, port=cfg.port, username=cfg.user,
                                        client_keys=[expand(cfg.identity_file or "")],
                                        known_hosts=expand(cfg.known_hosts or ""), agent_path=None, config=[]) as c:
                result = await c.run(remote_command([cfg.python, "-", json.dumps(args)]),
                                     input=agent_source("probe_agent"), check=True)
            return len(json.loads(str(result.stdout))["models_available"])

        async def floor() -> None:
            started = time.perf_counter()
            await asyncio.gather(*(floor_one(n) for n in config.hosts))
            out["floor_s"] = time.perf_counter() - started

        # Alternated between rounds, so that neither gains from the other having warmed the host side.
        for step in ((floor, learn) if floor_first else (learn, floor)):
            await step()
        views = pipeline.store.host_views_sync()

        # A folder copied onto one host after the round: found by the next request that names it.
        Path(late_dir, LATE_MODEL).symlink_to(Path(source, LATE_MODEL))
        out["unknown_name_s"], out["known_name_s"] = await name_times(pipeline, views[late_host], repeats)
    finally:
        await pipeline.close()
    return out


async def name_times(pipeline, old_view, repeats: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Median seconds to read a request naming the late model: while unknown (one probe, read again), then known."""
    from bot.models import DeployRequest

    request = f"start {LATE_MODEL} on {old_view.host}"
    unknown, known = [], []
    for _ in range(repeats):
        pipeline.store.save_host_view_sync(old_view)  # forget it again: the name is unknown once more
        started = time.perf_counter()
        parsed = await pipeline.parse(request)
        unknown.append(time.perf_counter() - started)
        assert isinstance(parsed, DeployRequest) and parsed.model == LATE_MODEL, parsed
    for _ in range(repeats):
        started = time.perf_counter()
        await pipeline.parse(request)  # now known: no probe at all
        known.append(time.perf_counter() - started)
    return statistics.median(unknown), statistics.median(known)


def layout(work: Path, hosts: int, sim) -> tuple[list[dict], dict[str, list[str]]]:  # type: ignore[no-untyped-def]
    """Per host a models folder with its own 2-5 models (symlinks into the sim host's folder)."""
    rng = random.Random(11)
    for name in SHIPPED + [LATE_MODEL]:
        if not (sim.models_dir / name).exists():
            sim.add_model(name)
    sim.add_hf_model("Qwen/Qwen3-8B", config="Qwen3-8B")
    expected: dict[str, list[str]] = {}
    dirs = []
    for index in range(hosts):
        name = f"gpu{index:03d}"
        folder = work / "models" / name
        folder.mkdir(parents=True)
        chosen = rng.sample(SHIPPED, rng.randint(2, 5))
        for model in chosen:
            (folder / model).symlink_to(sim.models_dir / model)
        # The HF cache one is on every host (one HF_HOME); where a plain Qwen3-8B folder took the name first,
        # the cached copy is listed as Qwen--Qwen3-8B (modelfind.py: nothing hidden).
        expected[name] = sorted({*chosen, "Qwen--Qwen3-8B" if "Qwen3-8B" in chosen else "Qwen3-8B"})
        dirs.append(str(folder))
    return dirs, expected


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes (each a new serve); medians reported")
    parser.add_argument("--repeats", type=int, default=5, help="unknown-name requests per round")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        spec = json.loads(args.child.read_text())
        print(json.dumps(asyncio.run(child(**spec))))
        return 0
    missing = require_sshd()
    if missing:
        print(f"bench_discovery: {missing}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-discovery-") as folder:
        work = Path(folder)
        with sim_host(work / "host", gpus="2xA6000", models=[]) as sim, \
                sshd_servers(work / "sshd", args.hosts) as servers:
            dirs, expected = layout(work, args.hosts, sim)
            hosts = {}
            for index, server in enumerate(servers):
                entry = {**sim.host_config(), **server.host_overrides(), "models_dir": dirs[index]}
                entry.pop("models")
                entry.pop("gpus")
                hosts[f"gpu{index:03d}"] = entry
            note(f"{len(servers)} sshd on 127.0.0.1, one simulated host folder, a models folder per host; "
                 f"app.yaml lists no models; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
            results = []
            late = f"gpu{min(17, args.hosts - 1):03d}"
            for round_ in range(args.rounds):
                (work / "models" / late / LATE_MODEL).unlink(missing_ok=True)
                spec = {"raw_config": {"hosts": hosts, "discovery": {"refresh_interval_s": 0}}, "expected": expected,
                        "db": str(work / f"state-{round_}.db"), "late_host": late,
                        "late_dir": str(work / "models" / late), "source": str(sim.models_dir),
                        "repeats": args.repeats, "floor_first": round_ % 2 == 1}
                spec_file = work / "spec.json"
                spec_file.write_text(json.dumps(spec))
                results.append(run_child(spec_file))
    return report(args.hosts, results)


def run_child(spec_file: Path) -> dict:
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(spec_file)],
                          capture_output=True, text=True, cwd=REPO, timeout=CHILD_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"the bench's bot process failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(hosts: int, results: list[dict]) -> int:
    med = lambda key: statistics.median(r[key] for r in results)  # noqa: E731
    figure("hosts", hosts)
    figure("learn_fleet_models_s", med("learn_s"), "s")
    figure("learn_fleet_models_min_max_s", f"{min(r['learn_s'] for r in results):.2f}..{max(r['learn_s'] for r in results):.2f}")
    figure("floor_plain_asyncssh_s", med("floor_s"), "s")
    figure("learn_vs_floor", ratio(med("learn_s"), med("floor_s")), "x")
    figure("hosts_known_after_round", min(r["hosts_known"] for r in results))
    figure("hosts_inventory_right", min(r["inventory_right"] for r in results))
    figure("unknown_name_resolved_s", med("unknown_name_s"), "s")
    figure("known_name_parse_ms", med("known_name_s") * 1000, "ms")
    summary(f"serve learns {hosts} hosts' models in {med('learn_s'):.2f} s (plain asyncssh floor "
            f"{med('floor_s'):.2f} s); a folder copied later is found by the next request in "
            f"{med('unknown_name_s') * 1000:.0f} ms (one probe of its host)")
    for r in results:
        for name, (got, wanted) in list(r.get("inventory_wrong", {}).items())[:3]:
            note(f"{name}: inventory {got}, expected {wanted}")
    ok = all(r["hosts_known"] == hosts and r["inventory_right"] == hosts for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
