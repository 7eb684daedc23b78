"""Collective algorithms as explicit schedules of point-to-point transfers."""

from simulator.collectives.group import Group, whole_cluster
from simulator.collectives.registry import ALGORITHMS, build_schedule, candidate_schedules
from simulator.collectives.schedule import BUS_FACTOR, Algorithm, Op, Schedule, Step

__all__ = ["ALGORITHMS", "BUS_FACTOR", "Algorithm", "Group", "Op", "Schedule", "Step",
           "build_schedule", "candidate_schedules", "whole_cluster"]
