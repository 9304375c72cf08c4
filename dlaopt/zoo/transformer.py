"""Transformer encoders.

``bert-base`` — Devlin et al.'s BERT-base encoder stack (12 layers, hidden 768, 12 heads, FFN 3072) without the
embedding lookup and the pooler: the graph input ``embeddings`` holds the token embeddings as a
``(batch * seq_len, hidden)`` matrix. Layer ``i`` (operator names ``encoder{i}.…``, ``d = hidden / heads``)::

    attn.q / attn.k / attn.v     x (B·S, H) @ W (H, H)                       three linear projections
    attn.{q,k,v}.split           reshape to (B, S, heads, d)
    attn.{q,k,v}.heads           transpose to (B, heads, S, d) — K to (B, heads, d, S), i.e. K^T
    attn.{q,k,v}.batch           reshape to (B·heads, S, d) — K^T to (B·heads, d, S)
    attn.qk                      batched matmul Q K^T → (B·heads, S, S)
    attn.softmax                 softmax over the last axis
    attn.av                      batched matmul with V → (B·heads, S, d)
    attn.merge.split / .heads / attn.merge   reshape (B, heads, S, d) · transpose (B, S, heads, d) · reshape (B·S, H)
    attn.out                     output projection (H, H)
    attn.add · attn.norm         residual add, layer norm
    ffn.fc1 (GELU fused) · ffn.fc2 · ffn.add · ffn.norm

The 1/sqrt(d) attention scale is folded into the query projection's weights; biases are omitted (no MACs).
MACs per layer: ``B · (4·S·H² + 2·S²·H + 2·S·H·F)`` = 301,989,888 + 25,165,824 + 603,979,776 = 931,135,488 for
BERT-base at S = 128 (11,173,625,856 for the 12 layers).
"""

from __future__ import annotations

from dlaopt.workload import NetworkBuilder, Workload
from dlaopt.zoo._common import ZOO, new_builder


def _to_heads(b: NetworkBuilder, x: str, batch: int, seq: int, heads: int, d: int, prefix: str,
              transposed: bool) -> str:
    """(B·S, H) → (B·heads, S, d), or (B·heads, d, S) if ``transposed`` (for K^T)."""
    x = b.reshape(x, (batch, seq, heads, d), name=f"{prefix}.split")
    if transposed:
        x = b.transpose(x, (0, 2, 3, 1), name=f"{prefix}.heads")
        return b.reshape(x, (batch * heads, d, seq), name=f"{prefix}.batch")
    x = b.transpose(x, (0, 2, 1, 3), name=f"{prefix}.heads")
    return b.reshape(x, (batch * heads, seq, d), name=f"{prefix}.batch")


@ZOO.register("bert-base", "BERT-base encoder (12 layers, hidden 768, 12 heads, FFN 3072) at sequence length 128")
def bert_base(
    *,
    batch: int = 1,
    dtype_bytes: int = 2,
    layers: int = 12,
    seq_len: int = 128,
    hidden: int = 768,
    heads: int = 12,
    ffn: int = 3072,
) -> Workload:
    if hidden % heads:
        raise ValueError(f"'hidden' ({hidden}) must be a multiple of 'heads' ({heads})")
    b = new_builder("bert-base", batch=batch, dtype_bytes=dtype_bytes, layers=layers, seq_len=seq_len,
                    hidden=hidden, heads=heads, ffn=ffn)
    d = hidden // heads
    x = b.input("embeddings", (batch * seq_len, hidden))
    for i in range(layers):
        p = f"encoder{i}"
        q = b.linear(x, hidden, name=f"{p}.attn.q")
        k = b.linear(x, hidden, name=f"{p}.attn.k")
        v = b.linear(x, hidden, name=f"{p}.attn.v")
        q = _to_heads(b, q, batch, seq_len, heads, d, f"{p}.attn.q", transposed=False)
        k = _to_heads(b, k, batch, seq_len, heads, d, f"{p}.attn.k", transposed=True)
        v = _to_heads(b, v, batch, seq_len, heads, d, f"{p}.attn.v", transposed=False)
        scores = b.matmul(q, k, name=f"{p}.attn.qk")
        probs = b.softmax(scores, axis=-1, name=f"{p}.attn.softmax")
        ctx = b.matmul(probs, v, name=f"{p}.attn.av")
        ctx = b.reshape(ctx, (batch, heads, seq_len, d), name=f"{p}.attn.merge.split")
        ctx = b.transpose(ctx, (0, 2, 1, 3), name=f"{p}.attn.merge.heads")
        ctx = b.reshape(ctx, (batch * seq_len, hidden), name=f"{p}.attn.merge")
        attn = b.linear(ctx, hidden, name=f"{p}.attn.out")
        x = b.layernorm(b.add(attn, x, name=f"{p}.attn.add"), name=f"{p}.attn.norm")
        y = b.linear(x, ffn, activation="gelu", name=f"{p}.ffn.fc1")
        y = b.linear(y, hidden, name=f"{p}.ffn.fc2")
        x = b.layernorm(b.add(y, x, name=f"{p}.ffn.add"), name=f"{p}.ffn.norm")
    return b.build(outputs=[x])
