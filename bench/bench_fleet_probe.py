"""Benchmark: probe a fleet of 50 hosts at once, the bot against Ansible, in the same run.

Fifty real OpenSSH servers on loopback (each its own port, host key, user key and known_hosts; strict host key
checking on both sides) front one simulated GPU host folder. Then, one after the other:

- the bot: a fresh `deploybot` process (bench_fleet_probe.py --bot-child) runs the real `bot.probe.probe()` over
  one `SshRemote` per host, all 50 at once (asyncio.gather): cold (new connections), then warm (the pooled ones);
- Ansible (ansible-core in its own venv, bench/.venv-ansible, created on first use): an ad-hoc
  `shell: nvidia-smi --query-gpu=index,name,memory.total,memory.used --format=csv` with forks=50, pipelining on,
  its default ControlPersist; cold, then warm (its ssh control masters still up).

Printed: wall time of each, the memory of everything each started (the bot's one process; Ansible's controller,
its workers and their ssh clients, summed and sampled), CPU time, and the ratios. The bot gathers more (GPUs,
processes on them, ports, models, engines, disk, RAM) than Ansible's one nvidia-smi query.

    .venv/bin/python bench/bench_fleet_probe.py [--hosts 50] [--no-ansible] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    REPO,
    TreeMemory,
    figure,
    host_side_cpu_seconds,
    listener_pid,
    note,
    peak_rss_mib,
    ratio,
    require_sshd,
    rss_mib,
    sim_host,
    sshd_servers,
    summary,
    tree_cpu_seconds,
)

ANSIBLE_VENV = Path(os.environ.get("BENCH_ANSIBLE_VENV", REPO / "bench" / ".venv-ansible"))
ANSIBLE_SPEC = "ansible-core>=2.16"
QUERY = "--query-gpu=index,name,memory.total,memory.used"
CHILD_TIMEOUT_S = 150


# --------------------------------------------------------------------------------------------- the bot (child)


async def bot_probe_fleet(hosts: list[dict], profile: bool, floor_first: bool) -> dict:
    """Runs in the child process: the bot's own probe over SshRemote, every host at once, cold then warm; the
    floor (plain asyncssh sending the same agent) and one host alone, for where the time goes."""
    import asyncssh

    from bot.config import HostConfig, expand
    from bot.probe import agent_source, probe
    from bot.remote import SshRemote, remote_command

    configs = {h["name"]: HostConfig.model_validate(h["config"]) for h in hosts}
    listeners = [h["sshd_pid"] for h in hosts]
    remotes = {name: SshRemote(name, cfg) for name, cfg in configs.items()}
    rss_start = rss_mib()
    phases: dict[str, dict] = {}
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()

    async def floor_one(cfg: HostConfig) -> int:
        """What the bot does, minus the bot: connect, send the same agent to the same python, read its JSON."""
        args = {"models_dir": cfg.models_dir, "model": None, "engine_help": []}
        async with asyncssh.connect(cfg.address, port=cfg.port, username=cfg.user,
                                    client_keys=[expand(cfg.identity_file or "")],
                                    known_hosts=expand(cfg.known_hosts or ""), agent_path=None, config=[]) as conn:
            result = await conn.run(remote_command([cfg.python, "-", json.dumps(args)]),
                                    input=agent_source("probe_agent"), check=True)
        return len(json.loads(str(result.stdout))["gpus"])

    async def shell_only(remote: SshRemote) -> int:
        result = await remote.run(["true"])
        if result.exit_status != 0:
            raise RuntimeError(f"`true` exited {result.exit_status}: {result.stderr[:200]}")
        return 1

    async def timed(phase: str, work: list) -> None:
        host_before = tree_cpu_seconds(listeners)
        cpu_before, started = time.process_time(), time.perf_counter()
        if profiler is not None and phase == "cold":
            profiler.enable()
        results = await asyncio.gather(*work, return_exceptions=True)
        if profiler is not None and phase == "cold":
            profiler.disable()
        seconds = time.perf_counter() - started
        failures = [f"{r!r}" for r in results if isinstance(r, BaseException)]
        gpus = [r if isinstance(r, int) else len(r.gpus) for r in results if not isinstance(r, BaseException)]
        phases[phase] = {
            "seconds": seconds, "cpu_s": time.process_time() - cpu_before, "ok": len(gpus),
            "host_cpu_s": tree_cpu_seconds(listeners) - host_before, "commands": len(work),
            "hosts_with_gpus": sum(1 for g in gpus if g > 0), "failures": failures[:5], "rss_mib": rss_mib(),
            "connects": sum(r.connects for r in remotes.values()),
            "round_trips": sum(r.round_trips for r in remotes.values()),
        }

    first_name, first_cfg = next(iter(configs.items()))
    single = SshRemote(first_name, first_cfg)
    try:
        await timed("single", [probe(single, first_name, first_cfg)])  # one host alone: its latency
    finally:
        await single.close()
    try:
        if floor_first:
            await timed("floor", [floor_one(cfg) for cfg in configs.values()])
        await timed("cold", [probe(remotes[n], n, configs[n]) for n in configs])
        await timed("warm", [probe(remotes[n], n, configs[n]) for n in configs])
        # The same pooled connections running `true`: what the host's login shell alone costs per command.
        await timed("shell_only", [shell_only(remotes[n]) for n in configs])
        if not floor_first:
            await timed("floor", [floor_one(cfg) for cfg in configs.values()])
    finally:
        await asyncio.gather(*(r.close() for r in remotes.values()), return_exceptions=True)
    answer = {"phases": phases, "rss_start_mib": rss_start, "peak_rss_mib": peak_rss_mib()}
    if profiler is not None:
        import io
        import pstats

        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
        answer["profile"] = out.getvalue()
    return answer


def bot_child_main(hosts_file: Path, profile: bool, floor_first: bool) -> int:
    hosts = json.loads(hosts_file.read_text())
    print(json.dumps(asyncio.run(bot_probe_fleet(hosts, profile, floor_first))))
    return 0


# --------------------------------------------------------------------------------------------- Ansible


def ensure_ansible() -> tuple[Path, float]:
    """ansible-core in its own venv (never in the bot's); created on first use. Returns (ansible, seconds spent)."""
    ansible = ANSIBLE_VENV / "bin" / "ansible"
    if ansible.exists():
        return ansible, 0.0
    started = time.perf_counter()
    note(f"installing {ANSIBLE_SPEC} into {ANSIBLE_VENV} (once)")
    subprocess.run([sys.executable, "-m", "venv", str(ANSIBLE_VENV)], check=True)
    subprocess.run([str(ANSIBLE_VENV / "bin" / "pip"), "install", "-q", ANSIBLE_SPEC], check=True)
    return ansible, time.perf_counter() - started


def ansible_inventory(hosts: list[dict], path: Path) -> None:
    lines = ["[fleet]"]
    for host in hosts:
        cfg = host["config"]
        ssh_args = f"-o StrictHostKeyChecking=yes -o UserKnownHostsFile={cfg['known_hosts']}"
        lines.append(
            f"{host['name']} ansible_host={cfg['address']} ansible_port={cfg['port']} ansible_user={cfg['user']} "
            f"ansible_ssh_private_key_file={cfg['identity_file']} ansible_ssh_common_args={shlex.quote(ssh_args)}"
        )
    # The target's own python, named: interpreter discovery would cost Ansible an extra round trip per host.
    lines += ["", "[fleet:vars]", f"ansible_python_interpreter={sys.executable}", ""]
    path.write_text("\n".join(lines))


def ansible_env(work: Path) -> dict[str, str]:
    """Ansible at its best for this job, kept inside the bench's folder (no ~/.ansible, no /etc/ansible)."""
    (work / "ansible.cfg").write_text("[defaults]\n")
    return {
        **os.environ,
        "ANSIBLE_CONFIG": str(work / "ansible.cfg"),
        "ANSIBLE_HOME": str(work / "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(work / "ansible-local"),
        "ANSIBLE_REMOTE_TEMP": str(work / "ansible-remote"),
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(work / "cp"),
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_PIPELINING": "True",  # one ssh command per host instead of put + exec + cleanup
        "ANSIBLE_FORKS": "50",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_DEPRECATION_WARNINGS": "False",
        "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
    }


def run_ansible(ansible: Path, inventory: Path, env: dict[str, str], nvidia_smi: Path, forks: int,
                pattern: str = "fleet") -> dict:
    command = [str(ansible), pattern, "-i", str(inventory), "-f", str(forks), "-o", "-m", "shell",
               "-a", f"{shlex.quote(str(nvidia_smi))} {QUERY} --format=csv"]
    before = os.times()
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    with TreeMemory(process.pid) as memory:
        try:
            out, err = process.communicate(timeout=CHILD_TIMEOUT_S)
        except BaseException:  # a timeout or an interrupt: Ansible and its workers go too (own session)
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            raise
    seconds = time.perf_counter() - started
    after = os.times()
    ok = [line for line in out.splitlines() if " | CHANGED | rc=0 |" in line and "memory.total" in line]
    gpus = [line.count("MiB\\n") for line in ok]  # one line per GPU in each host's CSV (escaped newlines)
    return {"seconds": seconds, "ok": len(ok), "hosts_with_gpus": sum(1 for g in gpus if g > 0),
            "cpu_s": (after.children_user - before.children_user) + (after.children_system - before.children_system),
            "peak_tree_mib": memory.peak_mib, "peak_processes": memory.peak_processes,
            "errors": [line for line in (out + err).splitlines() if "UNREACHABLE" in line or "FAILED" in line][:3]}


def stop_control_masters(work: Path) -> int:
    """Ansible's ControlPersist leaves one ssh master per host running for 60 s: end them now (ours only)."""
    control_dir = work / "cp"
    stopped = 0
    for socket_path in control_dir.glob("*") if control_dir.exists() else []:
        done = subprocess.run(["ssh", "-o", f"ControlPath={socket_path}", "-O", "exit", "unused"],
                              capture_output=True, timeout=10)
        stopped += done.returncode == 0
    # Any master that did not answer: found by our private control directory in its command line.
    marker = str(control_dir).encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker in Path(f"/proc/{entry}/cmdline").read_bytes():
                    os.kill(int(entry), signal.SIGTERM)
                    stopped += 1
            except (OSError, ProcessLookupError):
                continue
    return stopped


# --------------------------------------------------------------------------------------------- main


def run_bot_child(hosts_file: Path, profile: bool, floor_first: bool) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--bot-child", str(hosts_file)]
    if profile:
        command.append("--profile")
    if floor_first:
        command.append("--floor-first")
    before = os.times()
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    with TreeMemory(process.pid) as memory:
        try:
            out, err = process.communicate(timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
    after = os.times()
    if process.returncode != 0:
        raise RuntimeError(f"the bot's probe process failed ({process.returncode}):\n{err[-2000:]}")
    answer = json.loads(out.strip().splitlines()[-1])
    answer["process_seconds"] = time.perf_counter() - started
    answer["process_cpu_s"] = ((after.children_user - before.children_user)
                               + (after.children_system - before.children_system))
    answer["peak_tree_mib"] = memory.peak_mib
    return answer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2, help="bot/Ansible pairs run alternately; medians reported")
    parser.add_argument("--no-ansible", action="store_true", help="the bot only (no venv is created)")
    parser.add_argument("--profile", action="store_true", help="cProfile the bot's cold probe (top 15 by own time)")
    parser.add_argument("--bot-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--floor-first", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bot_child:
        return bot_child_main(args.bot_child, args.profile, args.floor_first)
    missing = require_sshd()
    if missing:
        print(f"bench_fleet_probe: {missing}", file=sys.stderr)
        return 2

    ansible, install_s = (None, 0.0) if args.no_ansible else ensure_ansible()
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as folder:
        work = Path(folder)
        started = time.perf_counter()
        with sim_host(work / "host", gpus="2xA6000") as sim, sshd_servers(work / "sshd", args.hosts) as servers:
            note(f"{len(servers)} sshd on 127.0.0.1 ports {servers[0].port}..{servers[-1].port} "
                 f"started in {time.perf_counter() - started:.1f} s; one simulated host folder ({sim.gpus})")
            hosts: list[dict] = [{"name": f"gpu{i:03d}", "config": {**sim.host_config(), **s.host_overrides()},
                                  "sshd_pid": listener_pid(s)} for i, s in enumerate(servers)]
            hosts_file = work / "hosts.json"
            hosts_file.write_text(json.dumps(hosts))
            inventory = work / "inventory.ini"
            ansible_inventory(hosts, inventory)
            env = ansible_env(work)
            bots: list[dict] = []
            cold_ansible: list[dict] = []
            warm_ansible: list[dict] = []
            single_ansible: list[dict] = []
            try:
                for round_ in range(args.rounds):
                    # Host-side CPU (sshd sessions, login shells, the commands) is counted per tool: the 50
                    # "hosts" share this machine's cores with the bot and with Ansible.
                    bots.append(run_bot_child(hosts_file, args.profile and round_ == 0, floor_first=round_ % 2 == 1))
                    if ansible is not None:
                        smi = sim.bin_dir / "nvidia-smi"
                        for runs in (cold_ansible, warm_ansible):
                            host_cpu = host_side_cpu_seconds(servers)
                            runs.append(run_ansible(ansible, inventory, env, smi, args.hosts))
                            runs[-1]["host_cpu_s"] = host_side_cpu_seconds(servers) - host_cpu
                        stop_control_masters(work)
                        single_ansible.append(run_ansible(ansible, inventory, env, sim.bin_dir / "nvidia-smi", 1,
                                                          pattern=hosts[0]["name"]))
                        stop_control_masters(work)
            finally:
                stop_control_masters(work)
    report(args.hosts, bots, cold_ansible, warm_ansible, single_ansible, install_s)
    return 0 if all(b["phases"]["cold"]["ok"] == args.hosts for b in bots) else 1


def med(values: list[float]) -> float:
    return statistics.median(values)


def report(n: int, bots: list[dict], cold_ansible: list[dict], warm_ansible: list[dict], single_ansible: list[dict],
           install_s: float) -> None:
    def bot(phase: str, key: str = "seconds") -> float:
        return med([b["phases"][phase][key] for b in bots])

    cold, warm, floor, single = bot("cold"), bot("warm"), bot("floor"), bot("single")
    process = med([b["process_seconds"] for b in bots])
    bot_memory = med([b["peak_tree_mib"] for b in bots])
    first = bots[0]["phases"]
    cores = os.cpu_count() or 1
    figure("hosts", n)
    figure("rounds", len(bots))
    figure("bot_cold_ok", f"{first['cold']['ok']}/{n}", "hosts")
    figure("bot_cold_hosts_with_gpus", first["cold"]["hosts_with_gpus"])
    figure("bot_cold_wall", cold, "s")
    figure("bot_warm_wall", warm, "s")
    figure("bot_warm_shell_only_wall", bot("shell_only"), "s (`true` on the same pooled connections)")
    for phase in ("cold", "warm", "shell_only"):
        figure(f"host_cpu_per_host_{phase}", bot(phase, "host_cpu_s") / n,
               "s (sshd session, login shell, " + ("`true`)" if phase == "shell_only" else "agent, nvidia-smi)"))
    figure("floor_cold_wall", floor, "s (plain asyncssh, same agent, same hosts)")
    figure("ratio_bot_cold_over_floor", ratio(cold, floor), "x")
    figure("bot_single_host_wall", single, "s (one host alone, cold)")
    figure("bot_process_wall", process, "s (python start + imports + all phases + close)")
    figure("bot_cold_cpu", bot("cold", "cpu_s"), "s (the bot's own process)")
    figure("bot_process_cpu", med([b["process_cpu_s"] for b in bots]), "s")
    figure("bot_connects", first["cold"]["connects"])
    figure("bot_round_trips_per_host", first["cold"]["round_trips"] / n)
    figure("bot_rss_before_probe", bots[0]["rss_start_mib"], "MiB")
    figure("bot_rss_after_cold", first["cold"]["rss_mib"], "MiB")
    figure("bot_rss_peak", bot_memory, "MiB")
    if first["cold"]["failures"]:
        figure("bot_failures", "; ".join(first["cold"]["failures"]))
    if not cold_ansible:
        summary(f"{n} hosts probed at once: bot {cold:.2f} s cold / {warm:.2f} s warm (Ansible skipped)")
        return
    a_cold, a_warm = med([a["seconds"] for a in cold_ansible]), med([a["seconds"] for a in warm_ansible])
    a_single = med([a["seconds"] for a in single_ansible])
    a_cpu = med([a["cpu_s"] for a in cold_ansible])
    a_memory = med([a["peak_tree_mib"] for a in cold_ansible])
    figure("ansible_install", install_s, "s (0 when the venv was there)")
    figure("ansible_cold_ok", f"{cold_ansible[0]['ok']}/{n}", "hosts")
    figure("ansible_cold_hosts_with_gpus", cold_ansible[0]["hosts_with_gpus"])
    figure("ansible_cold_wall", a_cold, "s")
    figure("ansible_warm_wall", a_warm, "s")
    figure("ansible_single_host_wall", a_single, "s (one host alone, cold)")
    figure("ansible_cold_cpu", a_cpu, "s (controller, workers, ssh clients)")
    figure("host_cpu_per_host_ansible_cold", med([a["host_cpu_s"] for a in cold_ansible]) / n,
           "s (sshd session, login shell, AnsiballZ python, nvidia-smi)")
    figure("host_cpu_per_host_ansible_warm", med([a["host_cpu_s"] for a in warm_ansible]) / n, "s")
    figure("ansible_peak_tree_rss", a_memory, "MiB")
    figure("ansible_peak_processes", cold_ansible[0]["peak_processes"])
    if cold_ansible[0]["errors"]:
        figure("ansible_errors", " / ".join(cold_ansible[0]["errors"]))
    figure("ratio_cold_ansible_over_bot", ratio(a_cold, cold), "x")
    figure("ratio_warm_ansible_over_bot", ratio(a_warm, warm), "x")
    figure("ratio_ansible_cold_over_bot_process", ratio(a_cold, process), "x (bot incl. its own start-up)")
    figure("ratio_controller_cpu_ansible_over_bot", ratio(a_cpu, bot("cold", "cpu_s")), "x")
    figure("ratio_memory_ansible_over_bot", ratio(a_memory, bot_memory), "x")
    # On a real fleet every host has its own CPUs: the wall is at least one host's latency and at least the
    # controller's CPU spread over this machine's cores. Derived from the figures above, not measured.
    real_bot = max(single, bot("cold", "cpu_s") / cores)
    real_ansible = max(a_single, a_cpu / cores)
    figure("derived_real_fleet_bot", real_bot, "s (max of one host's latency, controller CPU / cores)")
    figure("derived_real_fleet_ansible", real_ansible, "s")
    figure("derived_real_fleet_ratio", ratio(real_ansible, real_bot), "x")
    verdict = "at least 5x ahead" if a_cold / cold >= 5 else "NOT 5x ahead on this box"
    summary(f"{n} hosts probed at once: bot {cold:.2f} s cold / {warm:.2f} s warm (floor {floor:.2f} s), Ansible "
            f"{a_cold:.2f} s cold / {a_warm:.2f} s warm: {a_cold / cold:.1f}x cold ({verdict}; the hosts' own work "
            f"shares the same {cores} cores), controller CPU {a_cpu / max(bot('cold', 'cpu_s'), 1e-9):.0f}x less, "
            f"memory {bot_memory:.0f} MiB against {a_memory:.0f} MiB")
    if bots[0].get("profile"):
        print("# cProfile of the bot's cold probe (top by own time):")
        for line in bots[0]["profile"].splitlines():
            print(f"#   {line}")


if __name__ == "__main__":
    raise SystemExit(main())
