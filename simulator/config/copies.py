"""Shallow copies of validated configuration models with some fields replaced.

A search writes each of its thousands of layouts into the scenario without validating
it again; pydantic's generic ``model_copy`` copies the instance's state piece by piece
(``copy.copy`` of each part) before applying the update, which is most of its cost.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_set = object.__setattr__


def updated(model: M, update: dict) -> M:
    """``model.model_copy(update=update)``: a shallow copy of ``model`` with the fields of
    ``update`` replaced, not validated.

    Parameters
    ----------
    model : pydantic.BaseModel
        The model to copy.
    update : dict
        Field names and their new values.

    Returns
    -------
    pydantic.BaseModel
        The same state ``model_copy`` gives (fields in the same order, the updated ones
        added to the fields set); made directly for a model without extra fields or
        private attributes, by ``model_copy`` otherwise.
    """
    if model.__pydantic_extra__ is not None or model.__pydantic_private__ is not None:
        return model.model_copy(update=update)
    out = object.__new__(type(model))
    _set(out, "__dict__", {**model.__dict__, **update})
    _set(out, "__pydantic_extra__", None)
    _set(out, "__pydantic_fields_set__", model.__pydantic_fields_set__ | update.keys())
    _set(out, "__pydantic_private__", None)
    return out
