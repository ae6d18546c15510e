"""Engine-independent signals the diagnoser reads whatever the engine prints around them: the OS (disk full,
permission, out of memory, file descriptors, a native crash, in the host's locale), Kubernetes' kill report, other
accelerators' out-of-memory wording, and transformers lacking a model class. Each log is written from the real
message of a public thread (cited), not from the corpus."""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose, diagnosis_text

CASES = [
    # huggingface/diffusers#4957 (a download filling HF_HOME); the Rust io error form from hiyouga/LlamaFactory#5155.
    ("other", "No space left on device", "disk_full",
     "OSError: [Errno 28] No space left on device: '/root/.cache/huggingface/hub/models--Qwen--Qwen3-32B/blobs/x'\n"),
    ("other", "StorageFull", "disk_full",
     'safetensors_rust.SafetensorError: Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: '
     '"No space left on device" })\n'),
    # glibc's German strerror(ENOSPC), as a German host prints it.
    ("other", "kein Speicherplatz", "disk_full",
     "OSError: [Errno 28] Auf dem Gerät ist kein Speicherplatz mehr verfügbar: '/tmp/flashinfer/x.so'\n"),
    # A model folder the engine's user may not read (EACCES on a shard).
    ("model_files_missing_or_corrupt", "Permission denied", "permission",
     "PermissionError: [Errno 13] Permission denied: '/models/Qwen3-32B/model-00001-of-00017.safetensors'\n"),
    # sgl-project/sglang (arbor#48): a Rust router's panic on EMFILE.
    ("other", "Too many open files", "fd_limit",
     'called `Result::unwrap()` on an `Err` value: Os { code: 24, kind: Uncategorized, message: "Too many open '
     'files" }\n'),
    # kubectl describe of a pod whose container the kernel killed.
    ("host_oom_killed", "OOMKilled", None, "    Last State:     Terminated\n      Reason:       OOMKilled\n"
                                           "      Exit Code:    137\n"),
    # vllm-project/vllm-ascend: the NPU's own OOM wording while creating weights.
    ("gpu_oom_weights", "NPU out of memory", None,
     '  File "/usr/local/python3.10/site-packages/vllm/model_executor/layers/linear.py", line 180, in create_weights\n'
     "    weight = Parameter(torch.empty(\n"
     "RuntimeError: NPU out of memory. Tried to allocate 22.00 MiB (NPU 4; 60.97 GiB total capacity)\n"),
    # QwenLM/Qwen3-VL#1018, Granddyser/qwen3-vl-comfy-ui#2: the class is newer than the installed transformers.
    ("transformers_too_old", "cannot import name 'Qwen3VLForConditionalGeneration'", None,
     "ImportError: cannot import name 'Qwen3VLForConditionalGeneration' from 'transformers' "
     "(/venv/lib/python3.10/site-packages/transformers/__init__.py)\n"),
    ("transformers_too_old", "No module named 'transformers.models.qwen3_vl'", None,
     "ModuleNotFoundError: No module named 'transformers.models.qwen3_vl'\n"),
    # A native crash reported by a French shell (glibc strsignal(SIGSEGV)).
    ("other", "Erreur de segmentation", "segfault",
     "./serve.sh: ligne 4: 9121 Erreur de segmentation  (core dumped) python3 -m sglang.launch_server\n"),
]


@pytest.mark.parametrize(("category", "decisive", "kind", "log"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_engine_independent_signal(category, decisive, kind, log):
    result = diagnose(log, exit_code=1)
    assert result.category == category, diagnosis_text(result)
    assert decisive in " ".join(e.text for e in result.evidence)
    assert result.next_steps


def test_disk_full_steps_name_the_disks_to_check_not_the_log():
    steps = diagnose(CASES[0][3], exit_code=1).next_steps
    assert "df -h" in steps[0] and "HF_HOME" in steps[0]


def test_optional_transformers_import_notice_is_not_a_crash():
    # SGLang logs models it skips because transformers lacks them, then starts (SGLang docs build output).
    log = ("[2026-03-13 21:35:18] Ignore import error when loading sglang.srt.models.glm_ocr: No module named "
           "'transformers.models.glm_ocr'\n[2026-03-13 21:36:40] The server is fired up and ready to roll!\n")
    assert diagnose(log).category == "none"


@pytest.mark.parametrize(("category", "line"), [
    # SGLang's port wait (python/sglang/srt/utils.py: "{port_name} is used by a process already").
    ("port_in_use", "ValueError: port_base at 30234 is not available in 30 seconds. port_base is used by a process "
                    "already. process.name()='python3'"),
    # vLLM's scheduler config check (vllm/config/scheduler.py).
    ("bad_argument", "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (32768). This "
                     "effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject "
                     "longer sequences. Please increase max_num_batched_tokens or decrease max_model_len."),
    # A GPU in exclusive-process mode held by another process (torch's CUDA error text).
    ("cuda_arch_or_driver", "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"),
    # transformers' CONFIG_MAPPING lookup pasted without its traceback (QwenLM/Qwen3#434).
    ("transformers_too_old", "KeyError: 'qwen3_moe'"),
])
def test_engine_wordings_from_their_sources(category, line):
    assert diagnose(line + "\n", exit_code=1).category == category


@pytest.mark.parametrize(("category", "line"), [
    # vLLM's Marlin tile check (layers/quantization/gptq_marlin.py); seen with AWQ at TP 2 on Qwen2.5-VL-72B.
    ("tp_not_divisible", "ValueError: Weight input_size_per_partition = 14784 is not divisible by min_thread_k = 128. "
                         "Consider reducing tensor_parallel_size or running with --quantization gptq."),
    # transformers' dynamic-module check (dynamic_module_utils.check_imports).
    ("missing_dependency", "ImportError: This modeling file requires the following packages that were not found in "
                           "your environment: flash_attn. Run `pip install flash_attn`"),
    # transformers' AutoTokenizer when the class is newer than the install.
    ("transformers_too_old", "ValueError: Tokenizer class Qwen2Tokenizer does not exist or is not currently "
                             "imported."),
    # transformers' remote-code guard.
    ("bad_argument", "ValueError: The repository for /models/x contains custom code which must be executed to "
                     "correctly load the model. Please pass the argument `trust_remote_code=True` to allow custom "
                     "code to be run."),
])
def test_model_code_and_tile_checks(category, line):
    result = diagnose(line + "\n", exit_code=1)
    assert result.category == category, diagnosis_text(result)


def test_custom_code_without_trust_remote_code_is_fixed_by_adding_the_flag():
    result = diagnose("ValueError: Tokenizer class ChatGLMTokenizer does not exist or is not currently imported.\n"
                      "RuntimeError: Failed to load the tokenizer. If the tokenizer is a custom tokenizer not yet "
                      "available in the HuggingFace transformers library, consider setting `trust_remote_code=True` "
                      "in LLM or using the `--trust-remote-code` flag in the CLI.\n", exit_code=1)
    assert result.category == "bad_argument"
    assert result.fix is not None and result.fix.overrides.extra_args == ["--trust-remote-code"]


@pytest.mark.parametrize(("category", "line"), [
    # nvcc's diagnostic format (file(line): error: ...), as FlashInfer's JIT build prints it.
    ("jit_compile_failure", '/root/.cache/flashinfer/generated/batch_prefill.cu(212): error: identifier '
                            '"__nv_fp8_e4m3" is undefined'),
    # ninja's failed step line.
    ("jit_compile_failure", "FAILED: /root/.cache/flashinfer/80/cached_ops/norm/norm.cuda.o"),
    # The loader's wording for a binary built against a newer libstdc++ than the host's.
    ("missing_dependency", "ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not found "
                           "(required by /venv/lib/python3.10/site-packages/sgl_kernel/common_ops.abi3.so)"),
    # torch.distributed's gloo backend between nodes.
    ("nccl_error", "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:144] Gloo connectFullMesh failed "
                   "with ... Connection refused"),
])
def test_toolchain_and_transport_wordings(category, line):
    assert diagnose(line + "\n", exit_code=1).category == category


def test_a_tail_that_reports_a_bad_exit_is_never_healthy():
    # systemd's and docker's reports of the service's end, with nothing the engine said before them.
    start = "INFO 05-01 10:54:21 [api_server.py:1043] vLLM API server version 0.8.5\n"
    systemd = start + "vllm.service: Main process exited, code=exited, status=1/FAILURE\n"
    assert diagnose(systemd).category == "other"
    docker = start + "vllm-1 exited with code 137\n"
    assert diagnose(docker).category == "host_oom_killed"
    assert diagnose(start + "vllm.service: Main process exited, code=exited, status=0/SUCCESS\n").category == "none"


def test_an_uncaught_cpp_exception_is_a_native_crash_unless_its_message_is_known():
    abort = ("terminate called after throwing an instance of 'c10::Error'\n"
             "  what():  unexpected state in the allocator\nAborted (core dumped)\n")
    assert diagnose(abort).category == "other"
    known = abort.replace("unexpected state in the allocator", "CUDA error: out of memory")
    assert diagnose(known).category == "gpu_oom_weights"
