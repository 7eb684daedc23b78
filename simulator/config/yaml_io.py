"""Reading YAML and turning pydantic errors into one-line :class:`ConfigError` messages.

This module is the only place clustersim parses YAML.
"""

from __future__ import annotations

import difflib
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from simulator.errors import ConfigError

MAX_FILE_BYTES = 16 * 2**20
M = TypeVar("M", bound=BaseModel)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or an empty string."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def read_yaml_mapping(path: Path | str) -> dict[str, Any]:
    """Parse ``path`` as one YAML document that is a mapping.

    Raises
    ------
    ConfigError
        If the file is missing, unreadable, binary, empty, not YAML, or not a mapping.
    """
    path = Path(path)
    source = str(path)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError("not a regular file (a directory, pipe or device); expected a YAML file",
                              source)
        if info.st_size > MAX_FILE_BYTES:
            raise ConfigError(f"file is larger than {MAX_FILE_BYTES // 2**20} MiB", source)
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError("file not found", source) from None
    except (PermissionError, OSError) as exc:
        raise ConfigError(f"cannot read file ({exc.strerror or exc})", source) from None
    return parse_yaml_mapping(raw, source)


def parse_yaml_mapping(raw: bytes | str, source: str) -> dict[str, Any]:
    """Parse YAML text (bytes or str) that must hold one mapping; see :func:`read_yaml_mapping`."""
    if isinstance(raw, bytes):
        if len(raw) > MAX_FILE_BYTES:
            raise ConfigError(f"file is larger than {MAX_FILE_BYTES // 2**20} MiB", source)
        if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise ConfigError("text is UTF-16; save the file as UTF-8", source)
        if b"\x00" in raw:
            raise ConfigError("not a text file (binary data found); expected a YAML mapping", source)
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError("not UTF-8 text; expected a YAML mapping", source) from None
    try:
        documents = list(yaml.load_all(raw, Loader=StrictLoader))
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {_yaml_problem(exc)}", source) from None
    except RecursionError:
        raise ConfigError("invalid YAML: lists or mappings nested too deeply", source) from None
    except (ValueError, OverflowError) as exc:
        problem = "a number has more than 4300 digits" if "integer string conversion" in str(exc) else exc
        raise ConfigError(f"invalid YAML: {problem}", source) from None
    except (LookupError, AttributeError, TypeError):  # PyYAML on e.g. `!!bool x`, `!!timestamp x`, `!!int`
        raise ConfigError("invalid YAML: a value does not match its explicit tag (!!bool, !!int, "
                          "!!float, !!timestamp...)", source) from None
    documents = [d for d in documents if d is not None]
    if not documents:
        raise ConfigError("file is empty; expected a YAML mapping", source)
    if len(documents) > 1:
        raise ConfigError("file holds several YAML documents; expected exactly one mapping", source)
    if not isinstance(documents[0], dict):
        kind = type(documents[0]).__name__
        raise ConfigError(f"top level is a {kind}; expected a mapping of keys", source)
    return documents[0]


class StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader without YAML 1.1's silent surprises: a key given twice in one
    mapping is an error (not "last wins"), and so are integers with a leading zero (``010``
    would read as octal 8) and sexagesimal numbers (``1:30`` would read as 90)."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.get(key)
            except TypeError:             # an unhashable key: PyYAML's own error follows
                continue
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} given twice (first at line {first})", key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node):
        text = str(node.value).replace("_", "")
        if _AMBIGUOUS_INT.match(text):
            raise yaml.constructor.ConstructorError(
                None, None, f"ambiguous number {node.value!r} (YAML 1.1 reads a leading zero as octal "
                "and a colon as base 60); write it without the leading zero, or quote it",
                node.start_mark)
        return super().construct_yaml_int(node)


_AMBIGUOUS_INT = re.compile(r"^[-+]?(0[0-9]+|[0-9]+(:[0-5]?[0-9])+)$")
StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return problem


def validate_model(model: type[M], data: Any, source: str, prefix: str = "") -> M:
    """Build ``model`` from ``data``; the first validation problem becomes a :class:`ConfigError`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise pydantic_to_config_error(exc, model, source, prefix, data) from None
    except (RecursionError, OverflowError, ValueError, TypeError) as exc:
        raise ConfigError(f"invalid value ({exc})", source, prefix.rstrip(".") or None) from None


_NO_DATA = object()


def pydantic_to_config_error(
    exc: ValidationError, model: type[BaseModel], source: str, prefix: str = "",
    data: Any = _NO_DATA,
) -> ConfigError:
    """Render the first error of ``exc`` as ``file: key.path: message``.

    ``data`` (the validated input) lets the key path drop pydantic's union-member
    tags (``cluster.node.str``) and pick, of a union's members, the one that got deepest.
    """
    errors = exc.errors(include_url=False)
    err = errors[0]
    path, tag_at = _key_path(err, data)
    if tag_at is not None:
        members = [e for e in errors if e["loc"][:tag_at] == err["loc"][:tag_at]]
        err = max(members, key=lambda e: len(e["loc"]))
        path, _ = _key_path(err, data)
    if err["type"] == "missing":  # a misspelt key shows as missing + unknown: report the typo
        typos = [e for e in errors if e["type"] == "extra_forbidden" and e["loc"][:-1] == err["loc"][:-1]
                 and did_you_mean(e["loc"][-1], [err["loc"][-1]])]
        if typos:
            err = typos[0]
            path, _ = _key_path(err, data)
    loc = [_key_text(p) for p in path]
    key = prefix + ".".join(loc)
    message = _pydantic_message(err, model, loc)
    return ConfigError(message, source, key or None)


def _pydantic_message(err: dict, model: type[BaseModel], loc: list[str]) -> str:
    kind = err["type"]
    value = err.get("input")
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, loc[:-1])
        hint = did_you_mean(loc[-1], allowed)
        return f"unknown key{hint}; allowed keys: {', '.join(sorted(allowed))}"
    if kind == "missing":
        return "required key is missing"
    if kind in ("enum", "literal_error"):
        expected = err.get("ctx", {}).get("expected", "")
        return f"{short_value(value)} is not one of {expected}{did_you_mean(value, _enum_words(expected))}"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    msg = msg[0].lower() + msg[1:]
    if isinstance(value, dict):      # a check of a whole section: its message names the keys
        return msg
    return f"{short_value(value)}: {msg}"


def _key_path(err: dict, data: Any) -> tuple[list[Any], int | None]:
    """The user's key path of ``err`` and the index in its loc of the first union-member tag.

    A loc part that is not a key (or index) of ``data`` at that point is a tag, except the
    last part of a ``missing`` error, which is the missing key.
    """
    loc = err["loc"]
    path: list[Any] = []
    node, tag_at = data, None
    for i, part in enumerate(loc):
        if isinstance(part, str) and (part.startswith("function-") or part == "[key]"):
            continue
        if data is _NO_DATA or (i == len(loc) - 1 and err["type"] == "missing"):
            path.append(part)
        elif isinstance(node, dict) and part in node or (
                isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)):
            path.append(part)
            node = node[part]
        elif tag_at is None:
            tag_at = i
    return path, tag_at


def _key_text(part: Any) -> str:
    text = _short(part) if not isinstance(part, str) else part
    if not text.isprintable():
        text = repr(text)
    return text if len(text) <= 60 else text[:57] + "..."


def short_value(value: Any) -> str:
    """``value`` as shown in a message: quoted if text, cut to 60 characters, one line."""
    return _short(value) or f"a {type(value).__name__}"


def _short(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return ""
    try:
        text = repr(value) if isinstance(value, str) else str(value)
    except ValueError:  # an int past Python's digit limit for str() (YAML 0x..., 0b..., 1:2:3)
        text = f"a {value.bit_length()}-bit integer" if isinstance(value, int) else "a huge value"
    return text if len(text) <= 60 else text[:57] + "..."


def _enum_words(expected: str) -> list[str]:
    return [w.strip(" '\"") for w in expected.replace(" or ", ",").split(",") if w.strip()]


def _allowed_keys(model: type[BaseModel], path: list[str]) -> list[str]:
    current: Any = model
    for part in path:
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return []
        current = _inner_model(fields[part].annotation)
    fields = getattr(current, "model_fields", None) or {}
    return [f.alias or name for name, f in fields.items()]


def _inner_model(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _inner_model(arg)
        if found is not None:
            return found
    return None
