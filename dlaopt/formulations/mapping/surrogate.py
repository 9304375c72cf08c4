r"""A gradient-based mapper on a learned surrogate of the cost model, in the manner of Mind Mappings (seed 001,
§5.1.3 and §5.2.3: "trains a neural network based surrogate model via offline sampling of millions of data points
collected from the cost model ... utilizes gradient-descent on this surrogate model to find mappings, instead of
searching").

**Encoding** (:class:`Encoding`). A mapping of a layer becomes a fixed-length real vector ``x`` over a *slot
layout* — the slot names of :meth:`MappingArch.slots` of one or more accelerators merged in nest order
(:func:`slot_layout`), so that an accelerator with fewer slots (Accel-A has no MAC fanout, Accel-B a 4-ALU one) is
encoded with factor 1 on the slots it lacks:

* ``log2 n_d`` for every dimension ``d`` (the layer's shape: one surrogate serves every layer of one family on one
  accelerator, as Mind Mappings trains across workloads on one accelerator configuration);
* ``log2 f[d][k]`` for every dimension and slot of the layout (tiling and parallelism, continuous once relaxed);
* a position score ``pos_i(d) / (D - 1)`` for every level ``i`` and dimension (loop order, outermost 0).

**Surrogate** (:class:`Surrogate`). A multilayer perceptron (tanh hidden layers, linear output) maps the
standardized ``x`` to standardized ``(ln energy, ln latency)``; ``ln EDP`` is their sum. It is trained with Adam on
mini-batches of valid mappings sampled on one accelerator (:func:`train_surrogate`: random mappings of
:func:`~.heuristics.sample_mapping`, repaired with :func:`~.heuristics.fit_capacity`, labelled by
:func:`~.cost.evaluate_mapping`), with a held-out validation error; everything is numpy with fixed seeds, so
training is deterministic. Mind Mappings trained on millions of samples; the defaults here use tens of thousands
(about a minute on one core).

**Search** (:func:`surrogate_search`). From a random valid start, repeated steps ``x <- x - lr * g / max|g|`` where
``g`` is the gradient of the predicted objective with respect to the free entries of ``x`` (hand-written backprop;
for each dimension the factor part of ``g`` is projected on ``sum_k log2 f[d][k] = log2 n_d``, the plane of perfect
factorizations). After every step ``x`` is projected to a mapping (:func:`project`: each dimension's primes go,
largest first, to the slot whose log-factor falls furthest short of its target, within the spatial axis sizes; the
orders sort the position scores), repaired for capacity and scored by the real cost model through an
:class:`~.heuristics.Evaluator` (one sample per distinct mapping; the trace records every improvement). A start is
abandoned for a new random one when the projection repeats for ``patience`` steps or after ``steps`` steps.

The trained model is stored as an ``.npz`` written byte-for-byte deterministically (:meth:`Surrogate.save`), so a
study trains on Accel-A once and runs the same model on Accel-B (seed 001 §5.2.3, "Accel-B, an unseen accelerator
configuration for the surrogate model").
"""

from __future__ import annotations

import io
import math
import random
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dlaopt.formulations.mapping.arch import SPATIAL, MappingArch
from dlaopt.formulations.mapping.cost import OBJECTIVES, evaluate_mapping
from dlaopt.formulations.mapping.heuristics import (
    Evaluator,
    SearchTrace,
    fit_capacity,
    mapping_key,
    sample_mapping,
)
from dlaopt.formulations.mapping.loopnest import LoopNest, prime_factors
from dlaopt.formulations.mapping.mapping import Mapping

TARGETS = ("energy", "latency")  # the surrogate's outputs, as natural logs


# ================================================================================================== encoding
def slot_layout(*archs: MappingArch) -> tuple[str, ...]:
    """The slot names of every architecture merged in nest order (innermost first): a name missing so far is
    inserted right after the last name of its architecture already placed."""
    out: list[str] = []
    for arch in archs:
        prev = -1
        for s in arch.slots():
            if s.name in out:
                prev = out.index(s.name)
            else:
                out.insert(prev + 1, s.name)
                prev += 1
    return tuple(out)


@dataclass(frozen=True)
class Encoding:
    """The relaxed vector of a mapping (module docstring): ``dims`` of the layer family, ``slots`` the slot layout,
    ``levels`` the number of storage levels. Entries: sizes ``[0, D)``, then factors ``D + d * S + s``, then order
    scores ``D + D * S + i * D + d``."""

    dims: tuple[str, ...]
    slots: tuple[str, ...]
    levels: int

    @property
    def size(self) -> int:
        D = len(self.dims)
        return D + D * len(self.slots) + self.levels * D

    def factor_index(self, d: int, s: int) -> int:
        return len(self.dims) + d * len(self.slots) + s

    def order_index(self, level: int, d: int) -> int:
        D = len(self.dims)
        return D + D * len(self.slots) + level * D + d

    def check(self, nest: LoopNest, arch: MappingArch) -> list[int]:
        """The layout index of every slot of ``arch`` (a ``ValueError`` if the layer or the accelerator does not
        fit the encoding)."""
        if tuple(nest.dims) != self.dims:
            raise ValueError(f"layer {nest.name}: dimensions {nest.dims} are not the encoding's {self.dims}")
        if len(arch.levels) != self.levels:
            raise ValueError(f"accelerator {arch.name}: {len(arch.levels)} levels, the encoding has {self.levels}")
        names = [s.name for s in arch.slots()]
        missing = [n for n in names if n not in self.slots]
        if missing:
            raise ValueError(f"accelerator {arch.name}: slots {missing} are not in the encoding's layout")
        return [self.slots.index(n) for n in names]

    def encode(self, nest: LoopNest, arch: MappingArch, m: Mapping) -> np.ndarray:
        idx = self.check(nest, arch)
        x = np.zeros(self.size)
        D = len(self.dims)
        for di, d in enumerate(self.dims):
            x[di] = math.log2(nest.sizes[d])
            for k, s in enumerate(idx):
                x[self.factor_index(di, s)] = math.log2(m.factors[d][k])
        for i, order in enumerate(m.orders):
            for pos, d in enumerate(order):
                x[self.order_index(i, self.dims.index(d))] = pos / max(1, D - 1)
        return x

    def free_mask(self, nest: LoopNest, arch: MappingArch) -> np.ndarray:
        """1 on the entries a search may move: factors of the dimensions above 1 at the slots ``arch`` has, and
        every order score."""
        idx = self.check(nest, arch)
        mask = np.zeros(self.size)
        for di, d in enumerate(self.dims):
            if nest.sizes[d] > 1:
                for s in idx:
                    mask[self.factor_index(di, s)] = 1.0
        for i in range(self.levels):
            for di in range(len(self.dims)):
                mask[self.order_index(i, di)] = 1.0
        return mask


def project(nest: LoopNest, arch: MappingArch, enc: Encoding, x: np.ndarray) -> Mapping:
    """The structurally valid mapping nearest ``x`` (module docstring): per dimension in nest order, its prime
    factors (with multiplicity, largest first) each go to the slot where it reduces ``(log2 f_k - x_k)^2`` most (the
    first on a tie), among the temporal slots and the spatial ones it still fits (product over dimensions within
    the axis size). Loop orders sort the position scores (nest order on a tie). Capacity is not considered."""
    idx = enc.check(nest, arch)
    slots = arch.slots()
    used = [1] * len(slots)
    factors: dict[str, tuple[int, ...]] = {}
    for di, d in enumerate(enc.dims):
        want = [float(x[enc.factor_index(di, s)]) for s in idx]
        fs = [1] * len(slots)
        have = [0.0] * len(slots)
        primes = sorted((p for p, e in prime_factors(nest.sizes[d]).items() for _ in range(e)), reverse=True)
        for p in primes:
            lp = math.log2(p)
            best: tuple[float, int] | None = None
            for k, s in enumerate(slots):
                if s.kind == SPATIAL and used[k] * fs[k] * p > s.size:
                    continue
                gain = lp * (2.0 * (want[k] - have[k]) - lp)
                if best is None or gain > best[0]:
                    best = (gain, k)
            assert best is not None  # temporal slots take any factor
            k = best[1]
            fs[k] *= p
            have[k] += lp
        for k, s in enumerate(slots):
            if s.kind == SPATIAL:
                used[k] *= fs[k]
        factors[d] = tuple(fs)
    orders = []
    for i in range(len(arch.levels)):
        score = {d: float(x[enc.order_index(i, di)]) for di, d in enumerate(enc.dims)}
        orders.append(tuple(sorted(enc.dims, key=lambda d: (score[d], enc.dims.index(d)))))
    return Mapping(factors, tuple(orders))


# ================================================================================================== the network
@dataclass
class MLP:
    """A multilayer perceptron on standardized inputs and outputs: ``tanh`` hidden layers, a linear output.
    ``x_mean``/``x_std`` and ``y_mean``/``y_std`` map raw inputs and outputs to the standardized ones."""

    weights: list[np.ndarray]
    biases: list[np.ndarray]
    x_mean: np.ndarray
    x_std: np.ndarray
    y_mean: np.ndarray
    y_std: np.ndarray

    def _forward(self, Z: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """Standardized output and the activations of every layer (input first)."""
        acts = [Z]
        h = Z
        for j, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = h @ w + b
            if j < len(self.weights) - 1:
                h = np.tanh(h)
            acts.append(h)
        return h, acts

    def _backward(self, acts: list[np.ndarray], dout: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray],
                                                                          np.ndarray]:
        """Gradients of ``sum(dout * output)`` with respect to the weights, the biases and the standardized
        input."""
        gw: list[np.ndarray] = [np.empty(0)] * len(self.weights)
        gb: list[np.ndarray] = [np.empty(0)] * len(self.weights)
        g = dout
        for j in range(len(self.weights) - 1, -1, -1):
            if j < len(self.weights) - 1:
                g = g * (1.0 - acts[j + 1] ** 2)  # tanh' = 1 - tanh^2
            gw[j] = acts[j].T @ g
            gb[j] = g.sum(axis=0)
            g = g @ self.weights[j].T
        return gw, gb, g

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Raw outputs for raw inputs (one row each)."""
        out, _ = self._forward((np.atleast_2d(X) - self.x_mean) / self.x_std)
        return out * self.y_std + self.y_mean

    def input_gradient(self, x: np.ndarray, weights: np.ndarray) -> tuple[float, np.ndarray]:
        """``sum_o weights[o] * predict(x)[o]`` and its gradient with respect to the raw input ``x``."""
        z = ((x - self.x_mean) / self.x_std)[None, :]
        out, acts = self._forward(z)
        value = float(((out * self.y_std + self.y_mean) * weights).sum())
        _, _, gz = self._backward(acts, (weights * self.y_std)[None, :])
        return value, gz[0] / self.x_std

    def arrays(self) -> dict[str, np.ndarray]:
        out = {"x_mean": self.x_mean, "x_std": self.x_std, "y_mean": self.y_mean, "y_std": self.y_std}
        for j, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            out[f"w{j}"], out[f"b{j}"] = w, b
        return out

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray]) -> MLP:
        n = sum(1 for k in a if k.startswith("w") and k[1:].isdigit())
        return cls([a[f"w{j}"] for j in range(n)], [a[f"b{j}"] for j in range(n)], a["x_mean"], a["x_std"],
                   a["y_mean"], a["y_std"])


@dataclass(frozen=True)
class TrainConfig:
    """Training of the surrogate: ``samples`` sampled mappings per layer, ``hidden`` layer widths, Adam with
    learning rate ``lr`` on mini-batches of ``batch`` for ``epochs`` passes, ``validation`` the held-out share."""

    samples: int = 10_000
    hidden: tuple[int, ...] = (128, 128)
    epochs: int = 60
    batch: int = 256
    lr: float = 1e-3
    validation: float = 0.1
    seed: int = 0


@dataclass
class FitReport:
    """Root-mean-square errors per output (raw units: natural logs for the surrogate) on the training and the
    held-out rows, and the loss (standardized MSE) after every epoch."""

    train_rmse: tuple[float, ...]
    val_rmse: tuple[float, ...]
    rows: int
    val_rows: int
    seconds: float
    history: list[float] = field(default_factory=list)


def fit_mlp(X: np.ndarray, Y: np.ndarray, config: TrainConfig) -> tuple[MLP, FitReport]:
    """Train an :class:`MLP` on rows ``X -> Y`` (a random ``config.validation`` share held out), deterministic
    given ``config.seed``: Glorot-uniform initialization, Adam (``beta = 0.9, 0.999``), shuffled mini-batches, loss
    the mean squared error of the standardized outputs."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(config.seed)
    X, Y = np.asarray(X, dtype=float), np.asarray(Y, dtype=float)
    if Y.ndim == 1:
        Y = Y[:, None]
    perm = rng.permutation(len(X))
    n_val = int(round(len(X) * config.validation)) if len(X) > 1 else 0
    val, tr = perm[:n_val], perm[n_val:]
    x_mean, x_std = X[tr].mean(axis=0), X[tr].std(axis=0)
    x_std = np.where(x_std > 1e-12, x_std, 1.0)
    y_mean, y_std = Y[tr].mean(axis=0), Y[tr].std(axis=0)
    y_std = np.where(y_std > 1e-12, y_std, 1.0)
    sizes = [X.shape[1], *config.hidden, Y.shape[1]]
    weights, biases = [], []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        lim = math.sqrt(6.0 / (a + b))
        weights.append(rng.uniform(-lim, lim, size=(a, b)))
        biases.append(np.zeros(b))
    net = MLP(weights, biases, x_mean, x_std, y_mean, y_std)
    Z, T = (X - x_mean) / x_std, (Y - y_mean) / y_std
    params = [*net.weights, *net.biases]
    m1 = [np.zeros_like(p) for p in params]
    m2 = [np.zeros_like(p) for p in params]
    b1, b2, eps = 0.9, 0.999, 1e-8
    step = 0
    history: list[float] = []
    for _ in range(config.epochs):
        order = tr[rng.permutation(len(tr))]
        total = 0.0
        for start in range(0, len(order), config.batch):
            rows = order[start:start + config.batch]
            out, acts = net._forward(Z[rows])
            err = out - T[rows]
            total += float((err ** 2).sum())
            gw, gb, _ = net._backward(acts, 2.0 * err / err.size)
            step += 1
            for p, g, a, v in zip(params, [*gw, *gb], m1, m2, strict=True):
                a *= b1
                a += (1 - b1) * g
                v *= b2
                v += (1 - b2) * g * g
                p -= config.lr * (a / (1 - b1 ** step)) / (np.sqrt(v / (1 - b2 ** step)) + eps)
        history.append(total / max(1, len(tr) * T.shape[1]))

    def rmse(rows: np.ndarray) -> tuple[float, ...]:
        if len(rows) == 0:
            return tuple(math.nan for _ in range(Y.shape[1]))
        return tuple(float(v) for v in np.sqrt(((net.predict(X[rows]) - Y[rows]) ** 2).mean(axis=0)))

    return net, FitReport(rmse(tr), rmse(val), len(tr), len(val), time.perf_counter() - t0, history)


# ================================================================================================== the surrogate
@dataclass
class Surrogate:
    """An :class:`MLP` from :class:`Encoding` vectors to ``(ln energy, ln latency)``, with the accelerator it was
    trained on."""

    encoding: Encoding
    net: MLP
    trained_on: str = ""

    def predict(self, X: np.ndarray) -> np.ndarray:
        """``(ln energy, ln latency)`` per row of encodings."""
        return self.net.predict(X)

    def objective(self, x: np.ndarray, objective: str) -> tuple[float, np.ndarray]:
        """The predicted log objective (``ln energy``, ``ln latency`` or ``ln EDP``) of encoding ``x`` and its
        gradient with respect to ``x``."""
        if objective not in OBJECTIVES:
            raise ValueError(f"unknown mapping objective '{objective}' (expected one of {OBJECTIVES})")
        w = np.array([1.0, 1.0]) if objective == "edp" else np.array([float(t == objective) for t in TARGETS])
        return self.net.input_gradient(x, w)

    def save(self, path: str | Path) -> None:
        """Write an ``.npz`` (loadable with :func:`numpy.load`) whose bytes depend only on the model: members in a
        fixed order with a fixed timestamp."""
        arrays = {**self.net.arrays(), "dims": np.array(self.encoding.dims), "slots": np.array(self.encoding.slots),
                  "levels": np.array(self.encoding.levels), "trained_on": np.array(self.trained_on)}
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
            for name in sorted(arrays):
                buf = io.BytesIO()
                np.lib.format.write_array(buf, np.asarray(arrays[name]), allow_pickle=False)
                zf.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)), buf.getvalue())

    @classmethod
    def load(cls, path: str | Path) -> Surrogate:
        with np.load(path, allow_pickle=False) as data:
            a = {k: data[k] for k in data.files}
        enc = Encoding(tuple(str(d) for d in a["dims"]), tuple(str(s) for s in a["slots"]), int(a["levels"]))
        return cls(enc, MLP.from_arrays(a), str(a["trained_on"]))


def sample_dataset(nests: Sequence[LoopNest], arch: MappingArch, enc: Encoding, samples: int, seed: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``samples`` random mappings per layer (:func:`~.heuristics.sample_mapping`, repaired with
    :func:`~.heuristics.fit_capacity`; those beyond repair or invalid are skipped), encoded, with their
    ``(ln energy, ln latency)`` from the cost model."""
    rng = random.Random(seed)
    xs, ys = [], []
    for nest in nests:
        enc.check(nest, arch)
        for _ in range(samples):
            m = fit_capacity(nest, arch, sample_mapping(nest, arch, rng))
            if m is None:
                continue
            r = evaluate_mapping(nest, arch, m)
            if not r.valid or not 0 < r.energy_pj < math.inf or not 0 < r.latency_cycles < math.inf:
                continue
            xs.append(enc.encode(nest, arch, m))
            ys.append((math.log(r.energy_pj), math.log(r.latency_cycles)))
    return np.array(xs).reshape(len(xs), enc.size), np.array(ys).reshape(len(ys), 2)


def train_surrogate(nests: Sequence[LoopNest], arch: MappingArch, config: TrainConfig = TrainConfig(), *,
                    layout: Sequence[str] | None = None) -> tuple[Surrogate, FitReport]:
    """Sample, label and fit a surrogate for ``nests`` (one dimension family) on ``arch``. ``layout``: the slot
    layout to encode (default: ``arch``'s slots; pass :func:`slot_layout` of every accelerator the model will
    search on)."""
    if not nests:
        raise ValueError("train_surrogate needs at least one layer")
    enc = Encoding(tuple(nests[0].dims), tuple(layout) if layout is not None else slot_layout(arch),
                   len(arch.levels))
    X, Y = sample_dataset(nests, arch, enc, config.samples, config.seed)
    if len(X) < 2:
        raise ValueError("too few valid samples to train on")
    net, report = fit_mlp(X, Y, config)
    return Surrogate(enc, net, arch.name), report


# ================================================================================================== the search
def surrogate_search(nest: LoopNest, arch: MappingArch, objective: str, model: Surrogate, *, samples: int,
                     seed: int, trace: SearchTrace | None = None, lr: float = 0.5, steps: int = 40,
                     patience: int = 5) -> Mapping | None:
    """Mind Mappings' search (module docstring): gradient steps on the surrogate from random starts, each step's
    projection scored by the cost model; ``samples`` evaluations (distinct mappings) in all. ``lr`` is the largest
    move of one entry per step (log2 units for factors), ``steps`` and ``patience`` decide when a start is
    abandoned. Deterministic given ``seed``; returns the best valid mapping evaluated, or ``None``."""
    ev = Evaluator(nest, arch, objective, budget=samples, trace=trace)
    enc = model.encoding
    free = enc.free_mask(nest, arch)
    groups = [np.array([enc.factor_index(di, s) for s in range(len(enc.slots)) if free[enc.factor_index(di, s)]],
                       dtype=int) for di in range(len(enc.dims))]
    hi = np.zeros(enc.size)
    for di, d in enumerate(enc.dims):
        hi[[enc.factor_index(di, s) for s in range(len(enc.slots))]] = math.log2(nest.sizes[d])
    orders = np.array([enc.order_index(i, di) for i in range(enc.levels) for di in range(len(enc.dims))], dtype=int)
    hi[orders] = 1.0
    rng = random.Random(seed)
    proposals, limit = 0, 20 * samples + 100  # distinct mappings may run out: stop proposing eventually
    while not ev.exhausted and proposals < limit:
        proposals += 1
        m = ev.fit_capacity(sample_mapping(nest, arch, rng))
        if m is None:
            continue
        ev.value(m)
        x = enc.encode(nest, arch, m)
        last, same = mapping_key(nest, arch, m), 0
        for _ in range(steps):
            if ev.exhausted or proposals >= limit:
                break
            _, g = model.objective(x, objective)
            g = g * free
            for idx in groups:  # stay on the plane of perfect factorizations
                if len(idx):
                    g[idx] -= g[idx].mean()
            top = float(np.abs(g).max())
            if not top > 0:
                break
            x = np.clip(x - lr * g / top, 0.0, hi) * free + x * (1 - free)
            proposals += 1
            m = ev.fit_capacity(project(nest, arch, enc, x))
            if m is None:
                break
            ev.value(m)
            key = mapping_key(nest, arch, m)
            same = same + 1 if key == last else 0
            last = key
            if same >= patience:
                break
    return ev.best


__all__ = ["MLP", "TARGETS", "Encoding", "FitReport", "Surrogate", "TrainConfig", "fit_mlp", "project",
           "sample_dataset", "slot_layout", "surrogate_search", "train_surrogate"]
