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
"""

from __future__ import annotations

from math import comb


def hit_probability(experts: int, top_k: int, held: int) -> float:
    """Probability that a token routed to ``top_k`` of ``experts`` experts reaches a set of
    ``held`` of them: ``1 - C(E - m, k) / C(E, k)`` (dimensionless, in [0, 1]; module
    docstring)."""
    held = max(0, min(int(held), int(experts)))
    if held == 0:
        return 0.0
    return 1.0 - comb(experts - held, top_k) / comb(experts, top_k)
