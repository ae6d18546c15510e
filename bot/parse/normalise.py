"""Slack text -> plain text, and the shell syntax that makes a request unsafe to read."""

from __future__ import annotations

import html
import re
import unicodedata



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
_HELP = re.compile(
    r"^(?:help|usage|commands|examples|\?+|-{1,2}h(?:elp)?|what\s+can\s+you\s+do|how\s+does\s+(?:this|it)\s+work"
    r"|how\s+do\s+i\s+use\s+(?:you|this|it|deploybot))(?:\s+(?:please|pls|me))?[\s?!.]*$"
)


_PREFIX = re.compile(r"^\s*(?P<p>/deploy(?:bot)?|@?deploy[-_ ]?bot)\b[\s,:]*", re.IGNORECASE)


#: Phones and Slack turn quotes and dashes typographic; an en dash is a range ("0–3"), an em dash a pause.
_TYPOGRAPHY = str.maketrans(
    {"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"', "«": '"', "»": '"', "‹": "'", "›": "'",
     "′": "'", "″": '"', "…": "...",
     # Every hyphen and short dash NFKC leaves alone: hyphen, figure dash, en dash, minus, hyphen bullet.
     "\u2010": "-", "\u2012": "-", "\u2013": "-", "\u2212": "-", "\u2043": "-"}
)  # fmt: skip
#: Long dashes (em dash, horizontal bar, two- and three-em dashes) join a name when written inside one
#: ("rtx—box") and are a pause between words otherwise ("start X — thanks").
_LONG_DASH_IN_NAME = re.compile(r"(?<=[A-Za-z0-9])[\u2014\u2015\u2e3a\u2e3b](?=[A-Za-z0-9])")
_LONG_DASH = re.compile(r"[\u2014\u2015\u2e3a\u2e3b]")
#: Invisible characters phones and Slack insert: zero-width space / joiners, word joiner, BOM, soft hyphen,
#: Mongolian vowel separator, invisible operators. Removed; bidirectional controls stay refused.
_INVISIBLE = re.compile(r"[\u00ad\u180e\u200b-\u200d\u2060-\u2064\ufeff]")


def normalised(raw: str) -> str:
    """The text as the parser reads it (Unicode, dashes, Slack markup): for code outside the parser that must see
    the same words, such as discovery's look for a host name."""
    return _normalise(raw)[0]


def _normalise(raw: str) -> tuple[str, str | None]:
    """Slack text -> plain text. Returns (text, why it is unsafe or None)."""
    text = unicodedata.normalize("NFKC", raw)
    text = _INVISIBLE.sub("", text)
    for char in text:
        if unicodedata.category(char) in ("Cc", "Cf") and char not in "\n\r\t":
            return text, f"it contains an invisible control character (U+{ord(char):04X})"
    text = _LONG_DASH.sub(" ", _LONG_DASH_IN_NAME.sub("-", text.translate(_TYPOGRAPHY)))
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
        if not content:
            # Slack shows empty backticks as they are; a shell runs them as an empty command substitution, and
            # pairs of them would otherwise hide the backticks around a bare command (0``reboot``).
            why = why or "an empty pair of backticks is a command substitution in a shell"
        elif first in _SHELL_COMMANDS or _SHELL_COMMAND_LINE.search(content):
            why = why or f"backticks around a command (`{content[:40]}`) would run it in a shell"
        return f" {content} "

    if re.search(r"\w`\w", text):
        # Slack code markup starts and ends at word boundaries; a backtick inside a word is shell syntax.
        return text, "a backtick inside a word is command substitution in a shell"
    text = re.sub(r"```(.*?)```|`([^`]*)`", unwrap, text, flags=re.DOTALL)
    if "`" in text:  # an unpaired backtick: the rest of the line would be a command substitution
        why = why or "an unpaired backtick starts a command substitution in a shell"
    return text, why


def _without_accents(text: str) -> str:
    """Each letter without its diacritics, one character for one (so positions stay): the reader forgives a letter
    off ("rebooṭ" is a typo of "reboot"), so the shell check must not be fooled by one (a combining mark NFKC
    composed onto a command's last letter)."""
    return "".join(unicodedata.normalize("NFKD", char)[0] if not char.isascii() and char.isalpha() else char
                   for char in text)


def _unsafe_reason(text: str) -> tuple[str, str, int] | None:
    """(why, the offending snippet, where it starts) for text that reads as shell syntax."""
    folded = _without_accents(text)
    hits = [(match, why) for pattern, why in _UNSAFE_SYNTAX if (match := pattern.search(folded))]
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
