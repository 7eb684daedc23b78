"""Scenario keys for work that varies from micro-batch to micro-batch (issue 15, item 2):
the document lengths of the training data, ``training.documents``.

Cross-field rules (a document length against ``model.seq_len``) live in
:mod:`simulator.config.checks`; the sampling in :mod:`simulator.workload.documents`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict, model_validator

Tokens = Annotated[int, Strict(), Field(ge=1, le=100_000_000)]


class LengthDistribution(StrEnum):
    LOGNORMAL = "lognormal"
    EMPIRICAL = "empirical"


class DocumentsConfig(BaseModel):
    """Document lengths (tokens) of the training data.

    ``lognormal``: lengths ``max(1, round(X))`` with ``X`` lognormal of mean ``mean_tokens``
    and log-space standard deviation ``sigma`` (``mu = ln(mean) - sigma^2 / 2``).
    ``empirical``: lengths drawn uniformly, with replacement, from ``lengths``.
    ``packing``: documents are concatenated and cut into sequences of ``model.seq_len`` tokens
    (a document's remainder opens the next sequence; attention is masked per document, as
    with Megatron's ``--reset-attention-mask`` or TransformerEngine's THD format), so every
    sequence has ``seq_len`` tokens and its attention costs ``sum l_i^2``; without packing a
    sequence is one document cut at ``seq_len``, unpadded (linears cost its ``l`` tokens,
    attention ``l^2``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    distribution: LengthDistribution
    mean_tokens: Annotated[float, Strict(), Field(ge=1.0, le=1e8, allow_inf_nan=False)] | None = None
    sigma: Annotated[float, Strict(), Field(ge=0.0, le=5.0, allow_inf_nan=False)] = 0.0
    lengths: Annotated[list[Tokens], Field(min_length=1, max_length=1_000_000)] | None = None
    packing: Annotated[bool, Strict()] = True

    @model_validator(mode="after")
    def _parameters_of_the_distribution(self) -> DocumentsConfig:
        if self.distribution == LengthDistribution.LOGNORMAL:
            if self.mean_tokens is None:
                raise ValueError("lognormal needs mean_tokens (the mean document length)")
            if self.lengths is not None:
                raise ValueError("lengths is for the empirical distribution; lognormal takes "
                                 "mean_tokens and sigma")
        else:
            if self.lengths is None:
                raise ValueError("empirical needs lengths (a list of document lengths in tokens)")
            if self.mean_tokens is not None or self.sigma != 0.0:
                raise ValueError("mean_tokens and sigma are for the lognormal distribution; "
                                 "empirical takes lengths")
        return self
