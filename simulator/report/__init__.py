"""Human-readable output: rich tables (plots are imported lazily where used)."""
