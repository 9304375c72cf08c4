"""Search methods of ConfuciuX and its baselines over a cost table (seed 001 Chapter 8).

Every method works on a :class:`~dlaopt.formulations.codesign.selection.SelectionProblem` (``cost[l, p]``,
``use[r, l, p]``, ``budget[r]``, aggregate ``sum``/``max``, deployment ``lp``/``ls``). The design points form a grid
``axes`` (Table 8.1: 12 PE levels × 12 buffer levels), point ``p = ravel_multi_index(levels, axes)`` (row-major).
A *genome* is the level of every axis for every layer (LP, §8.1.8: ``2N`` genes for ``N`` layers and two axes) or
for the single shared point (LS).

Common rules. Every method is deterministic for its ``seed`` (``np.random.default_rng(seed)``, no global state),
counts *samples* (complete assignments evaluated; an RL episode is one sample, see :func:`reinforce`), records a
``trace`` of ``(samples so far, best feasible value)`` at every improvement, and returns only assignments that pass
``problem.feasible`` (checked by the problem itself before an assignment becomes the answer); infeasible samples
count but never become the answer. ``choice`` is ``None`` and ``value`` is ``inf`` when no feasible assignment was
seen. ``time_limit`` (wall-clock seconds) stops a search early.

Constraint handling in the genetic methods (both GAs) is by feasibility ranking: a feasible genome beats an
infeasible one, feasible genomes rank by value, infeasible ones by their total violation
``Σ_r max(0, C_r − B_r) / |B_r| + #(layers the point cannot run)``. The seed does not state how its GA baseline
treats violations (§8.1.8 only reports that much of its population violated the constraint); the ranking is this
module's choice.

Methods:

* :func:`random_search` — §8.2.1 "Random search": uniform random assignments, the best feasible kept.
* :func:`genetic` — §8.2.1 "GA": population 100, ``⌈Eps/100⌉`` generations, mutation and crossover rates 0.05.
* :func:`reinforce` — ConfuciuX's global stage (§8.1.2–§8.1.7): REINFORCE with an LSTM policy (128 hidden units),
  discount 0.9, written with numpy only.
* :func:`local_ga` — ConfuciuX's fine-tuning stage (§8.1.8, settings §8.2.5): 20 individuals, 2000 generations,
  crossover 0.2, mutation 0.05, mutation step 4, started from a given assignment.
* :func:`confuciux` — the two stages in a row (§8.1.8, Figure 8.1), samples and trace continuing across both.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlaopt.formulations.codesign.selection import SelectionProblem

_REL_TOL = 1e-9  # the tolerance of SelectionProblem.feasible
_BATCH = 4096


@dataclass
class SearchResult:
    """The best feasible assignment a search found (``None`` if none), its value (``inf`` if none), the samples
    spent, the improvement trace ``(samples, best value)``, the wall time, the method and method-specific stats."""

    choice: np.ndarray | None
    value: float
    samples: int
    trace: list[tuple[int, float]]
    time_s: float
    method: str
    stats: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------ shared pieces


def _check_axes(problem: SelectionProblem, axes: Sequence[int]) -> tuple[int, ...]:
    ax = tuple(int(a) for a in axes)
    if not ax or min(ax) < 1:
        raise ValueError(f"axes must be a non-empty tuple of positive sizes, got {tuple(axes)}")
    if math.prod(ax) != problem.n_points:
        raise ValueError(f"axes {ax} describe {math.prod(ax)} points, the table has {problem.n_points}")
    return ax


def _genes(problem: SelectionProblem) -> int:
    """Layer genes of a genome: one per layer (LP) or one shared point (LS)."""
    return 1 if problem.deployment == "ls" else problem.n_layers


def _points(levels: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """``levels[..., a]`` → point indices ``[...]`` (row-major)."""
    return np.ravel_multi_index(tuple(levels[..., a] for a in range(len(axes))), axes)


def _levels(points: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return np.stack(np.unravel_index(np.asarray(points), axes), axis=-1).astype(np.int64)


def _choices(problem: SelectionProblem, points: np.ndarray) -> np.ndarray:
    """Genome points ``[n, G]`` → assignments ``[n, L]`` (LS repeats its one point)."""
    if problem.deployment == "ls":
        return np.repeat(points[:, :1], problem.n_layers, axis=1)
    return points


def _evaluate(problem: SelectionProblem, choices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised screen of assignments ``[n, L]``: the value (``inf`` if infeasible) and the total violation
    (0 if feasible). Mirrors ``SelectionProblem.feasible``; an improving answer is re-checked by the problem."""
    rows = np.arange(problem.n_layers)
    c = problem.cost[rows, choices]  # [n, L]
    unrunnable = (~np.isfinite(c)).sum(axis=1)
    value = c.sum(axis=1) if problem.aggregate == "sum" else c.max(axis=1)
    taken = problem.use[:, rows, choices]  # [R, n, L]
    cons = taken.max(axis=2) if problem.deployment == "ls" else taken.sum(axis=2)
    b = problem.budget[:, None]
    within = cons <= b + _REL_TOL * np.maximum(1.0, np.abs(b))
    scale = np.where(np.abs(b) > 0, np.abs(b), 1.0)
    excess = np.where(within, 0.0, (cons - b) / scale)
    violation = excess.sum(axis=0) + unrunnable
    feasible = within.all(axis=0) & (unrunnable == 0)
    return np.where(feasible, value, np.inf), np.where(feasible, 0.0, violation)


def _survivors(pop: np.ndarray, vals: np.ndarray, viol: np.ndarray, child: np.ndarray, cv: np.ndarray,
               cviol: np.ndarray, population: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parents and children together, the best ``population`` of them kept (:func:`_rank`)."""
    pop = np.concatenate([pop, child])
    vals, viol = np.concatenate([vals, cv]), np.concatenate([viol, cviol])
    keep = _rank(vals, viol)[:population]
    return pop[keep], vals[keep], viol[keep]


def _rank(values: np.ndarray, violation: np.ndarray) -> np.ndarray:
    """Indices best first: feasible by value, then infeasible by violation (stable)."""
    return np.lexsort((np.arange(values.size), violation, values))


def _tournament(values: np.ndarray, violation: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` binary tournaments on the feasibility ranking: the better-ranked of two uniform picks."""
    order = _rank(values, violation)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    a, b = rng.integers(0, values.size, n), rng.integers(0, values.size, n)
    return np.where(rank[a] <= rank[b], a, b)


class _Tracker:
    """Counts samples, keeps the best feasible assignment (verified by the problem) and the trace."""

    def __init__(self, problem: SelectionProblem, time_limit: float | None) -> None:
        self.problem = problem
        self.t0 = time.perf_counter()
        self.deadline = None if time_limit is None else self.t0 + float(time_limit)
        self.samples = 0
        self.best_value = math.inf
        self.best_choice: np.ndarray | None = None
        self.trace: list[tuple[int, float]] = []
        self.rejected = 0  # screened feasible but refused by problem.feasible (tolerance edge); expected 0

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def offer(self, choices: np.ndarray, values: np.ndarray) -> None:
        """Count ``len(values)`` samples in order; take every one that improves the best."""
        if values.size == 0:
            return
        prev = np.concatenate([[self.best_value], np.minimum.accumulate(values)[:-1]])
        for k in np.flatnonzero(values < np.minimum(prev, self.best_value)):
            ch = np.asarray(choices[k], dtype=np.int64).copy()
            if not self.problem.feasible(ch):
                self.rejected += 1
                continue
            v = self.problem.value(ch)
            if v < self.best_value:
                self.best_value, self.best_choice = v, ch
                self.trace.append((self.samples + int(k) + 1, v))
        self.samples += int(values.size)

    def result(self, method: str, stats: dict[str, Any]) -> SearchResult:
        if self.rejected:
            stats["rejected_by_check"] = self.rejected
        return SearchResult(self.best_choice, self.best_value, self.samples, self.trace,
                            time.perf_counter() - self.t0, method, stats)


# ------------------------------------------------------------------------------------------------ random search


def random_search(problem: SelectionProblem, axes: Sequence[int], *, samples: int, seed: int = 0,
                  time_limit: float | None = None) -> SearchResult:
    """§8.2.1 "Random search": ``samples`` assignments drawn uniformly (every layer's point independently for LP,
    one point for LS; uniform over points = uniform over every axis level), the best feasible one kept."""
    ax = _check_axes(problem, axes)
    rng = np.random.default_rng(seed)
    tr = _Tracker(problem, time_limit)
    genes = _genes(problem)
    while tr.samples < samples and not tr.out_of_time():
        n = min(_BATCH, samples - tr.samples)
        choices = _choices(problem, rng.integers(0, problem.n_points, (n, genes)))
        tr.offer(choices, _evaluate(problem, choices)[0])
    return tr.result("random", {"axes": ax, "requested_samples": samples})


# ------------------------------------------------------------------------------------------------ genetic (§8.2.1)


def genetic(problem: SelectionProblem, axes: Sequence[int], *, samples: int, population: int = 100,
            mutation: float = 0.05, crossover: float = 0.05, seed: int = 0,
            time_limit: float | None = None) -> SearchResult:
    """§8.2.1 "GA": the general genetic algorithm baseline, population 100, ``⌈Eps/100⌉`` generations (here
    ``⌈samples/population⌉``: the random first population is the first generation, the last one is cut so that
    exactly ``samples`` genomes are evaluated), mutation rate = crossover rate = 0.05.

    Genome: the axis levels of every layer (``[G, A]``, ``G`` = layers for LP, 1 for LS). Each generation breeds
    ``population`` children: parent 1 and parent 2 by binary tournament on the feasibility ranking (module
    docstring); with probability ``crossover`` the child takes parent 1's genes before a random cut of the flattened
    genome and parent 2's after it (one-point crossover), otherwise it copies parent 1; then every gene is reset to a
    uniformly random level with probability ``mutation``. The next population is the best ``population`` of parents
    and children (elitist). The seed does not name its selection scheme or crossover type; these are this
    module's choices."""
    ax = _check_axes(problem, axes)
    if population < 2:
        raise ValueError("population must be at least 2")
    rng = np.random.default_rng(seed)
    tr = _Tracker(problem, time_limit)
    n_genes, sizes = _genes(problem), np.array(ax)

    def evaluate(genomes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        choices = _choices(problem, _points(genomes, ax))
        values, violation = _evaluate(problem, choices)
        tr.offer(choices, values)
        return values, violation

    n0 = min(population, samples)
    pop = rng.integers(0, sizes, (n0, n_genes, len(ax)))
    vals, viol = evaluate(pop)
    generations = 1
    while tr.samples < samples and not tr.out_of_time():
        n = min(population, samples - tr.samples)
        p1, p2 = pop[_tournament(vals, viol, n, rng)], pop[_tournament(vals, viol, n, rng)]
        flat1 = p1.reshape(n, -1).copy()
        flat2 = p2.reshape(n, -1)
        n_flat = flat1.shape[1]
        cross = rng.random(n) < crossover
        if n_flat > 1:
            cut = rng.integers(1, n_flat, n)
            take2 = cross[:, None] & (np.arange(n_flat)[None, :] >= cut[:, None])
            flat1 = np.where(take2, flat2, flat1)
        child = flat1.reshape(n, n_genes, len(ax))
        mutate = rng.random(child.shape) < mutation
        child = np.where(mutate, rng.integers(0, sizes, child.shape), child)
        pop, vals, viol = _survivors(pop, vals, viol, child, *evaluate(child), population)
        generations += 1
    return tr.result("ga", {"axes": ax, "population": population, "generations": generations,
                            "mutation": mutation, "crossover": crossover})


# ------------------------------------------------------------------------------------------------ local GA (§8.1.8)


def _local_mutate(genomes: np.ndarray, sizes: np.ndarray, rate: float, step: int,
                  rng: np.random.Generator) -> np.ndarray:
    """§8.1.8 local mutation: every gene, with probability ``rate``, moves by a uniform non-zero integer in
    ``[−step, step]``, clipped to the grid."""
    delta = rng.integers(1, step + 1, genomes.shape) * rng.choice(np.array([-1, 1]), genomes.shape)
    moved = np.clip(genomes + delta, 0, sizes - 1)
    return np.where(rng.random(genomes.shape) < rate, moved, genomes)


def _local_crossover(genomes: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    """§8.1.8 local crossover: with probability ``rate`` a genome swaps the (PE, buffer, …) genes of two distinct
    layers (within the genome itself)."""
    out = genomes.copy()
    n, n_genes = genomes.shape[:2]
    if n_genes < 2:
        return out
    for k in np.flatnonzero(rng.random(n) < rate):
        a, b = rng.choice(n_genes, 2, replace=False)
        out[k, [a, b]] = out[k, [b, a]]
    return out


def _fallback_start(problem: SelectionProblem) -> np.ndarray:
    """Per layer (LP) or for the model (LS), the runnable point with the least use (resources in budget units)."""
    scale = np.where(np.abs(problem.budget) > 0, np.abs(problem.budget), 1.0)
    scale = np.where(np.isfinite(scale), scale, 1.0)
    norm = (problem.use / scale[:, None, None]).sum(axis=0)  # [L, P]
    if problem.deployment == "ls":
        runnable = np.isfinite(problem.cost).all(axis=0)
        p = int(np.argmin(np.where(runnable, norm.max(axis=0), np.inf)))
        return np.full(problem.n_layers, p, dtype=np.int64)
    return np.argmin(np.where(np.isfinite(problem.cost), norm, np.inf), axis=1).astype(np.int64)


def local_ga(problem: SelectionProblem, axes: Sequence[int], start: np.ndarray, *, generations: int = 2000,
             population: int = 20, crossover: float = 0.2, mutation: float = 0.05, step: int = 4, seed: int = 0,
             time_limit: float | None = None, samples: int | None = None) -> SearchResult:
    """ConfuciuX's second stage (§8.1.8), with §8.2.5's settings: 20 individuals, 2000 generations, local
    crossover rate 0.2, local mutation rate 0.05, local mutation step 4.

    *Initialization*: every individual is the genome of ``start`` (the first stage's answer); ``start`` itself is
    evaluated once (one sample). *Local mutation*: each gene moves by at most ``step`` levels (clipped to the grid).
    In the seed the step is on the fine-grained value (PE 64 → [60, 68]), finer than Table 8.1's levels; here it is
    in levels of the grid the caller passes (pass a finer grid for a finer search). *Local crossover*: within one
    genome, two layers swap their gene pairs (LP; LS has one point and no crossover). Each generation breeds
    ``population`` children from parents drawn by binary tournament on the feasibility ranking; the next population
    is the best ``population`` of parents and children. Samples: ``1 + generations · population``, or ``samples``
    if given (the last generation cut)."""
    ax = _check_axes(problem, axes)
    st = np.asarray(start, dtype=np.int64)
    if st.shape != (problem.n_layers,) or st.min() < 0 or st.max() >= problem.n_points:
        raise ValueError(f"start must be {problem.n_layers} point indices in [0, {problem.n_points})")
    if problem.deployment == "ls" and np.unique(st).size != 1:
        raise ValueError("an LS start repeats one point for every layer")
    if population < 1 or step < 1:
        raise ValueError("population and step must be at least 1")
    rng = np.random.default_rng(seed)
    tr = _Tracker(problem, time_limit)
    limit = 1 + generations * population if samples is None else int(samples)
    sizes = np.array(ax)
    genome = _levels(st[: _genes(problem)], ax)[None]  # [1, G, A]

    def evaluate(genomes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        choices = _choices(problem, _points(genomes, ax))
        values, violation = _evaluate(problem, choices)
        tr.offer(choices, values)
        return values, violation

    if limit < 1:
        return tr.result("local-ga", {"axes": ax, "generations": 0})
    v0, viol0 = evaluate(genome)
    pop = np.repeat(genome, population, axis=0)
    vals, viol = np.repeat(v0, population), np.repeat(viol0, population)
    done = 0
    while done < generations and tr.samples < limit and not tr.out_of_time():
        n = min(population, limit - tr.samples)
        parents = pop[_tournament(vals, viol, n, rng)]
        child = _local_mutate(_local_crossover(parents, crossover, rng), sizes, mutation, step, rng)
        pop, vals, viol = _survivors(pop, vals, viol, child, *evaluate(child), population)
        done += 1
    return tr.result("local-ga", {"axes": ax, "population": population, "generations": done, "mutation": mutation,
                                  "crossover": crossover, "step": step, "start_value": float(v0[0])})


# ------------------------------------------------------------------------------------------------ LSTM policy


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


class LSTMPolicy:
    """One LSTM layer and one softmax head per grid axis (§8.1.2: "an RNN as the policy network with one LSTM hidden
    layer of size 128"; two actions per layer, PE and buffer).

    Step ``t`` with input ``x_t`` (size ``D``) and state ``(h, c)`` (size ``H``)::

        z = W [x_t; h_{t−1}] + b,   i, f, o = σ(z_i), σ(z_f), σ(z_o),   g = tanh(z_g)
        c_t = f ⊙ c_{t−1} + i ⊙ g,  h_t = o ⊙ tanh(c_t),  π_a(· | h_t) = softmax(V_a h_t + d_a)  for each axis a

    Parameters: ``W [4H, D+H]``, ``b [4H]`` (forget-gate bias 1), ``V [Σ_a n_a, H]``, ``d [Σ_a n_a]``. ``W`` is
    uniform in ``±1/√H``; the heads start at zero so the first policy is uniform over every axis.
    :meth:`backward` is backpropagation through time written out by hand for the loss
    ``−Σ_t w_t Σ_a log π_a(a_{t,a} | h_t)``."""

    def __init__(self, input_dim: int, hidden: int, axes: Sequence[int], rng: np.random.Generator) -> None:
        self.input_dim, self.hidden, self.axes = int(input_dim), int(hidden), tuple(int(a) for a in axes)
        h, lim = self.hidden, 1.0 / math.sqrt(hidden)
        b = np.zeros(4 * h)
        b[h:2 * h] = 1.0
        self.params: dict[str, np.ndarray] = {
            "W": rng.uniform(-lim, lim, (4 * h, self.input_dim + h)),
            "b": b,
            "V": np.zeros((sum(self.axes), h)),
            "d": np.zeros(sum(self.axes)),
        }
        self.offsets = np.concatenate([[0], np.cumsum(self.axes)]).astype(int)

    def step(self, x: np.ndarray, h: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[np.ndarray],
                                                                         tuple[np.ndarray, ...]]:
        """One time step: the new state, the action probabilities per axis and the cache for :meth:`backward`."""
        p, hd = self.params, self.hidden
        xh = np.concatenate([x, h])
        z = p["W"] @ xh + p["b"]
        i, f, o = _sigmoid(z[:hd]), _sigmoid(z[hd:2 * hd]), _sigmoid(z[2 * hd:3 * hd])
        g = np.tanh(z[3 * hd:])
        c_new = f * c + i * g
        tc = np.tanh(c_new)
        h_new = o * tc
        logits = p["V"] @ h_new + p["d"]
        probs = []
        for a in range(len(self.axes)):
            lo, hi = self.offsets[a], self.offsets[a + 1]
            e = np.exp(logits[lo:hi] - logits[lo:hi].max())
            probs.append(e / e.sum())
        return h_new, c_new, probs, (xh, c, i, f, o, g, tc, h_new, np.concatenate(probs))

    def forward(self, xs: np.ndarray) -> tuple[list[list[np.ndarray]], list[tuple[np.ndarray, ...]]]:
        """Run a fixed input sequence ``xs [T, D]`` from the zero state."""
        h = c = np.zeros(self.hidden)
        all_probs, caches = [], []
        for x in xs:
            h, c, probs, cache = self.step(x, h, c)
            all_probs.append(probs)
            caches.append(cache)
        return all_probs, caches

    def loss(self, xs: np.ndarray, actions: np.ndarray, weights: np.ndarray) -> float:
        """``−Σ_t w_t Σ_a log π_a(a_{t,a} | h_t)`` for the input sequence ``xs`` (the gradient check's reference)."""
        all_probs, _ = self.forward(xs)
        return -float(sum(weights[t] * sum(math.log(all_probs[t][a][actions[t, a]]) for a in range(len(self.axes)))
                          for t in range(len(xs))))

    def backward(self, caches: list[tuple[np.ndarray, ...]], actions: np.ndarray,
                 weights: np.ndarray) -> dict[str, np.ndarray]:
        """Gradients of ``−Σ_t w_t Σ_a log π_a(a_{t,a} | h_t)`` by backpropagation through time.

        With ``δ_t = w_t (π_t − onehot(a_t))`` per head: ``∂V = Σ_t δ_t h_tᵀ``, ``∂d = Σ_t δ_t``,
        ``∂h_t = Vᵀ δ_t + W_hᵀ ∂z_{t+1}``, ``∂o = ∂h_t ⊙ tanh c_t``,
        ``∂c_t = ∂h_t ⊙ o ⊙ (1 − tanh² c_t) + ∂c_{t+1} ⊙ f_{t+1}``, ``∂i = ∂c_t ⊙ g``, ``∂g = ∂c_t ⊙ i``,
        ``∂f = ∂c_t ⊙ c_{t−1}``; ``∂z`` multiplies by ``σ' = σ(1 − σ)`` or ``tanh' = 1 − tanh²``;
        ``∂W = Σ_t ∂z_t [x_t; h_{t−1}]ᵀ``, ``∂b = Σ_t ∂z_t``."""
        p, hd, d_in = self.params, self.hidden, self.input_dim
        steps = len(caches)
        dz_all = np.zeros((steps, 4 * hd))
        dl_all = np.zeros((steps, self.offsets[-1]))
        dh_next, dc_next = np.zeros(hd), np.zeros(hd)
        w_h_t = np.ascontiguousarray(p["W"][:, d_in:].T)
        v_t = np.ascontiguousarray(p["V"].T)
        for t in range(steps - 1, -1, -1):
            _xh, c_prev, i, f, o, g, tc, _h, probs = caches[t]
            dl = probs.copy()
            dl[self.offsets[:-1] + actions[t]] -= 1.0
            dl *= weights[t]
            dl_all[t] = dl
            dh = v_t @ dl + dh_next
            do = dh * tc
            dc = dh * o * (1.0 - tc * tc) + dc_next
            dz = dz_all[t]
            dz[:hd] = dc * g * i * (1.0 - i)
            dz[hd:2 * hd] = dc * c_prev * f * (1.0 - f)
            dz[2 * hd:3 * hd] = do * o * (1.0 - o)
            dz[3 * hd:] = dc * i * (1.0 - g * g)
            dc_next = dc * f
            dh_next = w_h_t @ dz
        xh = np.stack([cache[0] for cache in caches])
        hs = np.stack([cache[7] for cache in caches])
        return {"W": dz_all.T @ xh, "b": dz_all.sum(axis=0), "V": dl_all.T @ hs, "d": dl_all.sum(axis=0)}


class Adam:
    """Adam (Kingma & Ba): ``m ← β₁m + (1−β₁)g``, ``v ← β₂v + (1−β₂)g²``,
    ``θ ← θ − lr · m̂ / (√v̂ + ε)`` with the bias-corrected ``m̂ = m/(1−β₁ᵗ)``, ``v̂ = v/(1−β₂ᵗ)``."""

    def __init__(self, params: dict[str, np.ndarray], lr: float, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8) -> None:
        self.params, self.lr, self.beta1, self.beta2, self.eps = params, lr, beta1, beta2, eps
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def update(self, grads: dict[str, np.ndarray]) -> None:
        self.t += 1
        c1, c2 = 1.0 - self.beta1**self.t, 1.0 - self.beta2**self.t
        for k, g in grads.items():
            self.m[k] = self.beta1 * self.m[k] + (1.0 - self.beta1) * g
            self.v[k] = self.beta2 * self.v[k] + (1.0 - self.beta2) * g * g
            self.params[k] -= self.lr * (self.m[k] / c1) / (np.sqrt(self.v[k] / c2) + self.eps)


# ------------------------------------------------------------------------------------------------ REINFORCE


def _normalise_columns(features: np.ndarray) -> np.ndarray:
    """Every column to ``[−1, 1]`` by its range over the layers (a constant column → 0)."""
    lo, hi = features.min(axis=0), features.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return np.where(hi > lo, 2.0 * (features - lo) / span - 1.0, 0.0)


def reinforce(problem: SelectionProblem, axes: Sequence[int], features: np.ndarray, *, epochs: int = 5000,
              hidden: int = 128, lr: float = 3e-3, discount: float = 0.9, baseline_decay: float = 0.05,
              clip: float = 5.0, seed: int = 0, time_limit: float | None = None) -> SearchResult:
    """ConfuciuX's global stage (§8.1.2–§8.1.7): REINFORCE with an :class:`LSTMPolicy` (128 hidden units), discount
    ``d = 0.9``, ``Eps = 5000`` epochs (§8.2.1), Adam.

    *Episode* (§8.1.2). LP: one time step per layer; LS: one step choosing the shared point. At step ``t`` the
    observation (eq. 8.1, ``O_t = (K_t, C_t, Y_t, X_t, R_t, S_t, T_t, A_t^PE, A_t^Buffer, t)``) is
    ``(features_t, previous step's level per axis, t, remaining budget share per resource)``, every entry in
    ``[−1, 1]``: feature columns by their range over the layers, levels ``2ℓ/(n_a − 1) − 1`` (−1 before the first
    step), ``t`` as ``2t/(T − 1) − 1``, and the share ``clip(1 − used_r / B_r, −1, 1)`` (1 for an infinite
    budget, 0 for ``B_r ≤ 0``). *Departures*: the remaining-budget share is not in eq. 8.1 (the seed leaves the
    budget to the recurrent state, §8.1.5 "aware of the consumption of the total budget"; giving it explicitly
    helps small networks); for LS the features are the mean of the normalised layer features. The policy samples
    one level per axis from its heads.

    *Reward* (eq. 8.2, §8.1.6). While the remaining budget ``L^budget = B − Σ_{s ≤ t} u[s, p_s]`` is
    ``≥ 0`` in every resource (LS: the point's peak use), ``r_t = P_t − P^min`` with performance
    ``P = −cost``: ``r_t = c^max − c[t, p_t]``, where ``c^max`` is the largest per-step cost seen in all steps of
    all epochs so far (updated before the reward, so ``r_t ≥ 0``); LS uses the model's aggregated cost as its one
    step's cost. On a violation (or a point that cannot run the layer) the episode ends with the penalty
    ``r_t = −Σ_{s<t} r_s`` ("negative of the accumulated value"). The best feasible *complete* assignment is kept,
    valued by ``problem.value`` (the per-step reward is the seed's shaping, not the objective).

    *Update*. Discounted returns ``G_t = Σ_k d^k r_{t+k}``; advantages ``A_t = (G_t − m_t) / s_t`` with a
    per-step moving-average baseline ``m_t`` and moving standard deviation ``s_t`` (decay ``baseline_decay``),
    then one Adam step (learning rate ``lr``, not given by the seed) on ``−Σ_t A_t log π(a_t | O_t)`` after every
    episode, the gradient's global norm clipped to ``clip``. *Departure*: the seed standardises the rewards of each
    episode; a moving per-step standardisation is used instead, which also works for LS's single step (where a
    within-episode standardisation is zero).

    *Samples*: every epoch counts as one sample, including an episode cut short by a violation (the seed compares
    methods by epochs). ``stats['values']`` holds each epoch's value (``inf`` unless complete and feasible) and
    ``stats['returns']`` its undiscounted reward sum."""
    ax = _check_axes(problem, axes)
    feats = np.asarray(features, dtype=np.float64)
    if feats.ndim != 2 or feats.shape[0] != problem.n_layers or not np.isfinite(feats).all():
        raise ValueError(f"features must be a finite [{problem.n_layers}, F] array")
    if not 0.0 <= discount <= 1.0:
        raise ValueError("discount must be in [0, 1]")
    rng = np.random.default_rng(seed)
    tr = _Tracker(problem, time_limit)
    ls = problem.deployment == "ls"
    n_res, n_ax = problem.use.shape[0], len(ax)
    norm = _normalise_columns(feats) if feats.shape[1] else feats
    steps = 1 if ls else problem.n_layers
    obs_feats = norm.mean(axis=0, keepdims=True) if ls else norm
    t_code = np.zeros(1) if steps == 1 else 2.0 * np.arange(steps) / (steps - 1) - 1.0
    level_scale = np.array([2.0 / (n - 1) if n > 1 else 0.0 for n in ax])
    budget = problem.budget
    tol = _REL_TOL * np.maximum(1.0, np.abs(budget))
    finite_b = np.isfinite(budget) & (budget > 0)
    safe_b = np.where(finite_b, budget, 1.0)
    if ls:
        step_cost = (problem.cost.sum(axis=0) if problem.aggregate == "sum" else problem.cost.max(axis=0))[None]
        step_use = problem.use.max(axis=1)[:, None, :]  # [R, 1, P]
    else:
        step_cost, step_use = problem.cost, problem.use
    n_obs = obs_feats.shape[1] + n_ax + 1 + n_res
    policy = LSTMPolicy(n_obs, hidden, ax, rng)
    opt = Adam(policy.params, lr)
    base_m, base_v, seen = np.zeros(steps), np.zeros(steps), np.zeros(steps, dtype=bool)
    c_max = -math.inf
    values: list[float] = []
    returns: list[float] = []
    completed = 0
    discounts = discount ** np.arange(steps + 1)
    while tr.samples < epochs and not tr.out_of_time():
        h = c = np.zeros(hidden)
        used = np.zeros(n_res)
        prev = -np.ones(n_ax)
        caches, acts, rewards, pts = [], [], [], []
        failed = False
        for t in range(steps):
            share = np.where(np.isfinite(budget) & ~finite_b, 0.0,
                             np.where(finite_b, np.clip(1.0 - used / safe_b, -1.0, 1.0), 1.0))
            x = np.concatenate([obs_feats[t], prev, t_code[t:t + 1], share])
            h, c, probs, cache = policy.step(x, h, c)
            u = rng.random(n_ax)
            lv = np.array([min(int(np.searchsorted(np.cumsum(pa), u[a] * pa.sum())), ax[a] - 1)
                           for a, pa in enumerate(probs)])
            point = int(np.ravel_multi_index(tuple(lv), ax))
            caches.append(cache)
            acts.append(lv)
            pts.append(point)
            prev = lv * level_scale - 1.0
            cost_t = float(step_cost[t, point])
            used = used + step_use[:, t, point]
            if not math.isfinite(cost_t) or np.any(used > budget + tol):
                rewards.append(-float(sum(rewards)))
                failed = True
                break
            c_max = max(c_max, cost_t)
            rewards.append(c_max - cost_t)
        if failed:
            choice, v = np.zeros(problem.n_layers, dtype=np.int64), math.inf
        else:
            choice = np.full(problem.n_layers, pts[0], dtype=np.int64) if ls else np.array(pts, dtype=np.int64)
            v = problem.value(choice)
            completed += 1
        tr.offer(choice[None], np.array([v]))
        values.append(v)
        returns.append(float(sum(rewards)))
        # discounted returns, per-step moving standardisation
        r = np.array(rewards)
        n_t = r.size
        g_ret = np.array([float(np.dot(r[t:], discounts[:n_t - t])) for t in range(n_t)])
        adv = np.zeros(n_t)
        for t in range(n_t):
            if not seen[t]:
                base_m[t], base_v[t], seen[t] = g_ret[t], 0.0, True
                continue
            dev = g_ret[t] - base_m[t]
            base_m[t] += baseline_decay * dev
            base_v[t] = (1.0 - baseline_decay) * (base_v[t] + baseline_decay * dev * dev)
            scale = math.sqrt(base_v[t]) + 1e-12 * (abs(base_m[t]) + 1e-300)
            adv[t] = dev / scale
        if np.any(adv != 0.0):
            grads = policy.backward(caches, np.array(acts), adv)
            total = math.sqrt(sum(float(np.sum(gv * gv)) for gv in grads.values()))
            if total > clip:
                grads = {k: gv * (clip / total) for k, gv in grads.items()}
            opt.update(grads)
    return tr.result("reinforce", {"axes": ax, "epochs": tr.samples, "hidden": hidden, "lr": lr,
                                   "discount": discount, "completed": completed, "values": values,
                                   "returns": returns})


# ------------------------------------------------------------------------------------------------ two stages


def confuciux(problem: SelectionProblem, axes: Sequence[int], features: np.ndarray, *, epochs: int = 5000,
              generations: int = 2000, seed: int = 0, time_limit: float | None = None,
              **reinforce_kwargs: Any) -> SearchResult:
    """ConfuciuX's two stages (§8.1.8, Figure 8.1): :func:`reinforce` for ``epochs`` epochs (§8.2.1:
    ``Eps = 5000``), then :func:`local_ga` for ``generations`` generations (§8.2.5: 2000, population 20) from the
    first stage's best assignment. Samples and trace continue across the stages (the second stage's re-evaluation of
    its start counts). If the first stage found nothing feasible, the second starts from every layer's least-use
    runnable point (a departure: the seed's second stage always has a first-stage answer). ``time_limit`` covers
    both stages; extra keyword arguments go to :func:`reinforce`."""
    t0 = time.perf_counter()
    first = reinforce(problem, axes, features, epochs=epochs, seed=seed, time_limit=time_limit, **reinforce_kwargs)
    start = first.choice if first.choice is not None else _fallback_start(problem)
    left = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - t0))
    second = local_ga(problem, axes, start, generations=generations, seed=seed, time_limit=left)
    trace = list(first.trace) + [(first.samples + s, v) for s, v in second.trace if v < first.value]
    if second.choice is not None and second.value < first.value:
        choice, value = second.choice, second.value
    else:
        choice, value = first.choice, first.value
    stats = {"global_value": first.value, "global_samples": first.samples, "global_time_s": first.time_s,
             "local_value": second.value, "local_samples": second.samples, "local_time_s": second.time_s,
             "global": {k: v for k, v in first.stats.items() if k not in ("values", "returns")},
             "local": second.stats, "fallback_start": first.choice is None}
    return SearchResult(choice, value, first.samples + second.samples, trace, time.perf_counter() - t0,
                        "confuciux", stats)
