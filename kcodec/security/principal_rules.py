"""Kafka's ``ssl.principal.mapping.rules``: from a TLS client's subject DN to the name in its principal.

    rules = PrincipalRules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT")
    rules.name("CN=Duke,OU=ServiceUsers,O=Org,C=US")    # "duke"

A rule list is comma-separated: ``DEFAULT`` (the DN as it is) or ``RULE:pattern/replacement/`` with an
optional ``L`` or ``U`` after the last slash (lower or upper case the result); a ``/`` inside pattern or
replacement is written ``\\/``. The first rule whose pattern matches the whole DN gives the name, its
matches replaced as Java's ``String.replaceAll`` does (``$1`` is group 1; a group the pattern lacks
stays literal text; ``\\$`` is a literal ``$``). No rule matching is an authentication failure. Patterns
are Python regular expressions, which share the syntax these rules use (Java's ``\\p{..}`` classes
excepted).
"""

from __future__ import annotations

import re
from typing import Callable, Optional

# One rule: DEFAULT, RULE:pattern/replacement/[LU], or anything else (to be refused). Backslash escapes
# keep a slash inside pattern and replacement. The rules' list is these, separated by commas.
_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLIT = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")
_PARSE = re.compile(_RULE)
_GROUP_REFERENCE = re.compile(r"\\(.)|\$(\d+)", re.S)


class NoMatchingRule(ValueError):
    """No rule applies to a DN: Kafka refuses that client's authentication."""


def _replacement(template: str, groups: int) -> Callable[[re.Match[str]], str]:
    """Java's replacement syntax: ``$n`` is group n (the most digits that name a group the pattern has;
    none: the text stays), ``\\c`` is c."""
    pieces: list[tuple[str, Optional[int]]] = []
    pos = 0
    for m in _GROUP_REFERENCE.finditer(template):
        pieces.append((template[pos:m.start()], None))
        pos = m.end()
        if m.group(1) is not None:
            pieces.append((m.group(1), None))
            continue
        digits = m.group(2)
        ref, used = int(digits[0]), 1
        if ref > groups:  # Kafka escapes a reference to a group the pattern lacks: literal text
            pieces.append(("$" + digits, None))
            continue
        while used < len(digits) and ref * 10 + int(digits[used]) <= groups:  # Java: the most digits that fit
            ref, used = ref * 10 + int(digits[used]), used + 1
        pieces += [("", ref), (digits[used:], None)]
    pieces.append((template[pos:], None))

    def expand(match: re.Match[str]) -> str:
        return "".join(text if group is None else (match.group(group) or "") for text, group in pieces)
    return expand


class _Rule:
    def __init__(self, pattern: Optional[str] = None, replacement: str = "", case: str = "") -> None:
        self.text = "DEFAULT" if pattern is None else f"RULE:{pattern}/{replacement}" + (f"/{case}" if case else "")
        self.pattern = None if pattern is None else re.compile(pattern)
        self.expand = None if self.pattern is None else _replacement(replacement, self.pattern.groups)
        self.case = case

    def apply(self, dn: str) -> Optional[str]:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        assert self.expand is not None
        name = self.pattern.sub(self.expand, dn)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


class PrincipalRules:
    """Parsed ``ssl.principal.mapping.rules``; ValueError names a rule that is not one."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules: list[_Rule] = []
        for m in _SPLIT.finditer(rules.strip()):
            text = m.group(1)
            parsed = _PARSE.match(text)
            if parsed is None or parsed.end() != len(text):
                rest = text[parsed.end():] if parsed is not None else text
                raise ValueError(f"invalid TLS principal mapping rule {text!r} (unmatched: {rest!r})")
            if parsed.group(1) is not None:
                self.rules.append(_Rule())
            elif parsed.group(2) is not None:
                try:
                    self.rules.append(_Rule(parsed.group(2), parsed.group(3), parsed.group(4)))
                except re.error as e:
                    raise ValueError(f"TLS principal mapping rule {text!r}: bad pattern: {e}") from None

    def name(self, dn: str) -> str:
        for rule in self.rules:
            name = rule.apply(dn)
            if name is not None:
                return name
        raise NoMatchingRule(f"no TLS principal mapping rule applies to {dn}, rules {self}")

    def __str__(self) -> str:
        return "[" + ", ".join(r.text for r in self.rules) + "]"
