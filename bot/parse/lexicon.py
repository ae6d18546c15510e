"""Words the parser knows: actions, quantization methods, and the words that carry no name."""

from __future__ import annotations

import re

from bot.models import Action


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
        ["restart", "relaunch", "bounce", "redeploy", "reload", "reboot", "respawn", "recycle", "rerun", "cycle", "powercycle"], "restart"
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
