"""What is left over after reading (unknown hosts, stray numbers, raw flags) and the request built at the end."""

from __future__ import annotations

import re

from pydantic import ValidationError

from planners.engines import registry

from bot.models import Action, DeployRequest, EngineName
from bot.parse.lexicon import _DETERMINERS, _OBJECT_ENDS, _QUANTITY_NOUNS, _STRICT_HOST_NOUNS
from bot.parse.names import _Span, _looks_like_host, _parts
from bot.parse.patterns import _RAW_FLAG, _UNSUPPORTED
from bot.parse.state import ReaderState, _Refused, _T
from bot.parse.texts import example_requests


_FLEET_WIDE = re.compile(
    r"\b(?:everywhere|anywhere|(?:on\s+|of\s+|across\s+)?(?:all|every|each)\s+(?:of\s+)?(?:the\s+|our\s+)?"
    r"(?:hosts?|machines?|boxes|nodes?|servers?)|(?:on\s+|across\s+)?the\s+(?:whole\s+)?fleet)\b"
)


class RefusalsMixin(ReaderState):
    """Refuses what cannot be acted on and builds the request."""

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

    def refuse_unsupported(self, action: Action | None = None) -> None:
        for match in _UNSUPPORTED.finditer(self.view()):
            raise _Refused(
                "invalid_value",
                f"I can't set '{self.quote(match.start(), match.end())}' from a request; the planner chooses it. "
                "A request can set: engine, MTP, tp, gpus, port, context length, quantization.",
                example_requests(self.inventory)[:2],
            )
        fleet_wide = _FLEET_WIDE.search(self.view())
        if fleet_wide and action == "status":
            self.take(fleet_wide.start(), fleet_wide.end())  # "what's running everywhere?": status of every host
        elif fleet_wide:
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
            previous = words[i - 1] if i else None
            if previous and self.joinable(previous, word) and self.unknown_word(previous.text):
                continue  # "flash attention 3": the number belongs to a phrase the reply names as ignored
            n = int(word.text)
            meanings = [f"port {n}"] if n >= 1024 else [f"tp {n}", f"gpu {n}"] if n <= 64 else []
            meanings.append(f"{n}k context")
            raise _Refused(
                "not_understood",
                f"What is '{n}' for? Say {' or '.join(repr(m) for m in meanings)}.",
                meanings,
            )

    def unknown_word(self, word: str) -> bool:
        """A word that is no name, option or ordinary word: the phrase it starts is named, not guessed at."""
        return word.isalpha() and len(word) >= 3 and not self.is_plain_word(word) and not self.index.is_known(word)

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

    def resolve_host(self) -> str | None:
        if len(self.found.hosts) > 1:
            names = list(self.found.hosts)
            raise _Refused(
                "not_understood",
                f"You named more than one host ({', '.join(names)}); one request handles one host.",
                [f"status {h}" for h in names],
            )
        return next(iter(self.found.hosts), None)

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
        drafter = self.single(found.draft_models, "drafters", "with draft model")
        if drafter and host and drafter not in self.inventory.hosts[host].models:
            raise _Refused(
                "not_on_host",
                f"The drafter {drafter} is not on {host}; it is on {', '.join(self.inventory.hosts_with(drafter))}.",
                [f"start {model} on {h}" for h in self.inventory.hosts_with(drafter)],
            )
        if len(found.speculative - {"mtp", "none", "drafter"}) == 1:
            found.speculative.discard("drafter")  # "using eagle3 with drafter X": the drafter is the EAGLE-3 head
        if found.speculative - {"mtp", "none"}:
            found.speculative.discard("none")  # "no MTP, with the dflash drafter": the drafter instead of MTP
        try:
            return DeployRequest(
                action=action,
                model=model,
                host=host,
                engine=engine,
                speculative=self.single(found.speculative, "speculative settings", "speculative"),
                draft_model=drafter,
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
        known = registry.names()
        using = [f"using {name}" for name in known]
        if len(wanted) > 1:
            named = [n for n in known if n in wanted]
            raise _Refused("invalid_value", f"Both {' and '.join(named)} were named; which engine?",
                           [f"using {name}" for name in named])  # fmt: skip
        if wanted:
            return _engine(wanted.pop())
        left = [n for n in known if n not in refused]
        if refused and len(left) == 1:
            return left[0]  # "not sglang" with two engines means the other one
        if refused and not left:
            raise _Refused("invalid_value", f"Both engines were ruled out; I launch with {' or '.join(known)}.",
                           using)  # fmt: skip
        if refused:
            raise _Refused("invalid_value", f"Not {' or '.join(sorted(refused))}: which engine then?",
                           [f"using {name}" for name in left])  # fmt: skip
        return None


def _engine(said: str) -> EngineName:
    """The engine a word names, by the registry's names and aliases (the word matched one of them)."""
    engine = registry.from_word(said)
    if engine is None:
        raise ValueError(f"{said!r} names no registered engine")  # the patterns only match registered words
    return engine.name
