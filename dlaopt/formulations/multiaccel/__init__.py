"""Seed 001 Chapter 7 (MAGMA / M3E): assigning a group of jobs from several tenant networks to the sub-accelerators
of a platform that share one system bandwidth, and ordering them.

* :mod:`.model` — job analysis table, data, assignment, simulation (the vocabulary);
* :mod:`.tasks`, :mod:`.analysis` — task types into job groups; no-stall latency and bandwidth per job and
  sub-accelerator from dlaopt's mapping cost model;
* :mod:`.evaluator` — the seed's bandwidth allocator as an exact fluid simulation (the ground truth);
* :mod:`.heuristics` — MAGMA's genetic algorithm, Herald-like, AI-MT-like, LPT, random;
* :mod:`.bound`, :mod:`.cpsat`, :mod:`.timeindexed` — the valid lower bound, the CP-SAT model with bandwidth
  modes, its time-indexed MILP cross-check;
* :mod:`.gantt` — the schedule drawn as SVG;
* :mod:`.problem` — the problem behind the common protocol.
"""
