"""What takes a request's story off the ack's and the PID's path (issue 19; measured in bench/bench_ack.py and
bench/bench_slack_pid.py, never timed here): the ack gate, the early probe, the stories' pooled Web API client.
"""

from __future__ import annotations

import asyncio

from bot.config import Secrets, parse_config
from bot.early_probe import EarlyProbes
from bot.events import Probed, RecordingThread
from bot.models import DeployRequest
from bot.pipeline import Pipeline, Requester
from bot.store import Store
from handlers.slack.ackgate import AckGate, current_request
from handlers.slack.client import pooled_copy
from slack_sdk.web.async_client import AsyncWebClient
from tests.fakeslack import FakeSlack
from tests.ports import port_range

MODEL = "Llama-3.1-8B-Instruct"


async def test_a_story_waits_for_the_other_requests_acks_but_not_its_own():
    gate = AckGate(max_wait_s=30.0, poll_s=0.001)
    own = gate.enter()
    spawned_by = current_request()
    assert spawned_by is not None and gate.pending == 1
    # Only its own request is pending: the story goes at once.
    assert await asyncio.wait_for(gate.quiet(own=spawned_by), 5) >= 0
    other = asyncio.get_running_loop().create_future()

    async def another_request() -> None:
        token = gate.enter()
        try:
            await other
        finally:
            gate.leave(token)

    handling = asyncio.create_task(another_request())
    await asyncio.sleep(0)
    assert gate.pending == 2
    waiting = asyncio.create_task(gate.quiet(own=spawned_by))
    await asyncio.sleep(0.05)
    assert not waiting.done()  # another request's ack is still pending
    other.set_result(None)
    await handling
    await asyncio.wait_for(waiting, 5)
    gate.leave(own)
    assert gate.pending == 0 and current_request() is None


async def test_a_steady_stream_of_requests_never_holds_a_story_past_the_bound():
    gate = AckGate(max_wait_s=0.05, poll_s=0.001)
    token = gate.enter()  # a request whose ack never goes back
    try:
        await asyncio.wait_for(gate.quiet(), 5)  # returns (after the bound) although one is pending
        assert gate.pending == 1
    finally:
        gate.leave(token)


async def test_an_early_probe_is_taken_once_only_for_the_same_arguments():
    probes = EarlyProbes()
    calls: list[str] = []

    async def probe() -> str:
        calls.append("probe")
        return "facts"

    probes.begin("CT129", ("m", ()), probe)  # type: ignore[arg-type]
    probes.begin("CT129", ("m", ()), probe)  # one waiting already: not started twice
    taken = probes.take("CT129", ("m", ()))
    assert taken is not None and await taken[1] == "facts" and calls == ["probe"]
    assert probes.take("CT129", ("m", ())) is None  # taken once
    probes.begin("CT129", ("other", ()), probe)  # type: ignore[arg-type]
    assert probes.take("CT129", ("m", ())) is None  # other arguments: not used, and dropped
    assert probes.take("CT129", ("other", ())) is None


async def test_an_early_probe_that_fails_fails_where_the_probe_would_have():
    probes = EarlyProbes()

    async def unreachable() -> str:
        raise ConnectionError("host down")

    probes.begin("CT129", ("m", ()), unreachable)  # type: ignore[arg-type]
    taken = probes.take("CT129", ("m", ()))
    assert taken is not None
    try:
        await taken[1]
    except ConnectionError as exc:
        assert "host down" in str(exc)
    else:
        raise AssertionError("the early probe's failure was lost")


async def test_the_pipeline_plans_on_the_probe_started_early(simhost, tmp_path):
    # ports of this run's own block (tests/ports.py): other runs' engines start on this machine at the same time
    config = parse_config({"hosts": {"CT129": simhost.host_config()},
                           "policy": {"min_margin_gib": 0.5, "port_range": port_range()}}, "test config")
    pipeline = Pipeline(config, Store(tmp_path / "state.db"), secrets=Secrets())
    backend = pipeline.backend("CT129")
    real_probe, probed = backend.probe, []

    async def counted(**kwargs):  # type: ignore[no-untyped-def]
        probed.append(kwargs)
        return await real_probe(**kwargs)

    backend.probe = counted  # type: ignore[method-assign]
    try:
        request = DeployRequest(action="start", model=MODEL, host="CT129")
        pipeline.probe_early(request)
        await asyncio.sleep(0)
        assert probed == [{"model": MODEL}]  # started before the request is handled
        thread = RecordingThread()
        outcome = await pipeline.handle_request(request, thread, Requester(user="U1"), until_ready=True)
        assert outcome.state == "ready", outcome.message
        # The early probe was the plan's: the host was not probed for the model twice (the probe without a model
        # after ready is the measured-memory check).
        assert [p for p in probed if p.get("model") == MODEL] == [{"model": MODEL}]
        (told,) = thread.of(Probed)
        assert told.facts.engine_help == {}  # the --help texts are the planner's, never told
    finally:
        simhost.terminate_processes()
        await pipeline.close()


async def test_the_stories_client_keeps_one_session_on_its_loop_only():
    async with FakeSlack() as slack:
        client = AsyncWebClient(token=slack.token, base_url=slack.base_url)
        pooled = pooled_copy(client, asyncio.get_running_loop())
        await pooled.chat_postMessage(channel="C1", text="one")
        session = pooled._pooled
        await pooled.chat_postMessage(channel="C1", text="two")
        assert session is not None and pooled._pooled is session and not session.closed
        elsewhere = asyncio.new_event_loop()
        try:
            other = pooled_copy(client, elsewhere)  # bound to a loop that is not this one
            await other.chat_postMessage(channel="C1", text="three")
            assert other._pooled is None  # slack_sdk's own way: a session per call, nothing kept
        finally:
            elsewhere.close()
        await pooled.close()
        assert session.closed
        assert [m.text for m in slack.messages()] == ["one", "two", "three"]
