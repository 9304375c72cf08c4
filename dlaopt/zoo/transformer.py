"""Transformer encoders — BERT-base, BERT-large and the other attention models of FLAT's evaluation (seed 001,
Appendix A, §A.3.1: BERT-base, TransformerXL, FlauBERT, T5 and XLM-MLM-En) — and a Llama-style decoder block.

Every model is the same encoder stack (below) with its published hyper-parameters; FLAT's experiment runs them at
batch 64 and sequence lengths 512 … 256K (the ``seq_len`` parameter):

=============  ======  ======  =====  ====  =====  ==========================================================
zoo name       layers  hidden  heads  d     FFN    source (public configuration)
=============  ======  ======  =====  ====  =====  ==========================================================
``bert-base``  12      768     12     64    3072   Devlin et al. 2019, BERT-base
``bert-large`` 24      1024    16     64    4096   Devlin et al. 2019, BERT-large (at sequence length 512)
``trxl``       18      1024    16     64    4096   Dai et al. 2019, Transformer-XL on WikiText-103 (the large
                                                   model, ``transfo-xl-wt103``: n_layer 18, d_model 1024,
                                                   n_head 16, d_head 64, d_inner 4096)
``flaubert``   24      1024    16     64    4096   Le et al. 2020, FlauBERT-large (``flaubert_large_cased``:
                                                   n_layers 24, emb_dim 1024, n_heads 16, FFN 4 x emb_dim)
``t5``         6       512     8      64    2048   Raffel et al. 2020, T5-small's encoder (num_layers 6, d_model
                                                   512, num_heads 8, d_kv 64, d_ff 2048, ReLU)
``xlm``        12      2048    16     128   8192   Conneau & Lample 2019, XLM-MLM-En-2048 (``xlm-mlm-en-2048``:
                                                   n_layers 12, emb_dim 2048, n_heads 16, FFN 4 x emb_dim)
=============  ======  ======  =====  ====  =====  ==========================================================

Simplifications, the same for every model (they do not change the matmul shapes FLAT studies): no embeddings,
biases, pooler or decoder; Transformer-XL's recurrence memory (keys of the previous segment) and relative-position
score terms are left out (its attention is the content term over the ``seq_len`` keys); T5's RMS norm is a layer
norm; FFN activations are GELU except T5's ReLU.

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

``bert-large`` — Devlin et al.'s BERT-large (24 layers, hidden 1024, 16 heads, FFN 4096) built by the same stack, at
sequence length **512**: the model's whole context, the length of its second pre-training phase and of the long-
sequence BERT-large benchmarks (MLPerf's SQuAD inference runs 384; ``seq_len`` sets any length). MACs per layer at
S = 512: 2,147,483,648 + 536,870,912 + 4,294,967,296 = 6,979,321,856 (167,503,724,544 for the 24 layers).

``llama-block`` — a Llama-style pre-norm decoder block with Llama-2-7B's shapes (Touvron et al. 2023: hidden 4096,
32 heads of d = 128, FFN 11008, context 4096, multi-head attention with as many key/value heads as query
heads), ``layers`` blocks (default 1) over ``seq_len`` tokens (default 4096, the model's context). The graph input
``hidden_states`` is ``(batch * seq_len, hidden)``; block ``i`` (operator names ``decoder{i}.…``)::

    attn.norm                    RMSNorm: a ``norm`` over the last axis with a scale γ and no shift (as the ONNX
                                 importer maps an RMSNorm; the row reduction and the tensor traffic are the same)
    attn.q / attn.k / attn.v     x (B·S, H) @ W (H, H)
    attn.{q,k}.split             reshape to (B, S, heads, d)
    attn.{q,k}.rope.*            rotary embedding, element-wise: ``halves`` (split of the last axis in two),
                                 ``neg`` (−x₂), ``rotate`` (concat [−x₂, x₁]), ``cos`` (x · cos), ``sin``
                                 (rotated · sin), ``rope`` (their sum); the tables ``rope.cos`` / ``rope.sin`` are
                                 (S, 1, d) constants shared by every block
    attn.{q,k,v}.heads / .batch  to (B·heads, S, d) — K to (B·heads, d, S)
    attn.qk · attn.mask          Q K^T, plus the causal mask (an (S, S) constant ``causal_mask``: 0 on and below
                                 the diagonal, −inf above) — the scores are computed whole, as a dense kernel does
    attn.softmax · attn.av       softmax over the keys, then · V
    attn.merge.* · attn.out      back to (B·S, H), output projection (H, H)
    attn.add                     residual add
    ffn.norm                     RMSNorm
    ffn.gate (SiLU fused) · ffn.up · ffn.mul · ffn.down · ffn.add
                                 SwiGLU: silu(x W_gate) ⊙ (x W_up), then W_down (F → H), residual add

No embedding lookup, final norm or LM head (a block, not the model); no biases (Llama has none); the 1/sqrt(d) scale
is folded into W_q. MACs per block: ``B · (4·S·H² + 2·S²·H + 3·S·H·F)`` = 274,877,906,944 + 137,438,953,472 +
554,050,781,184 = 966,367,641,600 at the defaults.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from dlaopt.workload import NetworkBuilder, OpKind, Workload
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


def _encoder(
    name: str,
    *,
    batch: int,
    dtype_bytes: int,
    layers: int,
    seq_len: int,
    hidden: int,
    heads: int,
    ffn: int,
    activation: str = "gelu",
) -> Workload:
    """The encoder stack of the module docstring (operator names ``encoder{i}.…``)."""
    if hidden % heads:
        raise ValueError(f"'hidden' ({hidden}) must be a multiple of 'heads' ({heads})")
    b = new_builder(name, batch=batch, dtype_bytes=dtype_bytes, layers=layers, seq_len=seq_len,
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
        y = b.linear(x, ffn, activation=activation, name=f"{p}.ffn.fc1")
        y = b.linear(y, hidden, name=f"{p}.ffn.fc2")
        x = b.layernorm(b.add(y, x, name=f"{p}.ffn.add"), name=f"{p}.ffn.norm")
    return b.build(outputs=[x])


def _encoder_entry(name: str, description: str, doc: str, *, layers: int, seq_len: int, hidden: int, heads: int,
                   ffn: int, activation: str = "gelu") -> Callable[..., Workload]:
    """Register zoo entry ``name``: the encoder stack with these defaults (and batch 1, 2-byte words), each a
    keyword parameter of the entry."""
    defaults = {"batch": 1, "dtype_bytes": 2, "layers": layers, "seq_len": seq_len, "hidden": hidden,
                "heads": heads, "ffn": ffn}

    def factory(**params: int) -> Workload:
        return _encoder(name, **{**defaults, **params}, activation=activation)

    factory.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=v, annotation=int) for k, v in defaults.items()],
        return_annotation=Workload)
    factory.__name__ = factory.__qualname__ = name.replace("-", "_")
    factory.__doc__ = doc
    return ZOO.register(name, description)(factory)


bert_base = _encoder_entry(
    "bert-base", "BERT-base encoder (12 layers, hidden 768, 12 heads, FFN 3072) at sequence length 128",
    "Devlin et al. 2019, BERT-base: 12 layers, hidden 768, 12 heads (d = 64), FFN 3072, GELU.",
    layers=12, seq_len=128, hidden=768, heads=12, ffn=3072)
trxl = _encoder_entry(
    "trxl", "Transformer-XL (WikiText-103 large: 18 layers, hidden 1024, 16 heads, FFN 4096), content attention "
    "only, sequence length 512",
    "Dai et al. 2019, ``transfo-xl-wt103``: n_layer 18, d_model 1024, n_head 16, d_head 64, d_inner 4096 (the "
    "recurrence memory and the relative-position terms are not modelled; module docstring).",
    layers=18, seq_len=512, hidden=1024, heads=16, ffn=4096)
flaubert = _encoder_entry(
    "flaubert", "FlauBERT-large encoder (24 layers, hidden 1024, 16 heads, FFN 4096) at sequence length 512",
    "Le et al. 2020, ``flaubert_large_cased``: n_layers 24, emb_dim 1024, n_heads 16, FFN 4 x emb_dim, GELU.",
    layers=24, seq_len=512, hidden=1024, heads=16, ffn=4096)
t5 = _encoder_entry(
    "t5", "T5-small encoder (6 layers, hidden 512, 8 heads, FFN 2048, ReLU) at sequence length 512",
    "Raffel et al. 2020, T5-small's encoder: num_layers 6, d_model 512, num_heads 8, d_kv 64, d_ff 2048, ReLU "
    "(relative position biases and the decoder are not modelled).",
    layers=6, seq_len=512, hidden=512, heads=8, ffn=2048, activation="relu")
xlm = _encoder_entry(
    "xlm", "XLM-MLM-En-2048 encoder (12 layers, hidden 2048, 16 heads, FFN 8192) at sequence length 512",
    "Conneau & Lample 2019, ``xlm-mlm-en-2048``: n_layers 12, emb_dim 2048, n_heads 16 (d = 128), FFN 4 x "
    "emb_dim, GELU.",
    layers=12, seq_len=512, hidden=2048, heads=16, ffn=8192)
bert_large = _encoder_entry(
    "bert-large", "BERT-large encoder (24 layers, hidden 1024, 16 heads, FFN 4096) at sequence length 512",
    "Devlin et al. 2019, BERT-large: 24 layers, hidden 1024, 16 heads (d = 64), FFN 4096, GELU; at its full "
    "512-token context (module docstring).",
    layers=24, seq_len=512, hidden=1024, heads=16, ffn=4096)


def _rms_norm(b: NetworkBuilder, x: str, name: str) -> str:
    """RMSNorm over the last axis: a ``norm`` with a scale γ and no shift (module docstring)."""
    gamma = b.weight(f"{name}.gamma", (b.shape(x)[-1],))
    return b.op(OpKind.NORM, [x, gamma], {"norm": "layernorm", "axis": -1}, name=name)[0]


def _rope(b: NetworkBuilder, x: str, cos: str, sin: str, prefix: str) -> str:
    """Rotary embedding of ``x`` (B, S, heads, d) as element-wise operators: x · cos + rotate_half(x) · sin."""
    d = b.shape(x)[-1]
    x1, x2 = b.split(x, (d // 2, d // 2), axis=3, name=f"{prefix}.rope.halves")
    rotated = b.concat([b.elementwise("neg", [x2], name=f"{prefix}.rope.neg"), x1], axis=3,
                       name=f"{prefix}.rope.rotate")
    return b.add(b.mul(x, cos, name=f"{prefix}.rope.cos"), b.mul(rotated, sin, name=f"{prefix}.rope.sin"),
                 name=f"{prefix}.rope")


def _heads_of(b: NetworkBuilder, x4: str, batch: int, seq: int, heads: int, d: int, prefix: str,
              transposed: bool) -> str:
    """(B, S, heads, d) → (B·heads, S, d), or (B·heads, d, S) if ``transposed`` (for K^T)."""
    if transposed:
        x = b.transpose(x4, (0, 2, 3, 1), name=f"{prefix}.heads")
        return b.reshape(x, (batch * heads, d, seq), name=f"{prefix}.batch")
    x = b.transpose(x4, (0, 2, 1, 3), name=f"{prefix}.heads")
    return b.reshape(x, (batch * heads, seq, d), name=f"{prefix}.batch")


@ZOO.register("llama-block", "Llama-style decoder block with Llama-2-7B's shapes (hidden 4096, 32 heads, SwiGLU FFN "
              "11008, RMSNorm, rotary embedding, causal attention) at sequence length 4096")
def llama_block(
    *,
    batch: int = 1,
    dtype_bytes: int = 2,
    layers: int = 1,
    seq_len: int = 4096,
    hidden: int = 4096,
    heads: int = 32,
    ffn: int = 11008,
) -> Workload:
    """Touvron et al. 2023, Llama-2-7B's block shapes (hidden 4096, 32 heads, d = 128, FFN 11008, context 4096);
    ``layers`` blocks in a row (module docstring)."""
    if hidden % heads:
        raise ValueError(f"'hidden' ({hidden}) must be a multiple of 'heads' ({heads})")
    d = hidden // heads
    if d % 2:
        raise ValueError(f"the head size hidden / heads ({d}) must be even for the rotary embedding")
    b = new_builder("llama-block", batch=batch, dtype_bytes=dtype_bytes, layers=layers, seq_len=seq_len,
                    hidden=hidden, heads=heads, ffn=ffn)
    x = b.input("hidden_states", (batch * seq_len, hidden))
    cos = b.weight("rope.cos", (seq_len, 1, d))
    sin = b.weight("rope.sin", (seq_len, 1, d))
    mask = b.weight("causal_mask", (seq_len, seq_len))
    for i in range(layers):
        p = f"decoder{i}"
        h = _rms_norm(b, x, f"{p}.attn.norm")
        q = b.linear(h, hidden, name=f"{p}.attn.q")
        k = b.linear(h, hidden, name=f"{p}.attn.k")
        v = b.linear(h, hidden, name=f"{p}.attn.v")
        q = _rope(b, b.reshape(q, (batch, seq_len, heads, d), name=f"{p}.attn.q.split"), cos, sin, f"{p}.attn.q")
        k = _rope(b, b.reshape(k, (batch, seq_len, heads, d), name=f"{p}.attn.k.split"), cos, sin, f"{p}.attn.k")
        v = b.reshape(v, (batch, seq_len, heads, d), name=f"{p}.attn.v.split")
        q = _heads_of(b, q, batch, seq_len, heads, d, f"{p}.attn.q", transposed=False)
        k = _heads_of(b, k, batch, seq_len, heads, d, f"{p}.attn.k", transposed=True)
        v = _heads_of(b, v, batch, seq_len, heads, d, f"{p}.attn.v", transposed=False)
        scores = b.add(b.matmul(q, k, name=f"{p}.attn.qk"), mask, name=f"{p}.attn.mask")
        probs = b.softmax(scores, axis=-1, name=f"{p}.attn.softmax")
        ctx = b.matmul(probs, v, name=f"{p}.attn.av")
        ctx = b.reshape(ctx, (batch, heads, seq_len, d), name=f"{p}.attn.merge.split")
        ctx = b.transpose(ctx, (0, 2, 1, 3), name=f"{p}.attn.merge.heads")
        ctx = b.reshape(ctx, (batch * seq_len, hidden), name=f"{p}.attn.merge")
        x = b.add(b.linear(ctx, hidden, name=f"{p}.attn.out"), x, name=f"{p}.attn.add")
        h = _rms_norm(b, x, f"{p}.ffn.norm")
        gated = b.mul(b.linear(h, ffn, activation="swish", name=f"{p}.ffn.gate"), b.linear(h, ffn, name=f"{p}.ffn.up"),
                      name=f"{p}.ffn.mul")
        x = b.add(b.linear(gated, hidden, name=f"{p}.ffn.down"), x, name=f"{p}.ffn.add")
    return b.build(outputs=[x])
