"""What a written timeline adds to the engine's: the in-layer communication rows and the
label of the simulated step.

At the collapsed fidelity the discrete-event engine folds a pass's in-layer collectives
(tensor-, context- and expert-parallel) into the pass's duration; only collectives that
span servers at finer fidelities are replayed as their own tasks. So that a trace and a
Gantt chart show them anyway, each folded pass gets one row on its GPU's ``in-layer comm``
stream: its share of the pass (the cost model's in-line communication over the stage's
forward and backward time), drawn from the start of the pass. It says how much of the pass
is communication, not where inside the pass it falls.
"""

from __future__ import annotations

IN_LAYER_STREAM = "in-layer comm"
IN_LAYER_KIND = "in-layer"
_REPLAYED = ("tp", "cp", "ep")
_PASSES = ("forward", "backward")


def step_label(name: str, seed: int) -> str:
    """Which step a timeline shows: the discrete-event engine's first step of ``seed``."""
    return f"{name}: simulated step 1 of the discrete-event engine (seed {seed})"


def in_layer_share(stage) -> float:
    """Share of a stage's passes that is in-line tp/cp/ep communication (0 to 1)."""
    busy = stage.forward_s + stage.backward_s
    comm = stage.tp_comm_s + stage.cp_comm_s + stage.ep_comm_s
    return min(max(comm / busy, 0.0), 1.0) if busy > 0 else 0.0


def in_layer_rows(frame, stages, layout):
    """``frame`` with one ``in-layer`` row per folded forward/backward pass.

    Parameters
    ----------
    frame : pandas.DataFrame
        A timeline (:func:`simulator.engine.des.timeline`).
    stages : list of StageBreakdown
        The analytical step's stages (their in-line communication shares).
    layout : Layout
        Maps each GPU of the frame to its pipeline stage.

    Returns
    -------
    pandas.DataFrame
        The frame, plus rows on the :data:`IN_LAYER_STREAM` stream for the GPUs whose
        in-layer collectives were not replayed; unchanged when there is nothing to add.
    """
    import pandas as pd

    if frame.empty:
        return frame
    replayed = set(frame.loc[frame["kind"].isin(_REPLAYED), "gpu"])
    share = {gpu: in_layer_share(stages[s]) for s in range(layout.pp) for r in range(layout.dp)
             for gpu in [layout.gpu(dp_rank=r, pp_rank=s)]}
    passes = frame[frame["kind"].isin(_PASSES) & ~frame["gpu"].isin(replayed)]
    fraction = passes["gpu"].map(share).fillna(0.0)
    passes = passes[fraction > 0]
    fraction = fraction[fraction > 0]
    if passes.empty:
        return frame
    rows = pd.DataFrame({
        "gpu": passes["gpu"], "stream": IN_LAYER_STREAM, "kind": IN_LAYER_KIND,
        "name": "tp/cp/ep in line (" + passes["name"].astype(str) + ")",
        "start_s": passes["start_s"],
        "end_s": passes["start_s"] + (passes["end_s"] - passes["start_s"]) * fraction,
        "bytes": 0.0})
    return pd.concat([frame, rows], ignore_index=True)
