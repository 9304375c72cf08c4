"""Fusion across operators: fused groups (conv / matmul chains, FLAT's fused attention), their cost model and an
element-level simulator of the fused loop nest (seed 001 Appendix A)."""
