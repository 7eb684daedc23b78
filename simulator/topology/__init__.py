"""Clusters as networkx graphs: server and fabric builders, routing."""

from simulator.topology.cluster import Cluster, build_cluster
from simulator.topology.routing import Router

__all__ = ["Cluster", "Router", "build_cluster"]
