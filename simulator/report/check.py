"""What ``clustersim check`` prints: the scenario's facts and its verdict.

The verdict is "valid" only when the scenario loads and, for a training scenario, one
quick analytical step fits in the GPU's memory; otherwise "does not fit", with the
result's warnings.
"""

from __future__ import annotations

from rich.table import Table

from simulator.config.checks import data_parallel_size
from simulator.pipeline import ClusterSession
from simulator.results import StepResult
from simulator.topology.fabric import torus_dims
from simulator.units import format_bytes
from simulator.workload.params import active_parameter_count, parameter_count


def verdict(result: StepResult | None) -> str:
    """``valid``, or ``does not fit`` when the step needs more memory than the GPU has."""
    return "valid" if result is None or result.fits_in_memory else "does not fit"


def _fabric_fact(fabric, hw) -> str:
    """The fabric line: ports per node and oversubscription, or a chip-level torus's shape."""
    if fabric.chip_torus:
        dims = "x".join(str(d) for d in torus_dims(fabric, hw.nodes))
        return f"chip-level torus {dims}, {2 * len(dims.split('x'))} x {hw.nic_link.name} per chip"
    return (f"{fabric.topology.value}, {hw.nics_per_node} x {hw.nic_link.name} per node, "
            f"oversubscription {fabric.oversubscription:g}:1")


def check_facts(session: ClusterSession, result: StepResult | None = None) -> list[tuple[str, str]]:
    """Cluster, model, layout and memory facts of a scenario, as (what, value) pairs."""
    sc, hw = session.scenario, session.hardware
    fabric = sc.cluster.fabric
    graph = session.cluster.graph
    facts = [
        ("cluster", f"{hw.nodes} x {hw.node.name} ({hw.node.display_name})"),
        ("GPUs", f"{hw.gpus} x {hw.gpu.display_name}, {format_bytes(hw.gpu.hbm_capacity_bytes)} HBM each"),
        ("fabric", _fabric_fact(fabric, hw)),
        ("graph", f"{graph.number_of_nodes()} vertices, {graph.number_of_edges()} links"),
    ]
    if sc.model is not None:
        total, active = parameter_count(sc.model), active_parameter_count(sc.model)
        text = f"{total / 1e9:.2f} B parameters"
        if sc.model.mtp_layers:
            main = parameter_count(sc.model.model_copy(update={"mtp_layers": 0}))
            text += f", {main / 1e9:.2f} B without the multi-token prediction layers"
        if active != total:
            text += f" ({active / 1e9:.2f} B active per token)"
        facts.append(("model", f"{sc.model.preset or 'custom'}: {text}"))
    if sc.training is not None and sc.model is not None:
        par = sc.parallelism
        dp = data_parallel_size(sc, hw.gpus)
        experts = f"ep {par.ep}" + (f" (etp {par.etp})" if par.etp not in (None, par.tp) else "")
        facts.append(("layout", f"tp {par.tp} x pp {par.pp} x dp {dp} x cp {par.cp}, {experts}, "
                                f"{par.schedule.value}, ZeRO-{par.zero_stage}, {_recompute_text(par)}"))
        micro = sc.training.global_batch // (sc.training.micro_batch * dp)
        facts.append(("batch", f"global {sc.training.global_batch}, micro {sc.training.micro_batch}, "
                               f"{micro} microbatches per step, {sc.training.dtype.value}"))
    if result is not None:
        facts.append(("memory per GPU", f"{format_bytes(result.memory_per_gpu_bytes)} of "
                                        f"{format_bytes(result.memory_capacity_bytes)}"))
    return facts


def check_summary(session: ClusterSession, result: StepResult | None = None) -> Table:
    """The facts, one per row, under the title ``NAME: valid`` or ``NAME: does not fit``."""
    table = Table(title=f"{session.scenario.name}: {verdict(result)}", show_header=False)
    table.add_column("what")
    table.add_column("value")
    for what, value in check_facts(session, result):
        table.add_row(what, value)
    return table


def check_record(session: ClusterSession, result: StepResult | None = None) -> dict:
    """``clustersim check --json``: name, verdict, facts, memory and warnings (JSON types)."""
    record = {"name": session.scenario.name, "verdict": verdict(result),
              "valid": True, "gpus": session.hardware.gpus,
              "facts": dict(check_facts(session, result))}
    if result is not None:
        record.update(fits_in_memory=result.fits_in_memory,
                      memory_per_gpu_bytes=result.memory_per_gpu_bytes,
                      memory_capacity_bytes=result.memory_capacity_bytes,
                      warnings=list(result.warnings))
    else:
        record["warnings"] = []
    return record


def _recompute_text(par) -> str:
    """``recompute none|full|selective``, with the named modules where selective names them."""
    modules = par.recomputed_modules
    if par.recompute_fraction is not None and par.full_recompute_share:
        return f"recompute full ({par.recompute_fraction:g} of the layers)"
    if modules is None:
        return f"recompute {par.recompute.value}"
    named = ", ".join(m.value for m in par.recompute_modules) or "nothing"
    return f"recompute selective ({named})"
