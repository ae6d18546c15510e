"""Rules for a launch refused before anything runs: the engine's argument checks (argparse, its own settings
checks, the KV connector) and the tensor-parallel split of the model's dimensions. Part of bot/diagnose/rules.py's
RULES (first in its order), kept apart only for the file's size; the same conventions hold."""

from __future__ import annotations

from bot.diagnose.types import Rule, r

_r = r

ARGUMENT_RULES: tuple[Rule, ...] = (
    # ------------------------------------------------------------------ arguments (fail before anything runs)
    Rule("argparse_unrecognized", "bad_argument", _r(r"(?:error: |^)unrecognized arguments?: (.+)"), 90, 0.95,
         "the engine does not know the argument(s) {0}"),
    # argparse's own format for any refused value ("prog: error: argument --x: <message>", Lib/argparse.py
    # ArgumentError), whatever the message: its invalid choice / int value, or the engine's type function's text,
    # as vLLM's JSON flags word it ("error: argument --speculative-config: Value method:dspark cannot be converted to
    # <function loads>", vllm/engine/arg_utils.py parse_type; a shell that split the JSON).
    # ... except a quantization method the build does not list: the same as "Unknown quantization method" below, the
    # engine (or its platform plugin) lacks that method (vllm-project/vllm-ascend#902: "--quantization ascend" on an
    # image whose plugin did not register it)
    Rule("quantization_choice_unknown", "quantization_unsupported",
         _r(r"error: argument --quantization(?:/-q)?: invalid choice: '([\w-]+)'"), 91, 0.85,
         "this engine build does not know the quantization method '{0}'", kind="unknown", unsure=("bad_argument",)),
    Rule("argparse_invalid", "bad_argument",
         # (a positional argument too, as a launcher's own CLI words it: "TRL CLI: error: argument command: invalid
         # choice: 'vllm-serve' (choose from ...)", huggingface/trl#3139)
         _r(r"(?:error: |^)argument (--?[\w-]+|(?<=error: argument )[a-z][\w-]{0,40})(?:/--?[\w-]+)*: (\S.{0,300})"),
         90, 0.95, "invalid value for {0}: {1}"),
    Rule("argparse_required", "bad_argument", _r(r"error: the following arguments are required: (.+)"), 90, 0.95,
         "missing required argument(s): {0}"),
    Rule("argparse_ambiguous", "bad_argument", _r(r"error: ambiguous option: (--?[\w-]+)"), 90, 0.9,
         "ambiguous (abbreviated) option {0}"),
    # argparse prints its usage block to stderr right before "prog: error: ..." (Lib/argparse.py ArgumentParser.error:
    # print_usage, then exit 2); a tail that shows the usage and not the error line was cut after it
    # (vllm-project/vllm#17609, a docker logs paste). Below the rules above, which name the refused argument.
    Rule("argparse_usage_printed", "bad_argument", _r(r"^usage: [\w./-]{1,80} \[-h\]"), 40, 0.55,
         "the engine printed its usage, as argparse does when it refuses an argument (the error line itself is past "
         "this tail)", kind="usage", any_level=True),
    Rule("quantization_arg_mismatch", "bad_argument",
         # (the head may be cut off a pasted line: the argument's part still says it)
         _r(r"(?:Quantization method specified in the model config \((\w+)\) )?does not match the quantization method "
            r"specified in the .?quantization.? argument \(([\w-]+)\)"),
         85, 0.9, "--quantization {1} contradicts the checkpoint's own quantization ({0})", kind="quantization_arg"),
    Rule("incompatible_flags", "bad_argument",
         _r(r"(?<![\w-])(--[\w-]++)[^\n]{0,120}\b(?:cannot be used (?:together )?with|is not compatible with|is incompatible "
            r"with|are mutually exclusive)\b[^\n]{0,80}"),
         55, 0.7, "incompatible flags ({0} and another option)",
         exclude=_r(r"speculat|eagle|mtp|nextn|draft")),
    # A mode that needs another flag given with it ("PD disaggregation mode requires --prefill", sgl-router;
    # "--enable-dp-lm-head requires --enable-dp-attention").
    Rule("flag_required", "bad_argument",
         _r(r"\brequires? (?:the |a |an )?(?:flag |option |argument )?(--[a-z][a-z0-9]{1,30}(?:-[a-z0-9]{1,30}){0,6})\b"
            # ... or forbids it here ("Remote engine 1 must not use --headless", vllm/v1/engine/utils.py)
            r"|\b(?:must not|should not|cannot|can't|must) (?:use|set|pass|specify|be used with) "
            r"(--[a-z][a-z0-9]{1,30}(?:-[a-z0-9]{1,30}){0,6})\b"),
         54, 0.65, "this launch's {0}{1} does not go with the rest of its settings",
         exclude=_r(r"speculat|eagle|mtp|nextn|draft")),
    # A feature the model class lacks ("Pipeline parallelism is not supported for this model. Supported models
    # implement the `SupportsPP` interface.", vllm/config): the parallel layout asked for, or a drafter's class.
    Rule("pipeline_parallel_unsupported", "bad_argument",
         _r(r"\bPipeline parallelism is not supported for this model\b"), 60, 0.55,
         "this model's implementation does not support pipeline parallelism: drop --pipeline-parallel-size (use TP)",
         unsure=("speculative_config_invalid", "unsupported_architecture")),
    # A KV connector this engine path does not know (vLLM's KV transfer config).
    Rule("kv_connector_unknown", "bad_argument",
         _r(r"\bUnsupported (?:KV )?connector(?: type)?: ?([\w.-]{1,80})"), 62, 0.6,
         "the KV connector {0} is not one this engine version or mode accepts (--kv-transfer-config)",
         unsure=("missing_dependency",)),
    # ------------------------------------------------------------------ tensor parallel divisibility
    Rule("heads_not_divisible", "tp_not_divisible",
         _r(r"Total number of (?:attention|key[ _-]value) heads \((\d+)\) must be divisible by tensor parallel "
            r"size \((\d+)\)"),
         80, 0.95, "{0} attention heads are not divisible by TP {1}", kind="heads"),
    Rule("block_not_divisible", "tp_not_divisible",
         _r(r"=\s*(\d+) is not divisible by weight quantization block_[nk](?:\s*=\s*(\d+))?|is not divisible by "
            r"weight quantizatio"),
         80, 0.9, "at this TP the per-GPU weight slice ({0}) is not a multiple of the quantization block ({1})",
         kind="block"),
    Rule("generic_not_divisible", "tp_not_divisible",
         # (a kernel's tile named: "size_n = 2736 is not divisible by tile_n_size = 64", vLLM's Marlin checks)
         _r(r"\b(\d+) is not divisible by (?:[a-z_]{1,30} ?= ?)?(\d+)"
            r"|(?:must|to|should) be divisible by (?:the )?(?:tensor[ _-]?parallel|tp"
            r"|\w{0,20}_tp_size\b|world[ _]size\b)"
            r"|not divisible by (?:the )?(?:tensor[ _-]?parallel|tp)|number of GPUs per node is not divisible"
            # a kernel's block over a weight's slice ("size_k must divisible by BLOCK_SIZE_K", vLLM's MoE WNA16
            # kernel csrc/moe/moe_wna16.cu; vllm-project/vllm#17604 at TP 4 and 8)
            r"|\bsize_[nkm] must (?:be )?divisible by (?:BLOCK|TILE)_SIZE_[NKM]\b"
            # experts over expert parallelism, the taxonomy's "experts ... not divisible" ("num_experts=60 divisible
            # by the EP size 8", vllm 0.34.0 models/minimax_m3)
            r"|(?:\b|_)experts?\b[^\n]{0,40}\b(?:is |are |must be |to be )?(?:not )?divisible by (?:the )?(?:expert|ep)"
            r"[ _-]?(?:parallel|size)"
            # ... and in other words ("needs the 60 experts to split evenly over 8 expert-parallel ranks", vllm 0.34.0
            # layers/fused_moe/all2all_utils.py)
            r"|\bsplit evenly (?:over|across|among) (?:the )?\d{1,5} (?:tensor|expert|pipeline|data)[ _-]?parallel "
            r"(?:ranks|GPUs|workers)\b"),
         75, 0.85, "a model dimension ({0}) is not divisible by the tensor-parallel size ({1})", kind="heads"),
)
