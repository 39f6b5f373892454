"""Benchmarks of one topic: Aggregation accuracy (page aggregation.md)."""
