"""Feature-blind truth inference (aggregation) methods."""
