"""Benchmarks of one topic: CrowdInG (page crowding.md)."""
