"""Advice for what the engine could not get: the model hub, the model's files, a Python package, a transformers
release that knows the model."""

from __future__ import annotations

import re

from bot.diagnose.advice.plan_view import PACKAGES, PlanView, gib
from bot.diagnose.advice.weights import weight_shape_steps
from bot.diagnose.types import Advice, Finding
from bot.models import Fix, PlanOverrides
from planners.engines import registry


def advise_hub(f: Finding, s: PlanView) -> Advice:
    steps: list[str] = []
    if f.kind == "modelscope":
        # (VLLM_USE_MODELSCOPE / SGLANG_USE_MODELSCOPE=true make the engines fetch a repo id from ModelScope, not the
        # Hugging Face Hub: vllm/envs.py, sglang/srt/utils)
        return ([f"ModelScope answered {f.match.group(1) if f.match and f.match.group(1) else 'an error'}: check the "
                 "repo id exists on modelscope.cn under that exact name (organisation and case), log in "
                 "(`modelscope login --token ...`) for a private one, or download it once (`modelscope download "
                 "--model <id> --local_dir <folder>`) and serve the local folder",
                 "if the model should come from the Hugging Face Hub instead, unset VLLM_USE_MODELSCOPE / "
                 "SGLANG_USE_MODELSCOPE in the engine's environment"], None)
    if f.kind == "modelscope_login":
        name = f.match.group(1) if f.match else "the model"
        return ([f"ModelScope refused {name} without a login: a folder on the host that does not exist is looked up "
                 "on ModelScope as a repo id, so check the path first; for a private repo log in (`modelscope login "
                 "--token ...`) or download it once and serve the local folder",
                 "if the model should come from the Hugging Face Hub or a local folder, unset VLLM_USE_MODELSCOPE / "
                 "SGLANG_USE_MODELSCOPE in the engine's environment"], None)
    if f.kind == "gated":
        steps.append("the model is gated on the Hub: download it once with an authorised token into the host's "
                     "models folder (deploybot serves local folders)")
    outage = re.search(r"\b(5\d\d) Server Error", f.decisive.text if f.decisive else "")
    if outage:
        steps.append(f"the Hub itself answered {outage.group(1)} (an outage or a gateway timeout on its side, not "
                     f"this host's network): retry later, or serve a local copy so a start never depends on the Hub")
    path = s.plan.model_path if s.plan else None
    if path and not path.startswith("/"):
        steps.append(f"the model path '{path}' is not a local folder, so the engine went to the Hub: use the "
                     f"folder's absolute path")
    elif path:
        steps.append(f"launch from the local folder {path} with HF_HUB_OFFLINE=1 so the engine never calls the Hub "
                     f"(the tokenizer or a remote-code file may still have pointed at a repo id)")
    elif outage:
        steps.append("pass the local model folder (absolute path) and set HF_HUB_OFFLINE=1")
    else:
        steps.append("pass the local model folder (absolute path) and set HF_HUB_OFFLINE=1; the host has no "
                     "(allowed) route to huggingface.co")
    fix = Fix(summary="HF_HUB_OFFLINE=1 (use the local files only)",
              overrides=PlanOverrides(env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})) if s.plan else None
    return steps, fix


def advise_files(f: Finding, s: PlanView) -> Advice:
    text = f.decisive.text if f.decisive else ""
    steps: list[str] = []
    model = s.facts.model if s.facts else None
    path = model.path if model else (s.plan.model_path if s.plan else None)
    if f.kind == "lora_path":
        where = f.match.group(1) if f.match is not None else "the adapter's path"
        return ([f"no LoRA adapter at {where}: point --lora-modules (name=path) at a folder holding "
                 f"adapter_config.json and adapter_model.safetensors, on the host the engine runs on"], None)
    if "HeaderTooLarge" in text:
        steps.append("a .safetensors file is not a real shard (typically a git-lfs pointer of a few hundred "
                     "bytes): fetch the real files (`git lfs pull`) or download again")
    elif re.search(r"Consistency check failed|integrity check failed|FileIntegrityError|download may be incomplete",
                   text):
        steps.append("a downloaded file does not match the size or checksum the hub lists: delete it and download "
                     "the model once, from one process (`huggingface-cli download --force-download` / `modelscope "
                     "download`), into a local folder; several ranks downloading the same files at once is a "
                     "common cause")
    elif re.search(r"MetadataIncompleteBuffer|incomplete metadata|unexpected EOF|failed reading zip", text):
        steps.append("a shard is truncated (an interrupted download or copy): download it again and compare "
                     "checksums with the source")
    if f.kind == "weights_mismatch" and f.match is not None:
        tensor, model_class = f.match.group(1), f.match.group(2)
        steps.append(f"the checkpoint holds {tensor}, which {model_class} has no place for: check that config.json's "
                     f"'architectures' names the class these weights were saved from (a fine-tune or export often "
                     f"keeps the base model's, or drops a vision tower's prefix), or that this engine version already "
                     f"supports that variant; `python -c \"import json; print(json.load(open('config.json'))"
                     f"['architectures'])\"` in the model folder shows it")
    if f.kind == "weight_shape":
        steps.extend(weight_shape_steps(f, s))
    if f.kind == "path" or not steps:
        where = path or "the model folder"
        steps.append(f"check that {where} exists on the host and holds config.json and every shard")
    if model is not None:
        if not model.exists:
            steps.append(f"{model.path} does not exist on {s.facts.host if s.facts else 'the host'}")
        elif model.index_total_size and model.shard_bytes and model.shard_bytes < model.index_total_size:
            steps.append(f"the shards hold {gib(model.shard_bytes)} but the index expects "
                         f"{gib(model.index_total_size)}: a shard is missing or short")
    return steps, None


def advise_dependency(f: Finding, s: PlanView) -> Advice:
    # The decisive line first, then the lines quoted with it (an import that failed under a warning before the crash).
    text = " | ".join(line.text for line in [f.decisive, *f.support] if line is not None)
    conflict = re.search(r"\b([\w.-]{1,80}) [\w.+-]{1,40} requires ([\w.-]{1,80})([^\n,]{0,60}), but you have", text)
    if conflict:
        return ([f"{conflict.group(1)} requires {conflict.group(2)}{conflict.group(3)}: install that version in the "
                 f"engine's environment (pip install '{conflict.group(2)}{conflict.group(3).strip()}'), or reinstall "
                 f"{conflict.group(1)} so pip picks its own pins"], None)
    python = "the engine's python"
    steps: list[str] = []
    if f.kind == "cut_import":
        package = s.engine or "the engine's package"
        return ([f"an import was failing where the tail ends ({f.cause.rsplit('started by ', 1)[-1]}): run "
                 f"`python -c 'import {package}'` with {python} to see its error in full",
                 "a source checkout that was never built or installed fails this way (no _version.py, no compiled "
                 "extension: vLLM's \"No module named 'vllm._version'\" warning says so): install it (`pip install -e "
                 ".`) or use a released wheel"], None)
    module = re.search(r"No module named '([\w.]+)'", text)
    if module:
        top = module.group(1).split(".")[0]
        package = PACKAGES.get(top, top.replace("_", "-"))
        steps.append(f"install {package} into the environment the engine runs in: {python} -m pip install {package}")
        if registry.is_engine(top):
            steps.append(f"{top} itself is missing: the launch used a different Python (venv/conda) than the one "
                         f"that has it")
    elif (lacking := re.search(r"cannot import name '(\w{1,80})' from '([\w.]{1,120})'", text)):
        package = PACKAGES.get(lacking.group(2).split(".")[0], lacking.group(2).split(".")[0].replace("_", "-"))
        steps.append(f"the installed {package} has no {lacking.group(1)}: it is older or newer than this engine "
                     f"release expects; install the {package} version the engine pins (see its requirements)")
    elif (operator := re.search(r"operator (\w{1,40})::\w{1,80} does not exist", text)):
        package = PACKAGES.get(operator.group(1), operator.group(1))
        steps.append(f"{package} was built for another torch than the one installed (its compiled operators do not "
                     f"register): install the {package} release that matches the installed torch")
    elif f.rule == "package_lacks_attribute" and f.match is not None:
        top, attribute = f.match.group(1) or f.match.group(3), f.match.group(2) or f.match.group(4)
        package = PACKAGES.get(top, top.replace("_", "-"))
        steps.append(f"the installed {package} has no {attribute}: it is older or newer than this engine release "
                     f"calls for; `pip show {package}` in the engine's environment says which is installed, and the "
                     f"engine's requirements name the version to install")
    elif f.kind == "numpy2":
        steps.append("NumPy 2 removed an API a package here still calls (the traceback's innermost frame names it): "
                     "upgrade that package to a NumPy 2 release, or pin NumPy 1 in the engine's environment "
                     "(pip install 'numpy<2')")
    elif f.kind == "cann_package":
        steps.append("install the CANN operator kernel package (the Ascend-cann-kernels / opp_kernel package for this "
                     "NPU model and CANN version) next to the toolkit, source its set_env.sh (ASCEND_OPP_PATH) in the "
                     "engine's environment, and relaunch; in a container use an image that ships the kernels")
    elif f.kind == "missing_symbol" and f.match is not None:
        steps.append(f"the installed {f.match.group(2)} has no {f.match.group(1)}: that library comes with a toolkit "
                     f"(CUDA, CANN, ROCm) older or other than the one this package was built for; install the "
                     f"toolkit release the package's install notes name, or the package build for the installed one")
    elif "undefined symbol" in text or "cannot open shared object file" in text or f.kind == "binary":
        library = re.search(r"(lib[\w.+-]+\.so[\w.]*)|/([\w.-]+\.so)", text)
        name = next((g for g in library.groups() if g), "a compiled extension") if library else "a compiled extension"
        if "libcudart" in text or "libcuda" in text:
            steps.append(f"{name} is missing: the wheel was built for another CUDA runtime than the host has; install "
                         f"the matching runtime or the engine build for the host's CUDA")
        else:
            steps.append(f"{name} was built against another torch/CUDA than the one installed: reinstall the engine "
                         f"so its compiled packages match the installed torch")
    else:
        steps.append(f"an import failed ({f.cause}): install or upgrade the named package in the engine's environment")
    installed = s.facts.engines.get(s.engine) if s.facts and s.engine else None
    if installed and installed.error:
        steps.append(f"the probe saw the same problem importing {s.engine}: {installed.error[:120]}")
    return steps, None


_CONFIG_FIELD = re.compile(r"'(\w{1,80}Config)' object has no attribute '(\w{1,80})'")


def advise_transformers(f: Finding, s: PlanView) -> Advice:
    field = _CONFIG_FIELD.search(f.decisive.text if f.decisive else "") if f.kind == "config_field" else None
    if field is not None:
        return ([f"transformers' {field.group(1)} has no '{field.group(2)}', which the engine's code for this model "
                 f"reads: install the transformers release this engine version pins (its requirements), usually a "
                 f"newer one (pip install -U transformers)",
                 "if the engine's pinned transformers still lacks it, the engine predates the model: upgrade the "
                 "engine, or check the checkpoint's config.json is the one the model card names"], None)
    if f.kind == "tokenizer_format":
        return (["upgrade tokenizers and transformers in the engine's environment (pip install -U tokenizers "
                 "transformers), within the versions the engine pins",
                 "if they are already current, tokenizer.json may be cut short: compare its size with the hub's and "
                 "download it again"], None)
    if f.kind == "rope_schema":
        return (["upgrade transformers in the engine's environment to 4.43 or later (pip install -U transformers), or "
                 "the engine to a release that pins one", "the model's config.json is fine: its rope_scaling uses "
                 "the newer format"], None)
    model_type = f.match.group(1) if f.match is not None and f.match.groups() else "this model type"
    return ([f"upgrade transformers in the engine's environment to a release that knows '{model_type}' "
             f"(pip install -U transformers)",
             "if the engine pins an older transformers, upgrade the engine to a release that supports the model"],
            None)
