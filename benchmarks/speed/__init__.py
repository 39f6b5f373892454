"""Benchmarks of one topic: Speed and scale (page speed-and-scale.md)."""
