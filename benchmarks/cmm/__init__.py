"""Benchmarks of one topic: CMM (page cmm.md)."""
