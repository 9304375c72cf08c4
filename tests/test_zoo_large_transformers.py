"""BERT-large and the Llama-style decoder block: shapes and MAC counts derived here from the published model shapes
(Devlin et al. 2019 for BERT-large; Touvron et al. 2023, Llama-2-7B, for the block), not from the zoo's code."""

from __future__ import annotations

import inspect

import pytest

from dlaopt.errors import InputError
from dlaopt.workload import OpKind, TensorRole, Workload
from dlaopt.zoo import ZOO


def encoder_layer_macs(s: int, h: int, f: int) -> int:
    """One BERT layer: Q, K, V and output projections S·H·H each; Q K^T and scores·V S·S·H each (over all heads);
    FFN up and down S·H·F each."""
    projections = 4 * (s * h * h)
    attention = 2 * (s * s * h)
    ffn = 2 * (s * h * f)
    return projections + attention + ffn


def llama_layer_macs(s: int, h: int, f: int) -> int:
    """One Llama block: the same projections and attention; SwiGLU has three matrices (gate, up: H→F; down: F→H)."""
    return 4 * (s * h * h) + 2 * (s * s * h) + 3 * (s * h * f)


def test_registered_with_defaults() -> None:
    for name in ("bert-large", "llama-block"):
        entry = ZOO.entry(name)
        assert entry.description
        params = inspect.signature(entry.factory).parameters.values()
        assert all(p.kind == p.KEYWORD_ONLY and p.default is not p.empty for p in params)
        assert entry.defaults["batch"] == 1 and entry.defaults["dtype_bytes"] == 2
    assert ZOO.entry("bert-large").defaults == {"batch": 1, "dtype_bytes": 2, "layers": 24, "seq_len": 512,
                                                     "hidden": 1024, "heads": 16, "ffn": 4096}
    assert ZOO.entry("llama-block").defaults == {"batch": 1, "dtype_bytes": 2, "layers": 1, "seq_len": 4096,
                                                 "hidden": 4096, "heads": 32, "ffn": 11008}


def test_bert_large_macs_and_shapes() -> None:
    wl = ZOO.create("bert-large")
    assert wl.name == "bert-large"
    per_layer = encoder_layer_macs(512, 1024, 4096)
    assert per_layer == 2_147_483_648 + 536_870_912 + 4_294_967_296
    assert wl.total_macs == 24 * per_layer == 167_503_724_544
    assert dict(wl.op("encoder23.attn.qk").dims) == {"B": 16, "M": 512, "N": 512, "K": 64}
    assert dict(wl.op("encoder0.ffn.fc1").dims) == {"B": 1, "M": 512, "N": 4096, "K": 1024}
    assert sum(op.kind == OpKind.SOFTMAX for op in wl.operators) == 24
    (out,) = wl.tensors_with_role(TensorRole.OUTPUT)
    assert out.shape == (512, 1024)
    # weights: per layer 4 H² + 2 H F matrices and two layer norms (γ, β of H each)
    weights = sum(t.numel for t in wl.tensors_with_role(TensorRole.WEIGHT))
    assert weights == 24 * (4 * 1024 * 1024 + 2 * 1024 * 4096 + 4 * 1024)


def test_llama_block_defaults_follow_llama2_7b() -> None:
    wl = ZOO.create("llama-block")
    s, h, f, heads = 4096, 4096, 11008, 32
    d = h // heads
    assert wl.total_macs == llama_layer_macs(s, h, f) == 966_367_641_600
    assert dict(wl.op("decoder0.attn.qk").dims) == {"B": heads, "M": s, "N": s, "K": d}
    assert dict(wl.op("decoder0.attn.av").dims) == {"B": heads, "M": s, "N": d, "K": s}
    for name in ("decoder0.ffn.gate", "decoder0.ffn.up"):
        assert dict(wl.op(name).dims) == {"B": 1, "M": s, "N": f, "K": h}
    assert dict(wl.op("decoder0.ffn.down").dims) == {"B": 1, "M": s, "N": h, "K": f}
    assert wl.op("decoder0.ffn.gate").attrs["activation"] == "swish"  # SiLU
    # SwiGLU's product and the residual adds are element-wise, with no MACs
    mul = wl.op("decoder0.ffn.mul")
    assert mul.kind == OpKind.ELEMENTWISE and mul.attrs["function"] == "mul" and mul.macs == 0
    # RMSNorm: a row reduction with a scale and no shift
    norm = wl.op("decoder0.attn.norm")
    assert norm.kind == OpKind.NORM and len(norm.inputs) == 2 and wl.tensors[norm.inputs[1]].shape == (h,)
    # the causal mask is added to the whole (heads, S, S) score tensor
    mask = wl.op("decoder0.attn.mask")
    assert wl.tensors[mask.outputs[0]].shape == (heads, s, s)
    assert wl.tensors[mask.inputs[1]].shape == (s, s)
    (out,) = wl.tensors_with_role(TensorRole.OUTPUT)
    assert out.shape == (s, h)


def test_llama_rotary_embedding_is_elementwise() -> None:
    wl = ZOO.create("llama-block", {"seq_len": 16, "hidden": 32, "heads": 4, "ffn": 64})
    d = 8
    for q in ("q", "k"):
        p = f"decoder0.attn.{q}.rope"
        halves = wl.op(f"{p}.halves")
        assert halves.kind == OpKind.SPLIT and [wl.tensors[t].shape for t in halves.outputs] == [(1, 16, 4, d // 2)] * 2
        assert wl.op(f"{p}.neg").attrs["function"] == "neg"
        assert wl.tensors[wl.op(f"{p}.rotate").outputs[0]].shape == (1, 16, 4, d)
        for part in ("cos", "sin"):
            op = wl.op(f"{p}.{part}")
            assert op.kind == OpKind.ELEMENTWISE and op.attrs["function"] == "mul"
            assert wl.tensors[op.inputs[1]].shape == (16, 1, d)
        assert wl.tensors[wl.op(p).outputs[0]].shape == (1, 16, 4, d)
    # V gets no rotary embedding; the tables are shared
    assert not any(o.name.startswith("decoder0.attn.v.rope") for o in wl.operators)
    assert wl.op("decoder0.attn.q.rope.cos").inputs[1] == wl.op("decoder0.attn.k.rope.cos").inputs[1] == "rope.cos"
    assert not [o for o in wl.operators if o.macs and o.kind != OpKind.MATMUL]


@pytest.mark.parametrize(("layers", "batch", "s", "h", "heads", "f"), [(2, 1, 64, 128, 4, 344), (1, 3, 32, 64, 2, 172)])
def test_llama_block_parameters(layers: int, batch: int, s: int, h: int, heads: int, f: int) -> None:
    wl = ZOO.create("llama-block", {"layers": layers, "batch": batch, "seq_len": s, "hidden": h, "heads": heads,
                                    "ffn": f})
    assert isinstance(wl, Workload)
    assert wl.total_macs == batch * layers * llama_layer_macs(s, h, f)
    assert sum(o.kind == OpKind.SOFTMAX for o in wl.operators) == layers
    again = Workload.create(wl.name, wl.tensors.values(), wl.operators, wl.params)
    assert again.total_macs == wl.total_macs


@pytest.mark.parametrize(("name", "params"), [("llama-block", {"hidden": 100, "heads": 8}),
                                              ("llama-block", {"hidden": 24, "heads": 8}),  # odd head size 3
                                              ("llama-block", {"seq_len": 0}),
                                              ("bert-large", {"hidden": 1000, "heads": 16})])
def test_bad_parameters_are_input_errors(name: str, params: dict[str, int]) -> None:
    with pytest.raises(InputError):
        ZOO.create(name, params)
