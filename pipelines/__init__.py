"""Prefect flows: one generation, the continuous loop, deployments (see README)."""
