"""The wordings the diagnoser missed on held-out logs (issue 12), each written fresh from the engines' and tools' real
messages (sources cited per case), and the structure the diagnoser reads: exceptions with frames and chained
causes, the process exit in any locale, the start-up phase reached, the alternatives of an unsure verdict."""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose, diagnosis_text
from bot.diagnose.reading import prepare as _prepare
from bot.diagnose.structure import parse_structure
from bot.models import EngineInstall, HostFacts, ModelFolder
from tests.test_diagnose import _plan

VLLM_START = """\
INFO 05-01 10:54:21 [api_server.py:1043] vLLM API server version 0.8.5
INFO 05-01 10:54:40 [gpu_model_runner.py:1329] Starting to load model /models/Qwen3-32B...
Loading safetensors checkpoint shards: 100% Completed | 17/17 [00:21<00:00,  1.26s/it]
INFO 05-01 10:55:02 [loader.py:458] Loading weights took 21.43 seconds
INFO 05-01 10:55:03 [gpu_model_runner.py:1347] Model loading took 30.5855 GiB and 21.9 seconds
"""

# ------------------------------------------------------------------------------------------------ killed, any locale
# The shell prints strsignal(SIGKILL) in the host's locale: glibc's catalogues (libc.mo, msgid "Killed") give
# "Getötet" (de), "Processus arrêté" (fr), "已杀死" (zh_CN); the "line N: PID Killed  cmd" shape is bash's job
# report, as in liunian-Jay/MU-GOT#17 ("Killed" right after "# GPU blocks") and sglang-019 of the corpus.
KILLED_CASES = [
    "./serve.sh: Zeile 12: 48213 Getötet                 vllm serve /models/Qwen3-32B --tensor-parallel-size 2\n",
    "./serve.sh: ligne 12 : 48213 Processus arrêté        vllm serve /models/Qwen3-32B\n".replace(" :", ":"),
    "./serve.sh: 行 12: 48213 已杀死                  vllm serve /models/Qwen3-32B\n",
    "Getötet\n",
    "已杀死\n",
]


@pytest.mark.parametrize("killed", KILLED_CASES)
def test_killed_in_another_language_is_the_oom_killer(killed):
    result = diagnose(VLLM_START + killed)
    assert result.category == "host_oom_killed", diagnosis_text(result)
    assert killed.strip()[:12] in result.evidence[0].text
    assert any("dmesg" in step for step in result.next_steps)
    structure = parse_structure(_prepare(VLLM_START + killed))
    assert structure.exits and structure.exits[-1].signal == "SIGKILL"
    assert structure.phase_words() == "weights loaded (30.6 GB)"


# ------------------------------------------------------------------------------------------------ a port, not HTTP's
# ZMQ's wording (vllm-project/vllm#7196, sgl-project/sglang#9396), torch's TCPStore (vllm-project/vllm#11617), the
# metrics exporter's bind through prometheus_client (OSError [Errno 98], with strerror in the host's locale: glibc
# de "Die Adresse wird bereits verwendet") and SGLang's own port check ("metrics_port ... is used by a process").
PORT_CASES = [
    ("zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:5570')", 5570),
    ("RuntimeError: The server socket has failed to listen on any local network address. useIpv6: 0, code: -98, "
     "name: EADDRINUSE, message: address already in use", None),
    ('  File "/usr/lib/python3/dist-packages/prometheus_client/exposition.py", line 240, in start_http_server\n'
     "    httpd = ThreadingWSGIServer((addr, port), WSGIRequestHandler)\n"
     "OSError: [Errno 98] Die Adresse wird bereits verwendet", None),
    ("ValueError: metrics_port at 40290 is not available in 30 seconds. metrics_port is used by a process "
     "already.", 40290),
]


@pytest.mark.parametrize(("line", "port"), PORT_CASES)
def test_port_clash_on_an_internal_port_is_port_in_use_and_keeps_the_http_port(line, port):
    plan = _plan(engine="vllm", port=8000, argv=["vllm", "serve", "/models/Qwen3-32B"])
    result = diagnose(VLLM_START + line + "\n", plan=plan)
    assert result.category == "port_in_use", diagnosis_text(result)
    if port is not None:
        assert result.fix is None  # the HTTP port 8000 is not the one taken
        assert str(port) in result.next_steps[0]


# ------------------------------------------------------------------------------------------------ the linker in a JIT build
# Triton builds its launcher with gcc at first use; without libcuda.so on the linker path (state-spaces/mamba#123,
# JIA-Lab-research/Seg-Zero#63, pytorch/pytorch#103417):
LINKER_LOG = """\
(EngineCore_DP0 pid=2101) INFO 06-24 10:00:03 [monitor.py:34] torch.compile takes 11.2 s in total
/usr/bin/ld: cannot find -lcuda: No such file or directory
collect2: error: ld returned 1 exit status
(EngineCore_DP0 pid=2101) ERROR 06-24 10:00:05 [core.py:700] EngineCore failed to start.
(EngineCore_DP0 pid=2101) ERROR 06-24 10:00:05 [core.py:700] subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpe7nu9b0l/main.c', '-O3', '-shared', '-fPIC', '-Wno-psabi', '-o', '/tmp/tmpe7nu9b0l/cuda_utils.cpython-312-x86_64-linux-gnu.so', '-lcuda', '-L/usr/lib/python3.12/site-packages/triton/backends/nvidia/lib']' returned non-zero exit status 1.
(APIServer pid=2000) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""


def test_linker_error_while_a_kernel_compiles_is_a_jit_failure_with_the_library_named():
    result = diagnose(LINKER_LOG, exit_code=1)
    assert result.category == "jit_compile_failure", diagnosis_text(result)
    assert "cannot find -lcuda" in result.evidence[0].text
    text = " ".join(result.next_steps)
    assert "libcuda" in text and "TRITON_LIBCUDA_PATH" in text
    assert "above this tail" not in text and "read more" not in text


# ------------------------------------------------------------------------------------------------ the newer runner refuses
# vLLM's V1 oracle (vllm/engine/arg_utils.py _raise_or_warning, vllm-project/vllm#13726) raises
# "VLLM_USE_V1=1 is not supported with {feature}"; vllm-project/vllm-ascend#2169 shows it for ['BertModel'];
# the warning form "... is not supported by the V1 Engine. Falling back to V0." is not a crash
# (QwenAudio/CosyVoice#1586: "--enable-prompt-embeds is not supported by the V1 Engine").
def test_v1_engine_refusing_an_architecture_is_unsupported_architecture():
    result = diagnose(VLLM_START + "NotImplementedError: VLLM_USE_V1=1 is not supported with ['BertModel'].\n")
    assert result.category == "unsupported_architecture", diagnosis_text(result)


def test_v1_engine_refusing_a_feature_is_a_bad_argument():
    result = diagnose("NotImplementedError: VLLM_USE_V1=1 is not supported with --enable-prompt-embeds.\n")
    assert result.category == "bad_argument", diagnosis_text(result)
    assert "--enable-prompt-embeds" in result.cause


def test_v1_fallback_warning_on_a_server_that_comes_up_is_healthy():
    log = ("WARNING 09-19 10:00:00 [arg_utils.py:1735] --enable-prompt-embeds is not supported by the V1 Engine. "
           "Falling back to V0.\n" + VLLM_START + "INFO:     Application startup complete.\n")
    assert diagnose(log).category == "none"


# ------------------------------------------------------------------------------------------------ inspection failed
# vLLM's registry runs the model import in a subprocess (vllm/model_executor/models/registry.py); its wording in
# vllm-project/vllm#17341 and dhcode-cpp/X-R1#6:
INSPECT_LOG = """\
ERROR 02-13 15:12:54 registry.py:299] Error in inspecting model architecture 'Qwen2ForCausalLM'
ERROR 02-13 15:12:54 registry.py:299] Traceback (most recent call last):
ERROR 02-13 15:12:54 registry.py:299]   File "/home/u/.local/lib/python3.11/site-packages/vllm/model_executor/models/registry.py", line 495, in _run_in_subprocess
ERROR 02-13 15:12:54 registry.py:299]     returned.check_returncode()
ERROR 02-13 15:12:54 registry.py:299] subprocess.CalledProcessError: Command '['/usr/bin/python', '-m', 'vllm.model_executor.models.registry']' returned non-zero exit status 1.
[rank0]: ValueError: Model architectures ['Qwen2ForCausalLM'] failed to be inspected. Please check the logs for more details.
"""


def test_architecture_that_failed_to_be_inspected_is_unsupported_architecture():
    result = diagnose(INSPECT_LOG, exit_code=1)
    assert result.category == "unsupported_architecture", diagnosis_text(result)
    assert "Qwen2ForCausalLM" in result.cause


def test_inspection_that_died_of_a_failed_import_names_the_import():
    # vLLM logs the failed import of its compiled extension as a warning first (vllm/_custom_ops.py).
    log = ("WARNING 10-24 21:42:41 _custom_ops.py:19] Failed to import from vllm._C with "
           "ModuleNotFoundError(\"No module named 'vllm._C'\")\n" + INSPECT_LOG)
    assert diagnose(log, exit_code=1).category == "missing_dependency"


# ------------------------------------------------------------------------------------------------ the fallback class
# vLLM runs an architecture it has no implementation of through TransformersForCausalLM
# (vllm/model_executor/models/transformers.py); vllm-project/vllm#14139: it fails on a config without head_dim.
FALLBACK_LOG = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/scratch/vllm/vllm/model_executor/model_loader/loader.py", line 124, in _initialize_model
[rank0]:     return model_class(vllm_config=vllm_config, prefix=prefix)
[rank0]:   File "/scratch/vllm/vllm/model_executor/models/transformers.py", line 147, in __init__
[rank0]:     head_size=self.config.head_dim,
[rank0]:   File "/scratch/venv/lib/python3.12/site-packages/transformers/configuration_utils.py", line 214, in __getattribute__
[rank0]:     return super().__getattribute__(key)
[rank0]: AttributeError: 'Qwen2Config' object has no attribute 'head_dim'
"""


def test_attribute_error_from_the_transformers_fallback_is_unsupported_architecture():
    facts = HostFacts(host="h", model=ModelFolder(name="m", path="/models/m", exists=True,
                                                  config={"architectures": ["Qwen3_5ForCausalLM"]}),
                      engines={"vllm": EngineInstall(name="vllm", version="0.16.0")})
    plan = _plan(engine="vllm", argv=["vllm", "serve", "/models/m"]).model_copy(update={"engine_version": "0.16.0"})
    result = diagnose(FALLBACK_LOG, exit_code=1, plan=plan, facts=facts)
    assert result.category == "unsupported_architecture", diagnosis_text(result)
    assert "has no attribute 'head_dim'" in result.evidence[0].text
    # The compatibility table knows the release that added the architecture.
    assert any("0.17.0" in step and "Qwen3_5ForCausalLM" in step for step in result.next_steps), result.next_steps


def test_attribute_error_elsewhere_stays_unrecognised_with_concrete_steps():
    # outlines' own transformers.py is not the engine's fallback class (corpus sglang-032).
    log = """\
Traceback (most recent call last):
  File "/venv/lib/python3.10/site-packages/sglang/srt/constrained/fsm_cache.py", line 8, in __init__
    self.outlines_tokenizer = TransformerTokenizer(
  File "/venv/lib/python3.10/site-packages/outlines/models/transformers.py", line 63, in __init__
    self.eos_token_id = self.tokenizer.eos_token_id
AttributeError: 'str' object has no attribute 'eos_token_id'
"""
    result = diagnose(log, exit_code=1, engine="sglang")
    assert result.category == "other"
    steps = " ".join(result.next_steps)
    assert "AttributeError" in steps and "outlines/models/transformers.py" in steps
    assert "sgl-project/sglang/issues" in steps


# ------------------------------------------------------------------------------------------------ structure


def test_chained_causes_are_linked_to_the_original_failure():
    log = """\
Traceback (most recent call last):
  File "/venv/lib/python3.12/site-packages/huggingface_hub/file_download.py", line 1484, in _raise_on_head_call_error
    raise LocalEntryNotFoundError(
huggingface_hub.errors.LocalEntryNotFoundError: An error happened while trying to locate the file on the Hub.

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/venv/lib/python3.12/site-packages/transformers/utils/hub.py", line 470, in cached_files
    raise OSError(
OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the cached files.
"""
    structure = parse_structure(_prepare(log))
    last = structure.last_exception
    assert last is not None and last.qualname == "OSError" and last.chain == "cause"
    assert last.root().name == "LocalEntryNotFoundError"
    assert last.root().where() == "huggingface_hub/file_download.py (_raise_on_head_call_error)"
    assert diagnose(log, exit_code=1).category == "hub_access"


def test_a_tail_cut_inside_a_traceback_is_never_healthy():
    log = VLLM_START + """\
(Worker_TP0 pid=11) ERROR 10-06 22:12:39 [multiproc_executor.py:597] Traceback (most recent call last):
(Worker_TP0 pid=11) ERROR 10-06 22:12:39 [multiproc_executor.py:597]   File "/venv/vllm/v1/worker/gpu_worker.py", line 213, in load_model
(Worker_TP0 pid=11) ERROR 10-06 22:12:39 [multiproc_executor.py:597]     self.model_runner.load_model(eep_scale_up=eep_scale_up)
"""
    result = diagnose(log)
    assert result.category == "other"
    assert "cut off" in result.cause


def test_an_unsure_verdict_names_its_alternatives_in_text():
    # An unknown error raised inside SGLang's CUDA-graph runner while it replays a graph (serving, not capturing):
    # unrecognised, but the place hints at the graphs. (Raised inside capture() it is the capture's failure, which
    # the taxonomy files as cuda_graph_oom: tests/test_diagnose_areas.py.)
    log = """\
Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 700, in replay
    self.replay_prepare(forward_batch, pp_proxy_tensors)
  File "/sgl-workspace/sglang/python/sglang/srt/layers/rotary_embedding.py", line 95, in forward_cuda
    query, key = self.cos_sin_cache.index_select(0, positions)
IndexError: index out of range in self
"""
    result = diagnose(log, exit_code=1)
    assert result.category == "other"
    assert result.alternatives == ["cuda_graph_oom"]
    assert "unsure between other and cuda_graph_oom" in diagnosis_text(result)
    assert any("CUDA graph capture" in step for step in result.next_steps)


# ------------------------------------------------------------------------------------------------ version that added it
@pytest.mark.parametrize(("version", "line", "expected"), [
    # A flag newer than the installed release (vllm-project/vllm#42399: --reasoning-config refused by an older image).
    ("0.11.0", "vllm: error: unrecognized arguments: --reasoning-config {}", "first appears in vLLM 0.20.0"),
    # A flag a newer release renamed (planners/engines/<engine>/renames.py, diffed from the captured parsers).
    ("0.33.0", "vllm: error: unrecognized arguments: --no-disable-cascade-attn", "use --enable-cascade-attn"),
    # A typo: the captured parser's closest option.
    ("0.20.0", "vllm: error: unrecognized arguments: --max-model-lenght 4096", "did you mean --max-model-len?"),
])
def test_refused_flag_says_which_release_has_it(version, line, expected):
    plan = _plan(engine="vllm", argv=["vllm", "serve", "/models/m"]).model_copy(update={"engine_version": version})
    result = diagnose(line + "\n", plan=plan)
    assert result.category == "bad_argument"
    assert any(expected in step for step in result.next_steps), result.next_steps


def test_transformers_not_knowing_a_model_newer_than_the_engine_is_an_engine_too_old():
    # vllm-project/vllm#19793: Qwen3-MoE on vLLM 0.6.3; the table (planners/compat.py) has Qwen3-MoE from vLLM 0.8.5.
    line = ("ValueError: The checkpoint you are trying to load has model type `qwen3_moe` but Transformers does not "
            "recognize this architecture. This could be because of an issue with the checkpoint, or because your "
            "version of Transformers is out of date.\n")
    old = _plan(engine="vllm", argv=["vllm", "serve", "/m"]).model_copy(update={"engine_version": "0.6.3"})
    result = diagnose(line, plan=old)
    assert result.category == "unsupported_architecture"
    assert result.alternatives == ["transformers_too_old"]
    assert any("vLLM 0.8.5 added Qwen3MoeForCausalLM" in step for step in result.next_steps), result.next_steps
    new = old.model_copy(update={"engine_version": "0.9.0"})
    assert diagnose(line, plan=new).category == "transformers_too_old"
    assert diagnose(line).category == "transformers_too_old"  # no version known: the words decide


def test_an_import_failed_far_above_the_inspection_is_the_cause():
    # vllm-project/vllm#9701's shape: the compiled extension's import warning, many lines, then the inspection.
    filler = "".join(f"INFO 10-24 21:42:{i:02d} [config.py:1] resolving model config step {i}\n" for i in range(30))
    log = ("WARNING 10-24 21:42:41 _custom_ops.py:19] Failed to import from vllm._C with ImportError('libcuda.so.1: "
           "cannot open shared object file: No such file or directory')\n" + filler + INSPECT_LOG)
    result = diagnose(log, exit_code=1)
    assert result.category == "missing_dependency", diagnosis_text(result)
    assert "Failed to import from vllm._C" in result.evidence[0].text
    assert result.alternatives == ["unsupported_architecture"]


def test_a_start_that_ends_in_error_level_lines_is_a_crash_not_still_starting():
    # Behaviour, not wording: whatever the engine logged at ERROR last, with no exception line and no server up,
    # is quoted as an unrecognised crash (the shape of vLLM's multiproc executor giving up on a worker).
    log = VLLM_START + ("(EngineCore_DP0 pid=12) ERROR 10-01 10:00:00 [multiproc_executor.py:140] Worker proc "
                        "VllmWorker-0 died unexpectedly, shutting down executor.\n")
    result = diagnose(log)
    assert result.category != "none"
    assert "VllmWorker-0 died unexpectedly" in result.evidence[0].text
    assert diagnose(log + "INFO:     Application startup complete.\n").category == "none"
