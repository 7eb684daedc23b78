"""Ring channels for a fully connected GPU mesh (AMD Infinity Fabric / xGMI nodes).

On a mesh every GPU has a direct link to each of its ``n - 1`` peers, so a ring
all-reduce reaches the node's full bandwidth only if its channels, together, load
every *directed* link equally: then each link carries ``1 / (n - 1)`` of what one
ring would put on it and busbw = ``(n - 1) B_link`` (for the MI300X platform,
7 x 48 GB/s = 336 GB/s). Rings with strides coprime with ``n`` (1, 3, 5, 7 for 8
GPUs) miss the even-difference links and reach only ``phi(n) B_link``.

RCCL does not search rings on such nodes: it matches the node against pre-computed
patterns (ROCm/rccl src/graph/rome_models.cc). For 8 fully connected gfx94x GPUs
(``rome_model_79``: nGpus 8, nLinks 7, full connMatrix) its ``ringBase`` lists 14
rings, 7 Hamiltonian cycles and their reverses, which load every directed link
exactly twice (the list is then repeated for more channels).

Here the rings are constructed rather than tabulated, by Walecki's rotational
method (E. Lucas, *Recreations mathematiques* II, 1892; B. Alspach, "The wonderful
Walecki construction", Bull. ICA 52, 2008). Label the GPUs ``0 .. m-1`` (the
cyclic group Z_m, ``m = n - 1``) and ``inf`` (the last GPU). The zig-zag
``0, 1, -1, 2, -2, ...`` visits every element of Z_m; closed through ``inf`` it is
a Hamiltonian cycle, and its ``m`` translates ``+t`` cover every undirected link
exactly twice (the zig-zag's steps ``j`` and ``m - j`` have the same length, each
length class is one translation orbit, and ``inf`` meets the first and last
vertex of every translate). When ``m`` is even the two covers of each link run in
opposite directions, so the ``m`` cycles decompose the complete directed graph
into ``n - 1`` Hamiltonian cycles; when ``m`` is odd (``n`` even) they run the
same way, and the cycles are taken in both directions: ``2(n - 1)`` rings loading
every directed link twice, RCCL's structure for 8 GPUs. (A decomposition into
``n - 1`` directed Hamiltonian cycles does not exist for ``n`` = 4 or 6:
F. Tillson, J. Combin. Theory B 29, 1980.)
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache


def zigzag(m: int) -> list[int]:
    """Walecki's zig-zag over Z_m: ``0, 1, m-1, 2, m-2, ...`` (every element once)."""
    order = [0]
    for j in range(1, m):
        step = (j + 1) // 2
        order.append(step % m if j % 2 else (-step) % m)
    return order


@lru_cache(maxsize=64)
def mesh_rings(n: int) -> tuple[tuple[int, ...], ...]:
    """Hamiltonian rings over positions ``0 .. n-1`` whose union loads every directed
    link between two positions equally (see the module docstring).

    Returns ``n - 1`` rings (each directed link once) when ``n`` is odd or 2, and
    ``2(n - 1)`` rings (each directed link twice) when ``n >= 4`` is even; ``((0,),)``
    for a single GPU.
    """
    if n < 1:
        raise ValueError(f"a mesh needs at least one GPU (got {n})")
    if n == 1:
        return ((0,),)
    m, inf = n - 1, n - 1
    base = zigzag(m)
    rings = [tuple([inf] + [(v + t) % m for v in base]) for t in range(m)]
    if set(directed_link_uses(rings).values()) != {1}:
        rings += [ring[::-1] for ring in rings]
    return tuple(rings)


def directed_link_uses(rings) -> Counter:
    """How many of ``rings`` use each directed link ``(a, b)`` (ring closed at the end)."""
    uses: Counter = Counter()
    for ring in rings:
        if len(ring) > 1:
            uses.update(zip(ring, ring[1:] + ring[:1], strict=True))
    return uses
