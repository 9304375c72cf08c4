"""Recurrent networks: an LSTM unrolled over time with its weights shared across the time steps.

``lstm`` — ``layers`` stacked LSTM layers unrolled over ``time_steps`` steps. The input is one graph tensor
``input`` of shape ``(batch, time_steps, input_size)`` (SMAUG's NTC layout), split into the time steps and
reshaped to ``(batch, input_size)`` (SMAUG's ``unstack``). Every layer ``l`` has two weight tensors, ``lstm{l}.W``
``(in, 4*hidden)`` and ``lstm{l}.U`` ``(hidden, 4*hidden)`` — the four gates fused, order i, f, g, o — consumed by
the matmuls of *every* time step. One step of layer ``l`` (operator names ``lstm{l}.t{t}.…``)::

    x_gates = x_t @ W          h_gates = h_{t-1} @ U          gates = x_gates + h_gates
    i, f, g, o = split(gates)  i, f, o = sigmoid(.)           g = tanh(g)
    c_t = f * c_{t-1} + i * g                                 h_t = o * tanh(c_t)

The initial states ``lstm{l}.h0`` and ``lstm{l}.c0`` ``(batch, hidden)`` are graph inputs; the outputs are the
final ``h`` and ``c`` of every layer (PyTorch's ``h_n, c_n``). Biases are omitted (they add no MACs). MACs at batch
1: ``time_steps * 4 * hidden * (input_size + hidden * layers + hidden * (layers - 1))``, i.e. ``T·4H·(I+H)`` for
the first layer and ``T·4H·2H`` for each further one (1,048,576 with the defaults).

SMAUG's own "LSTM" model (``lstm_smv``, "simple 2-layer LSTM") has 4 time steps, 32 inputs and 32 hidden units per
layer: ``time_steps=4, hidden=32, input_size=32, layers=2`` reproduces its shapes and MACs (SMAUG concatenates
``[x_t, h_{t-1}]`` and runs one matmul per gate; the fused matmuls here do the same multiply-accumulates).
"""

from __future__ import annotations

from dlaopt.workload import Workload
from dlaopt.zoo._common import ZOO, new_builder


@ZOO.register("lstm", "LSTM unrolled over time steps, weights shared by every step (SMAUG-style fp16)")
def lstm(
    *,
    batch: int = 1,
    dtype_bytes: int = 2,
    time_steps: int = 8,
    hidden: int = 128,
    input_size: int = 128,
    layers: int = 1,
) -> Workload:
    b = new_builder("lstm", batch=batch, dtype_bytes=dtype_bytes, time_steps=time_steps, hidden=hidden,
                    input_size=input_size, layers=layers)
    h4 = 4 * hidden
    x = b.input("input", (batch, time_steps, input_size))
    parts = b.split(x, [1] * time_steps, axis=1, name="unstack") if time_steps > 1 else [x]
    seq = [b.reshape(p, (batch, input_size), name=f"input.t{t}") for t, p in enumerate(parts)]
    outputs: list[str] = []
    for layer in range(layers):
        in_features = input_size if layer == 0 else hidden
        w = b.weight(f"lstm{layer}.W", (in_features, h4))
        u = b.weight(f"lstm{layer}.U", (hidden, h4))
        h = b.input(f"lstm{layer}.h0", (batch, hidden))
        c = b.input(f"lstm{layer}.c0", (batch, hidden))
        out_seq = []
        for t, x_t in enumerate(seq):
            p = f"lstm{layer}.t{t}"
            xg = b.linear(x_t, h4, weight=w, name=f"{p}.x_gates")
            hg = b.linear(h, h4, weight=u, name=f"{p}.h_gates")
            gates = b.add(xg, hg, name=f"{p}.gates")
            i, f, g, o = b.split(gates, [hidden] * 4, axis=1, name=f"{p}.split")
            i = b.activation(i, "sigmoid", name=f"{p}.i")
            f = b.activation(f, "sigmoid", name=f"{p}.f")
            g = b.activation(g, "tanh", name=f"{p}.g")
            o = b.activation(o, "sigmoid", name=f"{p}.o")
            c = b.add(b.mul(f, c, name=f"{p}.fc"), b.mul(i, g, name=f"{p}.ig"), name=f"{p}.c")
            h = b.mul(o, b.activation(c, "tanh", name=f"{p}.c_tanh"), name=f"{p}.h")
            out_seq.append(h)
        outputs += [h, c]
        seq = out_seq
    return b.build(outputs=outputs)
