"""Checks of crowdlearn.compat against crowd-kit (its own tests and its speed)."""
