"""Benchmarks of one topic: The campaign loop (page campaign.md)."""
