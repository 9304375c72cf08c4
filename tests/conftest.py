"""Shared pytest configuration: the hypothesis profiles of the property tests.

``ci`` (the default) is reproducible: derandomized examples, no deadline (CI machines are noisy), failures printed
with the blob that replays them. ``dev`` draws more examples at random, for hunting locally:
``HYPOTHESIS_PROFILE=dev pytest tests/test_heuristics_property.py``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True, max_examples=25,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, print_blob=True, max_examples=200,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
