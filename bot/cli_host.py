"""`deploybot host add | list` and `deploybot probe`: onboarding a host, and what the probes saw on each."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from bot.config import AppConfig, ConfigError, default_config_path, load_config
from bot.hostkey import HostKey, HostKeyMismatch
from bot.remote import RemoteError
from bot.store import Store

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


def add_host_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    host = sub.add_parser("host", parents=[common], help="onboard a host (add) or show the hosts (list)")
    verbs = host.add_subparsers(dest="host_command", required=True, metavar="{add,list}")
    p = verbs.add_parser("add", parents=[common], help="fetch the host key, find engines and models, write app.yaml")
    p.add_argument("name", help="the host's name in requests (CT129, gpu-7)")
    p.add_argument("target", metavar="[USER@]ADDRESS[:PORT]")
    p.add_argument("--identity-file", help="SSH private key for the login (default: ssh's usual keys)")
    p.add_argument("--known-hosts", help="known_hosts file to record the key in (default: ~/.ssh/known_hosts)")
    p.add_argument("--trust", metavar="SHA256:FINGERPRINT", help="the host key fingerprint you checked on the host")
    p.add_argument("--python", help="the engine interpreter on the host, when discovery should not choose")
    p.add_argument("--json", action="store_true")
    p = verbs.add_parser("list", parents=[common], help="each host's GPUs, engines and models (last probe)")
    p.add_argument("--refresh", action="store_true", help="probe every host first")
    p.add_argument("--json", action="store_true")


async def _confirm_at_terminal(key: HostKey) -> bool:
    answer = await asyncio.to_thread(input, f"Trust {key.fingerprint} for {key.address}:{key.port}? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


async def cmd_host_add(args: argparse.Namespace) -> int:
    from bot.onboard import OnboardError, entry_json, onboard, parse_target, summary

    config_path = Path(args.config) if args.config else default_config_path()
    store = Store(args.db)
    try:
        done = await onboard(
            args.name, parse_target(args.target), config_path=config_path, store=store,
            known_hosts=args.known_hosts, identity_file=args.identity_file, trust=args.trust, python=args.python,
            confirm=_confirm_at_terminal if sys.stdin.isatty() and args.trust is None else None,
            say=(lambda text: print(text, file=sys.stderr)) if args.json else print,
        )
    except (HostKeyMismatch, OnboardError) as exc:
        print(f"deploybot host add: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RemoteError as exc:
        print(f"deploybot host add: {exc}; nothing was written", file=sys.stderr)
        return EXIT_FAILED
    finally:
        store.close()
    print(entry_json(done) if args.json else summary(done) + f"\n(written to {config_path})")
    return 0


async def cmd_host_list(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    store = Store(args.db)
    try:
        if args.refresh:
            await _probe_all(config, store)
        views = store.host_views_sync()
    finally:
        store.close()
    if args.json:
        print(json.dumps({name: json.loads(views[name].model_dump_json()) if name in views else None
                          for name in config.hosts}, indent=2))
        return 0
    for name, host in config.hosts.items():
        where = f"{host.user + '@' if host.user else ''}{host.address}:{host.port}" if host.transport == "ssh" else "local"
        print(f"{name}  ({where})")
        view = views.get(name)
        if view is None:
            listed = ", ".join(host.models or []) or "none listed"
            print(f"  not probed yet: run `deploybot probe {name}` (app.yaml lists: {listed})")
            continue
        print(f"  GPUs:    {view.gpu_text()}")
        print(f"  engines: {view.engine_text()}  [{view.python or host.python}]")
        print(f"  models:  {view.model_text()}")
        print(f"  probed:  {view.probed_at:%Y-%m-%d %H:%M:%S} UTC")
    return 0


async def _probe_all(config: AppConfig, store: Store) -> None:
    from bot.discovery import Discovery
    from bot.remote import RemotePool

    pool = RemotePool(config.hosts)
    try:
        results = await Discovery(config, store, pool).probe_hosts()
    finally:
        await pool.close()
    for name, result in results.items():
        if isinstance(result, BaseException):
            print(f"{name}: not probed ({result}); showing its last view", file=sys.stderr)


async def cmd_probe(args: argparse.Namespace) -> int:
    """Probe one host, print what it saw and store it (the inventory the parser reads)."""
    from bot.backends.registry import BackendPool
    from bot.discovery import Discovery
    from bot.remote import RemotePool

    config = load_config(args.config)
    if args.host not in config.hosts:
        print(f"deploybot probe: unknown host {args.host!r} (app.yaml has: {', '.join(config.hosts)}); "
              f"add it with `deploybot host add {args.host} [USER@]ADDRESS[:PORT]`", file=sys.stderr)
        return EXIT_BAD_INPUT
    pool = RemotePool(config.hosts)
    store = Store(args.db)
    try:
        backends = BackendPool(config.hosts, pool)
        facts = await backends.get(args.host).probe(model=args.model)
        await Discovery(config, store, pool, backends).record(facts)
    except RemoteError as exc:
        print(f"deploybot probe: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        await pool.close()
        store.close()
    print(facts.model_dump_json(indent=2, exclude={"engine_help"}))
    return 0


__all__ = ["ConfigError", "add_host_commands", "cmd_host_add", "cmd_host_list", "cmd_probe"]
