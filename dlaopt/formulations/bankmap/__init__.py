"""Seed 002 (AWS Inferentia): global memory-bank mapping and data-movement elimination.

* :mod:`.layouts` — bank layouts and every operator's layout choices (the model);
* :mod:`.evaluate` — copies, spills, objective; the functional check on banked numpy storage;
* :mod:`.methods` — ``local`` (the seed's baseline) and ``propagate`` (its algorithm);
* :mod:`.exact` — the MILP;
* :mod:`.dme` — data-movement elimination by composing access functions;
* :mod:`.problem` — bank mapping behind the common protocol.
"""
