"""The one cost model: network (alpha-beta over routed links) and, later, compute and memory."""

from simulator.cost.collective import CollectiveModel, CollectiveSweep
from simulator.cost.network import CostTerms, NetworkCostModel

__all__ = ["CollectiveModel", "CollectiveSweep", "CostTerms", "NetworkCostModel"]
