"""Benchmarks of one topic: Learning from crowds (page learning.md)."""
