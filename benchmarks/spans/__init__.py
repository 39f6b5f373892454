"""Benchmarks of one topic: Spans and sequence tags (page spans.md)."""
