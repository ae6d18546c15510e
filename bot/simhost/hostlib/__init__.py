"""Files that `build_sim_host` copies into <root>/ml-env/lib of a simulated host: the fake `sglang` and `vllm`
packages and `simengine`, the small runtime they share (GPU state, nvidia-smi, HTTP endpoints, log writer).

They run under the host's interpreter with only the standard library, and import each other as top-level packages
(`import simengine`), never as `bot.simhost.hostlib...`: nothing in deploybot imports them.
"""
