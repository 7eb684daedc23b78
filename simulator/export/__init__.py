"""Exports of simulated timelines: Chrome/Perfetto trace JSON."""
