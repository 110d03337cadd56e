"""Frozen dataclass instances built without their __init__, for the hot loops that build many.

Owns: `frozen_new`. A frozen dataclass's generated __init__ sets each field through
object.__setattr__; for the ~150 fragments a search builds and the ~40 sources a memory fill
builds, that is several times the cost of building it here (docs/BENCHMARKS.md, "Latency").
The instance is the same
(equal, same hash and repr, still frozen). Only for plain value classes: no __post_init__, no
slots, no validation; a field with a default_factory must be given.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")


def frozen_new(cls: type[T], values: dict[str, Any]) -> T:
    """An instance of the dataclass `cls` with `values`; the fields not given take their defaults
    (a field without a default, or with a default_factory, must be given). Its fields keep their
    declared order in its __dict__, as the __init__ sets them."""
    layout, required = _layout(cls)
    if not values.keys() >= required:
        raise TypeError(f"{cls.__name__} needs {sorted(required - values.keys())}")
    instance = object.__new__(cls)
    instance.__dict__.update(layout)
    instance.__dict__.update(values)
    return instance


@cache
def _layout(cls: type) -> tuple[dict[str, Any], frozenset[str]]:
    """Every field at its default (None where it has none), and the fields that must be given."""
    if getattr(cls, "__post_init__", None) is not None or hasattr(cls, "__slots__"):
        raise TypeError(f"{cls.__name__} is not a plain value class")
    layout = {f.name: None if f.default is MISSING else f.default for f in fields(cls)}
    return layout, frozenset(f.name for f in fields(cls) if f.default is MISSING)
