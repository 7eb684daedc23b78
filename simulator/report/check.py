"""The summary ``clustersim check`` prints for a valid scenario."""

from __future__ import annotations

from rich.table import Table

from simulator.config.checks import data_parallel_size
from simulator.pipeline import ClusterSession
from simulator.units import format_bytes
from simulator.workload.params import active_parameter_count, parameter_count


def check_summary(session: ClusterSession) -> Table:
    """Cluster, model and layout facts of a scenario, one per row."""
    sc, hw = session.scenario, session.hardware
    table = Table(title=f"{sc.name}: valid", show_header=False)
    table.add_column("what")
    table.add_column("value")
    fabric = sc.cluster.fabric
    table.add_row("cluster", f"{hw.nodes} x {hw.node.name} ({hw.node.display_name})")
    table.add_row("GPUs", f"{hw.gpus} x {hw.gpu.display_name}, "
                          f"{format_bytes(hw.gpu.hbm_capacity_bytes)} HBM each")
    table.add_row("fabric", f"{fabric.topology.value}, {hw.nics_per_node} x {hw.nic_link.name} "
                            f"per node, oversubscription {fabric.oversubscription:g}:1")
    graph = session.cluster.graph
    table.add_row("graph", f"{graph.number_of_nodes()} vertices, {graph.number_of_edges()} links")
    if sc.model is not None:
        total, active = parameter_count(sc.model), active_parameter_count(sc.model)
        text = f"{total / 1e9:.2f} B parameters"
        if active != total:
            text += f" ({active / 1e9:.2f} B active per token)"
        table.add_row("model", f"{sc.model.preset or 'custom'}: {text}")
    if sc.training is not None and sc.model is not None:
        par = sc.parallelism
        dp = data_parallel_size(sc, hw.gpus)
        table.add_row("layout", f"tp {par.tp} x pp {par.pp} x dp {dp} x cp {par.cp}, ep {par.ep}, "
                                f"{par.schedule.value}, ZeRO-{par.zero_stage}")
        micro = sc.training.global_batch // (sc.training.micro_batch * dp)
        table.add_row("batch", f"global {sc.training.global_batch}, micro {sc.training.micro_batch}, "
                               f"{micro} microbatches per step, {sc.training.dtype.value}")
    return table
