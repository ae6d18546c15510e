"""A model config of another shape than the engine's model code reads, against a transformers config class that
predates a field: the attribute named tells them apart; a feature refusing the model's attention type; an exception
out of a launcher's argument parsing; an error pasted above its own launch's start lines; a platform's start-up
allowance running out.

Written fresh in Python's AttributeError wording for a config object (transformers' configuration_utils.py
__getattribute__ raises it) and SGLang's HiRadixCache check (mem_cache), not copied from a corpus log.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

_FRAME = ('  File "/opt/venv/lib/python3.12/site-packages/vllm/model_executor/models/{0}.py", line 88, in __init__\n'
          "    self.hidden_size = config.{1}\n")


@pytest.mark.parametrize(("module", "config", "field"), [
    ("internvl", "InternVLChatConfig", "hidden_size"),
    ("llava", "LlavaConfig", "vision_config"),
    ("qwen2", "CustomVLConfig", "num_hidden_layers"),
])
def test_a_basic_field_missing_means_the_config_is_of_another_shape(module: str, config: str, field: str) -> None:
    log = (f"Traceback (most recent call last):\n{_FRAME.format(module, field)}"
           f"AttributeError: '{config}' object has no attribute '{field}'")
    result = diagnose(log, exit_code=1)
    assert result.category == "unsupported_architecture", result
    assert "transformers_too_old" in result.alternatives


def test_a_newer_field_missing_is_still_an_old_transformers() -> None:
    log = (f"Traceback (most recent call last):\n{_FRAME.format('qwen2_moe', 'mlp_only_layers')}"
           "AttributeError: 'Qwen2MoeConfig' object has no attribute 'mlp_only_layers'")
    assert diagnose(log, exit_code=1).category == "transformers_too_old"


def test_a_feature_refusing_the_models_attention_type_is_the_flag_that_turned_it_on() -> None:
    log = ("[2026-12-03 07:50:11 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
           "ValueError: HiRadixCache only supports MHA, MLA, and NSA (DSA) models")
    result = diagnose(log, engine="sglang")
    assert result.category == "bad_argument", result
    assert "unsupported_architecture" in result.alternatives
    assert any("--enable-hierarchical-cache" in step for step in result.next_steps)


def test_an_exception_raised_by_a_launchers_argument_parsing_is_a_refused_argument() -> None:
    log = ('  File "/opt/env/lib/python3.10/site-packages/swift/llm/base.py", line 36, in _parse_args\n'
           "    raise ValueError(f'remaining_argv: {remaining_argv}')\n"
           "ValueError: remaining_argv: ['--vllm_gpu_memory_utilization', '0.5']")
    assert diagnose(log, exit_code=1).category == "bad_argument"


def test_remote_modelling_code_without_what_the_engine_looks_up_is_the_architecture() -> None:
    log = ("(EngineCore_0 pid=77) ERROR 12-03 08:00:00 [core.py:500] AttributeError: module "
           "'transformers_modules.org.flash-model.0a1b2c3d.modeling_flash' has no attribute 'FlashForMaskedLM'")
    result = diagnose(log, exit_code=1)
    assert result.category == "unsupported_architecture", result
    assert "transformers_too_old" in result.alternatives


def test_an_error_pasted_above_its_own_launchs_start_lines_is_kept() -> None:
    # vLLM logs a start on two lines (api_server.py "vLLM API server version", utils.py "non-default args"): one
    # launch, so the error a person pasted first is still read; a second launch later in the tail still replaces it.
    start = ("(APIServer pid=9) INFO 12-03 08:10:15 [api_server.py:1772] vLLM API server version 0.12.0\n"
             "(APIServer pid=9) INFO 12-03 08:10:15 [utils.py:253] non-default args: {'model_tag': '/m/x.gguf'}\n")
    pasted = "ValueError: GGUF model with architecture qwen3vlmoe is not supported yet.\n\n" + start
    assert diagnose(pasted).category == "quantization_unsupported"
    relaunched = pasted + "(APIServer pid=9) INFO 12-03 08:10:19 [model.py:547] Resolved architecture: X\n" * 5 + start
    assert diagnose(relaunched).category == "none"


def test_a_platforms_start_up_allowance_running_out_is_the_time_limit() -> None:
    for line in ("Runner failed with exception: Runner has been initializing for too long: 300 seconds",
                 'Warning  Unhealthy  kubelet  Container vllm failed startup probe, will be restarted'):
        result = diagnose(line)
        assert result.category == "time_limit", result
        assert not any("Slurm" in step for step in result.next_steps)
