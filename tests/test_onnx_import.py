"""ONNX import (``dlaopt.io.onnx``, ``dlaopt import``, ``workload: {onnx: PATH}``).

The models are built with ``onnx.helper`` in ``tests/onnx_models.py``. ResNet-50 and the BERT-base encoder must
import to the zoo's networks: the same MAC totals, and the same conv / matmul loop dimensions in the same order
(ResNet-50: the same operators altogether). The branchy CNN is compared with the same network written with
dlaopt's builder, and the transformer block with hand-derived shapes.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import onnx
import onnx_models as om
import pytest
import yaml
from cli_helpers import assert_bad_input, run_dlaopt
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from dlaopt import harness
from dlaopt.cli import cli
from dlaopt.errors import InputError
from dlaopt.io import instance_from_dict, load_instance
from dlaopt.io.onnx import converters, dump_workload_yaml, import_onnx, import_onnx_document, workload_document
from dlaopt.io.schema import SHIPPED_SCHEMA_PATH
from dlaopt.workload import NetworkBuilder, OpKind, TensorRole, Workload
from dlaopt.zoo import ZOO

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "instances" / "onnx"
MAC_KINDS = (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.MATMUL)
RESNET50_MACS = 4_089_184_256
BERT_BASE_MACS = 11_173_625_856


def layers(wl: Workload) -> list[tuple[str, dict[str, int]]]:
    """The conv / matmul layers in schedule order: kind and loop dimensions."""
    return [(op.kind.value, dict(op.dims)) for op in wl.operators if op.kind in MAC_KINDS]


def signature(wl: Workload) -> list[tuple[Any, ...]]:
    """Every operator without its names: kind, normalised attributes, loop dimensions, output shapes."""
    return [(op.kind.value, dict(op.attrs), dict(op.dims), [wl.tensors[t].shape for t in op.outputs])
            for op in wl.operators]


def weight_elements(wl: Workload) -> int:
    return sum(t.numel for t in wl.tensors_with_role(TensorRole.WEIGHT))


def import_error(model: onnx.ModelProto | Path | str, **kwargs: Any) -> InputError:
    with pytest.raises(InputError) as info:
        import_onnx(model, **kwargs)
    return info.value


def pinning_doc(workload: dict[str, Any]) -> dict[str, Any]:
    return {"problem": "pinning", "workload": workload, "hardware": {"preset": "smaug-nvdla"}}


# ================================================================================================ zoo networks
def test_resnet50_imports_to_the_zoo_network() -> None:
    wl = import_onnx(om.resnet50(), name="resnet50")
    zoo = ZOO.create("resnet50")
    assert wl.total_macs == zoo.total_macs == RESNET50_MACS
    assert layers(wl) == layers(zoo)
    assert len(layers(wl)) == 54  # 53 convolutions (BN folded, ReLU fused) and the fc
    # not only the layers: every operator (residual adds with their ReLU, pools, flatten) is the zoo's
    assert signature(wl) == signature(zoo)
    assert weight_elements(wl) == weight_elements(zoo)  # BN folded, biases dropped, fc weight as (K, N)
    assert wl.tensors["fc.weight"].shape == (2048, 1000)
    assert wl.tensors["input"].dtype_bytes == 2  # float16 model


def test_resnet50_batch_override_and_embedded_weights() -> None:
    model = om.resnet50(batch="N", weights="zeros")  # 25.5 M float16 zeros held in the model
    before = model.graph.input[0].type.tensor_type.shape.dim[0].dim_param
    wl = import_onnx(model, batch=2)
    assert wl.total_macs == ZOO.create("resnet50", {"batch": 2}).total_macs == 2 * RESNET50_MACS
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == before == "N"  # caller's model untouched


@pytest.mark.parametrize("gelu", ["erf", "op"])
def test_bert_base_imports_to_the_zoo_network(gelu: str) -> None:
    wl = import_onnx(om.bert_base(gelu=gelu), batch=1, dims={"seq": 128})
    zoo = ZOO.create("bert-base")
    assert wl.total_macs == zoo.total_macs == BERT_BASE_MACS
    assert layers(wl) == layers(zoo)  # q, k, v, QK^T, AV, out, fc1, fc2 per layer, same (B, M, N, K)
    assert len(layers(wl)) == 12 * 8
    assert weight_elements(wl) == weight_elements(zoo) + 12  # biases dropped as in the zoo; the scale constants
    kinds = [op.kind for op in wl.operators]
    assert kinds.count(OpKind.SOFTMAX) == 12 and kinds.count(OpKind.NORM) == 24
    fc1 = [op for op in wl.operators if op.name.endswith("ffn.fc1.MatMul")]
    assert len(fc1) == 12 and all(op.attrs.get("activation") == "gelu" for op in fc1)  # Erf pattern fused too
    functions = sorted(op.attrs["function"] for op in wl.operators if op.kind == OpKind.ELEMENTWISE)
    assert functions == ["add"] * 24 + ["div"] * 12  # residual adds and the attention scale, no GELU pieces
    assert {t.shape for t in wl.tensors.values() if t.role == TensorRole.OUTPUT} == {(1, 128, 768)}


def test_bert_sequence_length_is_a_dimension() -> None:
    wl = import_onnx(om.bert_base(layers=2), batch=2, dims={"seq": 64})
    assert wl.total_macs == ZOO.create("bert-base", {"layers": 2, "seq_len": 64, "batch": 2}).total_macs


# ================================================================================================ small networks
def small_cnn_reference(batch: int = 1) -> Workload:
    """``onnx_models.small_cnn`` written with dlaopt's builder, as the zoo writes networks."""
    b = NetworkBuilder("small-cnn-reference", dtype_bytes=4)
    x = b.input("input", (batch, 3, 32, 32))
    x = b.conv2d(x, 16, 3, padding=1, activation="relu")
    x = b.pool(x, "max", 2, stride=2)
    b1 = b.conv2d(x, 8, 1, activation="relu")
    b2 = b.conv2d(x, 8, 1, activation="relu")
    b2 = b.conv2d(b2, 16, 3, padding=1, activation="relu")
    b3 = b.conv2d(b.pool(x, "max", 3, stride=1, padding=1), 8, 1, activation="relu")
    x = b.concat([b1, b2, b3], axis=1)
    y = b.conv2d(x, 32, 3, padding=1, activation="relu")
    y = b.conv2d(y, 32, 3, padding=1)
    x = b.add(y, x, activation="relu")
    x = b.depthwise_conv2d(x, 3, stride=2, padding=1, activation="relu6")
    x = b.flatten(b.global_pool(x))
    return b.build([b.softmax(b.linear(x, 10))])


@pytest.mark.parametrize("batch", [1, 3])
def test_small_cnn_matches_the_builder_network(batch: int) -> None:
    wl = import_onnx(om.small_cnn(), batch=batch)
    ref = small_cnn_reference(batch)
    assert signature(wl) == signature(ref)
    assert wl.total_macs == ref.total_macs
    assert weight_elements(wl) == weight_elements(ref)
    assert wl.name == "small-cnn"
    assert wl.op("mix.Concat").inputs == ("mix.b1.Conv.out", "mix.b2.Conv.out", "mix.b3.Conv.out")
    assert wl.op("res.Add").inputs == ("res.conv2.Conv.out", "mix.Concat.out")  # the residual branch
    assert wl.op("down.Conv").kind == OpKind.DEPTHWISE_CONV2D


def test_transformer_block_shapes() -> None:
    hidden, heads, ffn, seq = 64, 4, 256, 16
    d = hidden // heads
    wl = import_onnx(om.transformer_block(hidden=hidden, heads=heads, ffn=ffn), batch=1, dims={"seq": seq})
    proj = {"B": 1, "M": seq, "N": hidden, "K": hidden}
    attn = {"B": heads, "M": seq, "N": seq, "K": d}
    assert layers(wl) == [("matmul", proj)] * 3 + [("matmul", attn), ("matmul", {"B": heads, "M": seq, "N": d,
                                                                                   "K": seq})] + [
        ("matmul", proj), ("matmul", {"B": 1, "M": seq, "N": ffn, "K": hidden}),
        ("matmul", {"B": 1, "M": seq, "N": hidden, "K": ffn})]
    assert wl.total_macs == 4 * seq * hidden**2 + 2 * seq**2 * hidden + 2 * seq * hidden * ffn
    ops = {op.name: op for op in wl.operators}
    # the head reshapes' targets come from Shape -> Gather -> Unsqueeze -> Concat chains, folded to constants
    assert ops["encoder0.attn.q.Reshape"].attrs["shape"] == (1, seq, heads, d)
    assert ops["encoder0.attn.k.Transpose"].attrs["perm"] == (0, 2, 3, 1)
    assert ops["encoder0.attn.merge.Reshape"].attrs["shape"] == (1, seq, hidden)
    assert wl.tensors[ops["encoder0.attn.qk.MatMul"].outputs[0]].shape == (1, heads, seq, seq)
    assert ops["encoder0.attn.Softmax"].attrs["axis"] == -1
    assert ops["encoder0.attn.norm.LayerNormalization"].attrs == {"norm": "layernorm", "axis": -1}
    assert wl.tensors["encoder0.attn.scale"].shape == (1,)  # a scalar constant becomes a 1-element weight
    erf = import_onnx(om.transformer_block(hidden=hidden, heads=heads, ffn=ffn, gelu="erf"), batch=1,
                      dims={"seq": seq})
    assert signature(erf) == signature(wl)  # the Erf pattern is the Gelu node


def _model(nodes: list[onnx.NodeProto], inputs: list[tuple[str, list[Any]]], outputs: list[str],
           inits: dict[str, np.ndarray] | None = None, opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "case", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_data_movement_and_no_op_nodes() -> None:
    nodes = [
        helper.make_node("Identity", ["x"], ["a"], name="id"),
        helper.make_node("Dropout", ["a"], ["b"], name="drop"),
        helper.make_node("Cast", ["b"], ["c"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("Split", ["c", "sizes"], ["s0", "s1"], name="split", axis=1),
        helper.make_node("Slice", ["s1", "starts", "ends", "axes", "steps"], ["sl"], name="slice"),  # [1:5:2]
        helper.make_node("Concat", ["s0", "sl"], ["cat"], name="concat", axis=-3),
        helper.make_node("Transpose", ["cat"], ["tr"], name="tr", perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["tr"], ["same"], name="tr_identity", perm=[0, 1, 2, 3]),
        helper.make_node("Unsqueeze", ["same", "ax0"], ["un"], name="unsqueeze"),
        helper.make_node("Squeeze", ["un", "ax0"], ["sq"], name="squeeze"),
        helper.make_node("Reshape", ["sq", "shape"], ["rs"], name="reshape"),
        helper.make_node("Tile", ["rs", "reps"], ["y"], name="tile"),
    ]
    inits = {"sizes": _i64(3, 5), "starts": _i64(1, -4), "ends": _i64(5, 2**62), "axes": _i64(1, -1),
             "steps": _i64(2, 1), "ax0": _i64(0), "shape": _i64(0, -1), "reps": _i64(2, 1)}
    wl = import_onnx(_model(nodes, [("x", [1, 8, 4, 4])], ["y"], inits))
    got = [(op.name, op.kind.value, dict(op.attrs)) for op in wl.operators]
    assert got == [
        ("split", "split", {"axis": 1, "sizes": (3, 5)}),
        ("slice", "slice", {"starts": (0, 1, 0, 0), "ends": (1, 5, 4, 4), "steps": (1, 2, 1, 1)}),
        ("concat", "concat", {"axis": 1}),
        ("tr", "transpose", {"perm": (0, 2, 3, 1)}),
        ("unsqueeze", "reshape", {"shape": (1, 1, 4, 4, 5)}),
        ("squeeze", "reshape", {"shape": (1, 4, 4, 5)}),
        ("reshape", "reshape", {"shape": (1, 80)}),
        ("tile", "tile", {"reps": (2, 1)}),
    ]
    assert wl.op("split").inputs == ("x",)  # Identity, Dropout, Cast removed
    assert wl.tensors[wl.op("tile").outputs[0]].shape == (2, 80)


def test_gemm_variants_batchnorm_and_fusion_rules() -> None:
    nodes = [
        helper.make_node("Gemm", ["a", "b", "c"], ["g"], name="gemm", transA=1, transB=1),  # all dynamic
        helper.make_node("Sigmoid", ["g"], ["sg"], name="sig"),  # g is read twice: swish stays two operators
        helper.make_node("Mul", ["g", "sg"], ["sw"], name="swish"),
        helper.make_node("Reshape", ["sw", "shape4"], ["x4"], name="to4d"),
        helper.make_node("BatchNormalization", ["x4", "s", "bias", "m", "v"], ["bn"], name="bn"),  # not after a conv
        helper.make_node("Conv", ["bn", "w"], ["conv"], name="conv", kernel_shape=[1, 1]),
        helper.make_node("Relu", ["conv"], ["r"], name="relu"),  # conv is also an output: nothing fused into it
        helper.make_node("Clip", ["r", "lo"], ["y"], name="clip"),  # min 0, no max: relu
    ]
    c = np.zeros(4, dtype=np.float32)
    inits = {"shape4": _i64(1, 2, 2, 2), "s": c[:2], "bias": c[:2], "m": c[:2], "v": c[:2],
             "w": np.zeros((3, 2, 1, 1), dtype=np.float32), "lo": np.zeros((), dtype=np.float32)}
    model = _model(nodes, [("a", [8, 2]), ("b", [4, 8]), ("c", [2, 4])], ["y", "conv"], inits)
    wl = import_onnx(model)
    got = [(op.name, op.kind.value, op.attrs.get("function") or op.attrs.get("norm") or op.attrs.get("perm"))
           for op in wl.operators]
    assert got == [("gemm.transpose_a", "transpose", (1, 0)), ("gemm.transpose_b", "transpose", (1, 0)),
                   ("gemm", "matmul", None), ("gemm.add_c", "elementwise", "add"), ("sig", "activation", "sigmoid"),
                   ("swish", "elementwise", "mul"), ("to4d", "reshape", None), ("bn", "norm", "batchnorm"),
                   ("conv", "conv2d", None), ("relu", "activation", "relu"), ("clip", "activation", "relu")]
    assert wl.op("gemm").dims == {"B": 1, "M": 2, "N": 4, "K": 8}
    assert "activation" not in wl.op("conv").attrs
    assert wl.tensors[wl.op("conv").outputs[0]].role == TensorRole.OUTPUT


def test_pool_padding_modes_match_onnx_inference() -> None:
    nodes = [
        helper.make_node("MaxPool", ["x"], ["p"], name="ceil", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        helper.make_node("Conv", ["p", "w"], ["c"], name="same", kernel_shape=[4, 4], strides=[2, 2],
                         auto_pad="SAME_UPPER"),
        helper.make_node("AveragePool", ["c"], ["y"], name="avg", kernel_shape=[2, 2], strides=[1, 1],
                         pads=[0, 0, 1, 1]),
    ]
    model = _model(nodes, [("x", [1, 4, 14, 14])], ["y"], {"w": np.zeros((8, 4, 4, 4), dtype=np.float32)})
    wl = import_onnx(model)
    assert wl.op("ceil").attrs["padding"] == (0, 0, 1, 1)  # ceil((14 - 3) / 2) + 1 = 7 windows, as the zoo's
    assert wl.op("same").attrs["padding"] == (1, 1, 2, 2)  # 7 -> 4: 3 pixels, the odd one at the end
    assert [wl.tensors[op.outputs[0]].shape for op in wl.operators] == [(1, 4, 7, 7), (1, 8, 4, 4), (1, 8, 4, 4)]
    assert wl.op("avg").attrs["mode"] == "avg"


# ================================================================================================ errors
def test_unsupported_operator_names_the_node_and_what_to_do() -> None:
    err = import_error(om.single_node("NonMaxSuppression", name="/detect/nms"))
    assert "node '/detect/nms' (NonMaxSuppression)" in err.message
    assert "onnx-simplifier" in err.message and "supported on the data path: Abs, Add," in err.message
    pad = _model([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad0")], [("x", [1, 4, 8, 8])], ["y"])
    pad.graph.input.append(helper.make_tensor_value_info("pads", TensorProto.INT64, [8]))
    err = import_error(pad)
    assert "node 'pad0' (Pad) needs its pads (input 'pads') as a constant" in err.message
    err = import_error(om.single_node("Erf", name=""))
    assert "node #0 (Erf, output '_output_0')" in err.message and "exact-GELU" in err.message


def test_custom_domain_and_unsupported_attributes_are_errors() -> None:
    node = helper.make_node("FusedConv", ["x"], ["y"], name="fused", domain="com.microsoft")
    model = helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    err = import_error(model)
    assert "node 'fused' (FusedConv) belongs to the custom operator domain 'com.microsoft'" in err.message

    conv1d = _model([helper.make_node("Conv", ["x", "w"], ["y"], name="c1d", kernel_shape=[3])],
                    [("x", [1, 4, 16])], ["y"], {"w": np.zeros((8, 4, 3), dtype=np.float32)})
    assert "node 'c1d' (Conv)" in import_error(conv1d).message and "only 2-D" in import_error(conv1d).message

    clip = _model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="clamp")], [("x", [1, 4])], ["y"],
                  {"lo": np.array(-1, dtype=np.float32), "hi": np.array(1, dtype=np.float32)})
    assert "node 'clamp' (Clip) clips to [-1.0, 1.0]" in import_error(clip).message

    passthrough = _model([helper.make_node("Identity", ["x"], ["y"], name="id")], [("x", [1, 4])], ["y"])
    assert "graph output 'y' is not computed by any operator" in import_error(passthrough).message


def test_unresolved_shapes_are_errors() -> None:
    model = om.transformer_block()
    err = import_error(model, batch=1)
    assert "graph input 'hidden_states'" in err.message and "symbolic 'seq'" in err.message
    assert "--dim seq=VALUE" in (err.expected or "") and "dims: {seq: VALUE}" in (err.expected or "")
    assert err.path == ("dims",)
    err = import_error(model)
    assert "symbolic 'batch'" in err.message and "--batch" in (err.expected or "")
    err = import_error(model, batch=1, dims={"sequence": 8})
    assert "no graph input has a dimension named 'sequence'" in err.message and "batch, seq" in (err.expected or "")
    assert "must be a positive integer" in import_error(model, batch=1, dims={"seq": 0}).message
    assert import_error(model, batch=1, dims={"seq": 8}, dtype_bytes=0).path == ("dtype_bytes",)

    # a Reshape whose target is computed from data cannot be resolved
    reshape = _model([helper.make_node("Reshape", ["x", "s"], ["y"], name="dyn_reshape")],
                     [("x", [2, 6])], ["y"])
    reshape.graph.input.append(helper.make_tensor_value_info("s", TensorProto.INT64, [2]))
    err = import_error(reshape)
    assert "node 'dyn_reshape' (Reshape) has a target shape that could not be resolved" in err.message
    assert "onnx-simplifier" in err.message


def test_shapes_are_cross_checked_with_onnx_inference(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1] * 4)],
                   [("x", [1, 4, 8, 8])], ["y"], {"w": np.zeros((8, 4, 3, 3), dtype=np.float32)})
    assert import_onnx(model).tensors["conv.out"].shape == (1, 8, 8, 8)
    monkeypatch.setattr(converters, "_spatial_pads", lambda *args: (0, 0, 0, 0))  # a converter that loses the pads
    err = import_error(model)
    assert "node 'conv' (Conv) output 'y': ONNX shape inference gives [1, 8, 8, 8] but dlaopt's conv2d gives " \
           "[1, 8, 6, 6]" in err.message


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    err = import_error(tmp_path / "nope.onnx")
    assert err.file == str(tmp_path / "nope.onnx") and err.message == "file not found"
    text = tmp_path / "model.onnx"
    text.write_text("problem: pinning\nworkload: {}\n")
    assert "not an ONNX model" in import_error(text).message
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    assert "not an ONNX model" in import_error(empty).message


# ================================================================================================ documents, instances
@pytest.mark.parametrize("build", [lambda: import_onnx(om.small_cnn(), batch=2),
                                   lambda: import_onnx(om.transformer_block(gelu="erf"), batch=1, dims={"seq": 8}),
                                   lambda: import_onnx(om.resnet50())], ids=["small-cnn", "transformer", "resnet50"])
def test_document_round_trips_through_an_instance(build: Any) -> None:
    wl = build()
    doc = workload_document(wl)
    assert instance_from_dict(pinning_doc(doc)).workload == wl
    assert instance_from_dict(pinning_doc(yaml.safe_load(dump_workload_yaml(doc, comment="a\nb")))).workload == wl


def test_cli_import_writes_yaml_that_loads_back(tmp_path: Path) -> None:
    model = tmp_path / "block.onnx"
    onnx.save(om.transformer_block(), model)
    out = tmp_path / "out" / "block.yaml"
    res = CliRunner().invoke(cli, ["import", str(model), "--batch", "1", "--dim", "seq=16", "--name", "blk",
                                   "-o", str(out)])
    assert res.exit_code == 0, res.output
    expected = import_onnx(model, batch=1, dims={"seq": 16}, name="blk")
    assert f"blk: 22 operators, {expected.total_macs:,} MACs" in res.stderr and str(out) in res.stderr
    text = out.read_text()
    assert text.startswith("# dlaopt import block.onnx --batch 1 --dim seq=16\n")
    inst = instance_from_dict(pinning_doc(yaml.safe_load(text)))
    assert inst.workload == expected
    assert yaml.safe_load(text) == import_onnx_document(model, batch=1, dims={"seq": 16}, name="blk")

    res = CliRunner().invoke(cli, ["import", str(model), "--batch", "1", "--dim", "seq=16", "--name", "blk"])
    assert res.exit_code == 0 and res.stdout == text  # stdout without -o

    res = CliRunner().invoke(cli, ["import", str(model), "--dim", "seq=many"])
    assert res.exit_code == 2 and "positive integer" in res.output


def test_cli_import_bad_input_exits_2_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    onnx.save(om.single_node("LeakyRelu", name="leaky"), bad)
    block = tmp_path / "block.onnx"
    onnx.save(om.transformer_block(), block)
    for args, needle in (([bad], "node 'leaky' (LeakyRelu)"), ([block, "--batch", "1"], "--dim seq=VALUE"),
                         ([tmp_path / "missing.onnx"], "file not found")):
        proc = run_dlaopt("import", *args)
        assert_bad_input(proc.returncode, proc.stderr, needle)
        assert proc.stdout == ""


def test_shipped_example_instance_solves() -> None:
    path = EXAMPLES / "small-cnn-smaug.yaml"
    inst = load_instance(path)
    assert inst.workload == import_onnx(EXAMPLES / "small-cnn.onnx", batch=1, dtype_bytes=2)
    assert inst.document["workload"] == {"onnx": "small-cnn.onnx", "batch": 1, "dtype_bytes": 2}  # as written
    assert inst.workload.tensors["input"].dtype_bytes == 2
    res = harness.solve(inst, "exact")
    assert res.status.value == "optimal" and res.verified
    greedy = harness.solve(inst, "greedy")
    assert res.objective is not None and greedy.objective is not None and res.objective < greedy.objective


def test_shipped_model_is_the_test_model_and_small() -> None:
    path = EXAMPLES / "small-cnn.onnx"
    assert path.stat().st_size < 300 * 1024
    assert import_onnx(path, batch=1) == import_onnx(om.small_cnn(), batch=1, name="small-cnn")
    validator = jsonschema.Draft202012Validator(json.loads(SHIPPED_SCHEMA_PATH.read_text()))
    for instance in EXAMPLES.glob("*.yaml"):
        validator.validate(yaml.safe_load(instance.read_text()))


def test_instance_onnx_workload_paths_and_errors(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(EXAMPLES / "small-cnn.onnx", folder / "net.onnx")
    inst_path = tmp_path / "case.yaml"

    def load(workload: dict[str, Any]) -> Any:
        inst_path.write_text(yaml.safe_dump(pinning_doc(workload)))
        return load_instance(inst_path)

    inst = load({"onnx": "models/net.onnx", "batch": 4, "name": "mine"})  # relative to the instance's folder
    assert inst.workload.name == "mine" and inst.workload.tensors["input"].shape == (4, 3, 32, 32)
    assert inst.workload.total_macs == 4 * small_cnn_reference().total_macs

    with pytest.raises(InputError) as info:
        load({"onnx": "net.onnx"})
    err = info.value
    assert err.file == str(inst_path) and err.path == ("workload", "onnx")
    assert "ONNX model 'net.onnx'" in err.message and "file not found" in err.message

    with pytest.raises(InputError) as info:
        load({"onnx": "models/net.onnx"})  # the batch dimension is symbolic
    assert info.value.path == ("workload", "dims") and "symbolic 'batch'" in info.value.message

    with pytest.raises(InputError) as info:
        load({"onnx": "models/net.onnx", "dim": {"batch": 1}})  # schema: unknown key
    assert info.value.path == ("workload",) and "'dim'" in info.value.message

    with pytest.raises(InputError) as info:
        load({"onnx": "models/net.onnx", "dims": {"batch": 0}})
    assert info.value.path == ("workload", "dims", "batch")


def test_summary_numbers_of_the_examples() -> None:
    wl = import_onnx(EXAMPLES / "small-cnn.onnx", batch=1)
    assert wl.total_macs == small_cnn_reference().total_macs == 5_572_928
    convs = [op for op in wl.operators if op.kind in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D)]
    assert sum(math.prod(wl.tensors[op.inputs[1]].shape) for op in convs) == 20_688


# ================================================================================================ exported models
def _conv_macs(cin: int, cout: int, k: int, out: int, groups: int = 1) -> int:
    return cout * (cin // groups) * k * k * out * out


def _encoder_macs(seq: int, hidden: int, heads: int, ffn: int, inner: int | None = None) -> int:
    """q, k, v, output projections, Q·K^T and A·V, the two feed-forward matmuls of one layer."""
    inner = hidden if inner is None else inner
    return 4 * seq * hidden * inner + 2 * seq * seq * inner + 2 * seq * hidden * ffn


def kinds(wl: Workload) -> dict[str, int]:
    out: dict[str, int] = {}
    for op in wl.operators:
        out[op.kind.value] = out.get(op.kind.value, 0) + 1
    return out


def test_mobilenet_v2_tf_padding_folds_into_the_convolutions() -> None:
    wl = import_onnx(om.mobilenet_v2_hf(), batch=1)
    zoo = ZOO.create("mobilenet-v2", {"num_classes": 1001})
    assert layers(wl) == layers(zoo)  # the 52 convolutions and the classifier, same loop dimensions
    assert wl.total_macs == zoo.total_macs
    assert "concat" not in kinds(wl)  # every Pad folded: none left as data movement
    convs = [op for op in wl.operators if op.kind in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D)]
    # TensorFlow "same": a 3x3/2 on an even size pads one row and column after; a 3x3/1 one on each side
    assert convs[0].attrs["padding"] == (0, 0, 1, 1) and convs[1].attrs["padding"] == (1, 1, 1, 1)
    assert weight_elements(wl) == weight_elements(zoo)  # BN folded, Clip bounds and pads constants gone


def test_efficientnet_b0_pads_squeeze_excitation_and_pooler() -> None:
    wl = import_onnx(om.efficientnet_b0_hf(), batch=1)
    size, macs, blocks = 112, _conv_macs(3, 32, 3, 112), 0
    for ratio, k, s, cin, cout, repeats in om.EFFICIENTNET_B0_BLOCKS:
        for j in range(repeats):
            stride, cin = (s, cin) if j == 0 else (1, cout)
            hidden, se = cin * ratio, max(1, int(cin * 0.25))
            out = size // stride
            macs += (_conv_macs(cin, hidden, 1, size) if ratio != 1 else 0) + _conv_macs(hidden, hidden, k, out, hidden)
            macs += 2 * hidden * se + _conv_macs(hidden, cout, 1, out)  # squeeze-excitation 1x1 convs on 1x1
            size, blocks = out, blocks + 1
    macs += _conv_macs(320, 1280, 1, size) + 1280 * 1000
    assert wl.total_macs == macs
    got = kinds(wl)
    assert "concat" not in got and got["pool"] == blocks + 1  # one global pool per block, and the pooler
    pooler = wl.operators[-3]
    assert pooler.kind == OpKind.POOL and pooler.attrs["global"]  # AvgPool2d(1280, ceil_mode) on 7x7: one window
    assert wl.op("encoder.blocks.1.depthwise_conv.depthwise_conv.Conv").attrs["padding"] == (0, 0, 1, 1)
    assert wl.op("encoder.blocks.3.depthwise_conv.depthwise_conv.Conv").attrs["padding"] == (1, 1, 2, 2)


def test_distilbert_embeddings_mask_and_first_token() -> None:
    seq, hidden = 128, 768
    wl = import_onnx(om.distilbert_hf(), batch=1, dims={"sequence_length": seq})
    zoo = ZOO.create("bert-base", {"layers": 6})
    assert layers(wl)[:6 * 8] == layers(zoo)  # the encoder layer for layer; then pre_classifier and classifier
    assert wl.total_macs == zoo.total_macs + hidden * hidden + hidden * 2
    words = wl.op("distilbert.embeddings.word_embeddings.Gather")
    assert words.kind == OpKind.RESHAPE and words.attrs["shape"] == (1, seq, hidden)
    # the lookup reads the 128 gathered rows, never the 30,522-row table
    assert wl.tensors[words.inputs[0]].shape == (seq, hidden) and wl.tensors[words.inputs[0]].role == TensorRole.WEIGHT
    assert wl.tensors["distilbert.embeddings.position_embeddings.Gather_output_0"].shape == (1, seq, hidden)
    where = wl.op("distilbert.transformer.layer.0.attn.Where")
    assert where.attrs["function"] == "where" and [wl.tensors[t].shape for t in where.inputs] == [
        (1, 12, seq, seq), (1,), (1, 12, seq, seq)]  # the all-ones mask folded to a constant condition
    first = [op for op in wl.operators if op.name.startswith("distilbert.Gather")]
    assert [(op.kind, wl.tensors[op.outputs[0]].shape) for op in first] == [
        (OpKind.SLICE, (1, 1, hidden)), (OpKind.RESHAPE, (1, hidden))]
    assert kinds(wl)["norm"] == 1 + 2 * 6


def test_t5_rmsnorm_and_relative_position_bias() -> None:
    seq, hidden, heads, d_kv, ffn, n = 32, 512, 8, 64, 2048, 6
    wl = import_onnx(om.t5_encoder_hf(), batch=1, dims={"sequence_length": seq})
    assert wl.total_macs == n * _encoder_macs(seq, hidden, heads, ffn, heads * d_kv)
    norms = [op for op in wl.operators if op.kind == OpKind.NORM]
    assert len(norms) == 2 * n + 1 and all(op.attrs == {"norm": "layernorm", "axis": -1} for op in norms)
    assert norms[0].name == "encoder.block.0.layer.0.layer_norm.RMSNorm"
    assert [wl.tensors[t].shape for t in norms[0].inputs] == [(1, seq, hidden), (hidden,)]  # x and the scale
    functions = sorted(op.attrs["function"] for op in wl.operators if op.kind == OpKind.ELEMENTWISE)
    assert functions == ["add"] * (3 * n)  # residuals and the bias; no Pow / Sqrt / Reciprocal left
    bias = {t for op in wl.operators if op.name.endswith("SelfAttention.Add") for t in op.inputs
            if wl.tensors[t].role == TensorRole.WEIGHT}
    assert [wl.tensors[t].shape for t in bias] == [(1, heads, seq, seq)]  # one constant, read by every layer
    assert [op.attrs.get("activation") for op in wl.operators if op.name.endswith("wi.MatMul")] == ["relu"] * n


def test_vit_class_token_and_pooler() -> None:
    hidden, n, tokens = 768, 12, 197
    wl = import_onnx(om.vit_hf(), batch=2)
    patch = _conv_macs(3, hidden, 16, 14)
    assert wl.total_macs == 2 * (patch + n * _encoder_macs(tokens, hidden, 12, 3072) + hidden * 1000)
    cat = [op for op in wl.operators if op.kind == OpKind.CONCAT]
    assert len(cat) == 1 and wl.tensors[cat[0].inputs[0]].shape == (2, 1, hidden)  # the expanded class token
    assert wl.tensors[cat[0].inputs[0]].role == TensorRole.WEIGHT
    assert kinds(wl)["norm"] == 2 * n + 1 and kinds(wl)["softmax"] == n
    assert wl.tensors[wl.operators[-1].outputs[0]].shape == (2, 1000)


def test_convnext_channels_first_layer_norm_and_mean() -> None:
    wl = import_onnx(om.convnext_tiny_hf(), batch=1)
    size, macs, cin = 56, _conv_macs(3, 96, 4, 56), 96
    for s, (depth, c) in enumerate(om.CONVNEXT_TINY):
        if s:
            size //= 2
            macs += _conv_macs(cin, c, 2, size)
        macs += depth * (_conv_macs(c, c, 7, size, c) + 2 * size * size * c * 4 * c)
        cin = c
    assert wl.total_macs == macs + 768 * 1000
    first = [op for op in wl.operators if op.kind == OpKind.NORM]
    assert len(first) == 1 + 3 + sum(d for d, _ in om.CONVNEXT_TINY) + 1
    cf = wl.op("convnext.embeddings.layernorm.LayerNorm")
    assert cf.attrs == {"norm": "layernorm", "axis": 1}
    assert [wl.tensors[t].shape for t in cf.inputs] == [(1, 96, 56, 56), (96, 1, 1), (96, 1, 1)]
    mean = wl.op("convnext.ReduceMean")
    assert mean.kind == OpKind.POOL and mean.attrs["global"] and mean.attrs["mode"] == "avg"
    assert wl.op("convnext.ReduceMean.shape").attrs["shape"] == (1, 768)  # keepdims 0


def test_exported_models_round_trip_through_an_instance() -> None:
    for wl in (import_onnx(om.t5_encoder_hf(layers=1), batch=1, dims={"sequence_length": 8}),
               import_onnx(om.convnext_tiny_hf(stages=((1, 8), (1, 16)), image=32), batch=1)):
        doc = workload_document(wl)
        assert instance_from_dict(pinning_doc(yaml.safe_load(dump_workload_yaml(doc)))).workload == wl


def test_pad_gather_reductions_and_elementwise_on_data() -> None:
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["p"], name="pad", mode="constant"),  # channels and width: not folded
        helper.make_node("Gather", ["p", "idx"], ["g"], name="pick", axis=1),  # channels 1, 3, 5
        helper.make_node("ReduceSum", ["g", "ax"], ["r"], name="sum", keepdims=0),  # over the last axis
        helper.make_node("ReduceMax", ["g"], ["m"], name="max", axes=[1], keepdims=1),  # a middle axis
        helper.make_node("Less", ["r", "zero"], ["lt"], name="less"),
        helper.make_node("Neg", ["r"], ["neg"], name="neg"),
        helper.make_node("Where", ["lt", "neg", "r"], ["abs"], name="where"),
        helper.make_node("Expand", ["abs", "shape"], ["y"], name="expand"),
        helper.make_node("Exp", ["m"], ["e"], name="exp"),
    ]
    inits = {"pads": _i64(0, 1, 0, 0, 0, 2, 0, 3), "idx": _i64(1, 3, 5), "ax": _i64(-1),
             "zero": np.zeros((), np.float32), "shape": _i64(2, 1, 1, 1)}
    wl = import_onnx(_model(nodes, [("x", [1, 4, 5, 6])], ["y", "e"], inits))
    got = [(op.name, op.kind.value, wl.tensors[op.outputs[0]].shape) for op in wl.operators]
    assert got == [
        ("pad.axis1", "concat", (1, 7, 5, 6)), ("pad", "concat", (1, 7, 5, 9)),  # 1 + 2 channels, 3 columns
        ("pick", "slice", (1, 3, 5, 9)),
        ("sum.view", "reshape", (1, 15, 9, 1)), ("sum", "pool", (1, 15, 1, 1)), ("sum.shape", "reshape", (1, 3, 5)),
        ("max.view", "reshape", (1, 1, 3, 45)), ("max", "pool", (1, 1, 1, 45)), ("max.shape", "reshape", (1, 1, 5, 9)),
        ("less", "elementwise", (1, 3, 5)), ("neg", "elementwise", (1, 3, 5)), ("where", "elementwise", (1, 3, 5)),
        ("expand.rank", "reshape", (1, 1, 3, 5)), ("expand", "tile", (2, 1, 3, 5)),
        ("exp", "elementwise", (1, 1, 5, 9)),
    ]
    assert wl.op("pick").attrs == {"starts": (0, 1, 0, 0), "ends": (1, 6, 5, 9), "steps": (1, 2, 1, 1)}
    assert wl.op("max").attrs["kernel"] == (3, 1) and wl.op("sum").attrs["global"]
    assert [wl.tensors[t].shape for t in wl.op("pad.axis1").inputs] == [(1, 1, 5, 6), (1, 4, 5, 6), (1, 2, 5, 6)]
    assert wl.total_macs == 0


def test_unsupported_forms_of_the_new_operators_name_the_node() -> None:
    reflect = _model([helper.make_node("Pad", ["x", "pads"], ["y"], name="mirror", mode="reflect")],
                     [("x", [1, 4, 8, 8])], ["y"], {"pads": _i64(0, 0, 1, 1, 0, 0, 1, 1)})
    assert "node 'mirror' (Pad) pads in 'reflect' mode" in import_error(reflect).message
    scattered = _model([helper.make_node("Gather", ["x", "i"], ["y"], name="pick", axis=1)], [("x", [2, 8])], ["y"],
                       {"i": _i64(0, 5, 1)})
    assert "node 'pick' (Gather) indexes axis 1 with constant indices" in import_error(scattered).message
    dynamic = _model([helper.make_node("Gather", ["x", "i"], ["y"], name="dyn")], [("x", [4, 8])], ["y"])
    dynamic.graph.input.append(helper.make_tensor_value_info("i", TensorProto.INT64, [3]))
    assert "node 'dyn' (Gather) gathers with indices computed at run time" in import_error(dynamic).message


def test_opset18_reduce_mean_axes_input_and_rms_norm_with_div() -> None:
    nodes = [
        helper.make_node("Pow", ["x", "two"], ["sq"], name="/n/Pow"),
        helper.make_node("ReduceMean", ["sq", "axes"], ["ms"], name="/n/ReduceMean", keepdims=1),
        helper.make_node("Add", ["ms", "eps"], ["v"], name="/n/Add"),
        helper.make_node("Sqrt", ["v"], ["rt"], name="/n/Sqrt"),
        helper.make_node("Div", ["x", "rt"], ["y"], name="/n/Div"),
    ]
    inits = {"two": np.array(2.0, np.float32), "axes": _i64(-1), "eps": np.array(1e-6, np.float32)}
    wl = import_onnx(_model(nodes, [("x", [2, 8, 16])], ["y"], inits, opset=18))
    assert [(op.name, op.kind.value, dict(op.attrs)) for op in wl.operators] == [
        ("n.RMSNorm", "norm", {"norm": "layernorm", "axis": -1})]
