"""dlaopt: exact optimization models for the hard decisions of a deep-learning-accelerator compiler."""

__version__ = "0.1.0"
