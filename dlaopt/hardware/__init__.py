"""Shared hardware vocabulary and presets."""

from dlaopt.hardware.model import DMA, Accelerator, Memory, MemoryKind, PEArray, Platform, SpmAccess
from dlaopt.hardware.presets import PRESETS

__all__ = ["DMA", "PRESETS", "Accelerator", "Memory", "MemoryKind", "PEArray", "Platform", "SpmAccess"]
