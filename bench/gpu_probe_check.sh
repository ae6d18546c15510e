#!/usr/bin/env bash
# Real-GPU check of the probe agent (run on the device machine with an NVIDIA GPU):
#  1. starts a stand-in server whose command line is a real SGLang launch (`python3 -m sglang.launch_server
#     --model-path ... --port ... --tp-size 1`) and which really allocates 8 GiB on the GPU with torch;
#  2. runs bot/agents/probe_agent.py exactly as the bot sends it (bot.probe.agent_source: common.py, its helpers
#     modelfind.py and gpus.py, then the agent, as one script on stdin; args as one JSON value; the engines list is the agent's
#     own default, the registry's probe_spec needs the bot's packages, which the device does not have);
#  3. writes the probe's JSON to $OUT/probe_h200.json for the planner to be checked against, here.
set -euo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
work=$(mktemp -d)
mkdir -p "$work/pkgs/sglang" "$work/models/Qwen3-8B"
cp bot/simhost/configs/Qwen3-8B.json "$work/models/Qwen3-8B/config.json"
echo '{"metadata": {"total_size": 16381470720}, "weight_map": {}}' > "$work/models/Qwen3-8B/model.safetensors.index.json"
touch "$work/pkgs/sglang/__init__.py"
cat > "$work/pkgs/sglang/launch_server.py" <<'PY'
import socket, sys, time, torch
block = torch.empty(8 * 1024**3, dtype=torch.uint8, device="cuda")  # 8 GiB really held on the GPU
port = int(sys.argv[sys.argv.index("--port") + 1])
s = socket.socket(); s.bind(("127.0.0.1", port)); s.listen()
print("ready", flush=True)
time.sleep(120)
PY
( cd "$work" && PYTHONPATH="$work/pkgs" setsid python3 -m sglang.launch_server --model-path "$work/models/Qwen3-8B" \
    --port 30123 --tp-size 1 > "$work/server.log" 2>&1 & echo $! > "$work/pid" )
for _ in $(seq 1 120); do grep -q ready "$work/server.log" 2>/dev/null && break; sleep 0.5; done
cat "$work/server.log"
python3 -c "import pynvml; print('pynvml', pynvml.__file__)"
start=$(date +%s.%N)
python3 - "{\"models_dir\": \"$work/models\", \"model\": \"Qwen3-8B\"}" < <(for part in common modelfind gpus probe_agent; do cat "bot/agents/$part.py"; printf '\n\n'; done) > "$OUT/probe_h200.json"
end=$(date +%s.%N)
echo "probe wall time: $(python3 -c "print(round($end - $start, 3))") s"
python3 - "$OUT/probe_h200.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
print("gpu_source:", f["gpu_source"], "driver:", f.get("driver_version"), "cuda:", f.get("cuda_version"))
for g in f["gpus"]:
    print("gpu", g["index"], g["name"], "cc", g.get("compute_capability"), "total GiB %.2f used GiB %.2f free GiB %.2f" % (
        g["memory_total_bytes"] / 2**30, g["memory_used_bytes"] / 2**30, g["memory_free_bytes"] / 2**30))
for p in f["gpu_processes"]:
    print("process", p["pid"], "gpu", p.get("gpu_index"), "used GiB", round((p.get("used_bytes") or 0) / 2**30, 2),
          "user", p.get("user"), "server", p.get("server"))
print("listening:", f["listening_ports"][:20])
print("model:", f["model"]["name"], f["model"].get("index_total_size"), "ram GiB", round(f["ram_total_bytes"] / 2**30))
PY
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
kill -- -"$(cat "$work/pid")" 2>/dev/null || kill "$(cat "$work/pid")"
