"""The option patterns: tp, gpus, port, context, quantization, engine, MTP, same-as-before."""

from __future__ import annotations

import re
from functools import lru_cache

from planners.engines import registry

from bot.parse.lexicon import QUANTIZATION_METHODS, _NUMBER_WORDS, _QUANTIZATION_ALIASES, _ORDINALS


_L = r"(?<![a-z0-9._/-])"
_R = r"(?![a-z0-9_]|[.\-/][a-z0-9])"
_NUMWORD = r"\d+|" + "|".join(_NUMBER_WORDS)
_GPU_ITEM = r"\d{1,2}(?!\w|\.\d)"
_GPU_SEP = r"\s*(?:,|\+|/|and|-|to|through|thru)\s*|\s+"
_GPU_LIST = rf"{_GPU_ITEM}(?:(?:{_GPU_SEP}){_GPU_ITEM})*"
_GPU_NOUN = r"(?:gpus?|cards?|devices?|[a-z]{1,2}\d{3,4}s|\d{4}s)"  # ... or "A6000s", "4090s"
_CTX_KEY = (
    r"(?:max(?:imum)?[-_ ]?)?(?:context(?:[-_ ]?(?:length|len|window|size))?|ctx(?:[-_ ]?(?:length|len|size))?"
    r"|model[-_ ]?len(?:gth)?|seq(?:uence)?[-_ ]?len(?:gth)?|(?:context[-_ ])?window)"
)
_CTX_NUM = r"(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>[km])?"

_PORT = [
    re.compile(rf"{_L}-{{0,2}}port\s*(?:number|num|no\.?|#)?\s*[:=#]?\s*(?P<n>\d+){_R}"),
    re.compile(rf"(?<=\x00):(?P<n>\d{{1,6}}){_R}"),  # host:port, right after a host that was recognised
]
_CONTEXT = [
    re.compile(rf"{_L}-{{0,2}}{_CTX_KEY}(?:\s*(?:of|to|at|=|:|is|set\s+to|up\s+to))*\s*{_CTX_NUM}(?:\s*tokens?)?{_R}"),
    re.compile(rf"{_L}{_CTX_NUM}(?:\s*tokens?)?(?:\s+(?:of|max|maximum|long))*\s+(?:token\s+)?{_CTX_KEY}{_R}"),
    re.compile(rf"{_L}(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>k)(?:\s*tokens?)?{_R}"),
    re.compile(rf"{_L}(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>[km])?\s*tokens?{_R}"),
]
_GPU_COUNT_AND_LIST = re.compile(
    rf"{_L}(?P<n>{_NUMWORD})\s+{_GPU_NOUN}\s*[(:=#]?\s*(?P<list>{_GPU_LIST})\)?{_R}"
)
_GPU_LIST_RE = re.compile(
    rf"{_L}(?:{_GPU_NOUN}|cuda[_ ]?visible[_ ]?devices|cuda)\s*(?:#|no\.?|nos\.?|numbers?|ids?|indices|index|indexes)?"
    rf"\s*[:=#]?\s*(?P<list>{_GPU_LIST}){_R}"
)
_GPU_ORDINAL = re.compile(rf"{_L}(?:the\s+)?(?P<ord>{'|'.join(_ORDINALS)})\s+{_GPU_NOUN}{_R}")
_TP = [
    re.compile(
        rf"{_L}-{{0,2}}(?:tp|tp[-_]size|tensor[-_ ]?parallel(?:ism|[-_ ]size)?)"
        rf"(?:\s*(?:size|degree|of|=|:|to|at))*\s*(?P<n>{_NUMWORD}){_R}"
    ),
    re.compile(rf"{_L}(?P<n>{_NUMWORD})[- ]?(?:way|x)\s+(?:tensor[-_ ]?parallel\w*|tp){_R}"),
    re.compile(rf"{_L}(?:a\s+)?(?P<n>{_NUMWORD})\s*(?:x\s+)?{_GPU_NOUN}{_R}"),
    # "4 x 4090", "2x A6000", "8 × H100": a count of a GPU model ("8x7b" is a Mixtral size, not this)
    re.compile(rf"{_L}(?P<n>\d{{1,2}})\s*[x×]\s*(?:nvidia\s+)?(?:[a-z]{{1,3}}\d{{2,4}}[a-z]{{0,2}}|\d{{4}})s?{_R}"),
]
_ALL_GPUS = re.compile(
    rf"{_L}(?P<which>both|all|every)(?:\s+(?:of\s+)?(?:the|its|their|our))?(?:\s+(?P<n>{_NUMWORD}))?\s+{_GPU_NOUN}{_R}"
)
_KV_CACHE = re.compile(
    rf"{_L}(?:kv[-_ ]?cache(?:[-_ ]?dtype)?\s*(?:=|:|in|to|as)?\s*(?:fp8\w*|int8|int4|fp16|bf16|auto)"
    rf"|(?:fp8(?:_e4m3|_e5m2)?|int8|int4)\s+kv[-_ ]?cache){_R}"
)
_QUANT_BITS = re.compile(rf"{_L}(?P<bits>\d+)[-_ ]?bits?{_R}")  # "4-bit": several methods give that
_QUANT_KEYWORD = re.compile(
    rf"{_L}-{{0,2}}(?:quantization|quantisation|quantized|quantised|quantize|quantise|quant)(?![a-z])"
    rf"(?:\s+(?:method|mode|type|scheme)(?![a-z]))?\s*(?:=|:|\s+to|\s+with|\s+in|\s+using|\s+as|\s+by|\s+via)?\s*"
    rf"(?P<v>[a-z0-9][a-z0-9_-]*){_R}"
)
_QUANT_BARE = re.compile(
    _L
    + "(?P<v>"
    + "|".join(
        sorted((m.replace("_", "[-_]?") for m in QUANTIZATION_METHODS | _QUANTIZATION_ALIASES.keys()), key=len)[::-1]
    )
    + ")"
    + r"(?:[-_ ]?quanti[sz]ed)?"
    + _R
)


def _engine_alternatives(words: tuple[str, ...]) -> str:
    """Every word naming a registered engine, longest first; a separator in an alias matches any separator."""
    longest_first = sorted(words, key=len, reverse=True)
    return "|".join(re.sub(r"(?:\\[-_ ]|_)+", "[-_ ]", re.escape(w)) for w in longest_first)


@lru_cache(maxsize=8)
def _engine_patterns(words: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    words = _engine_alternatives(words)
    return (
        re.compile(rf"{_L}(?P<e>{words}){_R}"),
        re.compile(rf"{_L}from\s+(?P<old>{words})\s+to\s+(?P<new>{words}){_R}"),
    )


def engine_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(an engine word, "from <engine> to <engine>"), for the engines registered now (a test may add one)."""
    return _engine_patterns(tuple(sorted(registry.words())))


_SPECULATIVE = re.compile(
    rf"{_L}(?P<s>mtp|nextn|next[-_ ]n|multi[-_ ]?token[-_ ]?predict(?:ion|or|ors)?"
    rf"|spec(?:ulative)?[-_ ]?(?:decod(?:e|ing)|sampling|execution)|speculative|speculation|eagle\d?)"
    rf"(?:[-_ ]?(?:heads?|layers?|module|drafter))?{_R}"
)
_NEGATED_BEFORE = re.compile(
    r"(?:\bno|\bnot|\bnon|\bwithout|\bw/o|\bwo|\bdisabl\w*|\bdon'?t(?:\s+(?:use|enable|want|need))?"
    r"|\bdo\s+not(?:\s+(?:use|enable|want|need))?|\bnever|\bskip(?:ping)?|\bturn(?:ed|ing)?\s+off"
    r"|\bswitch(?:ed)?\s+off|\binstead\s+of|\brather\s+than|\bexcept|\bsans|\bminus|\bavoid(?:ing)?|\bexclud\w*"
    r"|\bdrop(?:ping)?|\bremov\w*|\bbut\s+not)"
    r"(?:\s+(?:the|any|a|an|its|their|stock|native|built-?in|own|using|use|of))*"
    r"[\s-]*$"
)
_NEGATED_AFTER = re.compile(r"^[\s:=-]*(?:off|disabled?|false|none|no|0)\b")
_REUSE = re.compile(
    _L
    + r"(?:same\s+(?:as\s+)?(?:before|last\s+time|previously|yesterday|the\s+last\s+(?:time|one|run|deployment)"
    r"|config(?:uration)?|settings?|setup|options|flags|way|plan|as\s+last)"
    r"|(?:like|as)\s+(?:last\s+time|before|previously|yesterday|usual|always|the\s+last\s+(?:time|one|run|deployment)"
    r"|we\s+had\s+(?:it|before|deployed|running))"
    r"|(?:the\s+)?(?:config(?:uration)?|setup|settings|way|plan)\s+(?:that\s+|which\s+)?we\s+(?:had\s+)?"
    r"(?:deployed|launched|ran|run|used|had|set\s+up)(?:\s+before|\s+last\s+time)?"
    r"|(?:that|which|what)\s+we\s+(?:had\s+)?(?:deployed|launched|ran|used|set\s+up)(?:\s+before|\s+last\s+time)?"
    r"|we\s+had\s+(?:deployed|running|it\s+(?:deployed|running))"
    r"|(?:previous|last|prior|earlier|old|usual|last\s+(?:good|working|successful))\s+"
    r"(?:config(?:uration)?|settings?|setup|plan|deployment|launch|run|options)"
    r"|the\s+usual|as\s+usual|the\s+way\s+it\s+was|as\s+it\s+was|again)"
    + _R
)
_SCOPE_ALL = re.compile(
    rf"{_L}(?:everything|all(?:\s+(?:of\s+)?(?:the\s+)?(?:models?|servers?|deployments?|instances?|engines?|them))?"
    rf"|every\s+(?:model|server|deployment|instance)|anything(?:\s+running)?"
    rf"|whatever(?:'s|\s+is)?(?:\s+(?:running|up|deployed))?){_R}"
)
#: Launch settings people ask for that a request cannot carry: refused with a reason rather than dropped.
_UNSUPPORTED = re.compile(
    _L
    + r"(?P<what>expert[-_ ]parallel\w*|ep[-_ ]?size|data[-_ ]parallel\w*|dp[-_ ]?size|pipeline[-_ ]parallel\w*"
    r"|pp[-_ ]?size|gpu[-_ ]?mem(?:ory)?(?:[-_ ]util\w*)?|mem(?:ory)?[-_ ]fraction(?:[-_ ]static)?"
    r"|max[-_ ](?:running[-_ ])?(?:requests|seqs|num[-_ ]seqs|batch(?:[-_ ]size)?)|concurren\w+|batch[-_ ]size"
    r"|cuda[-_ ]graphs?|chunked[-_ ]prefill|served[-_ ]model[-_ ]name|trust[-_ ]remote[-_ ]code|lora\w*)"
    + _R
)
_RAW_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_WORD = re.compile(r"[a-z0-9][a-z0-9._+/~-]*")
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?")
_PART = re.compile(
    r"a\d+(?:\.\d+)?b(?![a-z])|\d+(?:\.\d+)?[bmt](?![a-z])|v\d+(?:\.\d+)*(?![a-z])"
    r"|(?<![a-z])[a-z]\d+(?![a-z0-9.])|\d+(?:\.\d+)*|[a-z]+"
)
_SIZE_PART = re.compile(r"a?\d+(?:\.\d+)?[bmt]")
_VERSION_PART = re.compile(r"v?\d+(?:\.\d+)*")


def quant_name(value: str) -> str:
    """"AWQ-quantized", "fp_8", "bnb" -> the method name the engines take (unknown values unchanged)."""
    value = re.sub(r"[-_ ]?quanti[sz]ed$", "", value.lower()).replace("-", "_")
    value = _QUANTIZATION_ALIASES.get(value, value)
    for method in QUANTIZATION_METHODS:  # "fp_8", "awqmarlin": separators are optional when typed
        if value.replace("_", "") == method.replace("_", ""):
            return method
    return value
