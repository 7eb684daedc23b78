"""Stage work under a document-length distribution (issue 15, item 2): what the analytical
engine prices (the mean micro-batch) and what the discrete-event engine varies per micro-batch.

A stage's chunk at full length splits into its attention core ``A`` (work ~ ``sum l_i^2``,
:func:`simulator.cost.layer.attention_seconds` times its layers) and the rest ``T = F - A``
(work ~ tokens). A micro-batch with token factor ``t`` and attention factor ``a``
(:mod:`simulator.workload.documents`) takes

    F(t, a) = F + T (t - 1) + A (a - 1)                         (forward; backward alike)

so forward and backward scale differently (flash attention's backward is 2.5x its forward,
the linears' 2x). The analytical engine prices ``F(E[t], E[a])``, the mean micro-batch; the
discrete-event engine draws every micro-batch's ``(t, a)`` and the step waits for the
slowest, ``F(E[t], E[a]) + T (t - E[t]) + A (a - E[a])`` in the same floating-point order on
both of its paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from simulator.config.variability import DocumentsConfig
from simulator.engine.context import Context
from simulator.workload.documents import expected_work


@dataclass(frozen=True)
class DocumentParts:
    """A stage's forward and backward seconds per microbatch (the mean micro-batch) and
    ``split``: (attention forward, attention backward, per-token forward, per-token backward)
    at full length (zeros without documents)."""

    forward: float
    backward: float
    split: tuple[float, float, float, float]


def document_parts(ctx: Context, attention: tuple[float, float] | None, layers: int,
                   forward: float, backward: float) -> DocumentParts:
    """The stage's work at the mean micro-batch (module docstring); ``attention`` is one
    layer's (forward, backward) attention seconds, None without documents."""
    if attention is None:
        return DocumentParts(forward, backward, (0.0, 0.0, 0.0, 0.0))
    t, a = mean_work(ctx)
    att_f, att_b = layers * attention[0], layers * attention[1]
    tok_f, tok_b = forward - att_f, backward - att_b
    return DocumentParts(forward + tok_f * (t - 1.0) + att_f * (a - 1.0),
                         backward + tok_b * (t - 1.0) + att_b * (a - 1.0), (att_f, att_b, tok_f, tok_b))


def mean_work(ctx: Context) -> tuple[float, float]:
    """``(E[t], E[a])`` of the scenario's documents (:func:`expected_work`, memoised)."""
    sc = ctx.scenario
    return _expected(sc.training.documents.model_dump_json(), sc.model.seq_len, sc.simulate.seed)


@lru_cache(maxsize=16)
def _expected(config: str, seq_len: int, seed: int) -> tuple[float, float]:
    return expected_work(DocumentsConfig.model_validate_json(config), seq_len, seed)


def document_summary(ctx: Context) -> dict | None:
    """The result's ``sequences`` field: the mean work factors and what each engine does."""
    config = ctx.scenario.training.documents
    if config is None:
        return None
    t, a = mean_work(ctx)
    return {"distribution": config.distribution.value, "packing": config.packing,
            "mean_tokens_factor": t, "mean_attention_factor": a,
            "analytical": "prices the mean micro-batch, F + T (E[t] - 1) + A (E[a] - 1)",
            "des": "draws every micro-batch's (t, a); the step waits for the slowest"}
