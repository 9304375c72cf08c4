"""Hardware–mapping co-design (ConfuciuX, seed 001 Chapter 8): the design space and budgets as data
(:mod:`~dlaopt.formulations.codesign.levels`) and exact selection of design points over a cost table
(:mod:`~dlaopt.formulations.codesign.selection`)."""
