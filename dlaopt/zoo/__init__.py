"""The built-in network zoo: every network generated from code with its published layer shapes.

``ZOO.create(name, params)`` builds a validated :class:`~dlaopt.workload.Workload`; ``dlaopt zoo`` lists them.
"""

from dlaopt.registry import Registry
from dlaopt.workload import Workload

ZOO: Registry[Workload] = Registry("zoo network")

__all__ = ["ZOO"]
