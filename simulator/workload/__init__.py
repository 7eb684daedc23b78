"""Workload: transformer model math, parallel groups and schedules."""
