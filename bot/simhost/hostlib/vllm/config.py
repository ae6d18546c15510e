"""Config checks of the simulated vLLM that happen in the API server process before any engine starts, raised
with vLLM's messages (its configs are pydantic dataclasses, so value errors print as pydantic ValidationErrors)."""

from __future__ import annotations

import os

from simengine.compat import supported_architectures, supports
from simengine.errors import ValidationError
from simengine.modelinfo import ModelFacts

PYDANTIC_DOCS = "https://errors.pydantic.dev/2.12/v"
SPECULATIVE_METHODS = [
    "ngram",
    "medusa",
    "mlp_speculator",
    "draft_model",
    "suffix",
    "eagle",
    "eagle3",
    "mtp",
    "deepseek_mtp",
    "mimo_mtp",
    "glm4_moe_mtp",
    "ernie_mtp",
    "qwen3_next_mtp",
    "qwen3_5_mtp",
    "longcat_flash_mtp",
]
MTP_METHODS = [m for m in SPECULATIVE_METHODS if m == "mtp" or m.endswith("_mtp")]
#: Methods a release added after the list above (vllm/config/speculative.py of the installed wheels): "dflash"
#: joins the literal in 0.20.0 (absent in 0.17.0); "draft_model" is in the literal from 0.11.0 but raises
#: NotImplementedError there and runs from 0.17.0.
ADDED_METHODS = {"dflash": (0, 20, 0)}
DRAFT_MODEL_RUNS_FROM = (0, 17, 0)
DRAFTER_METHODS = ("eagle", "eagle3", "draft_model", "dflash")


def _release(version: str) -> tuple[int, ...]:
    import re  # noqa: PLC0415

    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


def methods_of(version: str) -> list[str]:
    have = _release(version)
    return SPECULATIVE_METHODS + [m for m, first in ADDED_METHODS.items() if have >= first]


def _value_error(config: str, message: str, input_value: object) -> ValidationError:
    return ValidationError(
        f"1 validation error for {config}\n  Value error, {message} [type=value_error, input_value={input_value!r}, "
        f"input_type={type(input_value).__name__}]\n    For further information visit {PYDANTIC_DOCS}/value_error"
    )


class ModelConfig:
    def __init__(self, facts: ModelFacts, version: str, max_model_len: int | None, tp: int) -> None:
        if not supports("vllm", version, facts.architecture):
            raise _value_error(
                "ModelConfig",
                f"Model architectures ['{facts.architecture}'] are not supported for now. Supported architectures: "
                f"dict_keys({supported_architectures('vllm', version)})",
                {"model": str(facts.path)},
            )
        derived = facts.max_position_embeddings
        if max_model_len and max_model_len > derived and not os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN"):
            raise _value_error(
                "ModelConfig",
                f"User-specified max_model_len ({max_model_len}) is greater than the derived max_model_len "
                f"(max_position_embeddings={derived} or model_max_length=None in model's config.json). To allow "
                "overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. "
                "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution.",
                {"max_model_len": max_model_len},
            )
        self.max_model_len = max_model_len or derived
        if facts.num_attention_heads % tp != 0:
            raise ValueError(
                f"Total number of attention heads ({facts.num_attention_heads}) must be divisible by tensor "
                f"parallel size ({tp})."
            )


class SpeculativeConfig:
    def __init__(self, raw: object, facts: ModelFacts, version: str = "0.17.0") -> None:
        methods = methods_of(version)
        if not isinstance(raw, dict):
            raise _value_error("SpeculativeConfig", "speculative_config must be a JSON object", raw)
        self.method = raw.get("method")
        self.model = raw.get("model")
        self.num_speculative_tokens = raw.get("num_speculative_tokens")
        if self.method is not None and self.method not in methods:
            allowed = ", ".join(f"'{m}'" for m in methods)
            raise ValidationError(
                f"1 validation error for SpeculativeConfig\nmethod\n  Input should be {allowed} "
                f"[type=literal_error, input_value={self.method!r}, input_type=str]\n"
                f"    For further information visit {PYDANTIC_DOCS}/literal_error"
            )
        tokens = self.num_speculative_tokens
        if tokens is not None and (not isinstance(tokens, int) or isinstance(tokens, bool) or tokens <= 0):
            raise ValidationError(
                f"1 validation error for SpeculativeConfig\nnum_speculative_tokens\n  Input should be greater than 0 "
                f"[type=greater_than, input_value={tokens!r}, input_type={type(tokens).__name__}]\n"
                f"    For further information visit {PYDANTIC_DOCS}/greater_than"
            )
        if self.method is None and self.model is None:
            raise _value_error(
                "SpeculativeConfig", "num_speculative_tokens was provided but without speculative model.", raw
            )
        if tokens is None:
            if self.method in MTP_METHODS and facts.mtp_layers:
                tokens = facts.mtp_layers  # "It will default to the number in the draft model config if present"
            else:
                raise _value_error(
                    "SpeculativeConfig", "num_speculative_tokens must be provided with speculative model.", raw
                )
        self.num_speculative_tokens = int(tokens)
        if self.method in DRAFTER_METHODS:
            self._check_draft_model(version)
        if self.method in MTP_METHODS and self.method != "mtp":
            self.deprecated_method = self.method
            self.method = "mtp"
        else:
            self.deprecated_method = None

    def _check_draft_model(self, version: str) -> None:
        """The draft folder must hold a config (the hub lookup fails otherwise); 0.11's draft_model raises."""
        if not self.model or not os.path.isfile(os.path.join(str(self.model), "config.json")):
            raise OSError(
                f"{self.model} does not appear to have a file named config.json. Checkout "
                f"'https://huggingface.co/{self.model}/tree/main' for available files."
            )
        if self.method == "draft_model" and _release(version) < DRAFT_MODEL_RUNS_FROM:
            raise NotImplementedError(
                "Speculative decoding with draft model is not supported yet. Please consider using other "
                "speculative decoding methods such as ngram, medusa, eagle, or mtp."
            )

    def __repr__(self) -> str:
        return (
            f"SpeculativeConfig(method='{self.method}', model={self.model!r}, "
            f"num_spec_tokens={self.num_speculative_tokens})"
        )
