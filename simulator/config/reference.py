"""The scenario reference (docs/scenario_format.md), generated from the pydantic schema so it
cannot drift: every key, its type, default, allowed values or range, and its meaning.

``python -m simulator.config.reference > docs/scenario_format.md`` regenerates it;
tests/test_reference.py checks the file equals :func:`render` and that every key of the
schema has a meaning in :data:`MEANINGS` (and no meaning names a key that is gone).
"""

from __future__ import annotations

import types
import typing
from enum import Enum

import annotated_types
from pydantic import BaseModel

from simulator.config.reference_text import INTRO, MEANINGS, TYPES
from simulator.config.scenario import Scenario

_SKIP = {"cluster.node"}          # a name or an inline node spec: described as one key


def leaves(model: type[BaseModel] = Scenario, prefix: str = "") -> list[tuple[str, object]]:
    """(dotted key, pydantic FieldInfo) of every leaf key of ``model``; lists of sections
    appear as ``key[].field``."""
    out = []
    for name, field in model.model_fields.items():
        key = prefix + name
        section = _section_type(field.annotation)
        if section is not None and key not in _SKIP:
            suffix = "[]." if typing.get_origin(_unwrap(field.annotation)) is list else "."
            out += leaves(section, key + suffix)
        else:
            out.append((key, field))
    return out


def _unwrap(annotation):
    """``X | None`` -> ``X``."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kept = [a for a in args if a is not type(None)]
        return kept[0] if len(kept) == 1 else annotation
    return annotation


def _section_type(annotation) -> type[BaseModel] | None:
    inner = _unwrap(annotation)
    if typing.get_origin(inner) is list:
        inner = typing.get_args(inner)[0]
    return inner if isinstance(inner, type) and issubclass(inner, BaseModel) else None


def describe_type(field) -> str:
    """Readable type with allowed values or range: ``int 1..1000000``, ``1f1b | gpipe``."""
    inner = _unwrap(field.annotation)
    base = typing.get_origin(inner) or inner
    if typing.get_origin(inner) is typing.Annotated:
        base = typing.get_args(inner)[0]
    if isinstance(base, type) and issubclass(base, Enum):
        return " \\| ".join(f"`{e.value}`" for e in base)
    if base in (list, tuple):
        item = typing.get_args(inner)[0]
        if isinstance(item, type) and issubclass(item, Enum):
            return "list of " + " \\| ".join(f"`{e.value}`" for e in item)
    name = getattr(base, "__name__", str(base)).replace("typing.", "")
    low, _, high = bounds(field)
    span = f" {_number(low)}..{_number(high)}" if low is not None and high is not None else ""
    return f"{name}{span}"


def bounds(field) -> tuple[float | None, bool, float | None]:
    """The schema's range of a number field: ``(low, low_excluded, high)``.

    Parameters
    ----------
    field : pydantic.fields.FieldInfo
        A leaf of :func:`leaves`.

    Returns
    -------
    tuple
        The lower bound (``ge``, or ``gt`` with ``low_excluded`` True) and the upper bound
        (``le``); None where the schema sets none.
    """
    metadata = list(field.metadata)
    inner = _unwrap(field.annotation)
    if typing.get_origin(inner) is typing.Annotated:
        metadata += [m for e in typing.get_args(inner)[1:] for m in getattr(e, "metadata", [e])]
    low = next((m for m in metadata if isinstance(m, (annotated_types.Ge, annotated_types.Gt))), None)
    high = next((m.le for m in metadata if isinstance(m, annotated_types.Le)), None)
    if low is None:
        return None, False, high
    return (low.ge, False, high) if isinstance(low, annotated_types.Ge) else (low.gt, True, high)


def _number(value) -> str:
    return f"{value:,}" if float(value).is_integer() else f"{value:g}"


def describe_default(field) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, Enum):
        value = value.value
    if value is None or value == []:
        return "-" if value is None else "[]"
    return f"`{value}`"


def render() -> str:
    """The whole reference as Markdown."""
    lines = [INTRO, "", "| key | type / allowed | default | meaning |", "|---|---|---|---|"]
    for key, field in leaves():
        kind = TYPES.get(key) or describe_type(field)
        lines.append(f"| `{key}` | {kind} | {describe_default(field)} | {MEANINGS[key]} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
