"""Parallel WaveNet: the inverse-autoregressive-flow student of van den Oord et al. 2017 (arXiv:1711.10433).

``parallel-wavenet`` — the feed-forward student that generates a whole utterance in parallel: logistic noise ``z``
goes through ``len(flow_layers)`` inverse autoregressive flows, each a WaveNet-like stack of dilated causal
convolutions that reads ``z_<t`` and outputs a scale ``s`` and a shift ``μ`` per sample; the flow outputs
``x = z·s + μ``, which is the next flow's input. Numbers taken from the paper: 4 flows of 10, 10, 10 and 30 layers
(``flow_layers="10-10-10-30"``), the dilation doubling from 1 up to 512 and restarting every 10 layers, filter size
3, 24 kHz audio, 16-bit samples (``dtype_bytes=2``); the student has residual connections but no skip connections
(the paper: "the same WaveNet architecture layout, except with different inputs and outputs and no skip
connections"). 64 residual channels (128 in the gate before it is halved) follow the brief of this reproduction;
the conditioning sizes (``cond_channels`` linguistic features every ``hop`` = 120 samples, i.e. 5 ms frames at
24 kHz, and a ``speaker_channels`` speaker embedding — the deployed model serves several voices) are our choices.

Audio is laid out NCHW with ``H = 1`` and time on ``W``; a causal 1-D convolution is a ``1×k`` conv2d with left
padding. Operator names and the data-movement operators (marked ``*``; their outputs are the load/store pairs of
:mod:`dlaopt.formulations.bankmap.dme`)::

    conditioning (shared by every layer of every flow)
      cond.features.t *      transpose  features (B, frames, F) → (B, F, frames)      (time-major frontend output)
      cond.features.r *      reshape    → (B, F, 1, frames)
      cond.upsample *        repeat     ×hop along time → (B, F, 1, T)                 (upsampling by repetition)
      speaker.r *            reshape    speaker (B, G) → (B, G, 1, 1)
      speaker.tile *         tile       ×T along time → (B, G, 1, T)                   (global conditioning)
      cond.concat *          concat     channels → (B, F+G, 1, T)
    noise.r *                reshape    noise (B, T) → (B, 1, 1, T)
    flow f (layers L_f)
      flow{f}.in             conv 1×k, left padding k → (B, C, 1, T+1)             (shifted: sees z_<t only)
      flow{f}.in.chomp *     slice      time [0, T) → (B, C, 1, T)                   (TVM strided_slice)
      layer l, dilation d = 2^(l mod 10)
        flow{f}.layer{l}.conv       conv 1×k, dilation d, left padding (k−1)·d → (B, 2C, 1, T)
        flow{f}.layer{l}.cond       conv 1×1 of the conditioning → (B, 2C, 1, T)
        flow{f}.layer{l}.gate_in    add
        flow{f}.layer{l}.split *    split channels → 2 × (B, C, 1, T)
        flow{f}.layer{l}.tanh / .sigmoid / .gate (mul)                             (gated activation)
        flow{f}.layer{l}.res        conv 1×1 → (B, C, 1, T);   flow{f}.layer{l}.add  residual add
      flow{f}.out.relu · flow{f}.out.hidden (conv 1×1, ReLU) · flow{f}.out.proj (conv 1×1 → (B, 2, 1, T))
      flow{f}.out.split *    split → log-scale (B, 1, 1, T), shift μ (B, 1, 1, T)
      flow{f}.scale          sigmoid (a positive scale: the activation vocabulary has no exp)
      flow{f}.mul · flow{f}.shift   x = z·s + μ
    audio.r *                reshape    (B, 1, 1, T) → (B, T)   — the graph output

Load/store pairs (one per tensor a data-movement operator stores): 2 per layer (the gate halves), 3 per flow
(chomp and the two halves of the output split), 6 for the conditioning, 1 for the noise and 1 for the output:
``2·ΣL + 3·flows + 8`` = 2·60 + 12 + 8 = **140** with the defaults. Data-movement elimination removes all but the
output reshape (its tensor is the graph output).

Sizes with the defaults (``samples = 24000``, one second of audio; fp16): a gate half is 64·24000·2 B = 3.07 MB,
the conditioning 80·24000·2 B = 3.84 MB; the 140 stored tensors total ≈ 389 MB, of which the output is 48 kB.
"""

from __future__ import annotations

from dlaopt.workload import NetworkBuilder, Workload
from dlaopt.zoo._common import ZOO, new_builder


def _layers(spec: str) -> list[int]:
    try:
        out = [int(v) for v in spec.split("-")]
    except ValueError:
        raise ValueError(f"'flow_layers' must be layer counts joined by '-' (e.g. '10-10-10-30'), got {spec!r}") \
            from None
    if not out or any(v <= 0 for v in out):
        raise ValueError(f"'flow_layers' needs at least one flow and positive layer counts; got {spec!r}")
    return out


def _flow(b: NetworkBuilder, z: str, cond: str, f: int, layers: int, *, channels: int, kernel: int,
          dilation_cycle: int, samples: int, batch: int) -> str:
    """One inverse autoregressive flow: returns ``z·s(z_<t) + μ(z_<t)``, shape (B, 1, 1, T)."""
    p = f"flow{f}"
    h = b.conv2d(z, channels, (1, kernel), padding=(0, kernel, 0, 0), name=f"{p}.in")
    h = b.slice(h, (0, 0, 0, 0), (batch, channels, 1, samples), name=f"{p}.in.chomp")
    for layer in range(layers):
        q = f"{p}.layer{layer}"
        d = 2 ** (layer % dilation_cycle)
        a = b.conv2d(h, 2 * channels, (1, kernel), dilation=(1, d), padding=(0, (kernel - 1) * d, 0, 0),
                     name=f"{q}.conv")
        c = b.conv2d(cond, 2 * channels, 1, name=f"{q}.cond")
        a = b.add(a, c, name=f"{q}.gate_in")
        filt, gate = b.split(a, [channels, channels], axis=1, name=f"{q}.split")
        g = b.mul(b.activation(filt, "tanh", name=f"{q}.tanh"), b.activation(gate, "sigmoid", name=f"{q}.sigmoid"),
                  name=f"{q}.gate")
        h = b.add(h, b.conv2d(g, channels, 1, name=f"{q}.res"), name=f"{q}.add")
    h = b.activation(h, "relu", name=f"{p}.out.relu")
    h = b.conv2d(h, channels, 1, activation="relu", name=f"{p}.out.hidden")
    o = b.conv2d(h, 2, 1, name=f"{p}.out.proj")
    log_s, mu = b.split(o, [1, 1], axis=1, name=f"{p}.out.split")
    s = b.activation(log_s, "sigmoid", name=f"{p}.scale")
    return b.add(b.mul(z, s, name=f"{p}.mul"), mu, name=f"{p}.shift")


@ZOO.register("parallel-wavenet", "Parallel WaveNet student (van den Oord et al. 2017): 4 IAF flows of 10/10/10/30 "
                                  "dilated causal conv layers, 64 channels, conditioning upsampled by repeat")
def parallel_wavenet(
    *,
    batch: int = 1,
    dtype_bytes: int = 2,
    samples: int = 24000,
    hop: int = 120,
    flow_layers: str = "10-10-10-30",
    residual_channels: int = 64,
    kernel: int = 3,
    dilation_cycle: int = 10,
    cond_channels: int = 64,
    speaker_channels: int = 16,
) -> Workload:
    b = new_builder("parallel-wavenet", batch=batch, dtype_bytes=dtype_bytes, samples=samples, hop=hop,
                    flow_layers=flow_layers, residual_channels=residual_channels, kernel=kernel,
                    dilation_cycle=dilation_cycle, cond_channels=cond_channels, speaker_channels=speaker_channels)
    flows = _layers(flow_layers)
    if samples % hop:
        raise ValueError(f"'samples' ({samples}) must be a multiple of 'hop' ({hop})")
    frames = samples // hop
    # conditioning: linguistic features upsampled to the audio rate by repetition, plus a tiled speaker embedding
    feats = b.input("features", (batch, frames, cond_channels))
    c = b.transpose(feats, (0, 2, 1), name="cond.features.t")
    c = b.reshape(c, (batch, cond_channels, 1, frames), name="cond.features.r")
    c = b.repeat(c, hop, axis=3, name="cond.upsample")
    spk = b.input("speaker", (batch, speaker_channels))
    g = b.reshape(spk, (batch, speaker_channels, 1, 1), name="speaker.r")
    g = b.tile(g, (1, 1, 1, samples), name="speaker.tile")
    cond = b.concat([c, g], axis=1, name="cond.concat")
    # the flows
    z = b.reshape(b.input("noise", (batch, samples)), (batch, 1, 1, samples), name="noise.r")
    for f, layers in enumerate(flows):
        z = _flow(b, z, cond, f, layers, channels=residual_channels, kernel=kernel, dilation_cycle=dilation_cycle,
                  samples=samples, batch=batch)
    audio = b.reshape(z, (batch, samples), name="audio.r")
    return b.build(outputs=[audio])
