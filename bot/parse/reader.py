"""The reader: the order of the steps, exact model and host names, and parse_request."""

from __future__ import annotations

import re

from bot.inventory import Inventory
from bot.models import DeployRequest, ParseError
from bot.parse.action import ActionMixin
from bot.parse.extras import ExtrasMixin
from bot.parse.lexicon import MAX_REQUEST_CHARS, _DETERMINERS, _HOST_NOUNS, _HOST_PREPOSITIONS
from bot.parse.names import _Word, _compact_host, _compact_model, _leading_segments
from bot.parse.normalise import _HELP, _normalise, _strip_prefix, _unsafe_reason
from bot.parse.options import OptionsMixin
from bot.parse.refusals import RefusalsMixin
from bot.parse.resolve import ModelsMixin
from bot.parse.state import _Refused
from bot.parse.texts import example_requests, help_text, request_text

_GPU_WORDS = re.compile(r"gpus?|cards?|devices?|cuda")
#: GPU model names in a host's GPU description: A6000, 4090, L4, L40S, H200, MI300X (not "80GB" or "49140 MiB").
_GPU_MODEL = re.compile(r"(?<![a-z0-9])(?:[a-z]{1,2}\d{1,4}[a-z]{0,2}|\d{3,4}[a-z]?)(?![a-z0-9])")
_MEMORY = re.compile(r"\d+(?:gb|g|mb|mib|gib)")


def parse_request(text: str, inventory: Inventory) -> DeployRequest | ParseError:
    """Read one request. Never raises on any text: whatever cannot be acted on comes back as a ParseError."""
    try:
        return Reader(text, inventory).read()
    except _Refused as refused:
        return refused.error


class Reader(ExtrasMixin, RefusalsMixin, ModelsMixin, ActionMixin, OptionsMixin):
    """Reads one request, step by step (see the package docstring)."""

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
        self.read_drafters()
        self.read_options()
        action = self.read_action()
        spans = self.read_model_spans()
        if self.moving:
            self.refuse_move(spans)
        if action is None:
            self.refuse_no_action(spans)
        self.refuse_unknown_host()
        self.refuse_unsupported(action)
        self.refuse_raw_flags()
        host = self.resolve_host()
        model = self.resolve_model(spans, host, action)
        self.refuse_stray_numbers()
        request = self.build(action, model, host)
        ignored = self.leftovers()
        return request.model_copy(update={"ignored": ignored}) if ignored else request

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
        spaced_gpu_hosts: list[tuple[str, _Word, _Word]] = []
        i = 0
        while i < len(words):
            for size in range(min(6, len(words) - i), 0, -1):  # "dgx a100 node 04"
                group = words[i : i + size]
                if any(not self.joinable(a, b) for a, b in zip(group, group[1:])):
                    continue
                joined = "".join(w.text for w in group)
                if size > 1 and _GPU_WORDS.fullmatch(group[0].text) and group[-1].text.isdigit():
                    # "gpu 3" with a host called gpu3: the host only when no other host is named ("start X on
                    # node-a gpu 3" is GPU 3 of node-a); written "gpu3" it is always the host.
                    name = by_compact.get(_compact_host(joined))
                    if name is not None:
                        spaced_gpu_hosts.append((name, group[0], group[-1]))
                        i += size - 1
                        break
                    continue
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
        for name, first, last in spaced_gpu_hosts if not self.found.hosts else []:
            self.found.hosts.setdefault(name, self.quote(first.start, last.end))
            self.take(first.start, last.end)

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
        said = {word, word[:-1]} if word.endswith("s") else {word}  # "the h200s", "the l40s box"
        said = {w for w in said if _GPU_MODEL.fullmatch(w)}
        if not said:
            return None
        by_gpu = [
            name
            for name, host in self.inventory.hosts.items()
            if host.gpus and said & {t for t in _GPU_MODEL.findall(host.gpus.lower()) if not _MEMORY.fullmatch(t)}
        ]
        gpu = max(said, key=len)
        if len(by_gpu) > 1:
            raise _Refused(
                "unknown_host",
                f"Several hosts have {gpu.upper()} GPUs ({', '.join(by_gpu)}); which one?",
                [f"status {name}" for name in by_gpu],
            )
        return by_gpu[0] if by_gpu else None
