"""Drafters for speculative decoding, engine-neutral: what kind a folder is, whether it fits a target, which one a
request means, and what it costs in memory. Pure: no I/O.

Kinds are told apart by config.json, the way the engines do:
- DFlash block-diffusion drafters: architectures ``DFlashDraftModel`` and/or a ``dflash_config`` (block_size,
  target_layer_ids, mask_token_id; block_size may sit at the top level). SGLang 0.5.11
  ``speculative/dflash_utils.py parse_dflash_draft_config`` reads dflash_config first, then the top level; vLLM
  0.20 ``config/speculative.py`` detects "dflash" in the draft's name or takes method "dflash".
- EAGLE-3 heads: an ``*Eagle3*`` architecture (``LlamaForCausalLMEagle3``), usually with ``draft_vocab_size``.
- A standalone draft model: any other causal LM (SGLang STANDALONE, vLLM ``draft_model``), which vLLM requires to
  share the target's vocabulary (``verify_equal_vocab_size_if_draft_model``).
A DFlash or EAGLE-3 drafter reads the target's hidden states, so its hidden size must be the target's, and DFlash's
target_layer_ids must be layers the target has (vLLM's DSpark check: "target_layer_ids must be zero-based text-layer
indices in [0, num_layers - 1]").
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.models import ModelFolder, PlanFailure

from .model import ConfigError, ModelSpec, model_spec

DrafterKind = Literal["dflash", "eagle3", "draft"]

#: What people call each kind.
KIND_LABEL: dict[str, str] = {"dflash": "DFlash drafter", "eagle3": "EAGLE-3 head", "draft": "standalone draft model"}

#: Draft tokens proposed per step when the drafter's config does not say (EAGLE-3 / standalone): SGLang's own auto
#: choice for STANDALONE and most EAGLE models is steps 3, topk 1, draft tokens 4 (speculative_hook
#: ``_auto_choose_speculative_params``); vLLM's num_speculative_tokens 3 matches it.
DEFAULT_SPEC_TOKENS = 3

#: SGLang's default DFlash block size when the draft config has none ("defaulting speculative_num_draft_tokens to
#: 16", server_args.py 0.5.11).
DEFAULT_DFLASH_BLOCK = 16


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Drafter(Frozen):
    """A drafter folder as the planner needs it."""

    name: str
    path: str
    kind: DrafterKind
    vocab_size: int | None = None
    draft_vocab_size: int | None = None  # EAGLE-3: the head's own reduced output vocabulary
    hidden_size: int | None = None
    target_hidden_size: int | None = None
    num_layers: int = 1
    num_kv_heads: int = 1
    head_dim: int = 128
    block_size: int | None = None  # DFlash
    target_layer_ids: list[int] = Field(default_factory=list)
    mask_token_id: int | None = None
    model_type: str | None = None
    weights_bytes: int = 0

    @property
    def label(self) -> str:
        return f"{KIND_LABEL[self.kind]} {self.name}"

    @property
    def draft_tokens(self) -> int:
        """Tokens verified per step: a DFlash block, else the auto choice's 3 drafted + 1."""
        if self.kind == "dflash":
            return self.block_size or DEFAULT_DFLASH_BLOCK
        return DEFAULT_SPEC_TOKENS + 1


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def drafter_kind(config: dict[str, Any] | None) -> DrafterKind | None:
    """The kind of drafter a config.json describes; None when it is not a language model at all."""
    if not isinstance(config, dict):
        return None
    archs = [a for a in config.get("architectures") or [] if isinstance(a, str)]
    if any("dflash" in a.lower() for a in archs) or isinstance(config.get("dflash_config"), dict):
        return "dflash"
    if any("eagle3" in a.lower() for a in archs):
        return "eagle3"
    if any(a.endswith(("ForCausalLM", "ForConditionalGeneration")) for a in archs):
        return "draft"
    return None


def is_dedicated(config: dict[str, Any] | None) -> bool:
    """A folder that exists only to draft for another model (DFlash, EAGLE-3): never a model to serve."""
    return drafter_kind(config) in ("dflash", "eagle3")


def _estimate_bytes(cfg: dict[str, Any], kind: DrafterKind) -> int:
    """Weights from the config when the folder has no index or shards: decoder layers (+ DFlash's fc over the
    concatenated target layers, EAGLE-3's fc over three), 2 bytes a parameter."""
    h = _int(cfg.get("hidden_size")) or 0
    inter = _int(cfg.get("intermediate_size")) or 4 * h
    layers = _int(cfg.get("num_hidden_layers")) or 1
    per_layer = 4 * h * h + 3 * h * inter
    taps = len((cfg.get("dflash_config") or {}).get("target_layer_ids") or []) or 3
    fc = taps * h * h if kind in ("dflash", "eagle3") else 0
    return 2 * (layers * per_layer + fc)


def read_drafter(folder: ModelFolder) -> Drafter | str:
    """A Drafter from the probe's folder, or why not (as a sentence)."""
    cfg = folder.config
    kind = drafter_kind(cfg)
    if cfg is None or kind is None:
        why = folder.config_error or "no architectures a drafter has"
        return f"{folder.name} is not a drafter I can use ({why})"
    weights = folder.index_total_size or folder.shard_bytes or _estimate_bytes(cfg, kind)
    if kind == "draft":
        try:
            spec = model_spec(cfg)
        except ConfigError as exc:
            return f"{folder.path}/config.json: {exc}"
        return Drafter(
            name=folder.name, path=folder.path, kind=kind, vocab_size=spec.vocab_size, hidden_size=spec.hidden_size,
            num_layers=spec.full_attention_layers or spec.num_layers, num_kv_heads=spec.num_kv_heads,
            head_dim=spec.head_dim, model_type=spec.model_type, weights_bytes=weights,
        )
    dflash = cfg.get("dflash_config") if isinstance(cfg.get("dflash_config"), dict) else {}
    heads = _int(cfg.get("num_attention_heads")) or 1
    hidden = _int(cfg.get("hidden_size"))
    layer_ids = dflash.get("target_layer_ids", cfg.get("target_layer_ids")) or []
    return Drafter(
        name=folder.name,
        path=folder.path,
        kind=kind,
        vocab_size=_int(cfg.get("vocab_size")),
        draft_vocab_size=_int(cfg.get("draft_vocab_size")),
        hidden_size=hidden,
        target_hidden_size=_int(cfg.get("target_hidden_size")),
        num_layers=_int(cfg.get("num_hidden_layers")) or 1,
        num_kv_heads=_int(cfg.get("num_key_value_heads")) or heads,
        head_dim=_int(cfg.get("head_dim")) or ((hidden or 128 * heads) // heads),
        block_size=_int(dflash.get("block_size", cfg.get("block_size"))) if kind == "dflash" else None,
        target_layer_ids=[i for i in layer_ids if isinstance(i, int)],
        mask_token_id=_int(dflash.get("mask_token_id", cfg.get("mask_token_id"))),
        model_type=cfg.get("model_type") if isinstance(cfg.get("model_type"), str) else None,
        weights_bytes=weights,
    )


def fit_problem(target_name: str, target: ModelSpec, d: Drafter) -> str | None:
    """Why this drafter cannot draft for this target (vocabulary, hidden size, layers it reads), or None."""
    if d.vocab_size is not None and d.vocab_size != target.vocab_size:
        family = f" ({d.model_type} tokenizer)" if d.model_type else ""
        return (
            f"{d.name} was built for another vocabulary: {d.vocab_size:,} tokens{family}, while {target_name} has "
            f"{target.vocab_size:,} (vocab_size in their config.json): its token ids would mean other words"
        )
    if d.kind in ("dflash", "eagle3"):
        reads = d.target_hidden_size or d.hidden_size
        if reads is not None and reads != target.hidden_size:
            return (
                f"{d.name} reads hidden states of size {reads:,}, while {target_name}'s hidden size is "
                f"{target.hidden_size:,}: it was trained on another model"
            )
    if d.target_layer_ids and (max(d.target_layer_ids) >= target.num_layers or min(d.target_layer_ids) < 0):
        return (
            f"{d.name} reads target layers {d.target_layer_ids}, but {target_name} has {target.num_layers} layers "
            f"(0-{target.num_layers - 1})"
        )
    return None


def draft_kv_bytes_per_token(d: Drafter, tp: int, kv_dtype_bytes: int = 2) -> int:
    """The drafter's own KV per token on one GPU (its layers, its KV heads split over TP like the target's)."""
    heads_per_gpu = max(1, -(-d.num_kv_heads // tp))
    return 2 * d.num_layers * heads_per_gpu * d.head_dim * kv_dtype_bytes


def choose_drafter(
    kind: str,
    named: str | None,
    target_name: str,
    target: ModelSpec,
    folders: list[ModelFolder],
    configured: list[str],
    host: str,
) -> Drafter | PlanFailure:
    """The drafter a request means: the one it named, else the one on the host that fits the target.

    ``kind`` is the request's (dflash | eagle3 | draft | drafter = any); ``configured`` the names app.yaml lists as
    this target's drafters (when it lists any, only they are candidates for an unnamed drafter)."""
    readable = [r for r in (read_drafter(f) for f in folders) if isinstance(r, Drafter)]
    if named:
        folder = next((f for f in folders if f.name == named), None)
        if folder is None:
            return PlanFailure(reason=f"no drafter folder {named} on {host}",
                               nearest=_listing(readable, host) or "copy the drafter into the models folder")
        found = read_drafter(folder)
        if isinstance(found, str):
            return PlanFailure(reason=found)
        if kind not in ("drafter", found.kind) and not (kind == "draft" and found.kind != "draft"):
            return PlanFailure(
                reason=f"{named} is a {KIND_LABEL[found.kind]} (by its config.json), not a {KIND_LABEL[kind]}",
                nearest=f"with {found.kind} drafter {named}",
            )
        problem = fit_problem(target_name, target, found)
        return PlanFailure(reason=problem, nearest="a drafter trained for " + target_name) if problem else found
    pool = [d for d in readable if d.name in configured] if configured else [d for d in readable if d.kind != "draft"]
    pool = [d for d in pool if kind == "drafter" or d.kind == kind]
    fitting = [d for d in pool if fit_problem(target_name, target, d) is None]
    if len(fitting) == 1:
        return fitting[0]
    wanted = "drafter" if kind == "drafter" else KIND_LABEL[kind]
    if not fitting:
        refused = [f"{d.name}: {fit_problem(target_name, target, d)}" for d in pool]
        return PlanFailure(
            reason=f"no {wanted} for {target_name} on {host}" + (" fits" if refused else ""),
            details=refused,
            nearest=_listing(readable, host) or f"train or copy a drafter for {target_name} into the models folder",
        )
    names = ", ".join(d.name for d in fitting)
    return PlanFailure(
        reason=f"several {wanted}s fit {target_name} on {host} ({names}): which one?",
        nearest=" or ".join(f"'with {d.kind} drafter {d.name}'" for d in fitting),
    )


def _listing(drafters: list[Drafter], host: str) -> str | None:
    if not drafters:
        return None
    return f"drafters on {host}: " + ", ".join(f"{d.name} ({KIND_LABEL[d.kind]})" for d in drafters)


__all__ = [
    "Drafter",
    "DrafterKind",
    "KIND_LABEL",
    "choose_drafter",
    "draft_kv_bytes_per_token",
    "drafter_kind",
    "fit_problem",
    "is_dedicated",
    "read_drafter",
]
