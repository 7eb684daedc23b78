"""How often a routed token reaches a GPU or a server: the arithmetic of deduplicated dispatch.

A mixture-of-experts token picks ``k`` distinct experts of ``E``. With the experts spread
evenly and the choice balanced (every ``k``-subset equally likely: the load the model assumes,
which Megatron-Core's ``moe_router_force_load_balancing`` enforces), a set of ``m`` experts
(those of one GPU, or of one server) receives the token with probability

    P(m) = 1 - C(E - m, k) / C(E, k)

(hypergeometric: none of the ``k`` picks falls in the set). The all-to-all dispatcher sends one
copy per (token, expert) pair, ``k m / E`` copies to the set on average; DeepEP's and HybridEP's
dispatch kernels send one copy per (token, destination GPU) inside a server and one per
(token, destination server) across servers, forwarding over NVLink there
(deepseek-ai/DeepEP ``docs/legacy.md``, "Normal kernels with NVLink and RDMA forwarding";
``docs/research/stack_facts.md`` section 47), which is ``P(m)`` copies.

Group-limited routing (``model.router_groups`` ``g``, ``router_group_topk`` ``t``: DeepSeek-V3's
8 and 4) first picks ``t`` of ``g`` contiguous expert groups, every ``t``-subset equally likely,
then the ``k`` experts among the ``t E / g`` experts of those groups. A set holding ``c_j`` experts
of group ``j`` is then missed with probability

    sum over the t-subsets S of C(t E/g - sum_{j in S} c_j, k) / C(t E/g, k) / C(g, t),

summed here over the subsets' covered totals (a count of subsets by total, built group by group).

Round-robin routing (``model.routing: round_robin``, NeMo AutoModel's ``FakeBalancedGate``:
token ``t`` takes experts ``k t + j`` mod ``E``, ``j < k``) starts a token's block at a multiple
of ``g = gcd(k, E)``, each of the ``E / g`` starts equally often; the set is reached by the
share of those blocks ``[s, s + k)`` (mod ``E``) that overlap it. With ``k`` dividing a GPU's
contiguous expert range every block lies on one GPU: a token reaches one GPU, where random
routing reaches ``G P(E / G)`` of ``G``.
"""

from __future__ import annotations

from math import comb, gcd

from simulator.config.scenario import ModelConfig, Routing


def hit_probability(experts: int, top_k: int, held: int, groups: int = 1, group_topk: int | None = None,
                    first: int = 0, round_robin: bool = False) -> float:
    """Probability that a token routed to ``top_k`` of ``experts`` experts reaches the ``held``
    experts from index ``first`` on (dimensionless, in [0, 1]; module docstring), with
    group-limited routing over ``groups`` groups of which ``group_topk`` are picked (default:
    all, no limit), or with round-robin routing (``round_robin``)."""
    held = max(0, min(int(held), int(experts)))
    picked = groups if group_topk is None else group_topk
    if held == 0:
        return 0.0
    if round_robin:
        return round_robin_hit(experts, top_k, held, first)
    if groups <= 1 or picked >= groups:
        return 1.0 - comb(experts - held, top_k) / comb(experts, top_k)
    size = experts // groups
    pool = picked * size
    covered = [max(0, min(first + held, (j + 1) * size) - max(first, j * size)) for j in range(groups)]
    subsets = _subsets_by_total(covered, picked)
    missed = sum(n * comb(pool - total, top_k) for total, n in subsets.items())
    return 1.0 - missed / comb(pool, top_k) / comb(groups, picked)


def model_hit_probability(model: ModelConfig, held: int, first: int = 0) -> float:
    """:func:`hit_probability` of the ``held`` experts from ``first`` under ``model``'s routing:
    its experts, ``top_k``, router groups and ``routing``."""
    return hit_probability(model.experts, model.top_k, held, model.router_groups, model.router_group_topk,
                           first, round_robin=model.routing == Routing.ROUND_ROBIN)


def round_robin_hit(experts: int, top_k: int, held: int, first: int = 0) -> float:
    """Share of round-robin blocks ``[s, s + k)`` mod ``E`` (``s`` a multiple of ``gcd(k, E)``)
    that overlap the ``held`` experts from ``first`` (module docstring), in [0, 1]."""
    step = gcd(top_k, experts)
    starts = range(0, experts, step)
    wanted = {(first + i) % experts for i in range(held)}
    hits = sum(any((s + j) % experts in wanted for j in range(top_k)) for s in starts)
    return hits / len(starts)


def _subsets_by_total(counts: list[int], size: int) -> dict[int, int]:
    """How many ``size``-subsets of ``counts`` sum to each total: {total: subsets}."""
    table: list[dict[int, int]] = [{0: 1}] + [{} for _ in range(size)]
    for c in counts:
        for s in range(size, 0, -1):
            for total, n in table[s - 1].items():
                table[s][total + c] = table[s].get(total + c, 0) + n
    return table[size]
