"""Compatibility layers: other libraries' APIs on crowdlearn's engines.

:mod:`crowdlearn.compat.crowdkit` gives crowd-kit 1.4's aggregators under their own
names, parameters and attribute layouts, so that a crowd-kit user changes one import.
"""
