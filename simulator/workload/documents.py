"""Per-sequence work from a document-length distribution (issue 15, item 2).

A sequence of ``S`` (``model.seq_len``) token slots holds pieces of documents of lengths
``l_i``; its work, relative to a sequence that is one ``S``-token document, is

    tokens     t = sum_i l_i / S            (linear layers, norms, everything per token)
    attention  a = sum_i l_i^2 / S^2        (causal attention masked per document)

With packing (``training.documents.packing``) documents are concatenated and cut every ``S``
tokens (Megatron's GPTDataset sample index), so ``t = 1`` and only attention varies; without
packing a sequence is one document cut at ``S``: ``t = l / S``, ``a = t^2``. A micro-batch of
``b`` sequences has the mean ``t`` and ``a`` of its sequences. All documents of length ``S``
give ``t = a = 1`` exactly: the fixed-length job.

Balancing (what-if "redistribute sequences"): per step, the step's sequences sorted by
``t + rho a`` (``rho`` the attention share of the work) are dealt boustrophedon over the
``dp x m`` micro-batch slots, alternating the replica order every slot, so every micro-batch
slot gets sequences of similar cost on every replica (a greedy sorted-deal heuristic, as in
Megatron's and WLB-LLM's length balancing: Wang et al., "WLB-LLM", OSDI'25).
"""

from __future__ import annotations

import numpy as np

from simulator.config.variability import DocumentsConfig, LengthDistribution

DOCS_PER_DRAW = 1 << 20
"""Documents drawn at a time (8 MB of int64)."""
SAMPLE_SEQUENCES = 1 << 16
"""Sequences behind the expected work (:func:`expected_work`), at most."""
SAMPLE_DOCUMENTS = 1 << 22
"""Documents behind the expected work, at most, when sequences hold many short documents:
:func:`expected_work` draws ``min(SAMPLE_SEQUENCES, max(MIN_SAMPLE_SEQUENCES, SAMPLE_DOCUMENTS x
mean / S))`` sequences (the estimate's spread falls with the documents drawn, not the sequences;
32 MB of int64)."""
MIN_SAMPLE_SEQUENCES = 16
"""Sequences behind the expected work, at least."""


class DocumentStream:
    """Sequences of ``seq_len`` tokens filled from ``config``'s document lengths, drawn with
    ``rng``; :meth:`sequences` returns the next ``n`` sequences' ``(t, a)`` (each shape (n,))."""

    def __init__(self, config: DocumentsConfig, seq_len: int, rng: np.random.Generator):
        self.config, self.seq_len, self.rng = config, seq_len, rng
        self.carry = 0          # tokens of the last document not yet placed (packing)

    def _lengths(self, n: int) -> np.ndarray:
        """``n`` document lengths (int64 tokens, >= 1)."""
        c = self.config
        if c.distribution == LengthDistribution.EMPIRICAL:
            return np.asarray(c.lengths, dtype=np.int64)[self.rng.integers(0, len(c.lengths), n)]
        mu = np.log(c.mean_tokens) - c.sigma ** 2 / 2
        return np.maximum(1, np.rint(self.rng.lognormal(mu, c.sigma, n))).astype(np.int64)

    def sequences(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if not self.config.packing:
            t = np.minimum(self._lengths(n), self.seq_len) / self.seq_len
            return t, t * t
        per_call = max(1, self.sequences_holding(SAMPLE_DOCUMENTS))
        if n <= per_call:
            return np.ones(n), self._packed(n)
        return np.ones(n), np.concatenate([self._packed(min(per_call, n - i)) for i in range(0, n, per_call)])

    def _packed(self, n: int) -> np.ndarray:
        """Attention factor of ``n`` packed sequences: pieces between document ends and the
        sequence boundaries ``S, 2S, ...``, squared and summed per sequence."""
        s, total = self.seq_len, n * self.seq_len
        ends, reached = [np.array([self.carry], dtype=np.int64)], self.carry
        while reached < total:
            lengths = self._lengths(DOCS_PER_DRAW if total - reached > DOCS_PER_DRAW else
                                    max(16, 2 * int((total - reached) / self.mean_length()) + 16))
            step = reached + np.cumsum(lengths)
            ends.append(step)
            reached = int(step[-1])
        ends = np.concatenate(ends)
        ends = ends[ends > 0]
        inside = ends[ends < total]
        self.carry = int(ends[ends >= total][0] - total)
        # two sorted runs: a stable sort merges them in linear time; a document end on a sequence
        # boundary gives an empty piece, which adds nothing
        cuts = np.sort(np.concatenate([inside, np.arange(0, total + 1, s, dtype=np.int64)]), kind="stable")
        pieces = np.diff(cuts).astype(np.float64)
        owner = cuts[:-1] // s
        return np.bincount(owner, weights=pieces * pieces, minlength=n) / float(s * s)

    def sequences_holding(self, documents: int) -> int:
        """Sequences that ``documents`` documents of the mean length fill (rounded down)."""
        return int(documents * self.mean_length() / self.seq_len)

    def mean_length(self) -> float:
        """The distribution's mean document length (tokens)."""
        c = self.config
        return float(c.mean_tokens if c.distribution == LengthDistribution.LOGNORMAL
                     else np.mean(c.lengths))


def microbatch_work(t: np.ndarray, a: np.ndarray, micro_batch: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean ``(t, a)`` of each micro-batch: consecutive groups of ``micro_batch`` sequences
    along the last axis."""
    shape = (*t.shape[:-1], t.shape[-1] // micro_batch, micro_batch)
    return t.reshape(shape).mean(axis=-1), a.reshape(shape).mean(axis=-1)


def balanced(t: np.ndarray, a: np.ndarray, rho: float, dp: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Each step's sequences (rows of shape (k, dp m b)) re-dealt over the micro-batch slots
    (module docstring); returns them in the (replica, micro-batch, sequence) order."""
    k, n = t.shape
    order = np.argsort(-(t + rho * a), axis=1, kind="stable")
    slots = dp * m
    rank = np.arange(n)
    deal, within = rank % slots, rank // slots
    deal = np.where(within % 2 == 0, deal, slots - 1 - deal)      # boustrophedon per round
    slot, replica = deal // dp, deal % dp
    replica = np.where(slot % 2 == 0, replica, dp - 1 - replica)  # alternate replicas per slot
    target = (replica * m + slot) * (n // slots) + within
    out_t, out_a = np.empty_like(t), np.empty_like(a)
    rows = np.arange(k)[:, None]
    out_t[rows, target[None, :]] = np.take_along_axis(t, order, axis=1)
    out_a[rows, target[None, :]] = np.take_along_axis(a, order, axis=1)
    return out_t, out_a


def expected_work(config: DocumentsConfig, seq_len: int, seed: int) -> tuple[float, float]:
    """``(E[t], E[a])`` per sequence: the mean over :data:`SAMPLE_SEQUENCES` sequences drawn
    from ``default_rng([seed, 15])`` (deterministic; exact when every document has one length
    that fills whole sequences)."""
    stream = DocumentStream(config, seq_len, np.random.default_rng([seed, 15]))
    by_documents = stream.sequences_holding(SAMPLE_DOCUMENTS)
    t, a = stream.sequences(min(SAMPLE_SEQUENCES, max(MIN_SAMPLE_SEQUENCES, by_documents)))
    return float(t.mean()), float(a.mean())
