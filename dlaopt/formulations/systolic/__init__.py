"""Seed 003 (DeepOpt): layer-specific scheduling of CNN layers on a systolic array and hardware co-design.

* :mod:`.counts` — shapes, hardware arrays and per-schedule counts (the vocabulary);
* :mod:`.stages` — the X and XY stages shared by the X-first schedules;
* ``branch_*`` — the five schedules' cost models, vectorised over design points;
* :mod:`.layers` — a workload's conv and FC layers as DeepOpt evaluates them;
* :mod:`.technology` — energies, areas, the design space;
* :mod:`.network` — energy, delay and figures of merit over layers × schedules × points;
* :mod:`.codesign` — the exact models (MILP, weighted-sum sweep) and the vectorised sweep;
* :mod:`.problem` — the problem behind the common protocol.
"""
