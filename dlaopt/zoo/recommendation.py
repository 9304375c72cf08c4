"""Recommendation models (MLP-dominated) and a GPT-2-small-like language model.

A recommendation model's sparse features go through embedding tables: those are lookups (gathers and sums), not
MACs, so each network takes the looked-up embedding vectors as graph inputs and models its dense part — the MLPs and,
for DLRM, the feature interaction — as ``matmul`` operators of ``(batch, in) @ (in, out)``. Biases are omitted (no
MACs). ``batch`` is the number of user-item samples scored together and defaults to **64**: a ranking request scores
many candidate items at once and data-center recommendation inference batches them (at batch 1 every layer would be
a matrix-vector product that reuses no weight, which no deployment runs). MACs per sample:

``dlrm`` — Facebook's DLRM (Naumov et al. 2019, ``facebookresearch/dlrm``) in the MLPerf configuration for the
  Criteo Terabyte data set (``--arch-sparse-feature-size=128 --arch-mlp-bot=13-512-256-128
  --arch-mlp-top=1024-1024-512-256-1 --arch-interaction-op=dot``): 13 dense features through the bottom MLP
  ``bot.fc1`` 13→512, ``bot.fc2`` 512→256, ``bot.fc3`` 256→128 (ReLU); 26 embedding vectors of 128 (graph input
  ``embeddings``) stacked with the bottom output into ``Z`` (27 x 128); the dot interaction ``interaction`` =
  ``Z Z^T`` (a batched matmul, 27·27·128 = 93,312 MACs); its 351 strictly-lower-triangular entries (row by row, as
  the reference code's ``li, lj`` index) concatenated after the bottom output give the top MLP's 479 inputs;
  ``top.fc1`` 479→1024, ``top.fc2`` 1024→1024, ``top.fc3`` 1024→512, ``top.fc4`` 512→256 (ReLU), ``top.fc5``
  256→1 (sigmoid). Bottom 170,496 + interaction 93,312 + top 2,194,688 = **2,458,496** MACs.

``wide-deep`` — Cheng et al.'s Wide & Deep (2016, Google Play): the deep tower takes the concatenated embeddings
  (about 1200-dimensional in the paper, ``deep_input``) through ReLU layers 1024-512-256 (``deep.fc1..fc3``) and a
  logit ``deep.logit`` 256→1; the wide part is a linear model over sparse cross-product features — a lookup-and-sum
  given as the graph input ``wide_logit`` — added to the deep logit with a sigmoid (``output``).
  1200·1024 + 1024·512 + 512·256 + 256 = **1,884,416** MACs.

``ncf`` — He et al.'s Neural Collaborative Filtering, NeuMF, in the MLPerf configuration (``--layers 256 256 128 64
  --factors 64``): the MLP path takes the concatenated user and item MLP embeddings (128 + 128, graph input
  ``mlp_embeddings``) through ``mlp.fc1`` 256→256, ``mlp.fc2`` 256→128, ``mlp.fc3`` 128→64 (ReLU); the GMF path is
  the element-wise product of the 64-wide user and item GMF embeddings (``gmf``: no MACs); ``predict`` maps their
  concatenation (128) to one sigmoid score. 65,536 + 32,768 + 8,192 + 128 = **106,624** MACs.

``gpt2`` — GPT-2 small (Radford et al. 2019: 12 layers, hidden 768, 12 heads, FFN 3072) over its full 1024-token
  context, built by :func:`dlaopt.zoo.transformer.bert_base`'s encoder stack: the causal mask and pre-layer-norm
  placement change no MAC, so the per-layer MACs are ``B · (4·S·H² + 2·S²·H + 2·S·H·F)`` = 8,858,370,048 at
  S = 1024 (106,300,440,576 for 12 layers). The token and position embeddings are lookups and the tied LM head is
  omitted (as BERT's pooler is); operator names keep the builder's ``encoder{i}.…`` prefix. ``batch`` defaults to 1.
"""

from __future__ import annotations

from dataclasses import replace

from dlaopt.workload import NetworkBuilder, Workload
from dlaopt.zoo._common import ZOO, new_builder
from dlaopt.zoo.transformer import bert_base

RECOMMENDATION_BATCH = 64  # see the module docstring


def _mlp(b: NetworkBuilder, x: str, widths: list[int], prefix: str, last_activation: str | None) -> str:
    """ReLU layers of ``widths`` named ``{prefix}.fc1``, … (the last one with ``last_activation``)."""
    for i, w in enumerate(widths, start=1):
        act = last_activation if i == len(widths) else "relu"
        x = b.linear(x, w, activation=act, name=f"{prefix}.fc{i}")
    return x


def _widths(text: str, key: str, least: int = 2) -> list[int]:
    """Layer widths written ``"13-512-256"``: at least ``least`` of them, all positive."""
    try:
        out = [int(v) for v in text.split("-")]
    except ValueError:
        raise ValueError(f"'{key}' must be layer widths joined by '-', got {text!r}") from None
    if len(out) < least or min(out) <= 0:
        raise ValueError(f"'{key}' needs at least {least} positive widths joined by '-', got {text!r}")
    return out


@ZOO.register("dlrm", "DLRM (MLPerf Criteo-Terabyte config): bottom MLP 13-512-256-128, dot interaction of 27x128, "
                      "top MLP 479-1024-1024-512-256-1; embeddings are lookups")
def dlrm(
    *,
    batch: int = RECOMMENDATION_BATCH,
    dtype_bytes: int = 2,
    bottom_mlp: str = "13-512-256-128",
    top_mlp: str = "1024-1024-512-256-1",
    sparse_features: int = 26,
) -> Workload:
    b = new_builder("dlrm", batch=batch, dtype_bytes=dtype_bytes, bottom_mlp=bottom_mlp, top_mlp=top_mlp,
                    sparse_features=sparse_features)
    bot = _widths(bottom_mlp, "bottom_mlp")
    top = _widths(top_mlp, "top_mlp", least=1)
    dim = bot[-1]  # the embedding dimension equals the bottom MLP's output width
    x = b.input("dense", (batch, bot[0]))
    x = _mlp(b, x, bot[1:], "bot", "relu")
    emb = b.input("embeddings", (batch, sparse_features, dim))
    z = b.concat([b.reshape(x, (batch, 1, dim), name="bot.out"), emb], axis=1, name="stack")
    n = sparse_features + 1
    zz = b.matmul(z, b.transpose(z, (0, 2, 1), name="stack.t"), name="interaction")
    rows = [b.slice(zz, (0, i, 0), (batch, i + 1, i), name=f"interaction.row{i}") for i in range(1, n)]
    tri = b.reshape(b.concat(rows, axis=2, name="interaction.tril"), (batch, n * (n - 1) // 2),
                    name="interaction.flat")
    x = b.concat([x, tri], axis=1, name="top.in")
    y = _mlp(b, x, top, "top", "sigmoid")
    return b.build(outputs=[y])


@ZOO.register("wide-deep", "Wide & Deep (Cheng et al. 2016): deep tower 1200-1024-512-256-1 plus a wide linear "
                           "logit (a sparse lookup)")
def wide_deep(
    *,
    batch: int = RECOMMENDATION_BATCH,
    dtype_bytes: int = 2,
    deep_input: int = 1200,
    deep_mlp: str = "1024-512-256",
) -> Workload:
    b = new_builder("wide-deep", batch=batch, dtype_bytes=dtype_bytes, deep_input=deep_input, deep_mlp=deep_mlp)
    widths = _widths(f"{deep_input}-{deep_mlp}", "deep_mlp")
    x = b.input("embeddings", (batch, deep_input))
    x = _mlp(b, x, widths[1:], "deep", "relu")
    deep = b.linear(x, 1, name="deep.logit")
    wide = b.input("wide_logit", (batch, 1))
    y = b.elementwise("add", [deep, wide], activation="sigmoid", name="output")
    return b.build(outputs=[y])


@ZOO.register("ncf", "NCF / NeuMF (MLPerf config): MLP 256-256-128-64 and GMF with 64 factors, predict 128-1")
def ncf(
    *,
    batch: int = RECOMMENDATION_BATCH,
    dtype_bytes: int = 2,
    mlp_layers: str = "256-256-128-64",
    factors: int = 64,
) -> Workload:
    b = new_builder("ncf", batch=batch, dtype_bytes=dtype_bytes, mlp_layers=mlp_layers, factors=factors)
    widths = _widths(mlp_layers, "mlp_layers")
    x = b.input("mlp_embeddings", (batch, widths[0]))
    x = _mlp(b, x, widths[1:], "mlp", "relu")
    gmf = b.mul(b.input("gmf_user", (batch, factors)), b.input("gmf_item", (batch, factors)), name="gmf")
    y = b.linear(b.concat([gmf, x], axis=1, name="neumf"), 1, activation="sigmoid", name="predict")
    return b.build(outputs=[y])


@ZOO.register("gpt2", "GPT-2 small (12 layers, hidden 768, 12 heads, FFN 3072) at its 1024-token context; "
                      "MACs as the BERT encoder stack (causal mask and LM head omitted)")
def gpt2(
    *,
    batch: int = 1,
    dtype_bytes: int = 2,
    layers: int = 12,
    seq_len: int = 1024,
    hidden: int = 768,
    heads: int = 12,
    ffn: int = 3072,
) -> Workload:
    wl = bert_base(batch=batch, dtype_bytes=dtype_bytes, layers=layers, seq_len=seq_len, hidden=hidden, heads=heads,
                   ffn=ffn)
    return replace(wl, name="gpt2")


__all__ = ["RECOMMENDATION_BATCH", "dlrm", "gpt2", "ncf", "wide_deep"]
