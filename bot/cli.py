"""`deploybot` entry point: ask | chat | parse | plan | probe | resume | diagnose | demo | serve | manifest | audit | help."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from rich.console import Console

from bot.config import AppConfig, ConfigError, Secrets, load_config
from bot.events import RecordingThread
from bot.models import ParseError, PlanFailure
from bot.store import Store

EXIT_BAD_INPUT = 2


def _config(args: argparse.Namespace) -> AppConfig:
    return load_config(args.config)


def _store(args: argparse.Namespace) -> Store:
    return Store(getattr(args, "db", None))


def _print_json(value: object) -> None:
    print(json.dumps(value, indent=2, default=str))


# ---------------------------------------------------------------------------------------------- commands


async def cmd_ask(args: argparse.Namespace) -> int:
    from bot.pipeline import Pipeline
    from handlers.console import ConsoleApprover, ConsoleThread

    config = _config(args)
    console = Console(highlight=False, soft_wrap=True)
    approver = ConsoleApprover(console, assume_yes=args.yes, interactive=sys.stdin.isatty())
    pipeline = Pipeline(config, _store(args), secrets=Secrets(), approver=approver)
    try:
        outcome = await pipeline.handle_text(args.text, ConsoleThread(console), until_ready=not args.follow)
    finally:
        await pipeline.close()
    return outcome.exit_code


async def cmd_parse(args: argparse.Namespace) -> int:
    from bot.request import parse_request

    config = _config(args)
    store = Store(args.db) if args.db else None
    from bot.request import Inventory

    inventory = Inventory.from_config(config, store.known_models_sync() if store else None)
    result = parse_request(args.text, inventory)
    if isinstance(result, ParseError):
        payload = {"error": result.model_dump()}
        print(json.dumps(payload, indent=2) if args.json else f"{result.kind}: {result.message}")
        if not args.json:
            for s in result.suggestions:
                print(f"  - {s}")
        return EXIT_BAD_INPUT
    print(json.dumps(result.public(), indent=2) if args.json else result.summary())
    return 0


def plan_json(plan) -> dict:  # type: ignore[no-untyped-def]
    return {
        "host": plan.host, "model": plan.model, "engine": plan.engine, "version": plan.engine_version,
        "tp": plan.tp, "gpus": plan.gpus, "port": plan.port, "argv": plan.argv, "env": plan.env,
        "weights_bytes": plan.weights_bytes, "kv_bytes_per_token": plan.kv_bytes_per_token,
        "per_gpu": [b.model_dump() for b in plan.per_gpu], "fits": plan.fits,
        "risks": [r.model_dump() for r in plan.risks], "reasons": plan.reasons,
        "context_length": plan.context_length, "mem_fraction": plan.mem_fraction, "speculative": plan.speculative,
    }


async def cmd_plan(args: argparse.Namespace) -> int:
    from bot.events import PlanRejected
    from bot.pipeline import Pipeline
    from bot.request import parse_request
    from handlers.console import ConsoleThread

    config = _config(args)
    pipeline = Pipeline(config, _store(args), secrets=Secrets())
    request = parse_request(args.text, pipeline.inventory())
    if isinstance(request, ParseError):
        print(json.dumps({"error": request.model_dump()}, indent=2) if args.json else request.message)
        return EXIT_BAD_INPUT
    thread = RecordingThread() if args.json else ConsoleThread()
    try:
        request, overrides, _ = await pipeline.reuse_last(request)
        result = await pipeline.plan(request.model_copy(update={"action": "start"}), thread, overrides)
    finally:
        await pipeline.close()
    if isinstance(result, PlanFailure):
        if args.json:
            _print_json({"fits": False, **result.model_dump()})
        else:
            await thread.emit(PlanRejected(failure=result))
        return 1
    if args.json:
        _print_json(plan_json(result[0]))
    return 0


async def cmd_chat(args: argparse.Namespace) -> int:
    """A terminal conversation with the bot: one request a line, told as the Slack thread would tell it."""
    import getpass

    from bot.pipeline import Pipeline, Requester
    from bot.request import help_text, is_help_request
    from handlers.console import ConsoleApprover, ConsoleThread

    config = _config(args)
    console = Console(highlight=False, soft_wrap=True)
    interactive = sys.stdin.isatty()
    pipeline = Pipeline(config, _store(args), secrets=Secrets(),
                        approver=ConsoleApprover(console, assume_yes=args.yes, interactive=interactive))
    who = Requester(user=getpass.getuser())
    worst = 0
    try:
        while True:
            try:
                line = await asyncio.to_thread(input, "deploybot> " if interactive else "")
            except EOFError:
                break
            text = line.strip()
            if text in ("quit", "exit"):
                break
            if not text:
                continue
            if is_help_request(text):
                console.print(help_text(pipeline.inventory()))
                continue
            outcome = await pipeline.handle_text(text, ConsoleThread(console), who)
            worst = max(worst, outcome.exit_code)
    finally:
        await pipeline.close()
    return worst


async def cmd_resume(args: argparse.Namespace) -> int:
    """Re-attach to every deployment the store says was launching, starting or ready (after a crash of the bot)."""
    from bot.pipeline import Pipeline
    from handlers.console import ConsoleThread

    config = _config(args)
    store = _store(args)
    pipeline = Pipeline(config, store, secrets=Secrets())
    deployments = [d for d in await store.active_deployments() if d.host in config.hosts]
    if not deployments:
        print("nothing to resume")
        return 0
    thread = ConsoleThread()
    try:
        outcomes = await asyncio.gather(*(pipeline.resume(d, thread, until_ready=args.until_ready) for d in deployments))
    finally:
        await pipeline.close()
    return max(o.exit_code for o in outcomes)


async def cmd_probe(args: argparse.Namespace) -> int:
    from bot.probe import probe
    from bot.remote import RemotePool

    config = _config(args)
    if args.host not in config.hosts:
        print(f"unknown host {args.host!r}; known: {', '.join(config.hosts)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    pool = RemotePool(config.hosts)
    try:
        facts = await probe(pool.get(args.host), args.host, config.hosts[args.host], model=args.model)
    finally:
        await pool.close()
    print(facts.model_dump_json(indent=2, exclude={"engine_help"}))
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    from bot.diagnose import diagnose_file, diagnosis_text

    path = Path(args.logfile)
    if not path.is_file():
        print(f"no such log file: {path}", file=sys.stderr)
        return EXIT_BAD_INPUT
    diagnosis = diagnose_file(path, engine=args.engine)
    if args.json:
        _print_json(diagnosis.model_dump(mode="json"))
    else:
        print(diagnosis_text(diagnosis))
    return 0 if diagnosis.category == "none" else 1


def cmd_audit(args: argparse.Namespace) -> int:
    store = _store(args)
    since = None
    if args.since:
        since = _parse_since(args.since)
    rows = store.audit_rows_sync(host=args.host, since=since)
    for row in rows:
        print(f"{row['at'][:19]}  {row['actor'] or '-':<12} {row['action']:<16} {row['host'] or '-':<10} "
              f"{row['deployment_id'] or '-':<11} {row['result'] or '-':<18} {row['detail'] or ''}")
    if not rows:
        print("no audit entries")
    return 0


def _parse_since(text: str) -> datetime:
    units = {"m": 60, "h": 3600, "d": 86400}
    if text[-1:] in units and text[:-1].isdigit():
        return datetime.now(timezone.utc) - timedelta(seconds=int(text[:-1]) * units[text[-1]])
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def cmd_help(args: argparse.Namespace) -> int:
    from bot.request import Inventory, help_text

    try:
        config = _config(args)
        print(help_text(Inventory.from_config(config)))
    except ConfigError:
        print("deploybot: no config found; see README.md. Example: deploybot ask \"start Qwen3.6-27B on CT129\"")
    return 0


def cmd_manifest(args: argparse.Namespace) -> int:
    from handlers.slack.manifest import manifest

    _print_json(manifest(request_url=args.request_url, socket_mode=args.socket_mode))
    return 0


async def cmd_serve(args: argparse.Namespace) -> int:
    from handlers.slack.serve import serve

    return await serve(_config(args), _store(args), Secrets(), port=args.port)


async def cmd_demo(args: argparse.Namespace) -> int:
    from bot.demo import run_demo

    return await run_demo(Path(args.workdir) if args.workdir else None)


# ---------------------------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="deploybot", description="Put LLM inference servers into service on GPU hosts.")
    parser.add_argument("--config", help="app.yaml (default: $DEPLOYBOT_CONFIG or ./app.yaml)")
    parser.add_argument("--db", help="SQLite state (default: $DEPLOYBOT_DB or the user data dir)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ask", help="run a request end to end: parse, probe, plan, launch, follow")
    p.add_argument("text")
    p.add_argument("--yes", action="store_true", help="approve risky steps without asking")
    p.add_argument("--follow", action="store_true", help="keep following after ready (until the server ends)")

    p = sub.add_parser("parse", help="parse a request and print it")
    p.add_argument("text")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("plan", help="probe and plan without launching")
    p.add_argument("text")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("chat", help="talk to the bot in the terminal: one request a line (quit or Ctrl-D ends)")
    p.add_argument("--yes", action="store_true", help="approve risky steps without asking")

    p = sub.add_parser("resume", help="re-attach to the deployments that were running when the bot stopped")
    p.add_argument("--until-ready", action="store_true", help="return once each is ready instead of following on")

    p = sub.add_parser("probe", help="probe a host")
    p.add_argument("host")
    p.add_argument("--model")

    p = sub.add_parser("diagnose", help="diagnose a server log")
    p.add_argument("logfile")
    p.add_argument("--engine", choices=["sglang", "vllm"])
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("audit", help="print the audit trail")
    p.add_argument("--host")
    p.add_argument("--since", help="ISO time or 30m / 2h / 7d")

    sub.add_parser("help", help="examples that work against the configured inventory")

    p = sub.add_parser("manifest", help="print the Slack app manifest")
    p.add_argument("--request-url", help="public URL of /slack/events (HTTP mode)")
    p.add_argument("--socket-mode", action="store_true")

    p = sub.add_parser("serve", help="run the Slack app (HTTP, or Socket Mode when SLACK_APP_TOKEN is set)")
    p.add_argument("--port", type=int, default=3000)

    p = sub.add_parser("demo", help="run the pipeline against a simulated GPU host (no GPU, no Slack, no SSH)")
    p.add_argument("--workdir", help="where to build the simulated host (default: a temporary folder)")
    return parser


ASYNC = {"ask": cmd_ask, "parse": cmd_parse, "plan": cmd_plan, "probe": cmd_probe, "serve": cmd_serve,
         "demo": cmd_demo, "resume": cmd_resume, "chat": cmd_chat}
SYNC = {"diagnose": cmd_diagnose, "audit": cmd_audit, "help": cmd_help, "manifest": cmd_manifest}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command in ASYNC:
            return asyncio.run(ASYNC[args.command](args))
        return SYNC[args.command](args)
    except ConfigError as exc:
        print(f"deploybot: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
