"""`deploybot` entry point: ask | chat | parse | plan | probe | host | resume | diagnose | demo | serve | manifest |
audit | help. The global options (--config, --db) go before or after the subcommand."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from importlib import metadata
from typing import Any, NoReturn

from rich.console import Console

from bot.cli_host import add_host_commands, cmd_host_add, cmd_host_list, cmd_probe
from bot.config import AppConfig, ConfigError, Secrets, load_config
from bot.events import RecordingThread
from bot.models import ParseError, PlanFailure
from bot.remote import RemoteError
from bot.store import Store
from planners.engines import registry

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
    """Offline by default (app.yaml, plus what earlier probes stored when --db is given); --probe resolves a name
    not found the way `ask` does, by probing its host once."""
    from bot.request import Inventory, parse_request

    config = _config(args)
    if args.db or args.probe:
        from bot.pipeline import Pipeline

        pipeline = Pipeline(config, _store(args), secrets=Secrets())
        try:
            result = await pipeline.parse(args.text) if args.probe else parse_request(args.text, pipeline.inventory())
        finally:
            await pipeline.close()
    else:
        result = parse_request(args.text, Inventory.from_config(config))
    if isinstance(result, ParseError):
        payload = {"error": result.model_dump()}
        print(json.dumps(payload, indent=2) if args.json else f"{result.kind}: {result.message}")
        if not args.json:
            for s in result.suggestions:
                print(f"  - {s}")
        return EXIT_BAD_INPUT
    # What the parser read but did not act on is shown, never dropped (the key is there only when it has any).
    shown = result.public() | ({"ignored": result.ignored} if result.ignored else {})
    print(json.dumps(shown, indent=2) if args.json else result.summary())
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
    from handlers.console import ConsoleThread

    config = _config(args)
    pipeline = Pipeline(config, _store(args), secrets=Secrets())
    request = await pipeline.parse(args.text)
    if isinstance(request, ParseError):
        await pipeline.close()
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
    """Re-attach to every deployment the store says was launching, starting or ready (after a crash of the bot),
    and take up the restarts by policy it had planned and not launched."""
    from bot.pipeline import Pipeline
    from handlers.console import ConsoleThread

    config = _config(args)
    store = _store(args)
    pipeline = Pipeline(config, store, secrets=Secrets())
    try:
        deployments = await pipeline.resumable_deployments()
        if not deployments:
            print("nothing to resume")
            return 0
        thread = ConsoleThread()
        outcomes = await asyncio.gather(*(pipeline.resume(d, thread, until_ready=args.until_ready)
                                          for d in deployments))
    finally:
        await pipeline.close()  # (also when there was nothing to resume: the pipeline holds the store's connections)
    return max(o.exit_code for o in outcomes)


def cmd_diagnose(args: argparse.Namespace) -> int:
    from bot.diagnose import diagnose_file, diagnosis_text

    path = Path(args.logfile)
    if not path.is_file():
        print(f"deploybot diagnose: no such log file: {path} (give the path of a server log, e.g. one under the "
              f"host's log_dir, copied here)", file=sys.stderr)
        return EXIT_BAD_INPUT
    diagnosis = diagnose_file(path, engine=args.engine, exit_code=args.exit_code, command=args.launch_command,
                              ended=args.ended)
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
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--since {text!r}: give an ISO time (2026-12-01T09:00) or an age (30m, 2h, 7d)") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def cmd_help(args: argparse.Namespace) -> int:
    from bot.request import Inventory, help_text

    try:
        config = _config(args)
        print(help_text(Inventory.from_config(config, _probed_models(args))))
    except ConfigError:
        print("deploybot: no config found; see README.md. Example: deploybot ask \"start Qwen3.6-27B on CT129\"")
    return 0


def _probed_models(args: argparse.Namespace) -> dict[str, list[str]]:
    """What the last probes listed (so help's examples name discovered models, as in Slack); none without a store."""
    from bot.store import default_db_path

    if not Path(args.db or default_db_path()).exists():
        return {}
    store = _store(args)
    try:
        return store.known_models_sync()
    finally:
        store.close()


def cmd_manifest(args: argparse.Namespace) -> int:
    from handlers.slack.manifest import manifest

    _print_json(manifest(request_url=args.request_url, socket_mode=args.socket_mode))
    return 0


async def cmd_serve(args: argparse.Namespace) -> int:
    from handlers.slack.serve import serve

    return await serve(_config(args), _store(args), Secrets(), port=args.port, metrics_port=args.metrics_port)


async def cmd_demo(args: argparse.Namespace) -> int:
    from bot.demo import run_demo

    return await run_demo(Path(args.workdir) if args.workdir else None)


# ---------------------------------------------------------------------------------------------- parser


class UsageError(Exception):
    """An option's value the command cannot use; the message says what it takes."""


class _Parser(argparse.ArgumentParser):
    """argparse, with a next step in every usage error."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\nRun `{self.prog} --help` for what it takes.\n")


def _global_options(*, in_subcommand: bool) -> argparse.ArgumentParser:
    """--config and --db, accepted before the subcommand or after it. After it, the default is SUPPRESS so
    that a value given before the subcommand is not overwritten by the subcommand's default."""
    options = argparse.ArgumentParser(add_help=False)
    default = argparse.SUPPRESS if in_subcommand else None
    options.add_argument("--config", default=default, help="app.yaml (default: $DEPLOYBOT_CONFIG or ./app.yaml)")
    options.add_argument("--db", default=default, help="SQLite state (default: $DEPLOYBOT_DB or the user data dir)")
    return options


def _version() -> str:
    try:
        return metadata.version("deploybot")
    except metadata.PackageNotFoundError:
        return "unknown (not installed: run `make setup`)"


def _diagnose_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("logfile")
    p.add_argument("--engine", choices=registry.names())
    p.add_argument("--command", dest="launch_command",
                   help="the command line that launched the engine, when known (e.g. sent with the log): tells "
                        "whether it ran speculative decoding")
    p.add_argument("--exit-code", type=int, help="the engine's exit status, when known (137: SIGKILL)")
    p.add_argument("--ended", action="store_true",
                   help="the engine's process is known to be gone: a log without an error is then never read as "
                        "a healthy start")
    p.add_argument("--json", action="store_true")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="deploybot", description="Put LLM inference servers into service on GPU hosts.",
                     parents=[_global_options(in_subcommand=False)])
    parser.add_argument("--version", action="version", version=f"deploybot {_version()}")
    common = _global_options(in_subcommand=True)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], **kwargs)

    p = command("ask", help="run a request end to end: parse, probe, plan, launch, follow")
    p.add_argument("text")
    p.add_argument("--yes", action="store_true", help="approve risky steps without asking")
    p.add_argument("--follow", action="store_true", help="keep following after ready (until the server ends)")

    p = command("parse", help="parse a request and print it")
    p.add_argument("text")
    p.add_argument("--json", action="store_true")
    p.add_argument("--probe", action="store_true", help="probe the host when a name is not found (as `ask` does)")

    p = command("plan", help="probe and plan without launching")
    p.add_argument("text")
    p.add_argument("--json", action="store_true")

    p = command("chat", help="talk to the bot in the terminal: one request a line (quit or Ctrl-D ends)")
    p.add_argument("--yes", action="store_true", help="approve risky steps without asking")

    p = command("resume", help="re-attach to the deployments that were running when the bot stopped")
    p.add_argument("--until-ready", action="store_true", help="return once each is ready instead of following on")

    p = command("probe", help="probe a host and store what it saw (its models become nameable)")
    p.add_argument("host")
    p.add_argument("--model", help="also read this model's folder (config, size)")

    add_host_commands(sub, common)

    _diagnose_options(command("diagnose", help="diagnose a server log"))

    p = command("audit", help="print the audit trail")
    p.add_argument("--host")
    p.add_argument("--since", help="ISO time or 30m / 2h / 7d")

    command("help", help="examples that work against the configured inventory")

    p = command("manifest", help="print the Slack app manifest")
    p.add_argument("--request-url", help="public URL of /slack/events (HTTP mode)")
    p.add_argument("--socket-mode", action="store_true")

    p = command("serve", help="run the Slack app (HTTP, or Socket Mode when SLACK_APP_TOKEN is set)")
    p.add_argument("--port", type=int, default=3000)
    p.add_argument("--metrics-port", type=int, default=None,
                   help="Socket Mode: serve GET /metrics on this port (HTTP mode serves it on --port)")

    p = command("demo", help="run the pipeline against a simulated GPU host (no GPU, no Slack, no SSH)")
    p.add_argument("--workdir", help="where to build the simulated host (default: a temporary folder)")
    return parser


ASYNC = {"ask": cmd_ask, "parse": cmd_parse, "plan": cmd_plan, "probe": cmd_probe, "serve": cmd_serve,
         "demo": cmd_demo, "resume": cmd_resume, "chat": cmd_chat, "host add": cmd_host_add,
         "host list": cmd_host_list}
SYNC = {"diagnose": cmd_diagnose, "audit": cmd_audit, "help": cmd_help, "manifest": cmd_manifest}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = f"host {args.host_command}" if args.command == "host" else args.command
    try:
        if command in ASYNC:
            return asyncio.run(ASYNC[command](args))
        return SYNC[command](args)
    except (ConfigError, UsageError) as exc:
        print(f"deploybot: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RemoteError as exc:  # its message names the host and what to check
        print(f"deploybot: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
