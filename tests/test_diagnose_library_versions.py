"""A dependency at another version than the engine expects, in the words the libraries' own sources print (written
fresh, not copied from the corpus).

- NumPy 2.0's notices for what it removed (numpy/_expired_attrs_2_0.py and the ndarray methods): "`float_` was
  removed in the NumPy 2.0 release. Use `np.float64` instead.", "`newbyteorder` was removed from the ndarray class in
  NumPy 2.0. Use ...".
- An AttributeError on an object of a compiled extension names its type by module path (CPython's tp_name for
  extension types), a Python class by its bare name: the first is the installed package's API, the second is code.
"""

from __future__ import annotations

from bot.diagnose import diagnose


def test_an_api_numpy_2_removed_is_a_dependency_at_the_wrong_version() -> None:
    for line in ("AttributeError: `float_` was removed in the NumPy 2.0 release. Use `np.float64` instead.",
                 "AttributeError: `ptp` was removed from the ndarray class in NumPy 2.0. Use np.ptp(arr, ...) "
                 "instead."):
        result = diagnose(line + "\n", exit_code=1)
        assert result.category == "missing_dependency", (line, result)
        assert "NumPy 2.0" in result.cause
        assert any("numpy<2" in step for step in result.next_steps), result.next_steps


def test_an_extension_object_without_the_attribute_is_the_package_s_version() -> None:
    log = ('  File "/sgl-workspace/sglang/python/sglang/srt/mem_cache/storage/store.py", line 230, in exists\n'
           "    return self.store.batch_exists(keys)\n"
           "AttributeError: 'mooncake.store.MooncakeDistributedStore' object has no attribute 'batch_exists'\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "missing_dependency", result
    assert "mooncake" in result.cause and "batch_exists" in result.cause
    assert any("pip show mooncake-transfer-engine" in step for step in result.next_steps), result.next_steps


def test_a_python_class_without_the_attribute_stays_a_code_error() -> None:
    result = diagnose("AttributeError: 'RemotePrefillRequest' object has no attribute 'block_ids'\n", exit_code=1)
    assert result.category == "other", result


def test_a_fallback_notice_for_a_missing_package_is_no_crash() -> None:
    # vLLM 0.4's attention selector, at INFO, then it carries on with XFormers
    log = (" Cannot use FlashAttention-2 backend because the flash_attn package is not found. Please install it for "
           "better performance.\n Using XFormers backend.\n")
    assert diagnose(log).category == "none"


def test_a_module_that_needs_compiled_extensions_the_build_lacks_is_a_missing_dependency() -> None:
    log = ("RuntimeError: Worker failed with error 'vllm.vllm_flash_attn requires the CUDA flash attention extensions "
           "(_vllm_fa2_C or _vllm_fa3_C). On ROCm, use upstream flash_attn.', please check the stack trace above\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "missing_dependency" and "_vllm_fa2_C" in result.cause, result
