"""Benchmarks of one topic: ICED (page iced.md)."""
