"""Benchmarks of one topic: Self-Crowd (page self-crowd.md)."""
