"""Secrets in text: found by kind, line and span, and redacted to ``‹secret: <kind>›`` (issue 29).

Owns: the one table of secret patterns (:data:`PATTERNS`: provider tokens and keys, PEM private
key blocks, passwords in URLs, "password/secret/token/api key is …" phrases in English and
Chinese), the high-entropy token rule, the provider patterns taken from ``detect-secrets``
(:data:`VENDOR_KINDS`), :func:`find_secrets` and :func:`redact`.

Why both: ``detect-secrets`` (Yelp, Apache-2.0) keeps the formats of some twenty providers, but
its engine runs every plugin and filter per line (0.5 ms a line here: 28 s for 3 MB of session
log), imports ``requests`` (about 120 ms), reports spans of nothing, flags git hashes and UUID
pieces as high entropy, and knows neither Anthropic, Google API keys, ``github_pat_`` nor
OpenAI keys without their ``T3BlbkFJ`` marker. So this module runs its own table, each pattern
tried only where its needle stands (2.7 M characters a second over the 28 MB of real transcripts
in ``../shared/real-sessions``, none of them reported), and adds the regular expressions of
``detect-secrets``' provider plugins (GitLab, SendGrid, Twilio, Discord, PyPI, npm, Telegram,
Azure, Mailchimp, Square …), loaded once per process and only when a text holds a token-like
run, so a prose write, a hook or a one-shot read never imports it. Without the package the
table alone still finds every kind it names.

Not secrets (the negatives the tests hold): hexadecimal strings (git hashes, SHA-256 in a lock
file, UUIDs), ``sha512-…`` integrity values, base64 of an image (``data:…;base64,``, a PNG, JPEG,
GIF, WebP or SVG header), a path, and ``password`` as a word in prose ("rotate the password
monthly", "the password is stored in the vault"). Findings never carry the value.
Code points are the unit of spans; lines are 1-based, counted by ``\\n``.
"""

from __future__ import annotations

import bisect
import math
import re
import threading
from collections import Counter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["KINDS", "MARKER_RE", "PATTERNS", "VENDOR_KINDS", "Finding", "find_secrets", "marker", "redact"]


class Finding:
    """One secret in a text; never its value.

    Attributes:
        kind: what it is (``github token``, ``aws access key``, ``password``, …; see :data:`KINDS`).
        line: the line it starts on (1-based). start, end: its span in code points (``text[start:end]``).
    """

    __slots__ = ("end", "kind", "line", "start")

    def __init__(self, kind: str, line: int, start: int, end: int) -> None:
        self.kind, self.line, self.start, self.end = kind, line, start, end

    def to_json(self) -> dict[str, object]:
        """``{kind, line, start, end}``."""
        return {"kind": self.kind, "line": self.line, "start": self.start, "end": self.end}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Finding) and (self.kind, self.line, self.start, self.end) == (
            other.kind, other.line, other.start, other.end)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Finding({self.kind!r}, line {self.line}, {self.start}..{self.end})"


_VALUE = r"""[^\s"'`,;‹›()\[\]{}<>\\]"""
"""A character of a phrase's value: up to a space, a quote, a separator, a bracket or a backslash (an escape)."""
_PASSWORD_WORDS = r"(?:password|passwd|passphrase|pass ?code|pwd)"
_SECRET_WORDS = r"(?:client[ _-]?secret|secret[ _-]?key|secret|auth[ _-]?token|access[ _-]?token|token|" \
                r"api[ _-]?key|access[ _-]?key)"
_LINKING = r"(?:\s+(?:(?:is|was)\b|=|:=|:|->|=>)|\s*(?:=|:=|:|->|=>))"
"""What joins a keyword to its value: ``is``/``was`` or an assignment."""

PATTERNS: tuple[tuple[str, str, int, tuple[str, ...]], ...] = (
    ("private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE "
                    r"KEY(?: BLOCK)?-----|.*\Z)", re.DOTALL, ("-----BEGIN ",)),
    ("anthropic key", r"sk-ant-[A-Za-z0-9_-]{20,}", 0, ("sk-ant-",)),
    ("openai key", r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}"
                   r"|sk-(?!ant-)[A-Za-z0-9]{40,}\b", 0, ("sk-",)),
    ("github token", r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b|github_pat_[A-Za-z0-9_]{22,}", 0,
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    ("aws access key", r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b", 0,
     ("AKIA", "ASIA", "ABIA", "ACCA", "A3T")),
    ("aws secret key", r"(?i:aws|secret|access.?key)[^\n]{0,80}?(?<![A-Za-z0-9/+=])"
                       r"(?=[A-Za-z0-9/+]{0,39}[G-Zg-z/+])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", 0,
     ("aws", "secret", "access")),
    ("slack webhook", r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+", 0,
     ("https://hooks.slack.com",)),
    ("slack token", r"xox[abposr]-(?:[0-9]+-)+[A-Za-z0-9]+", 0, ("xox",)),
    ("stripe key", r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[A-Za-z0-9]{24,}", 0,
     ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_")),
    ("google api key", r"AIza[0-9A-Za-z_-]{35}", 0, ("AIza",)),
    ("jwt", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{10,}", 0, ("eyJ",)),
    ("url password", r"[a-zA-Z][a-zA-Z0-9+.-]*://([^\s:/@‹\\\"'$]+):([^\s@/‹\\\"'$]+)@[^\s@]", 0, ("://",)),
    ("password", rf"(?i:{_PASSWORD_WORDS}\b(?:\s+(?!is\b|was\b)[\w@-]+(?:\.[\w@-]+)*){{0,4}}?{_LINKING})\s*[\"'`]?"
                 rf"({_VALUE}{{3,}})", 0, ("pass", "pwd")),
    ("password", r"(?:密码|口令)(?:是|为|：|:|=)\s*[\"'“`]?([^\s，。,;；\"'“”`‹]{2,})", 0, ("密码", "口令")),
    ("secret", r"(?:密钥|秘钥|令牌|私钥)(?:是|为|：|:|=)\s*[\"'“`]?([^\s，。,;；\"'“”`‹]{6,})", 0,
     ("密钥", "秘钥", "令牌", "私钥")),
    ("secret", rf"(?i:{_SECRET_WORDS}\b(?:\s+(?!is\b|was\b)[\w@-]+(?:\.[\w@-]+)*){{0,3}}?{_LINKING})\s*[\"'`]?"
               rf"({_VALUE}{{8,}})", 0, ("client", "secret", "auth", "access", "token", "api")),
)
"""``(kind, regular expression, flags, needles)``, most specific first (an overlap keeps the earlier kind). A pattern
with a group marks the group as the value (``password is hunter2``: ``hunter2``); otherwise the whole match is.
Each pattern starts with one of its needles (lower case: found in the lower-cased text), and is tried only where
one stands at the start of a word (``str.find`` costs a twentieth of a scan from every position); the URL pattern
starts at the scheme before its ``://``."""

KINDS = (*dict.fromkeys(kind for kind, *_ in PATTERNS), "high-entropy token")
"""Every kind this module's own table reports; :data:`VENDOR_KINDS` adds the providers' ones."""

VENDOR_KINDS: dict[str, tuple[str, str]] = {
    "gitlab_token": ("GitLabTokenDetector", "gitlab token"),
    "sendgrid": ("SendGridDetector", "sendgrid key"),
    "twilio": ("TwilioKeyDetector", "twilio key"),
    "discord": ("DiscordBotTokenDetector", "discord token"),
    "pypi_token": ("PypiTokenDetector", "pypi token"),
    "npm": ("NpmDetector", "npm token"),
    "telegram_token": ("TelegramBotTokenDetector", "telegram token"),
    "azure_storage_key": ("AzureStorageKeyDetector", "azure storage key"),
    "mailchimp": ("MailchimpDetector", "mailchimp key"),
    "square_oauth": ("SquareOAuthDetector", "square secret"),
    "aws": ("AWSKeyDetector", "aws access key"),
    "github_token": ("GitHubTokenDetector", "github token"),
    "slack": ("SlackDetector", "slack token"),
    "stripe": ("StripeDetector", "stripe key"),
    "openai": ("OpenAIDetector", "openai key"),
}
"""``{detect_secrets.plugins module: (RegexBasedDetector class, our kind)}``. Left out: the public-IP plugin (an
address is no secret), Artifactory (its ``AP…`` password pattern matches capitalised words), the keyword and
high-entropy plugins (not regular expressions; our phrases and entropy rule replace them), and the IBM,
SoftLayer and Cloudant assignment patterns (their look-behinds cost more than all the others together, for
providers an agent's memory hardly meets: ``password``/``secret`` phrases still catch their assignments)."""

_NOT_VALUES = frozenset("""
a an the is was are be been being in on at of for to from by with into onto as it its this that these those
stored kept saved set reset changed rotated required optional mandatory needed missing empty blank wrong
correct incorrect invalid valid expired hashed encrypted hidden secret sensitive private public long short
strong weak same different managed generated provided given read loaded taken pulled fetched injected passed
sent configured defined specified documented listed shown printed logged masked redacted unknown unset none
null nil undefined true false yes no not never always also still only now then there here see check ask use
used using usually case-sensitive too very and or but if when where which who whatever something anything
your my our their his her env environment variable file vault keychain keyring manager prompt field
placeholder example sample dummy changeme xxx xxxx xxxxx *** **** ***** ... password passwd pass secret token
written hidden given taken chosen known shown forgotten broken stolen str string int bytes any optional text
postgres root admin guest test default
""".split())
"""Words that follow "password is" in prose, not a password ("the password is stored in the vault"), and the
well-known defaults of local services (``POSTGRES_PASSWORD=postgres``): public, so no secret."""
_PLACEHOLDER = re.compile(r"[*x.]+|\$.*|%\w|\{\{?.*\}\}?|<.*>|[~.]?/.*|(?i:os\.environ.*|process\.env.*)"
                          r"|[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
"""Placeholders, variables, paths and code references (``${DB_PASSWORD}``, ``<password>``, ``./secrets/db``,
``settings.api_key``, a constant ``STORE_PASSWORD``) a phrase names instead of a value."""
_PHRASES = ("password", "secret", "url password")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_PROSE_LINK = re.compile(r"\s(?:is|was)\s|:", re.IGNORECASE)
_CLAUSE_END = re.compile(r"\s*(?:[.!?;,)]|$|\n|\s(?:and|but|so|or)\b)", re.MULTILINE)
_ID_PREFIXES = ("toolu_", "srvtoolu_", "msg_", "agent_msg_", "req_", "call_", "chatcmpl-", "run_", "file_",
                "thread_", "asst_", "resp_", "sess_", "evt_")
"""Prefixes of the ids agents' APIs hand out (tool uses, messages, requests): random, never a credential."""
_HEX = re.compile(r"[0-9a-fA-F-]+")
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_.-])[A-Za-z0-9+/_-]{32,}={0,2}(?![A-Za-z0-9+/=_-])")
_NOT_TOKEN_BEFORE = re.compile(r"(?i:base64,|sha(?:1|256|384|512)[-:]|integrity\W{1,4})\Z")
_IMAGE_MAGIC = ("iVBORw0KGgo", "/9j/", "R0lGOD", "UklGR", "PHN2Zy", "Qk0", "AAAA")
_TOKEN_RUN = re.compile(r"[A-Za-z0-9_\-+/=.:]{20,}")
"""A run worth the providers' patterns when a digit is among its 20 or more token characters (:func:`_token_like`)."""
_UPPER, _LOWER, _DIGIT = re.compile("[A-Z]"), re.compile("[a-z]"), re.compile("[0-9]")
_WORD = re.compile(r"[A-Z]?[a-z]{3,}")
"""A word inside an identifier; words covering most of a token (``ThisIsAVeryLongName123``) make it no secret."""
_TOKEN_MAX = 200
"""Longest high-entropy token, in characters: past it a run is data (a signature, an encrypted blob, an image),
not a credential (the longest keys here are JWTs, found by their own pattern)."""
_ENTROPY_BITS = 4.2
"""Shannon entropy (bits a character) from which a 32+ character token with upper, lower case and digits counts
as a secret: random base64 of that length lies around 4.5–5, identifiers and words below 4."""

MARKER_RE = re.compile(r"‹secret: [a-z0-9 ._-]+›")
"""A redaction left by :func:`redact`: never found again, so redacting twice changes nothing."""

_compiled: dict[int, re.Pattern[str]] = {}
_vendor: list[tuple[str, re.Pattern[str]]] | None = None
_loading = threading.Lock()


def marker(kind: str) -> str:
    """``‹secret: <kind>›``, what :func:`redact` puts in a secret's place."""
    return f"‹secret: {kind}›"


def _own(index: int) -> re.Pattern[str]:
    """The ``index``-th pattern of :data:`PATTERNS`, compiled on its first use: a text without its needles never
    compiles it (the hook's last guard on a short text compiles one or two of the 16, issue 31)."""
    regex = _compiled.get(index)
    if regex is None:
        _, pattern, flags, _ = PATTERNS[index]
        regex = _compiled.setdefault(index, re.compile(pattern, flags))  # compiled twice by a race: the same
    return regex


def _providers() -> list[tuple[str, re.Pattern[str]]]:
    """The regular expressions of ``detect-secrets``' provider plugins (:data:`VENDOR_KINDS`), loaded once; empty
    when the package is missing or a plugin changed shape (the own table still runs)."""
    global _vendor
    if _vendor is None:
        with _loading:
            if _vendor is None:
                import importlib

                found: list[tuple[str, re.Pattern[str]]] = []
                for module, (cls, kind) in VENDOR_KINDS.items():
                    try:
                        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls)
                        found.extend((kind, rx) for rx in plugin.denylist if isinstance(rx, re.Pattern))
                    except Exception:  # noqa: BLE001 - a missing or reshaped plugin costs its kinds, not the screen
                        continue
                _vendor = found
    return _vendor


def _value_span(match: re.Match[str]) -> tuple[int, int]:
    """The value's span: the last group of an own pattern that matched (a phrase's value), else the whole match."""
    for group in range(match.re.groups, 0, -1):
        if match.group(group):
            return match.span(group)
    return match.span()


def _is_prose(kind: str, match: re.Match[str], start: int, end: int) -> bool:
    """Whether a phrase's value (``text[start:end]`` of ``match``) is a word of prose, a placeholder, code (a ``(``
    or ``[`` after it) or a UUID, not a secret; a URL's password the same as its user is a local default."""
    if kind not in ("password", "secret", "url password"):
        return False
    text = match.string
    value, after = text[start:end], text[end:end + 1]
    bare = value.strip(".!?:").lower()
    if bare in _NOT_VALUES or _PLACEHOLDER.fullmatch(value) or len(bare) < (2 if kind == "url password" else 3) \
            or after in ("(", "[") or _UUID.fullmatch(value) or "://" in value:
        return True
    if kind == "url password":
        return match.group(1) == value  # postgres:postgres@localhost
    name = match.start()
    while name > 0 and (text[name - 1].isalnum() or text[name - 1] == "_"):
        name -= 1
    if text[max(0, name - 2):name].endswith("$") or text[max(0, name - 2):name] == "${":
        return True  # ${DB_PASSWORD:-postgres}: a variable and its default, not a value
    if kind == "password" and _PROSE_LINK.search(text, match.start(), start) and not (
            _DIGIT.search(value) or not value.isalnum() or text[start - 1:start] in "\"'`“"
            or _CLAUSE_END.match(text, end)):
        return True  # "the password is available through the vault": a word in a sentence, not its last one
    if kind == "secret" and (not _DIGIT.search(value) and (value.lower() == value or value.upper() == value)
                             or _wordy(value)):
        return True  # a token or key has digits or mixed case, and is no identifier ("afterPlugin", "refreshed")
    return kind == "password" and value.isalpha() and value.islower() and value.endswith(("ed", "ing", "ly"))


def _wordy(value: str) -> bool:
    """Whether words of three letters or more, separators and UUIDs cover 60 % of ``value`` (an identifier, a file
    name or a path, not a random token)."""
    plain = _UUID.sub("", value)
    covered = sum(len(word) for word in _WORD.findall(plain)) + sum(plain.count(c) for c in "/-_.") + len(value) \
        - len(plain)
    return covered * 5 >= len(value) * 3


def _entropy(value: str) -> float:
    """Shannon entropy of ``value``'s characters, bits a character."""
    size = len(value)
    return math.log2(size) - sum(n * math.log2(n) for n in Counter(value).values()) / size


def _high_entropy(text: str) -> Iterator[tuple[int, int]]:
    """Spans of random-looking tokens: 32+ base64 characters with upper and lower case and digits, not hex, not a
    path, not a hash or an image's base64, above :data:`_ENTROPY_BITS`."""
    for match in _TOKEN.finditer(text):
        value = match.group().rstrip("=")
        if len(value) > _TOKEN_MAX or value.startswith(("/", *_IMAGE_MAGIC, *_ID_PREFIXES)) or _HEX.fullmatch(value) \
                or value.count("/") * 12 > len(value):
            continue
        if not (_UPPER.search(value) and _LOWER.search(value) and _DIGIT.search(value)) or _wordy(value):
            continue
        if _NOT_TOKEN_BEFORE.search(text, max(0, match.start() - 16), match.start()):
            continue
        if _entropy(value) >= _ENTROPY_BITS:
            yield match.span()


def _starts(seen: str, needles: tuple[str, ...], folded: bool) -> list[int]:
    """Where a pattern may start: each needle's place in ``seen`` at the start of a word (for ``://``: its scheme's
    start; a keyword (``folded``) may follow ``_``), in order, each once."""
    found: set[int] = set()
    for needle in needles:
        i = seen.find(needle)
        while i >= 0:
            at = i
            if needle == "://":
                while at > 0 and (seen[at - 1].isalnum() or seen[at - 1] in "+.-"):
                    at -= 1
            elif at > 0 and (seen[at - 1].isalnum() or seen[at - 1] == "_" and not folded):
                at = -1  # inside a word; a keyword may end a name (DB_PASSWORD, API_TOKEN)
            if at >= 0:
                found.add(at)
            i = seen.find(needle, i + 1)
    return sorted(found)


def _token_like(text: str) -> bool:
    """Whether ``text`` holds a run of 20 token characters with a digit (linear: runs never overlap)."""
    return any(_DIGIT.search(run.group()) for run in _TOKEN_RUN.finditer(text))


def _candidates(text: str, providers: bool) -> Iterator[tuple[int, int, int, str]]:
    """``(priority, start, end, kind)`` of every match, before overlaps are resolved (lower priority wins);
    ``providers``: ``detect-secrets``' patterns too."""
    lower = text.lower()
    for priority, (kind, _, _, needles) in enumerate(PATTERNS):
        folded = all(n == n.lower() for n in needles)
        ends = -1
        for at in _starts(lower if folded else text, needles, folded):
            match = _own(priority).match(text, at) if at >= ends else None
            if match is None:
                continue
            ends = match.end()
            start, end = _value_span(match)
            while kind in _PHRASES and end > start + 1 and text[end - 1] in ".!?:":
                end -= 1  # the sentence's full stop is not part of the password
            if not _is_prose(kind, match, start, end):
                yield priority, start, end, kind
    base = len(PATTERNS)
    if providers and _token_like(text):
        for kind, regex in _providers():
            for match in regex.finditer(text):
                start, end = match.span()  # their groups mark a prefix as often as a value: take it all
                if end > start and not _HEX.fullmatch(text[start:end]):
                    yield base, start, end, kind
    for start, end in _high_entropy(text):
        yield base + 1, start, end, "high-entropy token"


def find_secrets(text: str, *, providers: bool = True) -> list[Finding]:
    """Every secret in ``text``, in order of position; overlapping matches count once, as the most specific kind.
    Redactions already there (:data:`MARKER_RE`) are never found again. ``providers=False`` leaves out
    ``detect-secrets``' provider patterns (:data:`VENDOR_KINDS`): a last guard on text already screened (a hook's
    output) never pays for loading them; every kind of the own table is still found."""
    if not text:
        return []
    taken: list[tuple[int, int, str]] = [(s, e, "") for s, e in (m.span() for m in MARKER_RE.finditer(text))] \
        if "‹" in text else []
    taken.sort()
    for _, start, end, kind in sorted(_candidates(text, providers)):
        at = bisect.bisect_left(taken, (start,))
        if end <= start or (at < len(taken) and taken[at][0] < end) or (at and taken[at - 1][1] > start):
            continue  # empty, or overlapping a redaction or a more specific finding (taken never overlap)
        taken.insert(at, (start, end, kind))
    taken = [t for t in taken if t[2]]
    found, line, counted = [], 1, 0
    for start, end, kind in taken:
        line += text.count("\n", counted, start)
        counted = start
        found.append(Finding(kind, line, start, end))
    return found


def redact(text: str, *, providers: bool = True) -> str:
    """``text`` with each secret's value replaced by ``‹secret: <kind>›`` (:func:`marker`); stable (the same text
    always gives the same result) and idempotent (``redact(redact(t)) == redact(t)``). ``providers``: as for
    :func:`find_secrets`."""
    found = find_secrets(text, providers=providers)
    if not found:
        return text
    from .spans import replace_spans

    return replace_spans(text, ((f.start, f.end, marker(f.kind)) for f in found))
