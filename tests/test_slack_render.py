"""Block Kit rendering (handlers/slack/blocks/, handlers/slack/board.py) and the app manifest (handlers/slack/manifest.py)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

import pytest
import yaml
from slack_sdk.models.blocks import ActionsBlock, Block
from slack_sdk.models.views import View

from bot.handles import ProcessHandle
from bot.events import (
    Crashed,
    Diagnosed,
    Failed,
    Info,
    Launched,
    LogExcerpt,
    Parsed,
    PlanRejected,
    Planned,
    Probed,
    Ready,
    Stopped,
)
from bot.models import (
    DeployRequest,
    Diagnosis,
    EngineInstall,
    EvidenceLine,
    Fix,
    GpuBudget,
    GpuInfo,
    HostFacts,
    LaunchPlan,
    PlanFailure,
    PlanOverrides,
    Risk,
)
from handlers.slack.manifest import BOT_EVENTS, ManifestError, manifest, render_manifest
from handlers.slack.blocks.approval import APPROVE_ACTION_ID, DENY_ACTION_ID, ApprovalView, approval_blocks
from planners.argv import diff as argv_diff
from handlers.slack.blocks.diagnosis import diagnosis_blocks
from handlers.slack.blocks.excerpts import excerpt_blocks, excerpt_counts
from handlers.slack.blocks.home import DeploymentSummary, HostSummary, home_view
from handlers.slack.blocks.mrkdwn import MAX_MESSAGE_BLOCKS, MAX_SECTION_TEXT, escape
from handlers.slack.blocks.replies import help_blocks, parent_text
from handlers.slack.blocks.status import status_blocks, status_text
from handlers.slack.board import StatusBoard

GIB = 1024**3


# --------------------------------------------------------------------------------------------- fixtures


def request(**extra: object) -> DeployRequest:
    return DeployRequest(action="start", model="Qwen3-8B", host="CT129", engine="sglang", tp=2, **extra)


def facts() -> HostFacts:
    gpus = [
        GpuInfo(index=i, name="NVIDIA RTX A6000", memory_total_bytes=48 * GIB, memory_used_bytes=GIB // 2,
                memory_free_bytes=48 * GIB - GIB // 2)
        for i in range(2)
    ]
    return HostFacts(host="CT129", hostname="ct129", gpu_source="nvml", gpus=gpus,
                     engines={"sglang": EngineInstall(name="sglang", version="0.5.2")})


def plan(argv: list[str] | None = None) -> LaunchPlan:
    budget = [
        GpuBudget(gpu_index=i, total_bytes=48 * GIB, free_bytes=47 * GIB, weights_bytes=8 * GIB,
                  overhead_bytes=3 * GIB, kv_bytes=30 * GIB, kv_tokens=412_000, margin_bytes=6 * GIB)
        for i in range(2)
    ]
    return LaunchPlan(
        host="CT129", model="Qwen3-8B", model_path="/models/Qwen3-8B", engine="sglang", engine_version="0.5.2",
        tp=2, gpus=[0, 1], port=30000,
        argv=argv or ["python3", "-m", "sglang.launch_server", "--model-path", "/models/Qwen3-8B", "--tp", "2"],
        weights_bytes=16 * GIB, kv_bytes_per_token=73_728, per_gpu=budget, speculative="mtp",
        risks=[Risk(code="thin_margin", message="6 GiB margin")],
    )


def happy_events() -> list:
    return [
        Parsed(request=request()),
        Probed(facts=facts(), seconds=1.4),
        Planned(plan=plan()),
        Launched(deployment_id="d1", handle=ProcessHandle(pid=4242, log_path="/home/u/deploybot-logs/qwen.log")),
        Ready(endpoint="http://10.0.0.129:30000", seconds=74.2, kv_tokens=412_000),
    ]


def dicts(blocks: list[Block]) -> list[dict]:
    return [block.to_dict() for block in blocks]


def all_text(blocks: list[Block]) -> str:
    return json.dumps(dicts(blocks), ensure_ascii=False)


def section_texts(blocks: list[Block]) -> list[str]:
    return [d["text"]["text"] for d in dicts(blocks) if d["type"] == "section"]


def assert_valid_message(blocks: list[Block]) -> None:
    """What Slack checks: at most 50 blocks, every section text at most 3000 characters; and the JSON survives a
    round trip through slack_sdk's models (whose validators run in to_dict)."""
    assert 0 < len(blocks) <= MAX_MESSAGE_BLOCKS
    for text in section_texts(blocks):
        assert len(text) <= MAX_SECTION_TEXT
    reparsed = Block.parse_all(dicts(blocks))
    assert dicts(reparsed) == dicts(blocks)


def approval(**changes: object) -> ApprovalView:
    base = dict(
        approval_id="apv-7f3a",
        title="Relaunch Qwen3-8B on CT129 with a smaller memory fraction",
        why=["the last launch ran out of GPU memory while capturing CUDA graphs"],
        argv_diff=["- --mem-fraction-static 0.9", "+ --mem-fraction-static 0.82"],
        requested_by="U0ALICE",
        expires_at=datetime(2026, 3, 1, 14, 32, tzinfo=timezone.utc),
    )
    base.update(changes)
    return ApprovalView(**base)


# --------------------------------------------------------------------------------------------- escaping


def test_escape_replaces_slack_control_characters_ampersand_first() -> None:
    assert escape("a & b <c> &lt;") == "a &amp; b &lt;c&gt; &amp;lt;"
    assert escape("<!channel> <@U123> <https://x|y>") == "&lt;!channel&gt; &lt;@U123&gt; &lt;https://x|y&gt;"
    assert escape("*bold* `code`") == "*bold* `code`"  # formatting is not a control character


def test_user_text_never_becomes_a_mention_or_link() -> None:
    text = parent_text("U0ALICE", "start <!channel> on <http://evil|CT129> & more\nsecond line")
    assert text.startswith("<@U0ALICE> asked deploybot:\n> start &lt;!channel&gt;")
    assert "&lt;http://evil|CT129&gt; &amp; more" in text
    assert "\n> second line" in text
    # Something that is not a user ID is shown, not turned into a mention.
    assert parent_text("<!here>", "x").startswith("&lt;!here&gt; asked")


def test_event_text_is_escaped_on_the_status_board() -> None:
    board = StatusBoard()
    board.apply(Parsed(request=request()))
    board.apply(Failed(message="ssh said <refused> & gave up", step="probe"))
    text = all_text(status_blocks(board))
    assert "ssh said &lt;refused&gt; &amp; gave up" in text
    assert "<refused>" not in text


# --------------------------------------------------------------------------------------------- status board


def test_status_board_shows_each_step_with_its_figures() -> None:
    board = StatusBoard()
    for event in happy_events():
        board.apply(event)
    rows = section_texts(status_blocks(board))[1].splitlines()
    assert [row.split("*")[1] for row in rows] == ["parse", "probe", "plan", "launch", "ready"]
    assert all(row.startswith("✅") for row in rows)
    assert "start Qwen3-8B on CT129" in rows[0]
    assert "2× NVIDIA RTX A6000" in rows[1] and "sglang 0.5.2" in rows[1]
    assert "TP 2 on GPU 0,1" in rows[2] and "port 30000" in rows[2] and "KV cache 412k tokens" in rows[2]
    assert "MTP" in rows[2] and "1 risk" in rows[2]
    assert "PID 4242" in rows[3]
    assert "ready at http://10.0.0.129:30000 in 74 s" in rows[4]
    assert board.progress() == (5, 5)
    assert "5/5" in all_text(status_blocks(board))


def test_status_board_marks_the_step_in_progress_and_the_failure() -> None:
    board = StatusBoard()
    board.apply(Parsed(request=request()))
    assert board.steps["probe"].status == "running"
    assert board.current() == "probe"
    board.apply(Probed(facts=facts(), seconds=0.8))
    board.apply(Planned(plan=plan()))
    board.apply(Info(message="waiting for approval by an approver", step="approve"))
    assert [name for name, _ in board.visible()] == ["parse", "probe", "plan", "approve", "launch", "ready"]
    assert board.steps["approve"].status == "running"
    board.apply(Launched(deployment_id="d1", handle=ProcessHandle(pid=77, log_path="/tmp/x.log")))
    assert board.steps["approve"].status == "done"  # launching closes the approval step
    board.apply(Crashed(exit_code=1, tail=["CUDA out of memory"]))
    assert board.steps["ready"].status == "failed"
    assert "exit code 1" in board.steps["ready"].text
    board.apply(Diagnosed(diagnosis=Diagnosis(category="oom", cause="Out of GPU memory while loading")))
    text = all_text(status_blocks(board))
    assert "❌" in text and "Out of GPU memory while loading" in text
    assert "ready failed" in status_text(board)


def test_status_board_rows_follow_the_action() -> None:
    board = StatusBoard()
    board.apply(Parsed(request=DeployRequest(action="stop", model="Qwen3-8B", host="CT129")))
    assert [name for name, _ in board.visible()] == ["parse", "stop"]
    assert board.steps["stop"].status == "running"
    board.apply(Stopped(deployment_id="d1", message="stopped PID 4242 after 3 s"))
    assert board.progress() == (2, 2)


def test_status_board_rejected_plan_and_round_trip() -> None:
    board = StatusBoard()
    board.apply(Parsed(request=request()))
    board.apply(Probed(facts=facts(), seconds=0.8))
    board.apply(PlanRejected(failure=PlanFailure(reason="does not fit: 70 GiB of weights on 2x48 GiB")))
    assert board.steps["plan"].status == "failed"
    restored = StatusBoard.model_validate_json(board.model_dump_json())
    assert dicts(status_blocks(restored)) == dicts(status_blocks(board))


def test_sixty_events_stay_within_slack_limits() -> None:
    board = StatusBoard()
    events = happy_events()[:4]
    for i in range(56):
        kind = i % 3
        if kind == 0:
            events.append(Info(message=f"loading shard {i} " + "x" * 5000, step="ready"))
        elif kind == 1:
            events.append(LogExcerpt(lines=[f"line {i} " + "<&>" * 2000]))
        else:
            events.append(Diagnosed(diagnosis=Diagnosis(category="other", cause="c" * 9000)))
    assert len(events) == 60
    for event in events:
        board.apply(event)
    blocks = status_blocks(board)
    assert_valid_message(blocks)


def test_long_diagnosis_and_approval_stay_within_limits() -> None:
    diagnosis = Diagnosis(
        category="cuda_oom",
        cause="CUDA out of memory while capturing CUDA graphs " * 100,
        evidence=[EvidenceLine(line=i, text="torch.OutOfMemoryError: " + "y" * 300) for i in range(1, 61)],
        next_steps=[f"step {i}: lower --mem-fraction-static " + "z" * 200 for i in range(60)],
        confidence=0.9,
        fix=Fix(summary="lower the memory fraction to 0.82", overrides=PlanOverrides(mem_fraction=0.82)),
    )
    view = approval(why=["w" * 400] * 60, argv_diff=[f"+ --flag-{i} " + "v" * 100 for i in range(200)])
    blocks = diagnosis_blocks(diagnosis, approval=view)
    assert_valid_message(blocks)
    text = all_text(blocks)
    assert "more" in text  # the cut next steps / diff lines are announced
    assert APPROVE_ACTION_ID in text


# --------------------------------------------------------------------------------------------- excerpts


def test_ten_thousand_character_excerpt_is_cut_with_a_note() -> None:
    lines = [f"[2026-03-01 14:0{i % 10}] rank {i}: loading weights shard {i:03d} " + "." * 60 for i in range(100)]
    assert sum(len(line) for line in lines) > 10_000
    blocks = excerpt_blocks(lines, omitted=5)
    assert_valid_message(blocks)
    code = next(t for t in section_texts(blocks) if t.startswith("```"))
    assert len(code) <= MAX_SECTION_TEXT
    shown, cut = excerpt_counts(blocks)
    assert shown + cut == len(lines) + 5  # nothing vanishes without being counted
    assert cut > 5
    assert f"… {cut} lines cut" in all_text(blocks)
    assert lines[-1] in code and lines[0] not in code  # the newest lines are kept


def test_one_huge_line_is_shortened_not_dropped() -> None:
    blocks = excerpt_blocks(["E" * 10_000], omitted=0)
    assert_valid_message(blocks)
    assert excerpt_counts(blocks) == (1, 0)
    code = section_texts(blocks)[0]
    kept = code.count("E")
    assert f"… (+{10_000 - kept} chars)" in code  # the note counts exactly what went


def test_backticks_in_a_log_line_cannot_close_the_code_block() -> None:
    blocks = excerpt_blocks(["before ``` after", "next"], omitted=0)
    code = section_texts(blocks)[0]
    assert code.startswith("```\n") and code.endswith("\n```")
    assert code.count("```") == 2


def test_empty_excerpt_with_cut_lines_still_says_so() -> None:
    assert "… 3 lines cut" in all_text(excerpt_blocks([], omitted=3))


# --------------------------------------------------------------------------------------------- argv diff


SGLANG = ["python3", "-m", "sglang.launch_server", "--model-path", "/models/Qwen3-8B", "--tp", "1",
          "--mem-fraction-static", "0.9", "--port", "30000", "--enable-metrics"]


def test_argv_diff_shows_changed_added_and_removed_flags() -> None:
    new = ["python3", "-m", "sglang.launch_server", "--model-path", "/models/Qwen3-8B", "--tp", "2",
           "--mem-fraction-static", "0.82", "--port", "30000", "--disable-cuda-graph"]
    assert argv_diff(SGLANG, new) == [
        "- --tp 1",
        "+ --tp 2",
        "- --mem-fraction-static 0.9",
        "+ --mem-fraction-static 0.82",
        "+ --disable-cuda-graph",
        "- --enable-metrics",
    ]


def test_argv_diff_treats_equals_form_as_the_same_flag() -> None:
    new = [*SGLANG[:5], "--tp=1", *SGLANG[7:]]
    assert argv_diff(SGLANG, new) == []


def test_argv_diff_quotes_values_and_keeps_negative_numbers_as_values() -> None:
    old = ["vllm", "serve", "/models/Qwen3-8B", "--max-num-seqs", "-1"]
    new = ["vllm", "serve", "/models/Qwen3-8B", "--max-num-seqs", "-1",
           "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}']
    assert argv_diff(old, new) == ["+ --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'"]


def test_argv_diff_shows_a_changed_program_and_the_full_argv_without_old() -> None:
    assert argv_diff(["vllm", "serve", "/m/a"], ["vllm", "serve", "/m/b"]) == ["- vllm serve /m/a", "+ vllm serve /m/b"]
    assert argv_diff(None, SGLANG) == [
        "python3",
        "-m sglang.launch_server",
        "--model-path /models/Qwen3-8B",
        "--tp 1",
        "--mem-fraction-static 0.9",
        "--port 30000",
        "--enable-metrics",
    ]


def test_argv_diff_handles_repeated_flags() -> None:
    old = ["x", "--env", "A=1", "--env", "B=2"]
    new = ["x", "--env", "A=1", "--env", "B=3", "--env", "C=4"]
    assert argv_diff(old, new) == ["- --env B=2", "+ --env B=3", "+ --env C=4"]


# --------------------------------------------------------------------------------------------- approvals


def test_pending_approval_has_approve_and_deny_buttons() -> None:
    blocks = approval_blocks(approval())
    assert_valid_message(blocks)
    actions = [b for b in blocks if isinstance(b, ActionsBlock)]
    assert len(actions) == 1
    buttons = actions[0].to_dict()["elements"]
    assert [(b["action_id"], b["value"], b.get("style")) for b in buttons] == [
        (APPROVE_ACTION_ID, "apv-7f3a", "primary"),
        (DENY_ACTION_ID, "apv-7f3a", "danger"),
    ]
    text = all_text(blocks)
    assert "Requested by <@U0ALICE>" in text and "expires 14:32 UTC" in text
    assert "+ --mem-fraction-static 0.82" in text


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("approved", "Approved by <@U0BOB> at 14:02 UTC"),
        ("denied", "Denied by <@U0BOB> at 14:02 UTC"),
        ("expired", "Expired at 14:02 UTC"),
        ("superseded", "Superseded by a newer plan at 14:02 UTC"),
    ],
)
def test_decided_approval_has_no_buttons_and_says_who_and_when(state: str, expected: str) -> None:
    decided = approval(state=state, decided_by="U0BOB", decided_at=datetime(2026, 3, 1, 14, 2, tzinfo=timezone.utc))
    blocks = approval_blocks(decided)
    assert_valid_message(blocks)
    assert not any(isinstance(b, ActionsBlock) for b in blocks)
    assert expected in all_text(blocks)


def test_approval_id_must_be_safe_for_button_values() -> None:
    with pytest.raises(ValueError):
        approval(approval_id="id with spaces <and> stuff")


def test_diagnosis_blocks_show_cause_evidence_steps_and_fix() -> None:
    diagnosis = Diagnosis(
        category="cuda_oom",
        cause="Out of GPU memory while capturing CUDA graphs",
        evidence=[EvidenceLine(line=812, text="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")],
        next_steps=["lower --mem-fraction-static to 0.82", "or --cuda-graph-max-bs 64"],
        confidence=0.85,
        fix=Fix(summary="relaunch with --mem-fraction-static 0.82", overrides=PlanOverrides(mem_fraction=0.82)),
    )
    blocks = diagnosis_blocks(diagnosis, approval=None)
    assert_valid_message(blocks)
    text = all_text(blocks)
    assert "Out of GPU memory while capturing CUDA graphs" in text
    assert "812: torch.OutOfMemoryError" in text
    assert "• lower --mem-fraction-static to 0.82" in text
    assert "85%" in text and "relaunch with --mem-fraction-static 0.82" in text
    assert APPROVE_ACTION_ID not in text
    assert APPROVE_ACTION_ID in all_text(diagnosis_blocks(diagnosis, approval=approval()))


def test_an_unsure_diagnosis_names_its_alternatives_in_slack() -> None:
    diagnosis = Diagnosis(category="other", cause="unrecognised crash; last error: IndexError: index out of range",
                          confidence=0.3, alternatives=["cuda_graph_oom"], next_steps=["search the issues"])
    text = all_text(diagnosis_blocks(diagnosis, approval=None))
    assert "unsure between other, cuda_graph_oom" in text
    assert "unsure" not in all_text(diagnosis_blocks(diagnosis.model_copy(update={"alternatives": []}), approval=None))


# --------------------------------------------------------------------------------------------- help and home


def test_help_blocks_escape_placeholders_and_stay_within_limits() -> None:
    blocks = help_blocks("*Start a server*\n`/deploy <model> on <host>`\n\n*Stop*\n`/deploy stop <model>`")
    assert_valid_message(blocks)
    assert len(blocks) == 2
    assert "`/deploy &lt;model&gt; on &lt;host&gt;`" in section_texts(blocks)[0]
    many = help_blocks("\n\n".join(f"paragraph {i}" for i in range(80)))
    assert_valid_message(many)
    assert "more paragraphs not shown" in all_text(many)


def test_home_view_shows_gpus_used_and_free_and_thread_links() -> None:
    gpus = [
        GpuInfo(index=0, name="NVIDIA RTX A6000", memory_total_bytes=48 * GIB, memory_used_bytes=41 * GIB,
                memory_free_bytes=7 * GIB),
        GpuInfo(index=1, name="NVIDIA RTX A6000", memory_total_bytes=48 * GIB, memory_used_bytes=GIB // 4,
                memory_free_bytes=48 * GIB - GIB // 4),
    ]
    deployment = DeploymentSummary(
        id="d1", model="Qwen3-8B", engine="sglang", port=30000, state="ready", where="PID 4242",
        endpoint="http://10.0.0.129:30000", requested_by="U0ALICE",
        thread_url="https://fake.slack.test/archives/C0DEPLOY/p1700000000000100?a=1&b=2",
    )
    view = home_view([
        HostSummary(name="CT129", address="10.0.0.129", gpus=gpus, deployments=[deployment]),
        HostSummary(name="CT130", error="connection refused <port 22>"),
    ])
    data = view.to_dict()
    assert data["type"] == "home"
    text = json.dumps(data, ensure_ascii=False)
    assert "1 of 2 GPUs in use, 1 free" in text
    assert "GPU0 NVIDIA RTX A6000: 41.0 GiB / 48.0 GiB used" in text
    assert "<https://fake.slack.test/archives/C0DEPLOY/p1700000000000100?a=1&amp;b=2|thread>" in text
    assert "PID 4242" in text and "by <@U0ALICE>" in text
    assert "connection refused &lt;port 22&gt;" in text


def test_home_view_drops_unsafe_links_and_bounds_many_hosts() -> None:
    deployment = DeploymentSummary(id="d", model="m", engine="vllm", port=8000, state="starting",
                                   thread_url="javascript:alert(1)|x")
    view = home_view([HostSummary(name=f"host{i}", deployments=[deployment]) for i in range(60)])
    data = view.to_dict()
    assert len(data["blocks"]) <= 100
    text = json.dumps(data)
    assert "javascript" not in text
    assert re.search(r"\d+ more hosts not shown", text)
    assert View(**data).to_dict() == data


# --------------------------------------------------------------------------------------------- manifest


def test_manifest_for_http_mode_points_everything_at_the_request_url() -> None:
    data = manifest(request_url="https://bot.example.com/slack/events")
    command = data["features"]["slash_commands"][0]
    assert command["command"] == "/deploy" and command["url"] == "https://bot.example.com/slack/events"
    assert command["usage_hint"]
    assert data["features"]["app_home"]["home_tab_enabled"] is True
    assert data["settings"]["event_subscriptions"]["bot_events"] == list(BOT_EVENTS)
    assert data["settings"]["event_subscriptions"]["request_url"] == "https://bot.example.com/slack/events"
    assert data["settings"]["interactivity"] == {"is_enabled": True, "request_url": "https://bot.example.com/slack/events"}
    assert data["settings"]["socket_mode_enabled"] is False
    scopes = data["oauth_config"]["scopes"]["bot"]
    assert {"commands", "chat:write", "channels:history", "groups:history"} <= set(scopes)
    assert "chat:write.public" not in scopes and "im:history" not in scopes


def test_manifest_for_socket_mode_needs_no_url_and_prints_as_yaml_and_json() -> None:
    data = manifest(app_name="Deploy Bot (staging)", socket_mode=True)
    assert data["settings"]["socket_mode_enabled"] is True
    assert "url" not in data["features"]["slash_commands"][0]
    assert data["features"]["bot_user"]["display_name"] == "deploy-bot-staging"
    assert yaml.safe_load(render_manifest(data)) == data
    assert json.loads(render_manifest(data, "json")) == data


def test_manifest_refuses_what_slack_would_refuse() -> None:
    with pytest.raises(ManifestError, match="request_url is required"):
        manifest()
    with pytest.raises(ManifestError, match="https"):
        manifest(request_url="http://bot.example.com/slack/events")
    with pytest.raises(ManifestError, match="35"):
        manifest(app_name="x" * 36, socket_mode=True)
