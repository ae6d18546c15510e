"""CLI conventions: global options before or after the subcommand, --version, and errors that say what to do."""

from __future__ import annotations

from importlib import metadata

import pytest
import yaml

from bot.cli import main

CONFIG = {"hosts": {"CT129": {"transport": "local", "models_dir": "/nonexistent", "models": ["Qwen3-32B"]}}}


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    return path


@pytest.mark.parametrize("order", ["before", "after", "mixed"])
def test_global_options_go_before_or_after_the_subcommand(config, tmp_path, capsys, order):
    db = str(tmp_path / "s.db")
    text = "start Qwen3-32B on CT129"
    argv = {
        "before": ["--config", str(config), "--db", db, "parse", "--json", text],
        "after": ["parse", "--json", text, "--config", str(config), "--db", db],
        "mixed": ["--db", db, "parse", text, "--json", "--config", str(config)],
    }[order]
    assert main(argv) == 0
    assert '"model": "Qwen3-32B"' in capsys.readouterr().out
    assert (tmp_path / "s.db").exists()  # --db was taken wherever it stood


def test_an_option_after_the_subcommand_wins_over_the_environment(config, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DEPLOYBOT_CONFIG", str(tmp_path / "missing.yaml"))
    assert main(["parse", "start Qwen3-32B on CT129", "--config", str(config)]) == 0


def test_version(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"deploybot {metadata.version('deploybot')}"


def test_usage_errors_say_where_the_help_is(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["ask"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "required: text" in err and "Run `deploybot ask --help`" in err
    with pytest.raises(SystemExit):
        main(["frobnicate"])
    assert "Run `deploybot --help`" in capsys.readouterr().err


def test_config_errors_say_what_to_do(tmp_path, capsys):
    assert main(["ask", "status", "--config", str(tmp_path / "nope.yaml")]) == 2
    assert "deploybot host add" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"hosts": {"CT129": {"models_dir": "/m", "port": "x", "known_hosts": "k"}}}))
    assert main(["parse", "status", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "hosts.CT129.port" in err and "Fix the keys above" in err


def test_bad_option_values_and_unknown_hosts_say_what_to_give(config, tmp_path, capsys):
    assert main(["audit", "--since", "yesterday", "--db", str(tmp_path / "s.db")]) == 2
    assert "30m, 2h, 7d" in capsys.readouterr().err
    assert main(["probe", "CT999", "--config", str(config), "--db", str(tmp_path / "s.db")]) == 2
    assert "deploybot host add CT999" in capsys.readouterr().err
