"""Shared workload vocabulary: tensors, operators, the workload DAG and a builder."""

from dlaopt.workload.builder import NetworkBuilder
from dlaopt.workload.graph import Workload
from dlaopt.workload.operator import Operator, OpKind
from dlaopt.workload.tensor import Tensor, TensorRole

__all__ = ["NetworkBuilder", "Operator", "OpKind", "Tensor", "TensorRole", "Workload"]
