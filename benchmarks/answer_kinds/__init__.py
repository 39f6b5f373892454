"""Benchmarks of one topic: answer kinds beyond one class (label sets, ratings,
comparisons, texts, boxes, masks; page answer-kinds.md)."""
