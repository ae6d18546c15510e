"""Three readings of a tail's structure (written fresh from the sources): a Python warning whose message goes on to
the next line (Lib/warnings.py formatwarning: "<file>.py:<line>: <Category>Warning: <message>", vLLM 0.6's
vllm/version.py warning "Failed to read commit hash:\\n<the ImportError>" and falling back to "dev"); a traceback cut
inside importlib's machinery (an import in progress); CUTLASS's CuTe DSL raising its own error classes when it
compiles a kernel (cutlass.base_dsl.common.DSLUserCodeError)."""

from __future__ import annotations

from bot.diagnose import diagnose

_WARNING = ("(pid=8808) /opt/venv/lib/python3.10/site-packages/vllm/connections.py:8: RuntimeWarning: Failed to read "
            "commit hash:\n"
            "(pid=8808) No module named 'vllm._version'\n"
            "(pid=8808)   from vllm.version import __version__ as VLLM_VERSION\n")


def test_no_module_named_inside_a_warning_s_message_is_not_an_import_failure() -> None:
    result = diagnose(_WARNING)
    assert result.category == "none"


def test_the_same_words_as_an_exception_are_still_a_missing_module() -> None:
    log = ('Traceback (most recent call last):\n  File "/opt/venv/bin/serve.py", line 3, in <module>\n'
           "    import vllm._version\nModuleNotFoundError: No module named 'vllm._version'\n")
    assert diagnose(log, exit_code=1).category == "missing_dependency"


def test_a_traceback_cut_inside_an_import_is_a_package_that_did_not_import() -> None:
    log = _WARNING + (
        'Traceback (most recent call last):\n'
        '  File "/src/vllm/vllm/platforms/__init__.py", line 281, in __getattr__\n'
        '    _current_platform = resolve_obj_by_qualname(platform_cls_qualname)()\n'
        '  File "/src/vllm/vllm/utils/import_utils.py", line 109, in resolve_obj_by_qualname\n'
        '    module = importlib.import_module(module_name)\n'
        '  File "/usr/lib/python3.12/importlib/__init__.py", line 90, in import_module\n'
        '    return _bootstrap._gcd_import(name[level:], package, level)\n')
    result = diagnose(log, engine="vllm")
    assert result.category == "missing_dependency"
    assert result.alternatives == ["other"] and result.confidence < 0.5
    assert "utils/import_utils.py (resolve_obj_by_qualname)" in result.cause
    assert any("python -c 'import vllm'" in step for step in result.next_steps)
    assert "printed above" not in result.cause


def test_cute_dsl_s_own_error_class_is_a_kernel_build() -> None:
    log = ("[2026-05-02 10:11:12 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 2110, in forward\n'
           "    return self.forward_decode(forward_batch)\n"
           "cutlass.base_dsl.common.DSLUserCodeError:\n"
           "error[TYPE_UNSTABLE_JOIN]: `n_block` has type `None` on one path and `Int32` on another.\n")
    assert diagnose(log, exit_code=1).category == "jit_compile_failure"


def test_a_traceback_cut_inside_importlib_is_a_package_that_did_not_import() -> None:
    # importlib/__init__.py import_module -> <frozen importlib._bootstrap>: the module's own frame would come next
    log = "\n".join([
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/model_executor/models/registry.py", line 410, in '
        "_try_load",
        "    module = importlib.import_module(mod_relname)",
        '  File "/usr/lib/python3.12/importlib/__init__.py", line 90, in import_module',
        "    return _bootstrap._gcd_import(name[level:], package, level)",
        '  File "<frozen importlib._bootstrap>", line 1387, in _gcd_import',
    ])
    result = diagnose(log)
    assert result.category == "missing_dependency" and "other" in result.alternatives, result
    assert "models/registry.py (_try_load)" in result.cause, result.cause
    assert any("python -c 'import" in step for step in result.next_steps), result.next_steps
