"""The simulated GPU host: model folders, the fake nvidia-smi, and the fake engines' healthy runs and failures,
all exercised through the same processes and commands deploybot uses on a real host."""

from __future__ import annotations

import hashlib

import csv
import io
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bot.config import parse_config
from bot.diagnose import diagnose
from bot.simhost import GPU_PRESETS, SimHost, build_sim_host
from bot.simhost.modelfiles import CONFIG_DIR
from bot.simhost.scenarios import shipped_crashlogs

WAIT_LIMIT_S = 30.0  # a guard against hanging, not a speed requirement
CONFIG_SHA256 = Path(__file__).resolve().parent / "data" / "configs.sha256"
GPU_FIELDS = (
    "index,name,uuid,memory.total,memory.used,memory.free,utilization.gpu,compute_cap,pci.bus_id,driver_version"
)


# --------------------------------------------------------------------------------------------- helpers


def nvidia_smi(host: SimHost, *args: str) -> str:
    result = subprocess.run([str(host.bin_dir / "nvidia-smi"), *args], capture_output=True, text=True, check=True)
    return result.stdout


def csv_rows(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in row] for row in csv.reader(io.StringIO(text)) if row]


def compute_apps(host: SimHost) -> list[list[str]]:
    return csv_rows(
        nvidia_smi(host, "--query-compute-apps=pid,gpu_uuid,used_memory,process_name", "--format=csv,noheader,nounits")
    )


def run_engine(host: SimHost, *argv: str, timeout: float = WAIT_LIMIT_S) -> subprocess.CompletedProcess:
    """Run an engine command to completion (for the ones that must fail)."""
    return subprocess.run([str(host.python), *argv], capture_output=True, text=True, timeout=timeout)


def start_engine(
    host: SimHost, log: Path, *argv: str, command: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(
            [str(command or host.python), *argv],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )


def http_status(port: int, path: str = "/health") -> int | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None  # nothing listening yet


def wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT_LIMIT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def stop(process: subprocess.Popen) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=WAIT_LIMIT_S)


# --------------------------------------------------------------------------------------------- building


def test_model_folders_are_real_shaped_and_sparse(simhost: SimHost) -> None:
    folder = simhost.models_dir / "Qwen3.6-27B"
    assert (folder / "config.json").read_bytes() == (CONFIG_DIR / "Qwen3.6-27B.json").read_bytes()
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    assert index["metadata"]["total_size"] == 55_562_855_904
    shards = sorted(folder.glob("model-*-of-*.safetensors"))
    assert [s.name for s in shards] == [f"model-{i:05d}-of-00015.safetensors" for i in range(1, 16)]
    assert sum(s.stat().st_size for s in shards) == 55_562_855_904
    assert sum(s.stat().st_blocks for s in shards) * 512 < 1 << 20  # sparse: apparent size, no disk
    assert set(index["weight_map"].values()) == {s.name for s in shards}
    assert any(name.startswith("mtp.") for name in index["weight_map"])  # the MTP head ships with this checkpoint
    assert json.loads((folder / "tokenizer_config.json").read_text())["model_max_length"] == 262144

    llama = json.loads((simhost.models_dir / "Llama-3.1-8B-Instruct" / "model.safetensors.index.json").read_text())
    assert llama["metadata"]["total_size"] == 16_060_522_496
    qwen32 = json.loads((simhost.models_dir / "Qwen3-32B" / "model.safetensors.index.json").read_text())
    assert 64e9 < qwen32["metadata"]["total_size"] < 67e9  # estimated from the config: 32.8 B params in bf16


def test_shipped_configs_are_byte_copies_of_shared() -> None:
    # The digests were taken from shared/configs when the copies were made (tests/data/PROVENANCE.md).
    pinned = dict(reversed(line.split()) for line in CONFIG_SHA256.read_text().splitlines() if line.strip())
    shipped = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in CONFIG_DIR.glob("*.json")}
    assert shipped == pinned


def test_bad_build_arguments_are_rejected_before_anything_is_written(tmp_path: Path) -> None:
    root = tmp_path / "never"
    with pytest.raises(ValueError, match="no shipped config.json for \\['Nope-1B'\\]"):
        build_sim_host(root, models=["Llama-3.1-8B-Instruct", "Nope-1B"])
    with pytest.raises(ValueError, match="unknown GPU preset"):
        build_sim_host(root, gpus="3xA6000")
    with pytest.raises(ValueError, match="unknown scenario"):
        build_sim_host(root, scenario="crash:no-such-log")
    with pytest.raises(ValueError, match="not a version"):
        build_sim_host(root, engines={"sglang": "latest; rm -rf /"})
    assert not root.exists()


def test_host_config_is_a_valid_app_yaml_host(simhost: SimHost) -> None:
    config = parse_config({"hosts": {"sim": simhost.host_config()}})
    host = config.hosts["sim"]
    assert host.transport == "local"
    assert host.python == str(simhost.python)
    assert host.gpu_count == 2
    with pytest.raises(Exception, match="known_hosts"):
        simhost.host_config(transport="ssh")


# --------------------------------------------------------------------------------------------- nvidia-smi


def test_nvidia_smi_gpu_query_parses(tmp_path: Path) -> None:
    host = build_sim_host(tmp_path / "h100", gpus="8xH100", models=["Llama-3.1-8B-Instruct"])
    rows = csv_rows(nvidia_smi(host, f"--query-gpu={GPU_FIELDS}", "--format=csv,noheader,nounits"))
    assert len(rows) == 8
    for index, row in enumerate(rows):
        idx, name, uuid, total, used, free, util, cc, bus, driver = row
        assert int(idx) == index
        assert name == "NVIDIA H100 80GB HBM3"
        assert uuid.startswith("GPU-")
        assert int(total) == 81559 and int(used) + int(free) == 81559 and int(used) > 0
        assert (int(util), cc, driver.count(".")) == (0, "9.0", 2)
        assert bus.startswith("00000000:")
    assert len({row[2] for row in rows}) == 8  # distinct UUIDs

    # any subset and order, with header and units
    text = nvidia_smi(host, "--query-gpu=memory.free,index", "--format=csv", "-i", "3")
    assert csv_rows(text) == [["memory.free [MiB]", "index"], [f"{int(rows[3][5])} MiB", "3"]]
    assert "NVIDIA-SMI" in nvidia_smi(host) and "No running processes found" in nvidia_smi(host)


def test_nvidia_smi_version_names_driver_and_cuda(simhost: SimHost) -> None:
    lines = dict(line.split(" : ", 1) for line in nvidia_smi(simhost, "--version").splitlines())
    assert (
        lines["DRIVER version     "].strip()
        == csv_rows(nvidia_smi(simhost, "--query-gpu=driver_version", "--format=csv,noheader"))[0][0]
    )
    assert lines["CUDA Version       "].strip() == "12.8"


def test_nvidia_smi_rejects_unknown_field(simhost: SimHost) -> None:
    result = subprocess.run(
        [str(simhost.bin_dir / "nvidia-smi"), "--query-gpu=index,bogus", "--format=csv"], capture_output=True, text=True
    )
    assert result.returncode != 0
    assert 'Field "bogus" is not a valid field to query.' in result.stdout


def test_simulated_processes_show_in_nvidia_smi(simhost: SimHost) -> None:
    simhost.set_gpu_processes([{"gpu": 1, "used_mib": 20480, "pid": 4242, "name": "/usr/bin/python3"}])
    assert compute_apps(simhost) == [
        [
            "4242",
            csv_rows(nvidia_smi(simhost, "--query-gpu=uuid", "--format=csv,noheader"))[1][0],
            "20480",
            "/usr/bin/python3",
        ]
    ]
    used = csv_rows(nvidia_smi(simhost, "--query-gpu=index,memory.used", "--format=csv,noheader,nounits"))
    assert int(used[1][1]) - int(used[0][1]) == 20480

    with pytest.raises(ValueError, match="no such GPU"):
        simhost.set_gpu_processes([{"gpu": 5, "used_mib": 10}])
    assert [row[0] for row in compute_apps(simhost)] == ["4242"]  # unchanged by the rejected call


def test_consumer_gpus_report_no_peer_access(tmp_path: Path) -> None:
    host = build_sim_host(tmp_path / "c", gpus="4x4090", models=[])
    matrix = nvidia_smi(host, "topo", "-p2p", "r").splitlines()
    assert matrix[1].split()[:3] == ["GPU0", "X", "CNS"]
    assert GPU_PRESETS["4x4090"][0]["memory_total_mib"] == 24564


def test_interpreter_wrapper_works_with_an_empty_environment(simhost: SimHost) -> None:
    """A non-login SSH shell may have nearly nothing set; the wrapper must not depend on it."""
    result = subprocess.run(
        [
            "env",
            "-i",
            "/bin/sh",
            "-c",
            f'{simhost.python} -c "import os, shutil, sglang, vllm; '
            "print(sglang.__version__, vllm.__version__, shutil.which('nvidia-smi'), "
            "os.environ['DEPLOYBOT_SIMHOST'])\"",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.split() == ["0.5.10", "0.17.1", str(simhost.bin_dir / "nvidia-smi"), str(simhost.root)]
    version = subprocess.run(
        [str(simhost.root / "ml-env" / "bin" / "vllm"), "--version"], capture_output=True, text=True
    )
    assert version.stdout.strip() == "0.17.1"


# --------------------------------------------------------------------------------------------- SGLang


def test_sglang_healthy_run_serves_then_stops_on_sigterm(
    simhost: SimHost, unused_tcp_port: int, tmp_path: Path
) -> None:
    port, log = unused_tcp_port, tmp_path / "sglang.log"
    process = start_engine(
        simhost,
        log,
        "-m",
        "sglang.launch_server",
        "--model-path",
        str(simhost.models_dir / "Qwen3.6-27B"),
        "--tp-size",
        "2",
        "--host",
        "0.0.0.0",
        "--port",
        str(port),
        "--served-model-name",
        "qwen3.6-27b",
        "--speculative-algorithm",
        "EAGLE",
        "--speculative-num-steps",
        "3",
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        "4",
        "--mamba-scheduler-strategy",
        "extra_buffer",
    )
    try:
        seen: list[int | None] = []
        wait_for(lambda: seen.append(http_status(port)) or seen[-1] == 200, "/health 200")
        assert seen[0] is None  # not listening at first: the port opens late in startup, as uvicorn's does
        wait_for(lambda: "The server is fired up and ready to roll!" in log.read_text(), "the ready line")

        models = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read())
        assert models["data"][0]["id"] == "qwen3.6-27b"
        apps = [row for row in compute_apps(simhost) if row[0] == str(process.pid)]
        assert len(apps) == 2  # one entry per TP rank's GPU
        assert all(int(row[2]) > 40_000 for row in apps)  # weights + KV pool of an A6000 at mem fraction ~0.85
        wait_for(lambda: "accept len:" in log.read_text(), "a speculative decode line")
    finally:
        code = stop(process)
    assert code == 0
    assert [row for row in compute_apps(simhost) if row[0] == str(process.pid)] == []
    text = log.read_text()
    order = [
        "server_args=ServerArgs(",
        "Load weight begin. avail mem=",
        "Load weight end.",
        "KV Cache is allocated. #tokens:",
        "Capture cuda graph end.",
        "max_total_num_tokens=",
        "Uvicorn running on http://0.0.0.0:",
        "The server is fired up and ready to roll!",
        "Decode batch, #running-req: 1",
        f"Finished server process [{process.pid}]",
    ]
    positions = [text.index(marker) for marker in order]
    assert positions == sorted(positions)


def test_sglang_partial_speculative_flags_fail_with_assertion(simhost: SimHost) -> None:
    result = run_engine(
        simhost,
        "-m",
        "sglang.launch_server",
        "--model-path",
        str(simhost.models_dir / "Qwen3-32B"),
        "--speculative-algorithm",
        "NEXTN",
        "--speculative-num-draft-tokens",
        "4",
    )
    assert result.returncode == 1
    assert result.stderr.rstrip().splitlines()[-1] == "AssertionError"
    assert "server_args.py" in result.stderr and "_handle_speculative_decoding" in result.stderr
    # The seed case's crash ("the exact cause is not fully clear") is named by the diagnoser.
    diagnosis = diagnose(result.stdout + result.stderr, exit_code=1, engine="sglang")
    assert diagnosis.category == "speculative_config_invalid"
    assert diagnosis.evidence[0].text.strip() == "AssertionError"
    assert diagnosis.fix is not None


def test_sglang_unknown_flag_exits_2_like_argparse(simhost: SimHost) -> None:
    result = run_engine(
        simhost,
        "-m",
        "sglang.launch_server",
        "--model-path",
        str(simhost.models_dir / "Qwen3-32B"),
        "--reasoning_parser",
        "qwen3",
    )
    assert result.returncode == 2
    assert result.stderr.rstrip().endswith("launch_server.py: error: unrecognized arguments: --reasoning_parser qwen3")
    help_text = run_engine(simhost, "-m", "sglang.launch_server", "--help").stdout
    for flag in (
        "--tp-size",
        "--mem-fraction-static",
        "--speculative-num-steps",
        "--mamba-scheduler-strategy",
        "--cuda-graph-max-bs",
        "--context-length",
        "--kv-cache-dtype",
        "--served-model-name",
    ):
        assert flag in help_text


def test_crash_scenario_replays_the_corpus_log(simhost: SimHost) -> None:
    simhost.set_scenario("crash:sglang-018")
    result = run_engine(simhost, "-m", "sglang.launch_server", "--model-path", str(simhost.models_dir / "Qwen3-32B"))
    assert result.returncode == 1
    assert result.stdout.startswith("[")  # a few real startup lines come first
    assert shipped_crashlogs()["sglang-018"]["log"] in result.stdout


def test_unknown_scenario_is_rejected_and_the_old_one_kept(simhost: SimHost) -> None:
    before = simhost.scenario_file.read_text()
    with pytest.raises(ValueError, match="unknown scenario 'crash:nope'; choose one of: healthy, crash:port"):
        simhost.set_scenario("crash:nope")
    with pytest.raises(ValueError, match="ready_after_s must be >= 0"):
        simhost.set_scenario("healthy", ready_after_s=-1)
    assert simhost.scenario_file.read_text() == before


def test_crash_alias_replays_a_log_of_that_category_for_the_running_engine(simhost: SimHost) -> None:
    simhost.set_scenario("crash:kv")
    result = subprocess.run(
        [str(simhost.root / "ml-env" / "bin" / "vllm"), "serve", str(simhost.models_dir / "Qwen3-32B")],
        capture_output=True,
        text=True,
        timeout=WAIT_LIMIT_S,
    )
    assert result.returncode == 1
    kv_vllm_logs = [
        r["log"]
        for r in shipped_crashlogs().values()
        if r["category"] == "kv_cache_insufficient" and r["engine"] == "vllm"
    ]
    assert any(log in result.stdout for log in kv_vllm_logs)


def test_crash_port_really_fails_to_bind(simhost: SimHost, unused_tcp_port: int) -> None:
    simhost.set_scenario("crash:port")
    sglang = run_engine(
        simhost,
        "-m",
        "sglang.launch_server",
        "--model-path",
        str(simhost.models_dir / "Llama-3.1-8B-Instruct"),
        "--port",
        str(unused_tcp_port),
    )
    assert sglang.returncode == 1
    assert (
        f"[Errno 98] error while attempting to bind on address ('127.0.0.1', {unused_tcp_port}): address already in use"
        in sglang.stdout
    )
    vllm = run_engine(
        simhost,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(simhost.models_dir / "Llama-3.1-8B-Instruct"),
        "--port",
        str(unused_tcp_port),
    )
    assert vllm.returncode == 1
    assert vllm.stdout.rstrip().endswith("OSError: [Errno 98] Address already in use")
    assert http_status(unused_tcp_port) is None  # the holder was released: nothing keeps the port


def test_weights_that_do_not_fit_raise_cuda_oom(simhost: SimHost) -> None:
    result = run_engine(simhost, "-m", "sglang.launch_server", "--model-path", str(simhost.models_dir / "Qwen3-32B"))
    assert result.returncode == 1
    assert "Scheduler hit an exception" in result.stdout
    assert "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate" in result.stdout


def test_old_engine_rejects_a_newer_architecture(tmp_path: Path) -> None:
    host = build_sim_host(tmp_path / "old", models=["Qwen3.6-27B"], engines={"sglang": "0.5.8"}, ready_after_s=0.2)
    result = run_engine(
        host, "-m", "sglang.launch_server", "--model-path", str(host.models_dir / "Qwen3.6-27B"), "--tp", "2"
    )
    assert result.returncode == 1
    assert (
        "ValueError: Model architectures ['Qwen3_5ForConditionalGeneration'] are not supported for now."
        in result.stdout
    )
    missing = run_engine(host, "-c", "import vllm")  # an engine not installed on this host really is absent
    assert "ModuleNotFoundError: No module named 'vllm'" in missing.stderr


def test_killed_engine_disappears_from_nvidia_smi(simhost: SimHost, unused_tcp_port: int, tmp_path: Path) -> None:
    """Also: the engine takes the GPUs CUDA_VISIBLE_DEVICES names, not the first ones."""
    gpu1_uuid = csv_rows(nvidia_smi(simhost, "--query-gpu=uuid", "--format=csv,noheader", "-i", "1"))[0][0]
    process = start_engine(
        simhost,
        tmp_path / "k.log",
        "-m",
        "sglang.launch_server",
        "--model-path",
        str(simhost.models_dir / "Llama-3.1-8B-Instruct"),
        "--port",
        str(unused_tcp_port),
        env={"CUDA_VISIBLE_DEVICES": "1"},
    )
    try:
        wait_for(lambda: http_status(unused_tcp_port) == 200, "/health 200")
        assert [row[:2] for row in compute_apps(simhost)] == [[str(process.pid), gpu1_uuid]]
    finally:
        process.kill()  # no chance to clean up: the driver frees a dead process's memory anyway
        process.wait(timeout=WAIT_LIMIT_S)
    assert compute_apps(simhost) == []


# --------------------------------------------------------------------------------------------- vLLM


def test_vllm_serve_with_mtp_is_ready_and_logs_spec_metrics(
    simhost: SimHost, unused_tcp_port: int, tmp_path: Path
) -> None:
    port, log = unused_tcp_port, tmp_path / "vllm.log"
    process = start_engine(
        simhost,
        log,
        "serve",
        str(simhost.models_dir / "Qwen3.6-27B"),
        "--port",
        str(port),
        "--tensor-parallel-size",
        "2",
        "--max-model-len",
        "128k",
        "--speculative-config",
        '{"method": "mtp", "num_speculative_tokens": 2}',
        command=simhost.root / "ml-env" / "bin" / "vllm",
    )
    try:
        wait_for(lambda: http_status(port) == 200, "/health 200")
        wait_for(lambda: "SpecDecoding metrics: Mean acceptance length:" in log.read_text(), "spec metrics")
    finally:
        code = stop(process)
    assert code == 0
    text = log.read_text()
    for marker in (
        "Loading weights took",
        "Available KV cache memory:",
        "GPU KV cache size:",
        "Maximum concurrency for 128,000 tokens per request:",
        "init engine (profile, create kv cache, warmup model) took",
        f"Starting vLLM API server 0 on http://0.0.0.0:{port}",
        "Application startup complete.",
        "Avg generation throughput:",
    ):
        assert marker in text, marker


def test_vllm_validates_speculative_config(simhost: SimHost) -> None:
    model = str(simhost.models_dir / "Qwen3.6-27B")
    zero = run_engine(
        simhost,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        model,
        "-tp",
        "2",
        "--speculative-config",
        '{"method": "mtp", "num_speculative_tokens": 0}',
    )
    assert zero.returncode == 1
    assert "Input should be greater than 0" in zero.stdout
    no_method = run_engine(
        simhost,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        model,
        "-tp",
        "2",
        "--speculative-config",
        '{"num_speculative_tokens": 1}',
    )
    assert no_method.returncode == 1
    assert "num_speculative_tokens was provided but without speculative model." in no_method.stdout
    not_json = run_engine(
        simhost, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--speculative-config", "{method: mtp}"
    )
    assert not_json.returncode == 2


def test_vllm_reports_too_little_kv_cache_for_max_model_len(tmp_path: Path) -> None:
    host = build_sim_host(tmp_path / "a100", gpus="1xA100-80", models=["Qwen3-32B"], ready_after_s=0.2)
    result = run_engine(host, "-m", "vllm.entrypoints.openai.api_server", "--model", str(host.models_dir / "Qwen3-32B"))
    assert result.returncode == 1
    assert "EngineCore failed to start." in result.stdout
    assert "ValueError: To serve at least one request with the models's max seq len (40960)" in result.stdout
    assert result.stdout.rstrip().endswith(
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
    )


def test_vllm_refuses_to_start_when_other_processes_hold_the_memory(simhost: SimHost) -> None:
    simhost.set_gpu_processes([{"gpu": 0, "used_mib": 30000, "pid": 777}])
    result = run_engine(
        simhost,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(simhost.models_dir / "Llama-3.1-8B-Instruct"),
    )
    assert result.returncode == 1
    assert "ValueError: Free memory on device cuda:0 (" in result.stdout
    assert "is less than desired GPU memory utilization (0.9," in result.stdout


def test_no_process_is_left_behind(simhost: SimHost, unused_tcp_port: int, tmp_path: Path) -> None:
    process = start_engine(
        simhost,
        tmp_path / "left.log",
        "-m",
        "sglang.launch_server",
        "--model-path",
        str(simhost.models_dir / "Llama-3.1-8B-Instruct"),
        "--port",
        str(unused_tcp_port),
    )
    wait_for(lambda: http_status(unused_tcp_port) == 200, "/health 200")
    assert simhost.processes() == [process.pid]  # found by the marker its interpreter wrapper set
    assert simhost.terminate_processes() == [process.pid]
    assert process.wait(timeout=WAIT_LIMIT_S) == 0
    assert os.path.exists(simhost.state_file) and compute_apps(simhost) == []
