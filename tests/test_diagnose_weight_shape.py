"""A checkpoint weight whose shape is not the parameter's, in the words of the engines' weight loaders (written
fresh from their source, not from the corpus): vLLM 0.11.0 and SGLang 0.5.9 model_loader/weight_utils.py
``default_weight_loader`` assert "Attempted to load weight ({loaded_weight.size()}) into parameter ({param.size()})";
vLLM's layers/linear.py asserts "Tried to load weights of size {...}to a parameter of size {...}" (no space, as the
source has it), and its merged / QKV loaders a bare ``assert param_data.shape == loaded_weight.shape``, whose
exception line is only "AssertionError": the condition is the source line Python prints under the innermost frame.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

_FRAMES = (
    'Traceback (most recent call last):\n'
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/model_executor/model_loader/default_loader.py", line 264, '
    'in load_weights\n'
    '    loaded_weights = model.load_weights(\n'
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/model_executor/models/{model}.py", line 512, in load_weights\n'
    '    weight_loader(param, loaded_weight)\n'
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/model_executor/layers/linear.py", line 1326, in '
    'weight_loader\n'
    '    assert param_data.shape == loaded_weight.shape\n'
    '           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n')


def test_a_bare_shape_assert_is_read_from_its_source_line() -> None:
    log = ("INFO 03-02 10:01:12 [model.py:547] Resolved architecture: LlamaForCausalLM\n"
           + _FRAMES.format(model="llama") + "AssertionError\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "model_files_missing_or_corrupt"
    assert "quantization_unsupported" in result.alternatives
    # The evidence quotes the raw exception line and the assert's own line: "AssertionError" alone says nothing.
    assert [line.text for line in result.evidence][:2] == [
        "AssertionError", "    assert param_data.shape == loaded_weight.shape"]
    assert any("vocab_size" in step and "num_key_value_heads" in step for step in result.next_steps)


def test_a_shape_assert_under_a_quantized_checkpoint_is_the_quantization() -> None:
    log = ("[2026-02-28 11:04:19] Parameter model.layers.0.self_attn.qkv_proj.input_scale not found in params_dict\n"
           + _FRAMES.format(model="qwen3").replace("/opt/venv", "/models/Qwen3-32B-NVFP4/venv") + "AssertionError\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "quantization_unsupported"
    assert result.alternatives == ["model_files_missing_or_corrupt"]
    assert any("quantized layer" in step for step in result.next_steps)


def test_a_traceback_cut_on_the_assert_is_read_as_that_assert_not_as_a_cause_printed_above() -> None:
    log = "[2026-02-28 11:04:19] Scheduler hit an exception: " + _FRAMES.format(model="qwen3")
    result = diagnose(log, exit_code=1)
    assert result.category == "model_files_missing_or_corrupt"
    assert "printed above" not in result.cause
    assert not any("capture the log from the launch on" in step for step in result.next_steps)


@pytest.mark.parametrize("message,weight,parameter", [
    ("AssertionError: Attempted to load weight (torch.Size([152064, 5120])) into parameter "
     "(torch.Size([151936, 5120]))", "torch.Size([152064, 5120])", "torch.Size([151936, 5120])"),
    ("AssertionError: Tried to load weights of size torch.Size([4096, 1024])to a parameter of size "
     "torch.Size([4096, 512])", "torch.Size([4096, 1024])", "torch.Size([4096, 512])"),
])
def test_the_loaders_messages_name_both_shapes_in_the_advice(message: str, weight: str, parameter: str) -> None:
    result = diagnose(_FRAMES.format(model="qwen2").replace(
        "    assert param_data.shape == loaded_weight.shape\n", "    assert param.size() == loaded_weight.size(), (\n")
        + message + "\n", exit_code=1)
    assert result.category == "model_files_missing_or_corrupt"
    assert any(f"the checkpoint's {weight}, the parameter's {parameter}" in step for step in result.next_steps)


def test_a_bare_assert_of_another_condition_keeps_its_own_reading() -> None:
    log = ('Traceback (most recent call last):\n'
           '  File "/usr/lib/python3/site-packages/vllm/model_executor/models/llama.py", line 140, in __init__\n'
           '    assert self.total_num_kv_heads % tp_size == 0\n'
           'AssertionError\n')
    result = diagnose(log, exit_code=1)
    assert result.category == "tp_not_divisible"
    assert any("total_num_kv_heads % tp_size" in line.text for line in result.evidence)


def test_an_assert_with_a_message_is_not_rewritten() -> None:
    # Python prints an assert's message on the exception line itself: that message is the reading, not the condition.
    log = ('Traceback (most recent call last):\n'
           '  File "/usr/lib/python3/site-packages/vllm/config/parallel.py", line 88, in __post_init__\n'
           '    assert self.world_size > 0, "world size must be positive"\n'
           'AssertionError: world size must be positive\n')
    result = diagnose(log, exit_code=1)
    assert "self.world_size > 0" not in result.cause
