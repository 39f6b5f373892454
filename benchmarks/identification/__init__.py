"""Benchmarks of one topic: Identification (page identification.md)."""
