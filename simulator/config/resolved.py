"""The ``cluster`` section resolved against the hardware library: typed specs and counts."""

from __future__ import annotations

from dataclasses import dataclass

from simulator.config.hardware import (
    GpuSpec,
    IntraFabricKind,
    LinkKind,
    LinkSpec,
    NodeSpec,
    ProtocolTable,
)
from simulator.config.library import HardwareLibrary
from simulator.config.scenario import ClusterConfig, FabricConfig
from simulator.errors import ConfigError


@dataclass(frozen=True)
class ResolvedCluster:
    """Everything the topology builders need, in typed form.

    Attributes
    ----------
    node, gpu : the node and GPU specs.
    intra_link : link of the intra-node fabric (None for a PCIe-only node).
    pcie_link : the PCIe link that attaches GPUs and NICs.
    nic_link : the link of every NIC and fabric switch port.
    nodes, gpus_per_node, nics_per_node : counts actually used.
    fabric : the scenario's fabric section (topology, oversubscription, radix...).
    protocols : NCCL-style protocol constants.
    gpu_link : the link between a GPU and its host where it is not ``pcie_link``
        (NVLink-C2C on Grace Hopper), else None.
    host_link : the link a GPU's copies to host memory take (the node's ``host_memory.link``,
        else ``gpu_link``, else ``pcie_link``).
    """

    node: NodeSpec
    gpu: GpuSpec
    intra_link: LinkSpec | None
    pcie_link: LinkSpec
    nic_link: LinkSpec
    nodes: int
    gpus_per_node: int
    nics_per_node: int
    fabric: FabricConfig
    protocols: ProtocolTable
    gpu_link: LinkSpec | None = None
    host_link: LinkSpec | None = None

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def nic_ports(self) -> int:
        """NIC vertices per server: the NICs, or one per GPU on a server with more NICs than
        GPUs, where each stands for the ``nic_lanes`` NICs beside that GPU.

        NCCL drives every NIC of such a server: its topology search gives each NIC its
        own channels (NVIDIA/nccl src/graph/search.cc, one ring per network device, and
        ``ncclTopoGetLocalNet`` spreading point-to-point channels over the NICs closest
        to a GPU), so a GPU's traffic leaves over all the NICs on its PCIe switch, as over
        one port of their summed rate; AWS's aws-ofi-nccl plugin presents a p5's four EFA
        NICs per GPU to NCCL as one device the same way. Measured: two OCI BM.GPU4.8
        servers (8 A100, 16 RoCE NICs of 100 Gb/s) all-reduce at 223 GB/s of bus
        bandwidth, more than one NIC per GPU could carry (validation/nccl_tests)."""
        return min(self.nics_per_node, self.gpus_per_node)

    @property
    def nic_lanes(self) -> float:
        """NICs behind each NIC port (:attr:`nic_ports`): 1, or NICs over GPUs."""
        return self.nics_per_node / self.nic_ports if self.nic_ports else 1.0

    @property
    def port_link(self) -> LinkSpec:
        """The link of a NIC port and of every fabric switch port: ``nic_link``, or with
        ``nic_lanes`` k > 1 the same link at k times its rate (the fabric built of k-wide
        ports, so a non-blocking fabric stays non-blocking)."""
        lanes = self.nic_lanes
        if lanes == 1.0:
            return self.nic_link
        return self.nic_link.model_copy(update={
            "name": f"{self.nic_link.name}x{lanes:g}",
            "bandwidth_GBps": self.nic_link.bandwidth_GBps * lanes})


def resolve_cluster(cfg: ClusterConfig, library: HardwareLibrary) -> ResolvedCluster:
    """Look up node, GPU and link names; apply gpus_per_node and nics_per_node."""
    node = _resolve_node(cfg.node, library)
    gpu = _named(library.gpu, node.gpu, "cluster.node.gpu")
    intra = None
    if node.fabric.kind != IntraFabricKind.PCIE:
        intra = _named(library.link, node.fabric.link, "cluster.node.fabric.link")
    pcie = _named(library.link, node.pcie.link, "cluster.node.pcie.link")
    nic_name = cfg.fabric.link or node.nic_link
    nic = _named(library.link, nic_name, "cluster.fabric.link")
    gpus_per_node = cfg.gpus_per_node or node.gpus
    if gpus_per_node > node.gpus:
        raise ConfigError(
            f"{gpus_per_node} is more than the {node.gpus} GPUs of node '{node.name}'",
            key="cluster.gpus_per_node",
        )
    # By default a node using fewer GPUs keeps only their rail NICs; an explicit count wins.
    nics = cfg.fabric.nics_per_node
    if nics is None:
        nics = min(node.nics, gpus_per_node)
    if cfg.nodes > 1 and nics == 0 and not cfg.fabric.chip_torus:
        fix = ("its chips link directly: set cluster.fabric.topology: torus and chip_torus: true"
               if nic.kind == LinkKind.ICI else "set cluster.fabric.nics_per_node")
        raise ConfigError(f"{cfg.nodes} nodes need NICs but node '{node.name}' has none; {fix}",
                          key="cluster.nodes")
    gpu_link = None
    if node.pcie.gpu_link is not None:
        gpu_link = _named(library.link, node.pcie.gpu_link, "cluster.node.pcie.gpu_link")
    host = node.host_memory.link if node.host_memory is not None else None
    host_link = _named(library.link, host, "cluster.node.host_memory.link") if host else (gpu_link or pcie)
    return ResolvedCluster(node, gpu, intra, pcie, nic, cfg.nodes, gpus_per_node, nics,
                           cfg.fabric, library.protocols(), gpu_link, host_link)


def _resolve_node(node: str | NodeSpec, library: HardwareLibrary) -> NodeSpec:
    if isinstance(node, NodeSpec):
        return node
    return _named(library.node, node, "cluster.node")


def _named(getter, name: str | None, key: str):
    if name is None:
        raise ConfigError("no link named for this fabric", key=key)
    if not name.isprintable():  # e.g. 'dgx-h100\n' from a block scalar: keep the message one line
        raise ConfigError(f"{name!r} is not a plain name (it holds a line break or control character)",
                          key=key)
    try:
        return getter(name)
    except ConfigError as exc:
        if exc.source:  # the spec file itself is broken: say which file
            raise
        raise ConfigError(exc.message, key=key) from None
