"""Free text from Slack or the terminal -> DeployRequest, or a ParseError that says what to write instead.

Pure (no I/O) and resolved against an Inventory: a request only ever holds inventory names and validated numbers.
The text never goes near a shell; text that *looks* like shell syntax is refused (unsafe_input) so nobody is left
wondering what became of their `; rm -rf /`.

How a request is read. Each step marks the characters it understood, so later steps only see the rest:
  1. normalise Slack markup (mentions, links, *bold*, `code`, ~struck~, smart quotes, entities); refuse shell syntax;
  2. exact names in any case and separators: model folders ("qwen3.6 27b") and hosts ("ct-129", "on the H100 box");
  3. options by their keywords: tp 4, port 8001, gpus 0-3, 32k context, fp8, vllm, MTP / no MTP, same as before;
  4. the action: synonyms, phrasal verbs ("spin it up", "take it down"), typos ("strat");
  5. partial model names ("the 8b llama", "qwen3-next"), matched part by part, never guessing between two;
  6. what is left over: an unknown host after "on", an unknown model where the model belongs, a stray number.
"""

from __future__ import annotations

import difflib
import html
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import ValidationError
from rapidfuzz.distance import OSA

from bot.inventory import Inventory, InventoryHost
from bot.models import Action, DeployRequest, EngineName, ParseError

__all__ = [
    "Inventory",
    "InventoryHost",
    "MAX_REQUEST_CHARS",
    "QUANTIZATION_METHODS",
    "example_requests",
    "help_text",
    "is_help_request",
    "parse_request",
    "request_text",
]

_T = TypeVar("_T")

#: Longer than any request a person types; past this it is a paste, not a request.
MAX_REQUEST_CHARS = 1000

#: Quantization methods SGLang / vLLM accept for `--quantization` (stored with "_" where the flag has "-").
QUANTIZATION_METHODS: frozenset[str] = frozenset(
    {
        "fp8", "fp4", "nvfp4", "mxfp4", "int4", "int8", "awq", "awq_marlin", "gptq", "gptq_marlin", "marlin",
        "bitsandbytes", "gguf", "w8a8_int8", "w8a8_fp8", "w4a16", "w4afp8", "compressed_tensors", "modelopt",
        "modelopt_fp4", "fbgemm_fp8", "experts_int8", "moe_wna16", "torchao", "hqq", "qqq",
    }
)  # fmt: skip
_QUANTIZATION_ALIASES = {"bnb": "bitsandbytes", "nf4": "bitsandbytes"}

_NUMBER_WORDS = {
    "one": 1, "single": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "sixteen": 16,
}  # fmt: skip
_ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "sixth": 5, "seventh": 6, "eighth": 7}

# ------------------------------------------------------------------------------------------- action vocabulary

#: Single words that name an action outright.
_ACTION_WORDS: dict[str, Action] = {
    **dict.fromkeys(["start", "launch", "deploy", "serve", "run", "boot", "spawn", "setup", "startup"], "start"),
    **dict.fromkeys(
        ["stop", "kill", "terminate", "halt", "unload", "undeploy", "shutdown", "teardown", "nuke"], "stop"
    ),
    **dict.fromkeys(
        ["restart", "relaunch", "bounce", "redeploy", "reload", "reboot", "respawn", "recycle", "rerun"], "restart"
    ),
    **dict.fromkeys(["status", "stats", "health", "healthcheck", "ps", "list", "check", "uptime"], "status"),
    **dict.fromkeys(["logs", "log", "tail", "stderr", "stdout", "traceback", "journal", "output"], "logs"),
}
#: Verb + particle, with up to a few words between ("spin the qwen server up").
_PHRASAL: list[tuple[frozenset[str], frozenset[str], Action]] = [
    (
        frozenset({"spin", "bring", "fire", "put", "boot", "stand", "start", "set", "get", "light", "crank", "power"}),
        frozenset({"up"}),
        "start",
    ),
    (frozenset({"turn", "power", "switch"}), frozenset({"on"}), "start"),
    (frozenset({"kick"}), frozenset({"off"}), "start"),
    (
        frozenset({"shut", "take", "tear", "bring", "spin", "wind", "knock", "power", "close", "turn", "switch"}),
        frozenset({"down", "off"}),
        "stop",
    ),
]
_PHRASAL_GAP = 5
#: Phrases that ask what is running; they name the status action as clearly as "status" does.
_STATUS_PHRASE = re.compile(
    r"\b(?:what(?:'s|s|\s+is|\s+are)?\s+(?:currently\s+|now\s+)?(?:running|up|deployed|loaded|live|serving|on)"
    r"|anything\s+(?:running|up|deployed)|show\s+(?:me\s+)?(?:the\s+)?status"
    r"|(?:what|which)\s+(?:models?|servers?|deployments?)\s+(?:are|is|do\s+we\s+have)\s+"
    r"(?:on|running|up|deployed|live))\b"
)
#: Weaker hints, used only when nothing stronger names an action.
_STATUS_QUESTION = re.compile(
    r"^(?:\W*\w+\W+){0,2}?(?:is|are|isn't|aren't)\b.*"
    r"\b(?:running|up|alive|ready|healthy|live|online|down|dead|serving|busy|free|idle|available)\b"
    r"|\bhow(?:'s|s|\s+is|\s+are)\b"
)
_LOGS_QUESTION = re.compile(r"\bwhy\s+(?:did|does|is|has)\b.*\b(?:crash\w*|die|died|dying|fail\w*|exit\w*|hang\w*)\b")
_WANT_WORDS = frozenset({"need", "want", "get", "give", "wanna"})
_NEGATORS = frozenset({"don't", "dont", "never", "cannot", "can't", "shouldn't", "mustn't"})
#: "not" negates a verb only after these ("please do not restart"); "if it's not running, start it" is no negation.
_NOT_LEADS = frozenset({"do", "please", "pls", "should", "must", "does", "did"})
#: Objects that make "turn off ..." an option, not an action ("turn off MTP").
_OPTION_OBJECT = re.compile(
    r"^\W*(?:the\s+|its\s+|any\s+)?(?:mtp|nextn|spec\w*|eagle\w*|draft\w*|cuda|graphs?|quant\w*|fp8|cache|caching|"
    r"radix|prefix|logging|compile|thinking|reasoning)\b"
)

# ------------------------------------------------------------------------------------------- word lists

#: Words that carry no name: politeness, grammar, and the nouns people put around names. They are never fuzzed
#: into an action or a model, never taken for an unknown host or model.
_STOPWORDS = frozenset(
    """
    a an the this that these those it its it's itself is are was were be been being am do does did done doing
    please pls plz kindly could would can will shall should may might must you your yours we our ours us me my
    i i'm im hey hi hello yo ok okay thanks thank thx ty tia cheers mate folks team guys bot deploybot deploy-bot
    now right asap quickly quick fast just also too then and or but so if when while with without w/o wo for from
    to on onto in into at by of off up down over under via using use used through across per as like same
    before after last time previous previously earlier yesterday today tonight tomorrow soon later pretty really
    very some any each every one ones thing things stuff there here where what what's whats which who whose why
    how how's hows let let's lets go going gonna want wanna need needs get got make made give put take set see
    show tell keep maybe perhaps ready new old other another both either whatever everything anything something
    nothing again still already yet back server servers model models instance instances deployment deployments
    endpoint engine engines service process job box boxes host hosts machine machines node nodes rig cluster
    fleet gpu gpus card cards device devices config configuration settings setup options option flags flag
    version running started deployed launched stopped crashed crashing alive dead live online healthy please
    stock native built-in builtin own heads head layers enabled enable disable disabled on off top demand call
    behalf request requests currently usual always default defaults free once least most all full max maximum
    min minimum long short big small large tiny quantized quantization quant precision weights checkpoint
    decoding decode speculative spec tokens token context ctx length window port tp parallel tensor way
    same sure thx cool nice great awesome love appreciated appreciate good bad fine work working works try
    again them they their he she his her him anyone someone somebody everyone ya yeah yes nope nah sorry oops
    uh um hmm well mode scratch fly end night noon midnight morning evening afternoon weekend monday tuesday
    wednesday thursday friday saturday sunday priority high low normal urgent
    """.split()
)
#: Verbs that follow "to" in ordinary sentences ("I want to use vllm"), so "to <verb>" never names a host.
_COMMON_VERBS = frozenset(
    """
    be have do use make get go see try test keep help know ask say tell let put set pick choose clear save switch
    move change update upgrade fix debug play work compare benchmark bench evaluate eval measure look find
    """.split()
)
#: Nouns after a name that mark it as a host: "the ct999 box".
_HOST_NOUNS = frozenset({"box", "boxes", "host", "machine", "node", "server", "rig", "vm"})
#: Host nouns that cannot also mean a model server ("stop the foo server" names a model).
_STRICT_HOST_NOUNS = frozenset({"box", "boxes", "host", "machine", "node", "rig", "vm"})
#: Words after which the model name has ended ("start on CT129": no model between).
_OBJECT_ENDS = frozenset({"on", "onto", "at", "to", "with", "using", "via", "from", "in"})
#: Nouns after a name that mark it as a model: "stop the foo server".
_MODEL_NOUNS = frozenset({"server", "model", "instance", "deployment", "endpoint", "one", "service", "container"})
_DETERMINERS = frozenset({"a", "an", "the", "this", "that", "our", "my", "your", "their", "its"})
_HOST_PREPOSITIONS = frozenset({"on", "onto", "at", "to", "from"})
#: Quantities that explain a number nearby ("in 5 minutes", "for 3 users") so it is not asked about.
_QUANTITY_NOUNS = frozenset(
    """
    s sec secs second seconds min mins minute minutes h hr hrs hour hours day days week weeks month months
    user users people person requests reqs concurrent times x percent pct line lines
    """.split()
)
#: Model families that are NOT in the inventory: they stop a typo match ("mixtral" is not a typo of "mistral",
#: "llava" is not "llama") and mark a word as a model name the inventory lacks.
_OTHER_FAMILIES = frozenset(
    """
    mixtral ministral magistral devstral codestral pixtral llava codellama vicuna phi falcon yi olmo gemini gpt
    kimi minimax internlm internvl baichuan granite starcoder mpt bloom qwq smollm nemotron cohere aya dbrx jamba
    arctic exaone hunyuan ernie mimo longcat chatglm seed glmv opt whisper stablelm zephyr openchat solar
    tinyllama orca wizardlm dolphin hermes nous command
    """.split()
)
#: Parts of a Hugging Face repo id that are the publisher, not the model ("meta-llama/...", "Qwen/...").
_IGNORABLE_PARTS = frozenset({"meta", "ai", "hf", "org", "mistralai", "google", "thudm", "zai", "deepseekai"})

#: Commands that, written inside backticks, are code to run rather than a name in code markup.
_SHELL_COMMANDS = frozenset(
    """
    rm rmdir mv cp dd mkfs chmod chown chgrp sudo su curl wget nc ncat netcat bash sh zsh ksh dash fish csh eval
    exec source python python3 perl ruby php node kill pkill killall reboot shutdown halt poweroff init systemctl
    service cat less more head tail echo printf ls id whoami uname env export touch find xargs tee ln mount
    umount iptables apt apt-get yum dnf pip pip3 git docker ssh scp rsync crontab nohup screen tmux nvidia-smi
    """.split()
)
_SHELL_VERBS = (
    r"rm|rmdir|dd|mkfs(?:\.\w+)?|chmod|chown|sudo|su|curl|wget|nc|ncat|netcat|bash|sh|zsh|ksh|dash|eval|exec|"
    r"python[23]?|perl|ruby|php|node|pkill|killall|kill|systemctl|service|crontab|nohup|xargs|iptables|scp|rsync|"
    r"ssh|cat|echo|tee|mv|cp|ln|mount|shutdown|reboot|halt|poweroff|apt(?:-get)?|yum|pip3?|docker|git"
)
#: A shell command with an argument only a shell would take: a flag, a path, a URL, a script.
_SHELL_COMMAND_LINE = re.compile(
    rf"(?<![\w.-])(?:{_SHELL_VERBS})\s+(?:-{{1,2}}[a-z0-9]\S*|/\S*|~\S*|\S*://\S*|\S+\.(?:sh|py|pl|rb)(?!\w))",
    re.IGNORECASE,
)
_UNSAFE_SYNTAX: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\$\(|\$\{|\$[A-Za-z_]"), "'$(...)', '${...}' and '$NAME' are expanded by a shell"),
    (re.compile(r";"), "';' ends one command and starts another"),
    (re.compile(r"&&|\|\|"), "'&&' and '||' chain a second command"),
    (re.compile(r"\|"), "'|' pipes into another command"),
    # A lone " & " between words is chat for "and"; glued to anything ("x&", "&y", "2>&1") it is shell syntax.
    (re.compile(r"(?<!\s)&|&(?!\s)"), "'&' runs a command in the background (write 'and')"),
    (
        # "& reboot" (or "& reboot0": any word that begins with a command); two-letter ones only as whole words
        # so that "& sure" stays chat.
        re.compile(
            rf"&\s+(?:{'|'.join(re.escape(c) for c in sorted(_SHELL_COMMANDS) if len(c) > 2)}"
            rf"|(?:{'|'.join(re.escape(c) for c in sorted(_SHELL_COMMANDS) if len(c) <= 2)})(?![\w-]))",
            re.IGNORECASE,
        ),
        "'& command' runs a second command",
    ),
    (re.compile(r"[<>]"), "'>' and '<' redirect files (write 'more than', 'less than')"),
    (re.compile(r"\.\.[/\\]|[/\\]\.\."), "'..' in a path climbs out of the models folder"),
    (_SHELL_COMMAND_LINE, "that is a shell command line"),
]

# ------------------------------------------------------------------------------------------- option patterns

# Name boundaries: a hyphen or dot joins words in names ("Qwen3-32B-FP8"), so options never match inside a name.
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
_ENGINE = re.compile(rf"{_L}(?P<e>sglang|sg[-_ ]lang|sgl|vllm|v[-_ ]llm){_R}")
_ENGINE_SWITCH = re.compile(rf"{_L}from\s+(?P<old>sglang|sgl|vllm)\s+to\s+(?P<new>sglang|vllm){_R}")
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
    r"a\d+(?:\.\d+)?b(?![a-z])|\d+(?:\.\d+)?[bmt](?![a-z])|v\d+(?:\.\d+)*(?![a-z])|\d+(?:\.\d+)*|[a-z]+"
)
_SIZE_PART = re.compile(r"a?\d+(?:\.\d+)?[bmt]")
_VERSION_PART = re.compile(r"v?\d+(?:\.\d+)*")
_PART_SYNONYMS = {"it": "instruct"}
_HELP = re.compile(
    r"^(?:help|usage|commands|examples|\?+|-{1,2}h(?:elp)?|what\s+can\s+you\s+do|how\s+does\s+(?:this|it)\s+work"
    r"|how\s+do\s+i\s+use\s+(?:you|this|it|deploybot))(?:\s+(?:please|pls|me))?[\s?!.]*$"
)
_PREFIX = re.compile(r"^\s*(?P<p>/deploy(?:bot)?|@?deploy[-_ ]?bot)\b[\s,:]*", re.IGNORECASE)


class _Refused(Exception):
    """Internal: a step found the request cannot be acted on. parse_request turns it into its ParseError."""

    def __init__(self, kind: str, message: str, suggestions: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.error = ParseError(kind=kind, message=message, suggestions=list(dict.fromkeys(suggestions))[:6])


# ============================================================================================ public API


def parse_request(text: str, inventory: Inventory) -> DeployRequest | ParseError:
    """Read one request. Never raises on any text: whatever cannot be acted on comes back as a ParseError."""
    try:
        return _Reader(text, inventory).read()
    except _Refused as refused:
        return refused.error


def is_help_request(text: str) -> bool:
    """`/deploy help`, `deploybot help`, `help`, `?`, "what can you do"."""
    normalised = _strip_prefix(_normalise(text)[0])[0].strip().lower()
    return bool(_HELP.match(normalised))


def request_text(request: DeployRequest) -> str:
    """The request written the way the parser reads it best; parsing this gives the same request back."""
    words: list[str] = [request.action]
    if request.model:
        words.append(request.model)
    elif request.action in ("stop", "restart") and request.host and not request.reuse_last:
        words.append("everything")
    if request.host:
        words.append(f"on {request.host}")
    options: list[str] = []
    if request.engine:
        options.append(f"using {request.engine}")
    if request.speculative == "mtp":
        options.append("with mtp")
    elif request.speculative == "none":
        options.append("without mtp")
    if request.tp is not None:
        options.append(f"tp {request.tp}")
    if request.gpus is not None:
        options.append("gpus " + ",".join(str(g) for g in request.gpus))
    if request.port is not None:
        options.append(f"port {request.port}")
    if request.quantization:
        options.append(f"quantization {request.quantization}")
    if request.context_length is not None:
        options.append(f"context {request.context_length}")
    if request.reuse_last:
        options.append("same as last time")
    return " ".join(words) + (" " + ", ".join(options) if options else "")


def example_requests(inventory: Inventory) -> list[str]:
    """Requests that work against THIS inventory (real host and model names), most useful first."""
    hosts = [h for h in inventory.hosts.values() if h.models]
    if not hosts:
        return ["status"] + [f"status {name}" for name in list(inventory.hosts)[:2]]
    main = max(hosts, key=lambda h: (h.gpu_count or 0) >= 2)  # a multi-GPU host shows the most options
    model = main.models[0]
    other_model = main.models[1] if len(main.models) > 1 else model
    examples = [f"start {model} on {main.name} with MTP"]
    if main.gpu_count and main.gpu_count >= 2:
        examples.append(f"deploy {other_model} on {main.name} using vllm on both GPUs, 32k context")
    else:
        examples.append(f"deploy {other_model} on {main.name} using vllm, 32k context")
    examples.append(f"start {model} on {main.name} port 30001 same as last time")
    examples += [f"stop {model} on {main.name}", f"restart {model} on {main.name}"]
    examples += [f"what's running on {main.name}?", f"logs {model} on {main.name}", "status"]
    return examples


def help_text(inventory: Inventory) -> str:
    """What to write, with examples that work against this inventory, and the hosts and models known."""
    lines = ["I start, stop and watch LLM servers (SGLang, vLLM) on our GPU hosts. Ask in plain words, e.g.:"]
    lines += [f"  • {example}" for example in example_requests(inventory)]
    lines.append("Options: `using sglang|vllm`, `with MTP` / `no MTP`, `tp 2` or `on both GPUs`, `gpus 0-3`, "
                 "`port 30001`, `32k context`, `fp8` (or awq, gptq, ...), `same as last time`.")  # fmt: skip
    lines.append("Actions: start (launch, deploy, serve, spin up), stop (kill, shut down), restart (relaunch, bounce), "
                 "status (what's running), logs (tail).")  # fmt: skip
    lines.append("Hosts and models:")
    for host in inventory.hosts.values():
        gpus = f" ({host.gpu_count} GPUs)" if host.gpu_count else ""
        lines.append(f"  • {host.name}{gpus}: {', '.join(host.models) or 'no models listed yet'}")
    return "\n".join(lines)


# ============================================================================================ normalisation


#: Phones and Slack turn quotes and dashes typographic; an en dash is a range ("0–3"), an em dash a pause.
_TYPOGRAPHY = str.maketrans(
    {"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"', "–": "-", "—": " ", "…": "..."}
)


def _normalise(raw: str) -> tuple[str, str | None]:
    """Slack text -> plain text. Returns (text, why it is unsafe or None)."""
    text = unicodedata.normalize("NFKC", raw)
    text = re.sub(r"[\u200b-\u200d\u2060\ufeff]", "", text)  # zero-width characters Slack and phones insert
    for char in text:
        if unicodedata.category(char) in ("Cc", "Cf") and char not in "\n\r\t":
            return text, f"it contains an invisible control character (U+{ord(char):04X})"
    text = text.translate(_TYPOGRAPHY)
    # <@U123>, <@U123|bob>, <#C123|general>, <!here>, <!subteam^S1|@team>: exactly Slack's shapes (names without
    # spaces), so nothing else hides inside angle brackets (a '<' left over is refused as a redirect).
    text = re.sub(
        r"<(?:@[UW][A-Z0-9]+(?:\|[\w.-]*)?|#C[A-Z0-9]+(?:\|[\w.-]*)?|!(?:here|channel|everyone)(?:\|[\w@.-]*)?"
        r"|!subteam\^[A-Z0-9]+(?:\|@[\w.-]+)?)>",
        " ",
        text,
    )
    text = re.sub(r"<((?:https?|mailto|ftp):[^<>|]*)(?:\|([^<>]*))?>", lambda m: m.group(2) or m.group(1), text)
    text = html.unescape(text)  # Slack sends &, <, > as entities; a user's '&&' arrives as '&amp;&amp;'
    text, why = _unwrap_code(text)
    # ~struck~ text is text the writer took back; shell syntax in it stays, to be refused like anywhere else.
    text = re.sub(r"(?<!\S)~([^~\n]+)~(?!\S)", lambda m: m.group() if _unsafe_reason(m.group(1)) else " ", text)
    text = re.sub(r"(?<![\w])_([^_\n]+)_(?![\w])", r"\1", text)  # _italic_
    text = text.replace("*", "")  # *bold*
    text = re.sub(r":[a-z][a-z0-9_+-]*:", " ", text)  # :rocket: emoji
    text = text.replace('"', " ")
    text = re.sub(r"(?i)\bre-(?=(?:launch|start|deploy|load|boot|run|spawn)\b)", "re", text)
    return re.sub(r"\s+", " ", text).strip(), why


def _unwrap_code(text: str) -> tuple[str, str | None]:
    """`Qwen3.6-27B` is a name in code markup and stays; `rm -rf /` in backticks is a command and is refused."""
    why: str | None = None

    def unwrap(match: re.Match[str]) -> str:
        nonlocal why
        content = (match.group(1) if match.group(1) is not None else match.group(2)).strip()
        first = content.split()[0].lower() if content.split() else ""
        if first in _SHELL_COMMANDS or _SHELL_COMMAND_LINE.search(content):
            why = why or f"backticks around a command (`{content[:40]}`) would run it in a shell"
        return f" {content} "

    if re.search(r"\w`\w", text):
        # Slack code markup starts and ends at word boundaries; a backtick inside a word is shell syntax.
        return text, "a backtick inside a word is command substitution in a shell"
    text = re.sub(r"```(.*?)```|`([^`]*)`", unwrap, text, flags=re.DOTALL)
    if "`" in text:  # an unpaired backtick: the rest of the line would be a command substitution
        why = why or "an unpaired backtick starts a command substitution in a shell"
    return text, why


def _unsafe_reason(text: str) -> tuple[str, str, int] | None:
    """(why, the offending snippet, where it starts) for text that reads as shell syntax."""
    hits = [(match, why) for pattern, why in _UNSAFE_SYNTAX if (match := pattern.search(text))]
    if not hits:
        return None
    match, why = min(hits, key=lambda hit: hit[0].start())  # the first thing a shell would trip on
    return why, text[max(0, match.start() - 10) : match.end() + 15].strip(), match.start()


def _strip_prefix(text: str) -> tuple[str, bool]:
    """Drop a leading `/deploy` or `deploybot`; say whether it was `/deploy` (which on its own means start)."""
    match = _PREFIX.match(text)
    if not match:
        return text, False
    return text[match.end() :], match.group("p").lower().startswith("/deploy") and "bot" not in match.group("p").lower()


# ============================================================================================ names


def _compact_model(name: str) -> str:
    return re.sub(r"[^a-z0-9.]", "", name.lower())


def _compact_host(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _parts(text: str) -> list[str]:
    """'Qwen3.6-27B' -> ['qwen', '3.6', '27b']; 'gemma-3-27b-it' -> ['gemma', '3', '27b', 'instruct']."""
    parts: list[str] = []
    for piece in re.split(r"[^a-z0-9.]+", text.lower()):
        for part in _PART.findall(piece.strip(".")):
            parts.append(_PART_SYNONYMS.get(part, part))
    return parts


def _is_size(part: str) -> bool:
    return bool(_SIZE_PART.fullmatch(part))


def _is_version(part: str) -> bool:
    return bool(_VERSION_PART.fullmatch(part))


def _part_matches(said: str, part: str) -> bool:
    """'3' matches '3.1' (a family version), and 'v3'; otherwise parts match exactly."""
    if said == part:
        return True
    if said.isdigit() or re.fullmatch(r"\d+(?:\.\d+)+", said):
        return part.startswith(said + ".") or part == "v" + said
    return False


@dataclass(frozen=True)
class _ModelIndex:
    """The inventory's model names taken apart, for matching what people type."""

    names: list[str]
    parts: dict[str, list[str]]
    by_compact: dict[str, list[str]]
    vocabulary: frozenset[str]  # every alphabetic part of any name
    families: frozenset[str]  # the first alphabetic part of each name: qwen, llama, gemma...

    @classmethod
    def build(cls, inventory: Inventory) -> "_ModelIndex":
        names = inventory.model_names()
        parts = {name: _parts(name) for name in names}
        by_compact: dict[str, list[str]] = {}
        for name in names:
            by_compact.setdefault(_compact_model(name), []).append(name)
        vocabulary = frozenset(p for ps in parts.values() for p in ps if p.isalpha())
        families = frozenset(next((p for p in ps if p.isalpha()), "") for ps in parts.values()) - {""}
        return cls(names, parts, by_compact, vocabulary, families)

    def canonical(self, part: str) -> str:
        """A typo of a name part becomes that part ("qwne" -> "qwen"), when exactly one part is that close."""
        if not part.isalpha() or part in self.vocabulary or len(part) < 4:
            return part
        if part in _STOPWORDS or part in _OTHER_FAMILIES or part in _ACTION_WORDS or part in _COMMON_VERBS:
            return part
        close = [v for v in self.vocabulary if len(v) >= 4 and OSA.distance(part, v) <= 1]
        return close[0] if len(close) == 1 else part

    def is_strong(self, part: str) -> bool:
        """A part that on its own says 'this is a model name': a family, a size (27b), active params (a3b)."""
        return part in self.families or part in _OTHER_FAMILIES or _is_size(part)

    def is_known(self, part: str) -> bool:
        return (
            part in self.vocabulary
            or part in _IGNORABLE_PARTS
            or _is_version(part)
            or _is_size(part)
            or part in _OTHER_FAMILIES
        )

    def candidates(self, said: list[str]) -> tuple[list[str], list[str]]:
        """Models whose parts include every part said (exact matches preferred), and the parts no model has."""
        said = [p for p in said if p not in _IGNORABLE_PARTS]
        foreign = [p for p in said if not any(_part_matches(p, q) for ps in self.parts.values() for q in ps)]
        if foreign:
            return [], foreign
        exact = [n for n in self.names if all(p in self.parts[n] for p in said)]
        if exact:
            return exact, []
        loose = [n for n in self.names if all(any(_part_matches(p, q) for q in self.parts[n]) for p in said)]
        return loose, []


@dataclass
class _Word:
    text: str
    start: int
    end: int


@dataclass
class _Span:
    """A run of words that reads as (part of) a model name."""

    text: str
    start: int
    end: int
    candidates: list[str]
    foreign: list[str]


# ============================================================================================ the reader


@dataclass
class _Found:
    """What has been understood so far."""

    hosts: dict[str, str] = field(default_factory=dict)  # host -> the words that named it
    exact_models: dict[str, str] = field(default_factory=dict)  # model -> the words that named it
    ports: set[int] = field(default_factory=set)
    contexts: set[int] = field(default_factory=set)
    tps: set[int] = field(default_factory=set)
    tp_all_gpus: bool = False  # "on both GPUs" / "on all GPUs": the host's GPU count
    gpus: list[list[int]] = field(default_factory=list)
    quantizations: set[str] = field(default_factory=set)
    engines_wanted: set[str] = field(default_factory=set)
    engines_refused: set[str] = field(default_factory=set)
    speculative: set[str] = field(default_factory=set)
    reuse_last: bool = False
    scope_all: bool = False


class _Reader:
    def __init__(self, text: str, inventory: Inventory) -> None:
        self.raw = text
        self.inventory = inventory
        self.index = _ModelIndex.build(inventory)
        self.found = _Found()
        self.slash_deploy = False
        self.original = ""
        self.low = ""
        self.free = bytearray()
        self._view: str | None = None
        self.action_spans: list[tuple[int, int]] = []
        self.start_and_stop = False  # "stop X and start it again"

    # ----------------------------------------------------------------------------------- bookkeeping

    def view(self) -> str:
        """The text with what is understood blanked out (NUL), so later patterns cannot match across it."""
        if self._view is None:
            self._view = "".join(c if f else "\x00" for c, f in zip(self.low, self.free))
        return self._view

    def take(self, start: int, end: int) -> None:
        self.free[start:end] = bytes(end - start)
        self._view = None

    def matches(self, pattern: re.Pattern[str]) -> list[re.Match[str]]:
        """Matches in the not-yet-understood text; the caller takes what it uses."""
        return list(pattern.finditer(self.view()))

    def words(self) -> list[_Word]:
        words = []
        for match in _WORD.finditer(self.view()):
            text = match.group().rstrip("._+/~-")
            if text:
                words.append(_Word(text, match.start(), match.start() + len(text)))
        return words

    def joinable(self, left: _Word, right: _Word) -> bool:
        """Two words are one name only with nothing but spaces or separators between them."""
        return bool(re.fullmatch(r"[ \-_]*", self.view()[left.end : right.start]))

    def quote(self, start: int, end: int) -> str:
        return self.original[start:end].strip()

    # ----------------------------------------------------------------------------------- the steps

    def read(self) -> DeployRequest:
        if len(self.raw) > MAX_REQUEST_CHARS:
            raise _Refused(
                "not_understood",
                f"That is {len(self.raw)} characters; a request is one line like "
                f"'{example_requests(self.inventory)[0]}'.",
                example_requests(self.inventory),
            )
        text, why = _normalise(self.raw)
        self.refuse_unsafe(text, why)
        text, self.slash_deploy = _strip_prefix(text.replace(" & ", " and "))
        if _HELP.match(text.lower().strip()):
            raise _Refused("not_understood", help_text(self.inventory), example_requests(self.inventory))
        self.original = text if len(text.lower()) == len(text) else text.lower()
        self.low = self.original.lower()
        self.free = bytearray(b"\x01" * len(self.low))
        self._view = None

        self.read_exact_models()
        self.read_hosts()
        self.read_options()
        action = self.read_action()
        spans = self.read_model_spans()
        if action is None:
            self.refuse_no_action(spans)
        self.refuse_unknown_host()
        self.refuse_unsupported()
        self.refuse_raw_flags()
        host = self.resolve_host()
        model = self.resolve_model(spans, host, action)
        self.refuse_stray_numbers()
        return self.build(action, model, host)

    def refuse_unsafe(self, text: str, why: str | None) -> None:
        found = _unsafe_reason(text) if why is None else None
        if why is None and found is None:
            return
        suggestions: list[str] = []
        shown = ""
        if found is not None:
            why, snippet, cut = found
            shown = f" (`{snippet}`)"
            # What came before the shell syntax, read on its own, is likely what the person wanted.
            before = text[:cut].strip()
            if before:
                attempt = parse_request(before, self.inventory)
                if isinstance(attempt, DeployRequest):
                    suggestions.append(request_text(attempt))
        raise _Refused(
            "unsafe_input",
            f"I won't act on that: {why}{shown}. Requests are plain words; nothing typed here is passed to a shell.",
            suggestions or example_requests(self.inventory)[:2],
        )

    def read_exact_models(self) -> None:
        """Model folder names written out in full, in any case and with any separators or spacing."""
        words = self.words()
        i = 0
        while i < len(words):
            for size in range(min(6, len(words) - i), 0, -1):
                group = words[i : i + size]
                if any(not self.joinable(a, b) for a, b in zip(group, group[1:])):
                    continue
                keys = [w.text.rsplit("/", 1)[-1] for w in group]  # "meta-llama/Llama-3.1-8B" names the folder
                names = self.index.by_compact.get(_compact_model("".join(keys)))
                if names:
                    said = self.quote(group[0].start, group[-1].end)
                    if len(names) > 1:
                        raise _Refused(
                            "ambiguous_model",
                            f"'{said}' could be any of {', '.join(names)}. Which one?",
                            [f"start {n}" for n in names],
                        )
                    self.found.exact_models.setdefault(names[0], said)
                    self.take(group[0].start, group[-1].end)
                    i += size - 1
                    break
            i += 1

    def read_hosts(self) -> None:
        """Host names in any case and with any separators ("ct-129", "CT 129", "ct129.lab.local")."""
        by_compact = {_compact_host(name): name for name in self.inventory.hosts}
        words = self.words()
        i = 0
        while i < len(words):
            for size in range(min(3, len(words) - i), 0, -1):
                group = words[i : i + size]
                if any(not self.joinable(a, b) for a, b in zip(group, group[1:])):
                    continue
                joined = "".join(w.text for w in group)
                name = by_compact.get(_compact_host(joined))
                if name is None and size == 1 and "." in joined:
                    name = by_compact.get(_compact_host(joined.split(".")[0]))  # a fully qualified name
                if name is None and size == 1 and self.names_a_host(words, i):
                    name = self.host_by_part(joined)
                if name is not None:
                    self.found.hosts.setdefault(name, self.quote(group[0].start, group[-1].end))
                    self.take(group[0].start, group[-1].end)
                    i += size - 1
                    break
            i += 1

    def names_a_host(self, words: list[_Word], i: int) -> bool:
        """Is words[i] where a host goes: after "on"/"to"/"@", or before "box"/"host"?"""
        before = [w.text for w in words[:i] if w.text not in _DETERMINERS][-1:]
        after = words[i + 1].text if i + 1 < len(words) else ""
        at_sign = words[i].start > 0 and self.low[words[i].start - 1] == "@"
        return at_sign or bool(before and before[0] in _HOST_PREPOSITIONS) or after in _HOST_NOUNS

    def host_by_part(self, word: str) -> str | None:
        """"h100" for h100-01 (its leading segments), "a6000s" for the host with the A6000s, when only one fits."""
        if re.search(r"\d", word) or re.search(r"[-_.]", word):  # "gpu" alone is no host; "gpu-box" or "h100" is
            by_segments = [name for name in self.inventory.hosts if _compact_host(word) in _leading_segments(name)]
            if len(by_segments) == 1:
                return by_segments[0]
        gpu = word[:-1] if word.endswith("s") and re.search(r"\d", word[:-1]) else word
        if not re.fullmatch(r"[a-z]{0,2}\d{3,4}[a-z]?", gpu):
            return None
        by_gpu = [
            name
            for name, host in self.inventory.hosts.items()
            if host.gpus and gpu in re.findall(r"\b[a-z]{0,2}\d{3,4}[a-z]?\b", host.gpus.lower())
        ]
        if len(by_gpu) > 1:
            raise _Refused(
                "unknown_host",
                f"Several hosts have {gpu.upper()} GPUs ({', '.join(by_gpu)}); which one?",
                [f"status {name}" for name in by_gpu],
            )
        return by_gpu[0] if by_gpu else None

    # ----------------------------------------------------------------------------------- options

    def read_options(self) -> None:
        self.read_ports()
        self.read_context()
        self.read_gpus()
        self.read_tp()
        self.read_quantization()
        self.read_engine()
        self.read_speculative()
        for match in self.matches(_REUSE):
            self.found.reuse_last = True
            self.take(match.start(), match.end())
        for match in self.matches(_SCOPE_ALL):
            self.found.scope_all = True
            self.take(match.start(), match.end())

    def read_ports(self) -> None:
        for pattern in _PORT:
            for match in self.matches(pattern):
                port = int(match.group("n"))
                if not 1024 <= port <= 65535:
                    raise _Refused(
                        "invalid_value",
                        f"Port {port} is out of range: use 1024-65535 (ports below 1024 need root).",
                        ["port 30001"],
                    )
                self.found.ports.add(port)
                self.take(match.start(), match.end())

    def read_context(self) -> None:
        for pattern in _CONTEXT:
            for match in self.matches(pattern):
                said = self.quote(match.start(), match.end())
                if len(match.group("num")) > 12:
                    raise _Refused("invalid_value", f"'{said[:40]}' is more context than any model has.",
                                   ["128k context"])  # fmt: skip
                multiplier = {"k": 1024, "m": 1024 * 1024}.get(match.group("unit") or "", 1)
                tokens = int(round(float(match.group("num")) * multiplier))
                if tokens <= 0:
                    raise _Refused("invalid_value", f"'{said}': the context length must be more than zero.",
                                   ["32k context", "context 8192"])  # fmt: skip
                if tokens > 10_000_000:
                    raise _Refused("invalid_value", f"'{said}' is more context than any model has (max 10M tokens).",
                                   ["128k context"])  # fmt: skip
                self.found.contexts.add(tokens)
                self.take(match.start(), match.end())

    def gpu_indices(self, listed: str, said: str) -> list[int]:
        """"4,5,6,7" / "0-3" / "0 to 3" / "1 and 2" -> sorted indices."""
        indices: list[int] = []
        items = re.findall(r"\d+|-|to|through|thru", listed)
        i = 0
        while i < len(items):
            first = int(items[i])
            if i + 2 < len(items) and not items[i + 1].isdigit():
                last = int(items[i + 2])
                if last < first:
                    raise _Refused("invalid_value", f"'{said}': a GPU range runs upwards, like 'gpus 0-3'.",
                                   ["gpus 0-3"])  # fmt: skip
                indices += range(first, last + 1)
                i += 3
            else:
                indices.append(first)
                i += 1
        return sorted(set(indices))

    def read_gpus(self) -> None:
        for match in self.matches(_GPU_COUNT_AND_LIST):
            said = self.quote(match.start(), match.end())
            self.found.tps.add(self.count(match.group("n"), said))
            self.found.gpus.append(self.gpu_indices(match.group("list"), said))
            self.take(match.start(), match.end())
        for match in self.matches(_GPU_LIST_RE):
            self.found.gpus.append(self.gpu_indices(match.group("list"), self.quote(match.start(), match.end())))
            self.take(match.start(), match.end())
        for match in self.matches(_GPU_ORDINAL):
            self.found.gpus.append([_ORDINALS[match.group("ord")]])
            self.take(match.start(), match.end())

    def count(self, said_number: str, said: str) -> int:
        value = _NUMBER_WORDS.get(said_number) or int(said_number)
        if not 1 <= value <= 64:
            raise _Refused("invalid_value", f"'{said}': tensor parallel size must be between 1 and 64.",
                           ["tp 2", "on both GPUs"])  # fmt: skip
        return value

    def read_tp(self) -> None:
        for pattern in _TP:
            for match in self.matches(pattern):
                self.found.tps.add(self.count(match.group("n"), self.quote(match.start(), match.end())))
                self.take(match.start(), match.end())
        for match in self.matches(_ALL_GPUS):
            if match.group("n"):
                self.found.tps.add(self.count(match.group("n"), self.quote(match.start(), match.end())))
            else:
                self.found.tp_all_gpus = True
            self.take(match.start(), match.end())

    def read_quantization(self) -> None:
        for match in self.matches(_KV_CACHE):
            raise _Refused(
                "invalid_value",
                f"'{self.quote(match.start(), match.end())}': the KV-cache dtype is chosen by the planner and cannot "
                "be set from a request. Weight quantization can: 'fp8', 'awq', 'gptq', ...",
                ["quantization fp8"],
            )
        for match in self.matches(_QUANT_BITS):
            bits = match.group("bits")
            raise _Refused(
                "invalid_value",
                f"'{self.quote(match.start(), match.end())}' could be several quantization methods; name one.",
                [f"quantization {m}" for m in ("awq", "gptq", "bitsandbytes", f"int{bits}")
                 if m in QUANTIZATION_METHODS],  # fmt: skip
            )
        for match in self.matches(_QUANT_KEYWORD):
            value = match.group("v")
            name = self._quant_name(value)
            if name in QUANTIZATION_METHODS:
                self.found.quantizations.add(name)
                self.take(match.start(), match.end())
            elif not self.is_plain_word(value) and not any(self.index.is_strong(p) for p in _parts(value)):
                raise _Refused(
                    "invalid_value",
                    f"'{value}' is not a quantization method I know. Known: {', '.join(sorted(QUANTIZATION_METHODS))}.",
                    ["quantization fp8", "quantization awq"],
                )
        for match in self.matches(_QUANT_BARE):
            self.found.quantizations.add(self._quant_name(match.group("v")))
            self.take(match.start(), match.end())
        if len(self.found.quantizations) > 1:
            raise _Refused(
                "invalid_value",
                f"Two quantization methods ({', '.join(sorted(self.found.quantizations))}); which one?",
                [f"quantization {q}" for q in sorted(self.found.quantizations)],
            )

    @staticmethod
    def _quant_name(value: str) -> str:
        value = re.sub(r"[-_ ]?quanti[sz]ed$", "", value.lower()).replace("-", "_")
        value = _QUANTIZATION_ALIASES.get(value, value)
        for method in QUANTIZATION_METHODS:  # "fp_8", "awqmarlin": separators are optional when typed
            if value.replace("_", "") == method.replace("_", ""):
                return method
        return value

    def read_engine(self) -> None:
        for match in self.matches(_ENGINE_SWITCH):
            self.found.engines_refused.add(_engine(match.group("old")))
            self.found.engines_wanted.add(_engine(match.group("new")))
            self.take(match.start(), match.end())
        for match in self.matches(_ENGINE):
            engine = _engine(match.group("e"))
            target = self.found.engines_refused if self.negated(match) else self.found.engines_wanted
            target.add(engine)
            self.take(match.start(), match.end())
        for word in self.words():  # typos: "vlllm", "sglagn"
            if len(word.text) >= 4 and word.text.isalpha() and word.text not in _STOPWORDS:
                close = [e for e in ("sglang", "vllm") if OSA.distance(word.text, e) <= 1]
                if len(close) == 1 and word.text not in self.index.vocabulary:
                    self.found.engines_wanted.add(close[0])
                    self.take(word.start, word.end)

    def read_speculative(self) -> None:
        for match in self.matches(_SPECULATIVE):
            said = match.group("s")
            negated = self.negated(match, look_after=True)
            if said.startswith("eagle") and not negated:
                raise _Refused(
                    "invalid_value",
                    "EAGLE needs a separate draft model, which I can't set up from a request. "
                    "The model's own MTP heads I can: say 'with MTP'.",
                    ["with MTP"],
                )
            self.found.speculative.add("none" if negated else "mtp")
            self.take(match.start(), match.end())
        if len(self.found.speculative) > 1:
            raise _Refused("invalid_value", "You asked both for MTP and for no speculative decoding; which one?",
                           ["with MTP", "without MTP"])  # fmt: skip

    def negated(self, match: re.Match[str], look_after: bool = False) -> bool:
        before = self.low[max(0, match.start() - 40) : match.start()]
        if _NEGATED_BEFORE.search(before):
            return True
        return look_after and bool(_NEGATED_AFTER.match(self.low[match.end() : match.end() + 20]))

    # ----------------------------------------------------------------------------------- the action

    def read_action(self) -> Action | None:
        view = self.view()
        tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(view)]
        strong: list[tuple[Action, bool]] = []  # (action, negated)
        used: list[tuple[int, int]] = []
        for i, (token, start, end) in enumerate(tokens):
            action = _ACTION_WORDS.get(token)
            if action is None:
                continue
            if token == "check" and self.low[end:].lstrip().startswith("out"):
                continue  # "check out" is not a status request
            strong.append((action, self.verb_negated(tokens, i)))
            used.append((start, end))
        strong += self.phrasal(tokens, used)
        for match in _STATUS_PHRASE.finditer(self.low):
            strong.append(("status", False))
            used.append((match.start(), match.end()))
        wanted = {action for action, negated in strong if not negated}
        if strong and not wanted:
            raise _Refused("not_understood", "You said not to do it, so there is nothing to do.",
                           example_requests(self.inventory)[:3])  # fmt: skip
        if not wanted:
            wanted = self.weak_action(tokens, used)
        if not wanted and self.slash_deploy:
            wanted = {"start"}  # "/deploy Qwen3.6-27B on CT129": the command itself is the verb
        for start, end in used:
            self.take(start, end)
        self.action_spans = sorted(used)
        self.start_and_stop = {"start", "stop"} <= wanted
        return _combine_actions(wanted) if wanted else None

    def verb_negated(self, tokens: list[tuple[str, int, int]], i: int) -> bool:
        previous = [t for t, _, _ in tokens[max(0, i - 2) : i]]
        if previous and previous[-1] in _NEGATORS:
            return True
        return len(previous) == 2 and previous[1] == "not" and previous[0] in _NOT_LEADS

    def phrasal(self, tokens: list[tuple[str, int, int]], used: list[tuple[int, int]]) -> list[tuple[Action, bool]]:
        found: list[tuple[Action, bool]] = []
        for i, (token, start, end) in enumerate(tokens):
            for verbs, particles, action in _PHRASAL:
                if token not in verbs:
                    continue
                for j in range(i + 1, min(len(tokens), i + 2 + _PHRASAL_GAP)):
                    particle, particle_start, particle_end = tokens[j]
                    if particle not in particles:
                        continue
                    between = self.low[start:particle_end]
                    option_between = re.search(r"\b(?:mtp|spec\w*|nextn)\b", between)
                    if _OPTION_OBJECT.match(self.low[particle_end:]) or option_between:
                        break  # "turn off MTP" is an option, not an action
                    found.append((action, self.verb_negated(tokens, i)))
                    used += [(start, end), (particle_start, particle_end)]
                    break
        return found

    def weak_action(self, tokens: list[tuple[str, int, int]], used: list[tuple[int, int]]) -> set[Action]:
        """Hints used only when no word names an action: questions, "I need ...", and typos of action words."""
        if _LOGS_QUESTION.search(self.low):
            return {"logs"}
        if _STATUS_QUESTION.search(self.low):
            return {"status"}
        if any(t in _WANT_WORDS for t, _, _ in tokens) and not re.match(r"^\W*(?:do|does|did|is|are|was)\b", self.low):
            if self.found.exact_models or any(self.index.is_strong(p) for t, _, _ in tokens for p in _parts(t)):
                return {"start"}
        typos: set[Action] = set()
        for token, start, end in tokens:
            if len(token) < 4 or token in _STOPWORDS or token in _COMMON_VERBS or token in self.index.vocabulary:
                continue
            close = [(w, a) for w, a in _ACTION_WORDS.items() if len(w) >= 4 and OSA.distance(token, w) <= 1]
            if len({a for _, a in close}) > 1:  # "strat": start (swapped letters) over stats (a dropped one)
                close = [(w, a) for w, a in close if len(w) == len(token)]
            if len({a for _, a in close}) == 1:
                typos.add(close[0][1])
                used.append((start, end))
        return typos

    # ----------------------------------------------------------------------------------- models

    def read_model_spans(self) -> list[_Span]:
        """Runs of words that read as a model name: at least one strong part (family, size), the rest known parts."""
        words = self.words()
        spans: list[_Span] = []
        run: list[tuple[_Word, list[str]]] = []

        def close_run() -> None:
            if run and any(self.index.is_strong(p) for _, ps in run for p in ps):
                parts = [p for _, ps in run for p in ps]
                candidates, foreign = self.index.candidates(parts)
                start, end = run[0][0].start, run[-1][0].end
                spans.append(_Span(self.quote(start, end), start, end, candidates, foreign))
                self.take(start, end)
            run.clear()

        for word in words:
            parts = [self.index.canonical(p) for p in _parts(word.text.rsplit("/", 1)[-1])]
            belongs = bool(parts) and (
                all(self.index.is_known(p) for p in parts) or any(self.index.is_strong(p) for p in parts)
            )
            if re.fullmatch(r"\d{3,}", word.text) and word.text not in self.index.vocabulary:
                belongs = False  # "qwen3.6-27b 8001": a bare big number is a port or a typo, never a version
            if word.text in _STOPWORDS and not any(self.index.is_strong(p) for p in parts):
                belongs = False  # "it", "instruct"-like words alone are not names
            if not belongs or (run and not self.joinable(run[-1][0], word)):
                close_run()
            if belongs:
                run.append((word, parts))
        close_run()
        return spans

    def resolve_model(self, spans: list[_Span], host: str | None, action: Action | None) -> str | None:
        unknown = [s for s in spans if not s.candidates]
        if unknown:
            self.refuse_unknown_model(unknown[0].text, host, action, unknown[0].foreign)
        chosen: set[str] = set(self.found.exact_models)
        open_spans: list[_Span] = []
        for span in spans:
            candidates = self.on_host(span.candidates, host, span.text, action)
            if len(candidates) == 1:
                chosen.add(candidates[0])
            else:
                open_spans.append(_Span(span.text, span.start, span.end, candidates, []))
        if len(chosen) > 1:
            names = sorted(chosen)
            raise _Refused(
                "ambiguous_model",
                f"You named more than one model ({', '.join(names)}); one request handles one model.",
                [self.suggest(None if self.start_and_stop else action, n, host) for n in names],
            )
        for span in open_spans:
            if chosen and chosen <= set(span.candidates):
                continue  # "the qwen ... Qwen3.6-27B": the vaguer mention agrees with the exact one
            if not chosen:
                common = set.intersection(*(set(s.candidates) for s in open_spans))
                if len(common) == 1:
                    chosen = common
                    continue
            names = span.candidates if not chosen else sorted(chosen | set(span.candidates))
            where = f" on {host}" if host else ""
            raise _Refused(
                "ambiguous_model",
                f"'{span.text}' matches {len(names)} models{where}: {', '.join(names)}. Which one?",
                [self.suggest(action, n, host) for n in names],
            )
        if not chosen:
            self.refuse_unnamed_model(action, host)
            return None
        model = chosen.pop()
        self.on_host([model], host, self.found.exact_models.get(model, model), action)
        return model

    def on_host(self, candidates: list[str], host: str | None, said: str, action: Action | None) -> list[str]:
        """Candidates narrowed to the host's models; not_on_host when the host has none of them."""
        if host is None:
            return candidates
        here = [c for c in candidates if c in self.inventory.hosts[host].models]
        if here:
            return here
        elsewhere = {h: [c for c in candidates if c in m.models] for h, m in self.inventory.hosts.items()}
        where = sorted(h for h, models in elsewhere.items() if models)
        what = candidates[0] if len(candidates) == 1 else f"'{said}' ({', '.join(candidates)})"
        raise _Refused(
            "not_on_host",
            f"{what} is not on {host}; it is on {', '.join(where)}. "
            f"{host} has: {', '.join(self.inventory.hosts[host].models) or 'no models listed'}.",
            [self.suggest(action, c, h) for h in where for c in elsewhere[h]],
        )

    def refuse_unknown_model(
        self, said: str, host: str | None, action: Action | None, foreign: list[str] | None = None
    ) -> None:
        pool = self.inventory.hosts[host].models if host else self.index.names
        close = difflib.get_close_matches(_compact_model(said), [_compact_model(n) for n in pool], n=3, cutoff=0.5)
        names = [n for n in pool if _compact_model(n) in close] or pool[:4]
        suggestions = [self.suggest(action, n, host) for n in names]
        # "Qwen3-32B-FP8" when only Qwen3-32B is there: offer the folder we have, quantized on load.
        pieces = re.split(r"[-_\s/]+", said.lower())
        methods = [p for p in pieces if self._quant_name(p) in QUANTIZATION_METHODS]
        if methods:
            candidates, _ = self.index.candidates(_parts(" ".join(p for p in pieces if p not in methods)))
            candidates = [c for c in candidates if c in pool]
            if len(candidates) == 1:
                suggestions.insert(0, f"{self.suggest(action, candidates[0], host)} quantization {methods[0]}")
        where = f" on {host}" if host else ""
        raise _Refused(
            "unknown_model",
            f"I don't know a model called '{said}'{where}"
            + (f" (no model here has '{', '.join(foreign)}')" if foreign else "")
            + f". Models{where}: {', '.join(pool) or 'none listed'}.",
            suggestions,
        )

    def refuse_unnamed_model(self, action: Action | None, host: str | None) -> None:
        """No model found: an unknown name where the model belongs, or none at all (fine for some actions)."""
        unknown = self.unknown_object()
        if unknown is not None:
            if action in ("status", "logs") and host is None and _looks_like_host(unknown):
                self.raise_unknown_host(unknown)  # "status h200": status takes a host as readily as a model
            self.refuse_unknown_model(unknown, host, action)
        if action in ("status", "logs") or self.found.reuse_last and action in ("start", "restart"):
            return
        if action in ("stop", "restart") and self.found.scope_all and host:
            return
        if action in ("stop", "restart") and self.found.scope_all:
            raise _Refused(
                "not_understood",
                f"{action.capitalize()} everything on which host?",
                [f"{action} everything on {h}" for h in self.inventory.hosts],
            )
        pool = self.inventory.hosts[host].models if host else self.index.names
        where = f" on {host}" if host else ""
        verb = action or "start"
        raise _Refused(
            "missing_model",
            f"Which model should I {verb}{where}? Models{where}: {', '.join(pool) or 'none listed'}.",
            [self.suggest(action, n, host) for n in pool]
            + ([f"{verb} everything on {host}"] if host and verb in ("stop", "restart") else []),
        )

    def unknown_object(self) -> str | None:
        """The word where the model belongs, when it is no name we know: "start mixtral", "stop the foo server"."""
        view = self.view()
        for _, action_end in self.action_spans:
            for match in _WORD.finditer(self.low, action_end):
                text = match.group().rstrip("._+/~-")
                start, end = match.start(), match.start() + len(text)
                if any(s <= start < e for s, e in self.action_spans):
                    continue
                if "\x00" in view[start:end] or text in _OBJECT_ENDS or re.fullmatch(r"[\d.]+", text):
                    break  # a host, an option, "on ...": the model would have come before
                if not self.is_plain_word(text):
                    return self.quote(start, end)
        words = self.words()
        for word, following in zip(words, words[1:]):
            if following.text in _MODEL_NOUNS and not self.is_plain_word(word.text) and word.text.isalnum():
                if self.joinable(word, following) and not word.text.isdigit():
                    return self.quote(word.start, word.end)
        return None

    def is_plain_word(self, word: str) -> bool:
        return (
            word in _STOPWORDS
            or word in _COMMON_VERBS
            or word in _ACTION_WORDS
            or word in _QUANTITY_NOUNS
            or word in _HOST_NOUNS
            or len(word) < 2
        )

    # ----------------------------------------------------------------------------------- leftovers

    def refuse_unknown_host(self) -> None:
        """A name where a host goes ("on CT999", "@foo", "the foo box") that is no host we know."""
        for word in self.words():
            text = word.text
            if self.is_plain_word(text) or re.fullmatch(r"[\d.]+", text):
                continue
            if any(self.index.is_strong(p) for p in _parts(text)):
                continue  # a model name, even an unknown one, is judged as a model
            previous = [t for t in re.findall(r"[a-z0-9@'-]+", self.low[: word.start]) if t not in _DETERMINERS]
            prev = previous[-1] if previous else ""
            following = re.match(r"[\s\x00]*([a-z]+)", self.low[word.end :])
            at_sign = word.start > 0 and self.low[word.start - 1] == "@"
            # "on prod" names a host; "on high priority" does not: a plain word is a host only where a name ends.
            ends_here = following is None or following.group(1) in _OBJECT_ENDS | _STRICT_HOST_NOUNS | {"and"}
            hostlike = _looks_like_host(text) or ends_here
            if (
                at_sign
                or (prev in ("on", "onto", "at") and hostlike)
                or (prev in ("to", "from") and hostlike and not self.verbish(text))
                or (following is not None and following.group(1) in _STRICT_HOST_NOUNS)
            ):
                self.raise_unknown_host(self.quote(word.start, word.end))

    def verbish(self, word: str) -> bool:
        return word in _COMMON_VERBS or word in _ACTION_WORDS

    def raise_unknown_host(self, said: str) -> None:
        hosts = list(self.inventory.hosts)
        close = difflib.get_close_matches(_compact_host(said), [_compact_host(h) for h in hosts], n=3, cutoff=0.5)
        names = [h for h in hosts if _compact_host(h) in close] or hosts
        raise _Refused(
            "unknown_host",
            f"I don't know a host called '{said}'. Hosts I know: {', '.join(hosts)}.",
            [f"status {h}" for h in names],
        )

    def refuse_unsupported(self) -> None:
        for match in _UNSUPPORTED.finditer(self.view()):
            raise _Refused(
                "invalid_value",
                f"I can't set '{self.quote(match.start(), match.end())}' from a request; the planner chooses it. "
                "A request can set: engine, MTP, tp, gpus, port, context length, quantization.",
                example_requests(self.inventory)[:2],
            )
        if re.search(r"\b(?:everywhere|all\s+(?:the\s+)?hosts|every\s+host|each\s+host)\b", self.low):
            raise _Refused(
                "not_understood",
                "One request handles one host; name it.",
                [f"status {h}" for h in self.inventory.hosts],
            )

    def refuse_raw_flags(self) -> None:
        for match in self.matches(_RAW_FLAG):
            raise _Refused(
                "not_understood",
                f"I don't pass engine flags through ('{match.group()}'); the planner sets them. "
                "Options I understand: engine, MTP, tp, gpus, port, context, quantization.",
                example_requests(self.inventory)[:3],
            )

    def refuse_stray_numbers(self) -> None:
        """A number nothing explains ("start qwen 8001"): ask, rather than guess it is a port or a GPU."""
        words = self.words()
        for i, word in enumerate(words):
            if not word.text.isdigit():
                continue
            following = words[i + 1].text if i + 1 < len(words) else ""
            if following in _QUANTITY_NOUNS:
                continue  # "in 5 minutes", "for 3 users"
            n = int(word.text)
            meanings = [f"port {n}"] if n >= 1024 else [f"tp {n}", f"gpu {n}"] if n <= 64 else []
            meanings.append(f"{n}k context")
            raise _Refused(
                "not_understood",
                f"What is '{n}' for? Say {' or '.join(repr(m) for m in meanings)}.",
                meanings,
            )

    def refuse_no_action(self, spans: list[_Span]) -> None:
        """No action word: ask, offering what the rest of the text seems to mean."""
        models = set(self.found.exact_models) | {s.candidates[0] for s in spans if len(s.candidates) == 1}
        model = next(iter(models)) if len(models) == 1 else None
        host = next(iter(self.found.hosts)) if len(self.found.hosts) == 1 else None
        guesses = [self.suggest(a, model, host) for a in ("start", "status")] if model or host else []
        raise _Refused(
            "not_understood",
            "I didn't understand what to do"
            + (f" with {model}" if model else "")
            + (f" on {host}" if host else "")
            + ". Start with an action: start, stop, restart, status or logs.",
            guesses + example_requests(self.inventory),
        )

    # ----------------------------------------------------------------------------------- result

    def resolve_host(self) -> str | None:
        if len(self.found.hosts) > 1:
            names = list(self.found.hosts)
            raise _Refused(
                "not_understood",
                f"You named more than one host ({', '.join(names)}); one request handles one host.",
                [f"status {h}" for h in names],
            )
        return next(iter(self.found.hosts), None)

    def suggest(self, action: Action | None, model: str | None, host: str | None) -> str:
        return " ".join(p for p in (action or "start", model or "", f"on {host}" if host else "") if p)

    def build(self, action: Action, model: str | None, host: str | None) -> DeployRequest:
        found = self.found
        if self.start_and_stop and (model is None or found.scope_all):
            raise _Refused(
                "not_understood",
                "That is two requests (a stop and a start); send them one at a time.",
                [f"stop everything on {host}" if host else "status"] + example_requests(self.inventory)[:1],
            )
        tp = self.single(found.tps, "tensor parallel sizes", "tp")
        gpus = self.single_gpus(host)
        if found.tp_all_gpus:
            # "on both GPUs" / "on all GPUs" = every GPU of the host. With no host, or a host whose GPU count is
            # not known before the probe, the planner decides (tp stays None).
            count = self.inventory.hosts[host].gpu_count if host else None
            if count is not None:
                if tp is not None and tp != count:
                    raise _Refused("invalid_value", f"tp {tp} but all {count} GPUs of {host}; which one?",
                                   [f"tp {tp}", f"tp {count}"])  # fmt: skip
                tp = count
        if tp is not None and gpus is not None and len(gpus) != tp:
            raise _Refused(
                "invalid_value",
                f"tp {tp} needs {tp} GPUs but you listed {len(gpus)} ({', '.join(map(str, gpus))}).",
                [f"tp {len(gpus)} on gpus {','.join(map(str, gpus))}"],
            )
        engine = self.engine()
        try:
            return DeployRequest(
                action=action,
                model=model,
                host=host,
                engine=engine,
                speculative=self.single(found.speculative, "speculative settings", "speculative"),
                tp=tp,
                port=self.single(found.ports, "ports", "port"),
                quantization=self.single(found.quantizations, "quantization methods", "quantization"),
                context_length=self.single(found.contexts, "context lengths", "context"),
                gpus=gpus,
                reuse_last=found.reuse_last and action in ("start", "restart"),
            )
        except ValidationError as error:  # a value the patterns let through but the model bounds refuse
            problem = error.errors()[0]
            raise _Refused("invalid_value", f"{problem['loc'][0]}: {problem['msg']}.",
                           example_requests(self.inventory)[:2]) from None  # fmt: skip

    def single(self, values: set[_T], what: str, keyword: str) -> _T | None:
        if len(values) > 1:
            shown = sorted(values, key=str)
            raise _Refused("invalid_value", f"Two different {what} ({', '.join(map(str, shown))}); which one?",
                           [f"{keyword} {v}" for v in shown])  # fmt: skip
        return next(iter(values), None)

    def single_gpus(self, host: str | None) -> list[int] | None:
        lists = {tuple(g) for g in self.found.gpus}
        if len(lists) > 1:
            raise _Refused("invalid_value", "Two different GPU lists; which one?",
                           ["gpus " + ",".join(map(str, g)) for g in sorted(lists)])  # fmt: skip
        if not lists:
            return None
        gpus = list(lists.pop())
        count = self.inventory.hosts[host].gpu_count if host else None
        limit = count if count is not None else 64
        bad = [g for g in gpus if g >= limit]
        if bad:
            where = f"{host} has {count} GPUs (0-{count - 1})" if count is not None else "GPU indices go up to 63"
            raise _Refused("invalid_value", f"GPU {', '.join(map(str, bad))} does not exist: {where}.",
                           [f"gpus 0-{limit - 1}" if limit > 1 else "gpu 0"])  # fmt: skip
        return gpus

    def engine(self) -> EngineName | None:
        wanted, refused = self.found.engines_wanted - self.found.engines_refused, self.found.engines_refused
        if len(wanted) > 1:
            raise _Refused("invalid_value", "Both sglang and vllm were named; which engine?",
                           ["using sglang", "using vllm"])  # fmt: skip
        if wanted:
            return _engine(wanted.pop())
        if len(refused) == 1:
            return "vllm" if "sglang" in refused else "sglang"  # only two engines: "not sglang" means vllm
        if len(refused) > 1:
            raise _Refused("invalid_value", "Both engines were ruled out; I launch with sglang or vllm.",
                           ["using sglang", "using vllm"])  # fmt: skip
        return None


def _looks_like_host(word: str) -> bool:
    """Letters with digits, or a hyphenated name: "h200", "ct-131", "gpu-box-9"."""
    return bool(re.search(r"\d", word) and re.search(r"[a-z]", word.lower())) or "-" in word


def _leading_segments(host: str) -> set[str]:
    """"h100-01" -> {"h100"}; "gpu-box-3" -> {"gpu", "gpubox"}: the host named by its first segments."""
    segments = re.split(r"[-_.]", host.lower())
    return {_compact_host("".join(segments[:k])) for k in range(1, len(segments))}


def _engine(said: str) -> EngineName:
    return "vllm" if "v" in said else "sglang"


def _combine_actions(actions: set[Action]) -> Action:
    """Several action words in one request: the one that changes something wins over status/logs."""
    if len(actions) == 1:
        return next(iter(actions))
    if "restart" in actions:
        return "restart"
    if {"start", "stop"} <= actions:
        return "restart"  # "stop X and start it again"; with two models the model check refuses it
    for action in ("start", "stop", "logs", "status"):
        if action in actions:
            return action  # type: ignore[return-value]
    raise AssertionError(actions)  # unreachable: actions is non-empty

