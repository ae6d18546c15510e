"""Model names: partial names read as spans, resolved against the host, refused when unknown or unclear."""

from __future__ import annotations

import difflib
import re

from bot.models import Action
from bot.parse.lexicon import QUANTIZATION_METHODS, _MODEL_NOUNS, _OBJECT_ENDS, _STOPWORDS
from bot.parse.names import _Span, _Word, _compact_host, _compact_model, _looks_like_host, _parts
from bot.parse.patterns import _WORD, quant_name
from bot.parse.state import ReaderState, _Refused


class ModelsMixin(ReaderState):
    """Reads and resolves the model."""

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
                weak = not any(self.index.names_alone(p) for p in parts)
                spans.append(_Span(self.quote(start, end), start, end, candidates, foreign, weak))
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
        spans = self.without_stray_weak_spans(spans)
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
                common = common if len(common) == 1 else set(self.by_quantization(sorted(common)))
                if len(common) == 1:
                    chosen = common  # "the awq qwen": of two Qwen folders, the one whose name says AWQ
                    continue
            names = span.candidates if not chosen else sorted(chosen | set(span.candidates))
            where = f" on {host}" if host else ""
            raise _Refused(
                "ambiguous_model",
                f"'{span.text}' matches {len(names)} models{where}: {', '.join(names)}. Which one?",
                [self.suggest(action, n, host) for n in names],
            )
        if not chosen and not spans and not self.found.scope_all:
            pool = self.inventory.hosts[host].models if host else self.index.names
            chosen = set(self.by_quantization(pool))  # "start the gptq one on jupiter"
            chosen = chosen if len(chosen) == 1 else set()
        if not chosen:
            self.refuse_unnamed_model(action, host)
            return None
        model = chosen.pop()
        self.on_host([model], host, self.found.exact_models.get(model, model), action)
        return model

    def by_quantization(self, candidates: list[str]) -> list[str]:
        """The candidates whose folder name carries the quantization asked for (Qwen2.5-14B-Instruct-AWQ)."""
        methods = [m.replace("_", "") for m in self.found.quantizations]
        return [c for c in candidates if methods and any(m in _compact_host(c) for m in methods)]

    def without_stray_weak_spans(self, spans: list[_Span]) -> list[_Span]:
        """Weak spans that agree with no stronger name are ordinary words after all: named as ignored, not used."""
        anchors = set(self.found.exact_models).union(*(s.candidates for s in spans if not s.weak))
        if not anchors:
            return spans
        stray = [s for s in spans if s.weak and not anchors & set(s.candidates)]
        self.ignored += [s.text for s in stray]
        return [s for s in spans if s not in stray]

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
        self.refuse_generic_word(said, pool, host, action)
        close = difflib.get_close_matches(_compact_model(said), [_compact_model(n) for n in pool], n=3, cutoff=0.5)
        names = [n for n in pool if _compact_model(n) in close] or pool[:4]
        suggestions = [self.suggest(action, n, host) for n in names]
        # "Qwen3-32B-FP8" when only Qwen3-32B is there: offer the folder we have, quantized on load.
        pieces = re.split(r"[-_\s/]+", said.lower())
        methods = [p for p in pieces if quant_name(p) in QUANTIZATION_METHODS]
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

    def refuse_generic_word(self, said: str, pool: list[str], host: str | None, action: Action | None) -> None:
        """"the chat model" where three folders end in -Chat: a word of several names, so ask which one."""
        parts = _parts(said)
        if not parts or not all(p in self.index.vocabulary for p in parts):
            return
        names = [n for n in pool if all(p in self.index.parts[n] for p in parts)]
        if len(names) > 1:
            where = f" on {host}" if host else ""
            raise _Refused(
                "ambiguous_model",
                f"'{said}' matches {len(names)} models{where}: {', '.join(names)}. Which one?",
                [self.suggest(action, n, host) for n in names],
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
