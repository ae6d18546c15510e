"""`deploybot host add` over a REAL sshd whose login home is a simulated GPU host (~/ml-env, ~/models, ~/.cache).

Right fingerprint: the key is recorded, the host written into app.yaml with its comments kept, and the next
request deploys onto it. Wrong fingerprint, no fingerprint without a terminal, a taken name: refused, and
app.yaml and known_hosts stay byte-identical.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from bot.cli import main as cli_main
from bot.config import Secrets, load_config
from bot.events import Planned, RecordingThread
from bot.onboard import OnboardError, choose_env, parse_target
from bot.pipeline import Pipeline, Requester
from bot.simhost import build_sim_host
from bot.store import Store
from tests.ports import port_range
from tests.sshd import start_sshd

ORIGINAL_APP_YAML = """\
# Our lab's deploybot config. Keep this comment.
hosts:
  old-box:  # the box under the desk
    transport: local
    models_dir: /srv/models  # where the weights live
policy:
  min_margin_gib: 0.5
  port_range: [PORTS]  # a range of its own: other test runs launch on the default one
"""


@pytest.fixture
def home_host(tmp_path: Path):
    """A simulated host that is the SSH login's home, and the sshd that logs into it."""
    home = tmp_path / "home"
    host = build_sim_host(home, ready_after_s=0.5)
    host.set_scenario("healthy", periodic_interval_s=0.5)
    server = start_sshd(tmp_path / "sshd", set_env={"HOME": str(home)})
    try:
        yield host, server
    finally:
        server.stop()
        host.terminate_processes()


def fingerprint_of(server) -> str:
    """What `ssh-keygen -lf` prints for the server's public key: the person's out-of-band check."""
    out = subprocess.run(["ssh-keygen", "-lf", str(server.workdir / "ssh_host_ed25519_key.pub")],
                         capture_output=True, text=True, check=True).stdout
    return out.split()[1]


def add_args(server, tmp_path: Path, *extra: str) -> list[str]:
    return ["host", "add", "gpu7", f"{server.user}@127.0.0.1:{server.port}",
            "--identity-file", str(server.identity_file), "--known-hosts", str(tmp_path / "known_hosts"),
            "--config", str(tmp_path / "app.yaml"), "--db", str(tmp_path / "state.db"), *extra]


async def test_right_fingerprint_onboards_and_the_next_request_deploys(home_host, tmp_path, capsys):
    host, server = home_host
    low, high = port_range()
    (tmp_path / "app.yaml").write_text(ORIGINAL_APP_YAML.replace("PORTS", f"{low}, {high}"))
    code = await _main(add_args(server, tmp_path, "--trust", fingerprint_of(server)))
    out = capsys.readouterr().out
    assert code == 0, out
    assert fingerprint_of(server) in out and "sglang 0.5.10" in out and "Qwen3.6-27B" in out

    text = (tmp_path / "app.yaml").read_text()
    assert text.startswith("# Our lab's deploybot config. Keep this comment.")
    assert "# the box under the desk" in text and "# where the weights live" in text
    entry = yaml.safe_load(text)["hosts"]["gpu7"]
    assert entry["python"] == "~/ml-env/bin/python3"  # found among ~/*/bin/python3, by its engines
    assert entry["models_dir"] == "~/models" and entry["gpus"] == "2x NVIDIA RTX A6000"
    assert entry["port"] == server.port and entry["user"] == server.user
    known = (tmp_path / "known_hosts").read_text()
    assert known == server.known_hosts.read_text()  # the same line ssh's own known_hosts would hold

    config = load_config(tmp_path / "app.yaml")
    pipeline = Pipeline(config, Store(tmp_path / "state.db"), secrets=Secrets())
    thread = RecordingThread()
    try:
        outcome = await pipeline.handle_text("start Qwen3.6-27B on gpu7 with stock MTP", thread, Requester(user="U1"))
        assert outcome.state == "ready", [e.kind for e in thread.events]
        assert thread.of(Planned)[0].plan.tp == 2
        stopped = await pipeline.handle_text("stop Qwen3.6-27B on gpu7", RecordingThread(), Requester(user="U1"))
        assert stopped.state == "stopped"
    finally:
        await pipeline.close()


async def test_wrong_fingerprint_refuses_and_writes_nothing(home_host, tmp_path, capsys):
    _, server = home_host
    (tmp_path / "app.yaml").write_text(ORIGINAL_APP_YAML.replace("PORTS", "30000, 30999"))
    (tmp_path / "known_hosts").write_text("example.org ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
    before = {p: p.read_bytes() for p in (tmp_path / "app.yaml", tmp_path / "known_hosts")}
    wrong = "SHA256:" + "A" * 43
    code = await _main(add_args(server, tmp_path, "--trust", wrong))
    err = capsys.readouterr().err
    assert code == 2
    assert fingerprint_of(server) in err and wrong in err and "nothing was written" in err
    assert {p: p.read_bytes() for p in before} == before
    assert "gpu7" not in Store(tmp_path / "state.db").host_views_sync()


async def test_no_fingerprint_and_no_terminal_refuses_with_the_fingerprint_to_check(home_host, tmp_path, capsys):
    _, server = home_host
    code = await _main(add_args(server, tmp_path))  # stdin is not a TTY under pytest
    err = capsys.readouterr().err
    assert code == 2 and f"--trust {fingerprint_of(server)}" in err
    assert not (tmp_path / "app.yaml").exists() and not (tmp_path / "known_hosts").exists()


async def test_a_name_already_in_app_yaml_is_refused_before_connecting(tmp_path, capsys):
    (tmp_path / "app.yaml").write_text(ORIGINAL_APP_YAML.replace("PORTS", "30000, 30999"))
    before = (tmp_path / "app.yaml").read_bytes()
    code = await _main(["host", "add", "old-box", "127.0.0.1:1", "--config", str(tmp_path / "app.yaml"),
                        "--db", str(tmp_path / "s.db"), "--trust", "SHA256:x"])
    assert code == 2 and "already in" in capsys.readouterr().err
    assert (tmp_path / "app.yaml").read_bytes() == before


def test_targets_and_env_choice():
    assert parse_target("ops@10.0.0.12:2222").__dict__ == {"address": "10.0.0.12", "port": 2222, "user": "ops"}
    assert parse_target("gpu-7.lab").port == 22
    assert parse_target("root@[fd00::5]:22").address == "fd00::5"
    for bad in ("a b", "x:99999", "u@", "host;rm -rf /"):
        with pytest.raises(OnboardError):
            parse_target(bad)
    envs = [{"python": "~/v/bin/python3", "path": "/h/v/bin/python3", "engines": {"vllm": "0.17.1"}},
            {"python": "~/s/bin/python3", "path": "/h/s/bin/python3", "engines": {"sglang": "0.5.10"}},
            {"python": "/opt/b/bin/python3", "path": "/opt/b/bin/python3", "engines": {"sglang": "1", "vllm": "2"}}]
    assert choose_env(envs, None)["python"] == "/opt/b/bin/python3"  # both engines
    assert choose_env(envs[:2], None)["python"] == "~/s/bin/python3"
    assert choose_env(envs, "~/v/bin/python3")["engines"] == {"vllm": "0.17.1"}
    with pytest.raises(OnboardError, match="--python"):
        choose_env([], None)


async def _main(argv: list[str]) -> int:
    """cli main() runs its own event loop: run it in a thread from this async test."""
    import asyncio

    return await asyncio.to_thread(cli_main, argv)


async def test_known_hosts_holding_another_key_for_the_host_refuses(home_host, tmp_path, capsys):
    _, server = home_host
    other = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")],
                           capture_output=True, check=True)
    assert other.returncode == 0
    key = " ".join((tmp_path / "other.pub").read_text().split()[:2])
    (tmp_path / "known_hosts").write_text(f"[127.0.0.1]:{server.port} {key}\n")
    before = (tmp_path / "known_hosts").read_bytes()
    code = await _main(add_args(server, tmp_path, "--trust", fingerprint_of(server)))
    err = capsys.readouterr().err
    assert code == 2 and "already holds a different key" in err and "ssh-keygen -R" in err
    assert (tmp_path / "known_hosts").read_bytes() == before and not (tmp_path / "app.yaml").exists()


def test_the_prompt_on_a_terminal_trusts_on_yes(home_host, tmp_path):
    """stdin a real pseudo-terminal: the fingerprint is shown and asked about; "y" trusts it."""
    import os
    import pty
    import sys

    _, server = home_host
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "bot.cli", *add_args(server, tmp_path)], stdin=slave,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(slave)
    os.write(master, b"y\n")  # the terminal's line discipline holds it until the prompt reads it
    out, err = process.communicate(timeout=120)
    os.close(master)
    assert process.returncode == 0, err
    assert fingerprint_of(server) in out and "gpu7 added" in out
    assert (tmp_path / "known_hosts").read_text() == server.known_hosts.read_text()
