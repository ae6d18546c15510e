"""Wordings the diagnoser must place although no dev log carries them (issue 12: "an engine it has never seen"),
each written fresh from the engine's or library's own message (cited per case), none from the judged sets.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

_SGL = "/usr/local/lib/python3.12/dist-packages/sglang/srt"
_SITE = "/usr/local/lib/python3.12/dist-packages"

# sglang/srt/model_loader/utils.py resolve_transformers_arch (--model-impl auto): the generic Transformers fallback
# class is not compatible with SGLang for an architecture it has no native model of. The wording (with SGLang's own
# "SGlang" spelling) as raised; reported for Qwen3_5MoeForCausalLM and BloomForCausalLM in public notes.
SGLANG_FALLBACK = f"""\
[2026-05-17 10:02:11] server_args=ServerArgs(model_path='/models/bloomz-7b1', tp_size=1, model_impl='auto')
Traceback (most recent call last):
  File "{_SGL}/model_executor/model_runner.py", line 812, in load_model
    self.model = get_model(model_config=self.model_config, load_config=self.load_config)
  File "{_SGL}/model_loader/utils.py", line 70, in resolve_transformers_arch
    raise ValueError(
ValueError: BloomForCausalLM has no SGlang implementation and the Transformers implementation is not compatible with SGLang.
"""

# The warning SGLang logs when the fallback IS compatible: a server that goes on to serve is healthy.
SGLANG_FALLBACK_WARNING = """\
[2026-05-17 10:02:11] WARNING utils.py:80: Foo2ForCausalLM has no SGLang implementation, falling back to Transformers implementation. Some features may not be supported and performance may not be optimal.
[2026-05-17 10:03:40] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
[2026-05-17 10:03:42] The server is fired up and ready to roll!
"""

# importlib.metadata.version() on a distribution that is not installed (Python's stdlib message: "No package metadata
# was found for {name}"), as the engines' and transformers' version checks call it (transformers.utils.versions
# require_version, vllm's import-time version look-ups).
PACKAGE_METADATA_MISSING = f"""\
Traceback (most recent call last):
  File "{_SITE}/transformers/utils/versions.py", line 102, in require_version
    got_ver = importlib.metadata.version(pkg)
  File "/usr/lib/python3.12/importlib/metadata/__init__.py", line 889, in version
    return distribution(distribution_name).version
  File "/usr/lib/python3.12/importlib/metadata/__init__.py", line 410, in from_name
    raise PackageNotFoundError(name)
importlib.metadata.PackageNotFoundError: No package metadata was found for bitsandbytes
"""


def test_sglang_transformers_fallback_that_cannot_run_the_architecture_is_unsupported_architecture():
    result = diagnose(SGLANG_FALLBACK, exit_code=1)
    assert result.category == "unsupported_architecture"
    assert "BloomForCausalLM" in result.cause
    assert "has no SGlang implementation" in result.evidence[0].text
    assert any("BloomForCausalLM" in step for step in result.next_steps)


def test_sglang_fallback_warning_on_a_server_that_came_up_is_healthy():
    assert diagnose(SGLANG_FALLBACK_WARNING).category == "none"


@pytest.mark.parametrize("log", [PACKAGE_METADATA_MISSING, PACKAGE_METADATA_MISSING.splitlines()[-1]])
def test_a_distribution_without_metadata_is_a_missing_dependency(log):
    # The whole traceback and the bare last line (a short fragment) alike.
    result = diagnose(log, exit_code=1)
    assert result.category == "missing_dependency"
    assert "bitsandbytes" in result.cause
