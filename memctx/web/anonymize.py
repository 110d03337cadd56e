"""Query privacy: what is removed from a query before it leaves for a search engine.

Owns: removing e-mail addresses, phone numbers, long digit runs, the conversation's person names
(its speakers) and any configured pattern, and tidying what is left. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# A phone number: an optional +country code, then at least 7 digits in groups of separators.
PHONE = re.compile(r"(?<![\w.])\+?\(?\d{1,4}\)?(?:[\s.-]?\(?\d{2,4}\)?){2,5}(?![\w.])")
LONG_DIGITS = re.compile(r"\d{6,}")  # account, card, order numbers...
MIN_PHONE_DIGITS = 7


@dataclass(frozen=True)
class Anonymizer:
    """Removes personal data from queries; `patterns` are extra regular expressions to remove."""

    patterns: tuple[str, ...] = ()
    _compiled: tuple[re.Pattern, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", tuple(re.compile(p, re.IGNORECASE) for p in self.patterns))

    def clean(self, query: str, names: Sequence[str] = ()) -> str:
        """`query` without personal data; `names` are the conversation's people (whole words, any case)."""
        text = EMAIL.sub(" ", query)
        text = PHONE.sub(lambda m: " " if sum(c.isdigit() for c in m.group(0)) >= MIN_PHONE_DIGITS else m.group(0),
                         text)
        text = LONG_DIGITS.sub(" ", text)
        for pattern in self._compiled:
            text = pattern.sub(" ", text)
        for name in sorted({n.strip() for n in names if n and n.strip()}, key=len, reverse=True):
            text = re.sub(rf"\b{re.escape(name)}(?:'s|’s)?\b", " ", text, flags=re.IGNORECASE)
        text = re.sub(r"\s+([?!.,;:])", r"\1", re.sub(r"\s+", " ", text)).strip()
        return text.strip(" ,;:")
