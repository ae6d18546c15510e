"""Rules for a checkpoint's tensors that do not fit the engine's model class: what the name of the missing or
unexpected tensor says about the cause.

The loaders fail the same way for different causes, and the tensor's name tells them apart:
- a quantization tensor (GPTQ's ``g_idx``/``qweight``/``qzeros``, AWQ's ``scales``, FP8's ``weight_scale``/
  ``input_scale``, compressed-tensors' ``weight_packed``) the model class has no place for: the quantized checkpoint's
  layout is not supported for this model (vllm-project/vllm#25029, #1100: "KeyError: 'layers.35.mlp.gate.g_idx'");
  a quantized linear layer keeps ``qweight``, so code asking such a layer for ``.weight`` fails the same way
  (vllm-project/vllm#4331: "MergedColumnParallelLinear object has no attribute weight");
- a tensor the generic Transformers fallback class has no place for (vLLM's ``TransformersForCausalLM``): the
  engine has no native implementation of the architecture (vllm-project/vllm#28517);
- any other parameter the model class lacks ("There is no module or parameter named 'language_model' in
  Gemma3ForCausalLM", vllm model_executor/models/utils.py AutoWeightsLoader): the checkpoint's weight names are
  not those of its declared architecture (vllm-project/vllm#15031), modest since a newer engine may know them;
- a tensor whose shape differs from the parameter the model class built for it (the weight loaders' asserts:
  "Attempted to load weight (...) into parameter (...)" in vllm/sglang model_loader/weight_utils.py
  default_weight_loader, "Tried to load weights of size ..." and the bare "assert param_data.shape ==
  loaded_weight.shape" in layers/linear.py, at vLLM 0.11.0 and SGLang 0.5.9): a quantized checkpoint whose layout
  the engine does not handle for this layer when the tail above speaks of its quantization (an NVFP4 folder, the
  "input_scale not found in params_dict" warnings, sgl-project/sglang#19587), else a checkpoint that is not what
  its config declares (a fine-tune with another vocabulary or head layout, vllm-project/vllm#11765).
"""

from __future__ import annotations

from bot.diagnose.types import Rule, r

#: The tensors quantization methods add to a layer (vllm/sglang layers/quantization/: gptq.py, awq.py, fp8.py,
#: compressed_tensors/).
#: (Not a fused MoE layer's own, "w13_input_scale", "w2_weight_scale_inv": the collections file those under three
#: categories, an engine bug of the expert-parallel path, the drafter's load, the quantization.)
_QUANT_TENSOR = (r"(?:g_idx|qweight|qzeros|scales|weight_scale(?:_inv|_2)?|input_scale|weight_packed|weight_shape"
                 r"|weight_zero_point|weight_global_scale|qscale\w{0,10})")
#: The loaders' shape checks (see the module's docstring); a bare assert reads as "AssertionError: <condition>".
_SHAPE_CHECK = (r"(?:AssertionError: (?:assert )?param(?:\.data|_data)?\.(?:shape|size\(\)) == loaded_weight\."
                r"(?:shape|size\(\))\s*$|Attempted to load weight \(.{0,120}\) into parameter \("
                r"|Tried to load weights of size .{0,120}to a parameter of size)")
#: A quantized checkpoint, as the lines above the check name it: its format in a folder or model name, its tensors.
_QUANTIZED = (r"(?:\b|_)(?:nvfp4|mxfp4|fp8|fp4|int4|int8|w4a16|w8a8|awq|gptq|bnb|bitsandbytes|4bit|8bit|marlin"
              r"|compressed[-_]tensors|modelopt)(?:\b|_)|" + _QUANT_TENSOR + r"\b")

#: The generic fallback model classes (vllm/model_executor/models/transformers*.py, sglang's TransformersForCausalLM):
#: the structural rules name them too.
FALLBACK_CLASS = r"\bTransformers(?:For[A-Z]\w{0,40}|Model|MoE\w{0,40}|MultiModal\w{0,40}|Base)\b"

WEIGHTS_RULES: tuple[Rule, ...] = (
    Rule("quantized_tensor_unplaced", "quantization_unsupported",
         r(r"^(?:KeyError: |ValueError: There is no module or parameter named )'([\w.]{0,200}\." + _QUANT_TENSOR
           + r")'"), 74, 0.7,
         "the quantized checkpoint's tensor {0} has no place in this engine's model class: this quantization layout "
         "is not supported for the model", kind="layout", unsure=("model_files_missing_or_corrupt",)),
    Rule("quantized_layer_has_no_weight", "quantization_unsupported",
         r(r"\b(\w{0,40}(?:Parallel)?Linear\w{0,20})'? object has no attribute '?weight'?(?![\w_])"), 62, 0.6,
         "{0} has no .weight: a quantized layer (it holds qweight) reached code written for unquantized weights",
         kind="layout", unsure=("other",), any_level=True),
    Rule("fallback_class_lacks_parameter", "unsupported_architecture",
         r(r"There is no module or parameter named '([\w.]{1,200})' in (" + FALLBACK_CLASS + r")"), 73, 0.7,
         "the engine ran this model through its generic {1} fallback, which has no place for {0}: no native "
         "implementation of the architecture", kind="fallback", unsure=("transformers_too_old",)),
    # The checkpoint's own modelling code (trust_remote_code: transformers_modules.<org>.<repo>....) without what the
    # engine looks up in it ("AttributeError: module 'transformers_modules.jinaai.xlm-roberta-flash-implementation.
    # <rev>.modeling_xlm_roberta' has no attribute ...", vllm-project/vllm#19278): the engine cannot run this
    # remote-code architecture.
    Rule("remote_code_lacks_class", "unsupported_architecture",
         r(r"AttributeError: module 'transformers_modules\.[\w.-]{1,200}' has no attribute\b"), 68, 0.6,
         "the checkpoint's own modelling code (trust_remote_code) lacks what the engine looks up in it: the engine "
         "cannot run this remote-code architecture", kind="fallback", unsure=("transformers_too_old", "other"),
         any_level=True),
    Rule("class_lacks_parameter", "model_files_missing_or_corrupt",
         r(r"There is no module or parameter named '([\w.]{1,200})' in ([A-Z]\w{1,80})\b"), 55, 0.5,
         "the checkpoint has a tensor {0} that the model class {1} does not: its weights are not those of the "
         "architecture its config declares (or this engine version predates them)",
         kind="weights_mismatch", unsure=("unsupported_architecture", "other")),
    Rule("quantized_weight_shape", "quantization_unsupported", r(_SHAPE_CHECK), 57, 0.55,
         "a weight of this quantized checkpoint has another shape than the parameter the engine built for it: this "
         "quantization layout is not handled for the layer", kind="quant_shape",
         context=r(_QUANTIZED), unsure=("model_files_missing_or_corrupt",)),
    Rule("weight_shape", "model_files_missing_or_corrupt", r(_SHAPE_CHECK), 56, 0.5,
         "a checkpoint weight has another shape than the parameter the model class built for it: the weights are "
         "not those of the architecture its config declares (or the quantization / TP split does not fit them)",
         kind="weight_shape", unsure=("quantization_unsupported", "other")),
)
