"""The multi-node backend (`backend: {kind: multinode, members: [A, B]}`): one deployment across several hosts, run
by the engine's own distributed runtime, not by a process fabric of ours.

SGLang's multi-node tensor parallelism: the same command on every node with `--nnodes N --node-rank R
--dist-init-addr HEAD:PORT` (python/sglang/srt/server_args.py; docs "Multi-node deployment"): `--tp-size` counts the
GPUs of all nodes, each node runs tp/N of the ranks, node 0 serves HTTP, the others run their schedulers only.
Each rank is a detached process started by that member's process backend (its launch agent, idempotent by the
same deployment id), so a retry or a restarted bot finds every rank again.

- probe: every member at once; the GPUs are listed node after node (0..k-1 the head's, k..2k-1 the next node's),
  so the planner plans TP over all of them with its usual per-GPU memory model.
- launch: the plan's GPUs must span the nodes evenly (tp = N x GPUs per node); each node gets its share as local
  indices in CUDA_VISIBLE_DEVICES. A rank that fails to start stops the ranks already started.
- watch: every rank is followed; rank 0's log, health and offset drive the deployment, the other ranks' lines are
  posted prefixed "[rank R on HOST]" (after a reconnect they are read again from their launch offset), and the end
  of ANY rank is the deployment's end: the engine cannot serve without it, so the other ranks are stopped then.
- stop: every rank; tail: every rank's tail, the one that ended last (the crash is read where it happened).

Not here yet: vLLM over a Ray cluster (`ray start --head` / `--address`) and multi-node Slurm jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import aclosing

from bot.backends.base import Exited, Health, Heartbeat, Launch, LaunchFailed, LogLine, StopReport, WatchEvent
from bot.backends.process import ProcessBackend
from bot.config import HostConfig, MultiNodeBackendSettings
from bot.handles import Handle, MultiNodeHandle, ProcessHandle, RankHandle
from bot.models import HostFacts, LaunchPlan
from bot.probe import ProbeFailed
from bot.remote import RemotePool
from bot.tail import TAIL_BYTES

#: The engines whose own runtime spans nodes with the flags below.
MULTINODE_ENGINES = ("sglang",)


class MultiNodeBackend:
    kind = "multinode"

    def __init__(self, host: str, config: HostConfig, remotes: RemotePool) -> None:
        if not isinstance(config.backend, MultiNodeBackendSettings):
            raise TypeError(f"{host}: the multi-node backend needs `backend: {{kind: multinode, members: [...]}}`")
        self.host = host
        self.config = config
        self.settings: MultiNodeBackendSettings = config.backend
        self.members = [ProcessBackend(name, remotes.host_config(name), remotes.get(name))
                        for name in self.settings.members]
        self._ended_last: dict[str, int] = {}  # a deployment (its log path) -> the rank whose end was seen
        self._gpus_per_host: int | None = None  # from the last probe, which lists the GPUs node by node

    async def probe(
        self, *, model: str | None = None, draft_model: str | None = None, drafters: bool = False
    ) -> HostFacts:
        every = await asyncio.gather(
            *(member.probe(model=model, draft_model=draft_model, drafters=drafters) for member in self.members)
        )
        counts = {len(facts.gpus) for facts in every}
        if len(counts) != 1 or 0 in counts:
            shape = ", ".join(f"{f.host}: {len(f.gpus)}" for f in every)
            raise ProbeFailed(f"{self.host}: the nodes must have the same number of GPUs ({shape})")
        missing = [f.host for f in every if model and (f.model is None or not f.model.exists)]
        gpus, processes = [], []
        for facts in every:
            base = len(gpus)
            gpus += [gpu.model_copy(update={"index": base + gpu.index}) for gpu in facts.gpus]
            processes += [proc.model_copy(update={"gpu_index": None if proc.gpu_index is None
                                                  else base + proc.gpu_index}) for proc in facts.gpu_processes]
        self._gpus_per_host = counts.pop()
        head = every[0]
        update = {"host": self.host, "gpus": gpus, "gpu_processes": processes,
                  "listening_ports": sorted({port for f in every for port in f.listening_ports})}
        if missing and head.model is not None:
            update["model"] = head.model.model_copy(update={"exists": False})
            update["gpu_error"] = f"the model folder is missing on {', '.join(missing)}"
        return head.model_copy(update=update)

    async def engine_help(self, engines: list[str]) -> dict[str, str]:
        return await self.members[0].engine_help(engines)

    # ------------------------------------------------------------------------------------------ launch

    def rank_plans(self, plan: LaunchPlan, gpus_per_host: int) -> list[LaunchPlan]:
        """The plan as each node runs it: the engine's multi-node flags and that node's GPUs as local indices."""
        if plan.engine not in MULTINODE_ENGINES:
            raise LaunchFailed(f"{self.host}: a multi-node launch runs on SGLang's own runtime; {plan.engine} over "
                               f"Ray is not supported yet")
        nodes = len(self.members)
        per_node = len(plan.gpus) // nodes
        if per_node == 0 or len(plan.gpus) % nodes or plan.tp != len(plan.gpus):
            raise LaunchFailed(f"{self.host}: a plan over {nodes} nodes needs TP = {nodes} x GPUs per node (it has "
                               f"TP {plan.tp} on GPUs {plan.gpus}): ask for `tp {nodes * 2}` or another multiple")
        head = self.members[0].config.address
        flags = ["--nnodes", str(nodes), "--dist-init-addr", f"{head}:{self.settings.dist_port}"]
        plans = []
        for rank, member in enumerate(self.members):
            local = sorted(g - rank * gpus_per_host for g in plan.gpus
                           if rank * gpus_per_host <= g < (rank + 1) * gpus_per_host)
            if len(local) != per_node:
                raise LaunchFailed(f"{self.host}: GPUs {plan.gpus} are not {per_node} on each node")
            env = {**plan.env, "CUDA_VISIBLE_DEVICES": ",".join(map(str, local))}
            argv = [*(self._on_member(arg, member.config) for arg in plan.argv), *flags, "--node-rank", str(rank)]
            plans.append(plan.model_copy(update={"host": member.host, "gpus": local, "env": env, "argv": argv}))
        return plans

    def _on_member(self, arg: str, member: HostConfig) -> str:
        """The head's engine interpreter and models folder, as the member has them (the plan was made with the
        head's paths; nodes of one cluster usually share them, but need not)."""
        if arg == self.config.python:
            return member.python
        head_models = self.config.models_dir.rstrip("/") + "/"
        if arg.startswith(head_models):
            return member.models_dir.rstrip("/") + "/" + arg[len(head_models):]
        return arg

    async def launch(self, plan: LaunchPlan, deployment_id: str) -> Launch:
        if self._gpus_per_host is None:  # a resume after a restart: the node shape is asked for once
            await self.probe()
        assert self._gpus_per_host is not None
        plans = self.rank_plans(plan, self._gpus_per_host)
        results = await asyncio.gather(*(member.launch(each, deployment_id)
                                         for member, each in zip(self.members, plans)), return_exceptions=True)
        failed = [(member.host, r) for member, r in zip(self.members, results) if isinstance(r, BaseException)]
        if failed:
            for member, result in zip(self.members, results):
                if isinstance(result, Launch):
                    with contextlib.suppress(Exception):
                        await member.stop(result.handle, grace_s=5)
            raise LaunchFailed(f"{self.host}: " + "; ".join(f"rank on {host}: {exc}" for host, exc in failed))
        launches = [r for r in results if isinstance(r, Launch)]
        ranks = [RankHandle(rank=rank, host=member.host, handle=_process(launched.handle),
                            log_offset=launched.log_offset)
                 for rank, (member, launched) in enumerate(zip(self.members, launches))]
        handle = MultiNodeHandle(ranks=ranks, log_path=ranks[0].handle.log_path, port=plan.port)
        return Launch(handle=handle, log_offset=launches[0].log_offset,
                      already_launched=all(l.already_launched for l in launches),
                      already_running=all(l.already_running for l in launches))

    # ------------------------------------------------------------------------------------------ watch

    async def watch(self, handle: Handle, *, offset: int) -> AsyncIterator[WatchEvent]:
        group = _group(handle)
        queue: asyncio.Queue[tuple[int, WatchEvent | None]] = asyncio.Queue()

        async def follow(rank: RankHandle) -> None:
            member = self.members[rank.rank]
            start = offset if rank.rank == 0 else rank.log_offset
            try:
                async with aclosing(member.watch(rank.handle, offset=start)) as stream:
                    async for event in stream:
                        await queue.put((rank.rank, event))
            finally:
                await queue.put((rank.rank, None))  # this rank's stream ended

        tasks = [asyncio.create_task(follow(rank), name=f"watch:{self.host}:{rank.rank}") for rank in group.ranks]
        head_offset = offset
        try:
            while True:
                rank, event = await queue.get()
                if event is None:
                    # A stream that ended without Exited lost its link: end ours, the follower watches again.
                    for task in tasks:
                        if task.done() and task.exception() is not None:
                            raise task.exception()  # type: ignore[misc]
                    return
                host = group.ranks[rank].host
                if isinstance(event, Exited):
                    self._ended_last[group.log_path] = rank
                    if rank:
                        yield LogLine(text=f"[rank {rank} on {host}] exited with code {event.code}", offset=head_offset)
                    # The engine cannot serve without every rank (the others would hang in their collectives):
                    # the ranks still alive are stopped, so that no GPU stays held by half a deployment.
                    others = [r for r in group.ranks if r.rank != rank]
                    await asyncio.gather(*(self.members[r.rank].stop(r.handle, grace_s=5) for r in others),
                                         return_exceptions=True)
                    yield event
                    return
                if rank == 0:
                    if isinstance(event, LogLine):
                        head_offset = event.offset
                    yield event
                elif isinstance(event, LogLine):
                    yield LogLine(text=f"[rank {rank} on {host}] {event.text}", offset=head_offset)
                elif isinstance(event, (Health, Heartbeat)):
                    continue  # only node 0 serves HTTP; its own heartbeat keeps the link checked
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    # ------------------------------------------------------------------------------------------ stop, tail

    async def stop(self, handle: Handle, *, grace_s: float) -> StopReport:
        group = _group(handle)
        reports = await asyncio.gather(*(self.members[r.rank].stop(r.handle, grace_s=grace_s) for r in group.ranks))
        holders = [f"rank {r.rank} on {r.host}: {what}" for r, report in zip(group.ranks, reports)
                   for what in report.holders]
        return StopReport(stopped=all(r.stopped for r in reports), was_running=any(r.was_running for r in reports),
                          killed=any(r.killed for r in reports), holders=holders)

    async def tail(self, handle: Handle, max_bytes: int = TAIL_BYTES) -> str:
        """Every rank's tail under a header; the rank that ended goes last, where the diagnoser reads the end."""
        group = _group(handle)
        ended = self._ended_last.get(group.log_path, 0)
        order = [r for r in group.ranks if r.rank != ended] + [r for r in group.ranks if r.rank == ended]
        share = max(max_bytes // len(order), 4096)
        texts = await asyncio.gather(*(self.members[r.rank].tail(r.handle, share) for r in order))
        return "".join(f"[deploybot] rank {r.rank} on {r.host}, {r.handle.label}:\n{text.rstrip(chr(10))}\n"
                       for r, text in zip(order, texts))


def _group(handle: Handle) -> MultiNodeHandle:
    if not isinstance(handle, MultiNodeHandle):
        raise TypeError(f"the multi-node backend was given a {type(handle).__name__}, not a MultiNodeHandle")
    return handle


def _process(handle: Handle) -> ProcessHandle:
    if not isinstance(handle, ProcessHandle):
        raise TypeError(f"a multi-node rank must run under the process backend, not {type(handle).__name__}")
    return handle
