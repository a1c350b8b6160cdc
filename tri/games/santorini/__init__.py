"""Santorini without god powers (``../shared/santorini-rules.md``): move a worker, then build."""
