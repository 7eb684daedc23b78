"""Tensor-parallel communication a layer leaves on its critical path, per stack.

A layer has two tensor-parallel sites (attention and MLP). With sequence parallelism each
site runs, per pass, an all-gather before its column-parallel linear and a reduce-scatter
after its row-parallel linear; backward runs the mirror images (a reduce-scatter of the
column-parallel input gradient, an all-gather of the row-parallel output gradient).
Without it, one all-reduce per site and pass (Shoeybi et al. 2019; Korthikanti et al.
2022). What the stack does with them (``tensor_parallel`` in the profile):

- in line (Megatron-LM 2021, plain DTensor TP): all exposed;
- ``overlap_dgrad_comm`` (Megatron-Core's ``LinearWithGradAccumulationAndAsyncCommunication``):
  the backward input-gradient collective of QKV and fc1 runs while their weight-gradient
  GEMMs do, its NCCL kernels holding a share ``f`` of the SMs (``nccl_share``): exposed
  ``max(w + f min(c, w / (1 - f)), c) - w`` for the GEMM's ``w`` (``max(0, c - w)`` at ``f`` = 0);
- ``comm_overlap`` (TransformerEngine userbuffers, PyTorch async TP): a collective cut into
  ``t`` chunks pipelined with its GEMM's chunks is exposed
  ``(t-1) max(c/(t-1), g/t) + g/t - g`` for comm ``c`` and GEMM ``g`` (Wang et al., ASPLOS
  2023). PyTorch's micro-pipeline pass (``torch/_inductor/fx_passes/micro_pipeline_tp.py``)
  fuses an all-gather with the matmuls that consume it and a reduce-scatter with the one
  matmul that produces it; the backward input gradient of wq/wk/wv (and w1/w3) is a sum of
  several matmuls, so that reduce-scatter stays an exposed NCCL call
  (``comm_overlap_input_grad: false``);
- ``userbuffers`` (TransformerEngine ``initialize_ub``; NeMo/Megatron-Bridge ``ub_cfg``
  files name each GEMM's method): each forward collective is pipelined with its own GEMM.
  The all-gather before QKV or fc1 runs as a ring exchange (``t`` chunks,
  :func:`chunked_exposed`). The reduce-scatter after proj or fc2 is either a ring exchange
  too (``rs_splits`` 0) or TE's ``pipeline`` method: ``n`` GEMM chunks, the reduce-scatter
  of chunk ``i`` running during the GEMM of chunk ``i+1``, so the last chunk's is left after
  the GEMM, exposed ``g'/n + (n-1) max(g'/n, c/n) + c/n - g`` (:func:`pipelined_rs_exposed`).
  With ``set_sm_margin`` the GEMM runs on the SMs the communication kernel leaves it,
  ``g' = g S / (S - num_sm)`` (``rs_sm_margin``). Backward keeps the pooled chunk model
  (TE's ``bulk`` overlaps, no SM margin in the configs read);
- ``layout_copies``: PyTorch's functional collectives gather and scatter on dim 0 only; on
  the sequence dim of a batch-first [b, s, h] activation ``all_gather_tensor`` and
  ``reduce_scatter_tensor`` add a chunk-and-cat copy of the full activation (read and write,
  ``2 b s h`` bytes at HBM speed) unless the leading dims are 1
  (``torch.distributed._functional_collectives``, ``_maybe_view_chunk_cat``); fused async-TP
  ops do without it. Megatron keeps activations sequence-first ([s, b, h]): no copy;
- ``sum_after_exchange`` (PyTorch async TP, ``_fused_matmul_reduce_scatter_impl`` in
  ``torch/distributed/_symmetric_memory``): the fused op computes the tp partial products,
  exchanges them, and sums them with ``torch.sum`` over the stacked partials: a memory-bound
  pass reading ``n`` bytes (the full activation) and writing ``n/t``;
- ``fp8_all_gather`` (torchao ``Float8ColwiseParallel`` / ``PrepareFloat8ModuleInput``;
  TransformerEngine's ``gather_along_first_dim`` with a quantizer): under fp8 the forward
  all-gathers move the quantized input's row-wise data and scales (:func:`gather_scale`);
- ``fp8_grad_all_gather`` (torchao ``Float8RowwiseParallel._prepare_output_fn``, eab345c:
  ``NoopFwToFloat8BwDynamic`` is applied after the output's ``redistribute``, so backward
  casts the output gradient to fp8 on its sequence shard and then all-gathers it; TE's
  ``grad_output_preprocess``): under fp8 the backward all-gathers are quantized too;
- ``fused_pairs`` (torch 2.6 ``micro_pipeline_tp.py``: ``_find_consumer_matmuls``,
  ``_find_producer_matmul``; ``_pipelined_multi_all_gather_and_consume`` in
  ``torch/distributed/_symmetric_memory``): a fused all-gather is pipelined only with the
  matmuls that take the gathered tensor as their left operand (forward: QKV, fc1; backward:
  the data gradient of proj, fc2, whose weight gradient reads the transposed tensor), a
  fused reduce-scatter only with the matmul producing its input (proj, fc2), each pair
  exposed :func:`chunked_exposed`; before its first chunk the fused all-gather copies the
  local shard into the symmetric-memory buffer (read and write ``n/t`` bytes) and waits on
  a barrier, a step the source leaves un-overlapped on purpose (its scheduling comment);
  the fused ops run their matmul once per shard, ``t`` GEMMs of ``M/t`` rows, so the pairs'
  GEMM seconds are those chunks' (``simulator.cost.layer._chunked_linears``) and what they
  take over the whole GEMM is exposed too;
- ``fused_gather_major`` (torch 2.6 ``_fused_all_gather_matmul_impl`` returns
  ``unflatten(A_flat)`` and its products as ``view(t, s/t, b, -1).flatten(0, 1).movedim(0,
  1)``, i.e. stored sequence-major; ``fuse_matmul_reduce_scatter`` forces the matmul input
  to the same order, ``restride_A_for_fused_matmul_reduce_scatter``): a [b, s, .] tensor
  stored [s, b, .] cannot be flattened to [b s, .] as a view, so with micro-batch above 1
  each weight gradient copies its operands that came out of or went into a fused op, per
  site ``memory_time(2 (2 n + r))`` in backward, ``n`` the gathered activation's bytes and
  ``r`` the row-parallel linear's input (proj: ``n/t``, fc2: ``n f / (h t)``). Vanilla
  TP's chunk-and-cat output is batch-major and flattens as a view. Not under fp8, whose
  cast-and-transpose of every weight-gradient operand (``FP8_CAST_BYTES`` in
  :mod:`simulator.cost.fp8_casts`) already rewrites them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from simulator.collectives import Op
from simulator.config.hardware import Dtype
from simulator.config.stack import Fp8Scaling, StackProfile
from simulator.cost.collective import PricedCollective
from simulator.cost.compute import ComputeModel
from simulator.cost.nccl_sms import excess_beside
from simulator.workload.fp8_weight_cache import FP8_BLOCK, MX_BLOCK, NVFP4_BLOCK

FP8_GATHER_SCALE = 0.5
"""Bytes of an fp8 all-gather over its bf16 size (1 B over 2 B per element)."""

_GATHER_BYTES = {Fp8Scaling.MXFP8: 1.0 + 1.0 / MX_BLOCK, Fp8Scaling.NVFP4: 0.5 + 1.0 / NVFP4_BLOCK,
                 Fp8Scaling.BLOCKWISE: 1.0 + 4.0 / FP8_BLOCK}
"""Bytes per element of a block-scaled quantized all-gather: the row-wise data and one scale
byte per block (MXFP8: an E8M0 per 32; NVFP4: packed 4-bit values and an E4M3 per 16; blockwise
fp8: an fp32 per 1 x 128 tile, ``_all_gather_fp8_blockwise``).
TransformerEngine 2.x gathers only the row-wise copy (``set_usage(rowwise=True,
columnwise=False)`` before ``gather_along_first_dim``; ``_all_gather_mxfp8``,
``_all_gather_nvfp4`` gather data and scales)."""


def gather_scale(scaling: Fp8Scaling) -> float:
    """Bytes of a quantized all-gather over its bf16 size: 1/2 with one scale per tensor,
    ``(1 + 1/32) / 2`` under MXFP8, ``(1 + 4/128) / 2`` under blockwise fp8, ``(1/2 + 1/16) / 2``
    under NVFP4."""
    return _GATHER_BYTES.get(scaling, 1.0) * FP8_GATHER_SCALE


@dataclass(frozen=True)
class TpSite:
    """One site's tensor-parallel collectives in forward and in backward, and the seconds of
    the chunk-and-cat copy each NCCL collective adds (0 without ``layout_copies``)."""

    forward: tuple[PricedCollective, ...]
    backward: tuple[PricedCollective, ...]
    copy_forward: tuple[float, ...]
    copy_backward: tuple[float, ...]
    sum_s: float = 0.0
    """Seconds of the fused reduce-scatter's separate sum, per reduce-scatter."""
    backward_sums: bool = True
    """Whether the backward's reduce-scatters are fused too (``comm_overlap_input_grad``)."""
    stage_forward: float = 0.0
    """Seconds of a fused forward all-gather's local-shard copy (``fused_pairs``)."""
    stage_backward: float = 0.0
    """Seconds of a fused backward all-gather's local-shard copy (``fused_pairs``)."""
    flatten_s: tuple[float, float] = (0.0, 0.0)
    """Backward seconds of the weight gradients' flattening copies, attention and MLP site
    (``fused_gather_major``)."""
    sm_count: int = 0
    """SMs of the GPU (for ``rs_sm_margin``)."""
    nccl_share: float = 0.0
    """Share of the SMs the group's NCCL kernels hold while a collective runs beside a GEMM
    (``overlap_dgrad_comm``; :func:`simulator.cost.nccl_sms.nccl_sm_share`)."""
    count: int = 2
    """How many such sites the layer has: attention and MLP, or only attention in a mixture
    of experts whose dispatcher gathers over the group
    (:func:`simulator.cost.in_layer.tp_site_count`)."""

    def pairs(self, backward: bool):
        """(collective, copy seconds) of each of the site's collectives in one pass."""
        if backward:
            return zip(self.backward, self.copy_backward, strict=True)
        return zip(self.forward, self.copy_forward, strict=True)

    def comm(self, backward: bool) -> float:
        """Seconds of the site's collectives in one pass, without copies."""
        return sum(c.time_s for c, _ in self.pairs(backward))

    def in_line(self, backward: bool) -> float:
        """Seconds of the site's collectives and their copies in one pass."""
        return sum(c.time_s + k for c, k in self.pairs(backward))

    def busy(self, backward: bool) -> float:
        """Seconds the site's tensor-parallel work takes in one pass, hidden or not:
        collectives, their copies, fused sums, staging copies and (backward, the mean of the
        two sites) the weight gradients' flattening copies."""
        fused = self.backward_sums or not backward
        sums = self.sum_s * sum(c.op == Op.REDUCE_SCATTER for c, _ in self.pairs(backward)) * fused
        staged = self.stage_backward + sum(self.flatten_s) / self.count if backward else self.stage_forward
        return self.in_line(backward) + sums + staged

    def gathers(self, backward: bool) -> float:
        """Seconds of the site's all-gathers (with their copies) in one pass."""
        return sum(c.time_s + k for c, k in self.pairs(backward) if c.op == Op.ALL_GATHER)


def tp_site(stack: StackProfile, compute: ComputeModel, found: list[PricedCollective],
            micro_batch: int, tp_degree: int,
            row_inputs: tuple[float, float] = (0.0, 0.0), count: int = 2,
            nccl_share: float = 0.0) -> TpSite:
    """The site of ``found`` (one site's collectives, bf16 sized) under ``stack``, of which
    the layer has ``count``; ``row_inputs`` are the bytes of proj's and fc2's inputs
    (``fused_gather_major``; only the first ``count`` sites'); ``nccl_share`` the share of
    the SMs the group's NCCL kernels hold (:attr:`TpSite.nccl_share`)."""
    tp = stack.tensor_parallel
    fp8 = compute.dtype == Dtype.FP8
    scale = gather_scale(stack.kernels.fp8_scaling)
    forward = _gathers_fp8(found, fp8 and tp.fp8_all_gather, scale)
    backward = _gathers_fp8(found, fp8 and tp.fp8_grad_all_gather, scale)
    copies = tp.layout_copies and micro_batch > 1

    def copy_s(collectives) -> tuple[float, ...]:
        return tuple(float(compute.memory_time(2.0 * c.size_bytes)) if copies else 0.0
                     for c in collectives)

    def stage_s(collectives) -> float:
        gathered = _gathered_bytes(collectives)
        staged = tp.fused_pairs and tp.comm_overlap and gathered > 0.0
        return float(compute.memory_time(2.0 * gathered / tp_degree)) if staged else 0.0
    sums = [c.size_bytes * (1.0 + 1.0 / tp_degree) for c in found if c.op == Op.REDUCE_SCATTER]
    sum_s = float(compute.memory_time(sums[0])) if sums and tp.sum_after_exchange else 0.0
    return TpSite(forward, backward, copy_s(forward), copy_s(backward), sum_s,
                  tp.comm_overlap_input_grad, stage_s(forward), stage_s(backward),
                  _flatten_s(stack, compute, found, micro_batch, row_inputs[:count]), compute.gpu.sm_count,
                  nccl_share, count)


def _flatten_s(stack: StackProfile, compute: ComputeModel, found: list[PricedCollective],
               micro_batch: int, row_inputs: tuple[float, float]) -> tuple[float, float]:
    """Per site, ``memory_time(2 (2 n + r))``: the weight gradients' copies of gather-major
    operands (module docstring, ``fused_gather_major``); 0 unless it applies."""
    tp = stack.tensor_parallel
    gathered = _gathered_bytes(found)
    on = (tp.fused_gather_major and tp.fused_pairs and tp.comm_overlap and gathered > 0.0
          and micro_batch > 1 and compute.dtype != Dtype.FP8)
    if not on:
        return 0.0, 0.0
    return tuple(float(compute.memory_time(2.0 * (2.0 * gathered + r))) for r in row_inputs)


def _gathered_bytes(collectives) -> float:
    """Bytes of a site's first all-gather (its gathered activation), 0 without one."""
    return next((c.size_bytes for c in collectives if c.op == Op.ALL_GATHER), 0.0)


def _gathers_fp8(found: list[PricedCollective], fp8: bool, scale: float) -> tuple[PricedCollective, ...]:
    """``found`` with its all-gathers quantized (``scale`` times their bytes) when ``fp8``."""
    return tuple(replace(c, size_bytes=c.size_bytes * scale) if fp8 and c.op == Op.ALL_GATHER else c
                 for c in found)


def tp_exposed(stack: StackProfile, site: TpSite, tp: int, sites_gemm,
               wgrads: tuple[float, float], pairs=None, excess=None) -> tuple[float, float]:
    """(forward, backward) exposed tensor-parallel seconds of one layer (module docstring).

    ``sites_gemm(backward)`` gives the (attention, MLP) GEMM seconds of a pass; ``wgrads``
    the weight-gradient GEMM seconds of QKV and fc1; ``pairs(backward)`` (needed with
    ``fused_pairs``) the (all-gather, reduce-scatter) partner GEMM seconds of each site, as
    the fused ops run them, and ``excess(backward)`` what those chunked GEMMs take over the
    whole ones in the pass (added to the exposure; none if not given).
    """
    if not site.forward:
        return 0.0, 0.0
    profile = stack.tensor_parallel
    gathers = any(c.op == Op.ALL_GATHER for c in site.forward)
    if profile.comm_overlap and profile.fused_pairs and gathers and not profile.comm_overlap_input_grad:
        forward, backward = _paired(site, tp, pairs)
        return (forward + excess(False), backward + excess(True)) if excess else (forward, backward)
    if profile.comm_overlap and profile.userbuffers and pairs is not None and _gathers_and_scatters(site):
        _, backward = _overlapped(profile.comm_overlap_input_grad, site, tp, sites_gemm)
        return _userbuffers_forward(profile, site, tp, pairs), backward
    if profile.comm_overlap:
        return _overlapped(profile.comm_overlap_input_grad, site, tp, sites_gemm)
    forward, backward = site.count * site.in_line(False), site.count * site.in_line(True)
    if not profile.overlap_dgrad_comm:
        return forward, backward
    dgrad_comm = site.backward[-1].time_s       # the all-reduce, or the reduce-scatter
    return forward, sum(site.in_line(True) - dgrad_comm + excess_beside(w, dgrad_comm, site.nccl_share)
                        for w in wgrads[:site.count])


def _overlapped(input_grad: bool, site: TpSite, tp: int, sites_gemm) -> tuple[float, float]:
    """Chunk-pipelined exposure; without ``input_grad`` the backward's reduce-scatters (or
    all-reduces) of the input gradient stay in line, with their copies."""
    forward = sum(chunked_exposed(site.comm(False), g, tp) + site.sum_s
                  for g in sites_gemm(False))
    if input_grad:
        fused, in_line = site.comm(True), site.sum_s
    else:
        fused = sum(c.time_s for c in site.backward if c.op == Op.ALL_GATHER)
        in_line = site.in_line(True) - site.gathers(True)
    backward = sum(chunked_exposed(fused, g, tp) + in_line for g in sites_gemm(True))
    return forward, backward


def _gathers_and_scatters(site: TpSite) -> bool:
    """Whether the site's forward runs all-gathers and reduce-scatters (sequence parallel)."""
    ops = {c.op for c in site.forward}
    return Op.ALL_GATHER in ops and Op.REDUCE_SCATTER in ops


def _userbuffers_forward(profile, site: TpSite, tp: int, pairs) -> float:
    """Forward exposure under ``userbuffers`` (module docstring): per site, the all-gather
    against its column-parallel GEMM and the reduce-scatter against its row-parallel GEMM,
    the latter by ring exchange or TE's ``pipeline`` method with its SM margin."""
    exposed = 0.0
    for index, (g_col, g_row) in enumerate(pairs(False)):
        splits, margin = profile.rs_splits[index], profile.rs_sm_margin[index]
        slow = site.sm_count / max(site.sm_count - margin, 1) if site.sm_count else 1.0
        for c in site.forward:
            if c.op == Op.ALL_GATHER:
                exposed += chunked_exposed(c.time_s, g_col, tp)
            elif splits:
                exposed += pipelined_rs_exposed(c.time_s, g_row, splits, slow)
            else:
                exposed += chunked_exposed(c.time_s, g_row * slow, tp) + g_row * (slow - 1.0)
    return exposed


def pipelined_rs_exposed(comm: float, gemm: float, splits: int, slow: float = 1.0) -> float:
    """Exposed seconds of a reduce-scatter ``comm`` pipelined after ``gemm`` in ``splits``
    chunks, the GEMM slowed by ``slow`` (its SM margin): ``g'/n + (n-1) max(g'/n, c/n) + c/n
    - g`` with ``g' = slow g`` (TE ``pipeline`` method; module docstring)."""
    n, chunk = splits, gemm * slow / splits
    return chunk + (n - 1) * max(chunk, comm / n) + comm / n - gemm


def _paired(site: TpSite, tp: int, pairs) -> tuple[float, float]:
    """``fused_pairs`` exposure (module docstring): per site, forward
    ``x(AG, g_col) + x(RS, g_row) + sum + stage`` and backward ``x(AG, dgrad_row) + stage``
    plus the in-line input-gradient reduce-scatter with its copy, where ``x`` is
    :func:`chunked_exposed` and ``g`` the partner GEMM seconds of ``pairs(backward)``."""
    def fused(c: PricedCollective, ag: float, rs: float) -> float:
        return chunked_exposed(c.time_s, ag if c.op == Op.ALL_GATHER else rs, tp)
    forward = sum(sum(fused(c, ag, rs) for c in site.forward) + site.sum_s + site.stage_forward
                  for ag, rs in pairs(False))
    gathers = [c for c in site.backward if c.op == Op.ALL_GATHER]
    in_line = site.in_line(True) - site.gathers(True)
    backward = sum(sum(chunked_exposed(c.time_s, ag, tp) for c in gathers)
                   + site.stage_backward + in_line for ag, _ in pairs(True))
    return forward, backward + sum(site.flatten_s)


def chunked_exposed(comm: float, gemm: float, tp: int) -> float:
    """Exposed seconds of ``comm`` pipelined with ``gemm`` in ``tp`` chunks (module docstring)."""
    steps = max(tp - 1, 1)
    return max(0.0, steps * max(comm / steps, gemm / tp) + gemm / tp - gemm)


def regathered(site: TpSite) -> float:
    """Seconds of re-running one site's forward collectives other than reduce-scatters
    (all-gathers, or all-reduces without sequence parallelism), with their copies: what
    torchtitan's per-op checkpointing recomputes (its save list keeps reduce-scatters)."""
    return sum(c.time_s + k for c, k in site.pairs(False) if c.op != Op.REDUCE_SCATTER)


def rerun_fused_gathers(site: TpSite, tp: int, partners: Iterable[float]) -> float:
    """Exposed seconds of re-running a layer's forward all-gathers, each fused again (async TP's
    all-gather-matmul) with only the recomputed matmul that consumes it, ``partners`` that
    GEMM's seconds per site: ``sum x(AG, g) + stage`` (:func:`chunked_exposed`); the
    reduce-scatters are not re-run (torchtitan's per-op checkpointing keeps them)."""
    gathers = [c.time_s for c in site.forward if c.op == Op.ALL_GATHER]
    return sum(sum(chunked_exposed(ag, g, tp) for ag in gathers) + site.stage_forward for g in partners)
