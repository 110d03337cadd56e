"""Named SQL queries, loaded once from the `.sql` files beside this module.

Each file holds blocks that start with `-- name: <query_name>`; parameters are `%(name)s`.
`QUERIES["list_messages"]` is the text of that block. Names are unique across files.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import MappingProxyType

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


def parse_named_queries(text: str, source: str = "<sql>") -> dict[str, str]:
    """Split a file into its named blocks; text before the first name is a file comment."""
    queries: dict[str, str] = {}
    marks = list(_NAME.finditer(text))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[mark.end():end].strip()
        if not body:
            raise ValueError(f"{source}: query {mark.group(1)!r} is empty")
        if mark.group(1) in queries:
            raise ValueError(f"{source}: query {mark.group(1)!r} is defined twice")
        queries[mark.group(1)] = body
    return queries


def _load() -> MappingProxyType:
    queries: dict[str, str] = {}
    for path in sorted(Path(__file__).parent.glob("*.sql")):
        for name, body in parse_named_queries(path.read_text(), path.name).items():
            if name in queries:
                raise ValueError(f"{path.name}: query {name!r} is already defined in another file")
            queries[name] = body
    return MappingProxyType(queries)


QUERIES = _load()
