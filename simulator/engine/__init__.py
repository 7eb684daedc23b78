"""Engines that turn a scenario into step times: analytical (closed-form critical path)."""
