"""Flexion's flexibility classes (seed 001, Chapter 3) as presets of mapping constraints.

An instance's ``flexibility`` names a class by four bits T O P S — Tile, Order, Parallelism, Shape — and, per
flexible axis, what the accelerator supports (:data:`dlaopt.specs.mapping.FLEXIBILITY_SCHEMA`):

* bit 0 — **InFlex**: the axis is fixed to the baseline (Table 3.1 / §3.4 unless ``baseline`` says otherwise);
* bit 1 with a listed subset — **PartFlex**: one of the listed choices;
* bit 1 with nothing listed — **FullFlex**: the axis is free.

:func:`expand` turns the class into the mapping constraints of :mod:`dlaopt.specs.mapping` (paths
``("flexibility", axis)``, so a conflict or a violation names e.g. ``flexibility.order (permutation ...)``):

* **Tile** — the on-chip buffer's tile (the level just under main memory) per dimension, iterated by each PE: the
  buffer level's temporal factors. A dimension the parallelism in force unrolls on the PE array takes its tile from
  the array instead (its extent there, set by the Parallelism and Shape axes): Table 3.1's tile K:64 C:16 Y:3 X:3
  R:3 S:3 on its 16x64 array with K-C parallelism is K and C over the array and Y, X, R, S iterated 3 each. Switch
  to Y-X parallelism and Y, X fill the array while each PE iterates K 64, C 16, R 3, S 3 (Fig. 3.10 and 3.11
  unroll the layers' whole dimensions, not the baseline's 64 and 16). InFlex fixes those factors, and 1 at the
  levels under the buffer (the PEs' registers), with ``factors`` records per level and layer (named after the
  layer); under FullFlex parallelism, where any dimension may be unrolled, each factor is at most the baseline's
  instead. A tile larger than the layer's dimension is cut to it; one that does not divide it pads the dimension to
  a multiple (``padding``): the last, partial tile costs a full one. PartFlex bounds the buffer level's factors.
  Flexion's PartFlex-1000 (a hard-partitioned buffer, §3.4.2) is hardware, not a constraint: the ``flexion``
  preset's ``partition`` parameter.
* **Order** — the loop order at every level (``permutation`` per level and operator kind).
* **Parallelism** — the dimension unrolled along the PE array's rows and the one along its columns (``spatial``).
* **Shape** — the PE array's shapes (``shape``). FullFlex shape, any rows x columns of the array's N PEs, is the
  shape 1 x N with the parallel dimensions of both axes on its columns: a mapping on r x c (row factor at most r,
  column factor at most c) fits it, and one on 1 x N with row part rho fits the shape rho x N//rho, so both have
  the same optimum in one model instead of N (the used rows and columns show in the spatial factors).

A PartFlex order or parallelism listing several choices is a disjunction: :func:`expand` makes it one ``one_of``
record (``flexibility.order`` / ``flexibility.parallel``) whose options are the choices' records (under an InFlex
tile, each parallelism option also fixes the tile it implies; choices that would pad the layers differently are
refused with a located error), so one solve proves the class's optimum. :func:`choices` splits the class into one
single-choice class per combination instead (the optimum of the class is the best of theirs; ``dlaopt experiment
flexion`` solves them one by one).

Flexion's dimensions K C Y X R S name each layer kind's loops (:data:`DIM_MAP`; the thesis' Y, X are MAESTRO's input
rows and columns, here the output's, so the baseline Y:3 tile is 3 output rows).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dlaopt.errors import InputError
from dlaopt.specs.constraints import Constraint
from dlaopt.specs.mapping import FLEXION_DIMS

if TYPE_CHECKING:
    from dlaopt.formulations.mapping.arch import MappingArch
    from dlaopt.formulations.mapping.loopnest import LoopNest
    from dlaopt.hardware.model import Accelerator
    from dlaopt.io.instance import Instance

AXES: tuple[str, ...] = ("tile", "order", "parallel", "shape")
AXIS_KEYS: dict[str, str] = {"tile": "tile", "order": "order", "parallel": "parallel", "shape": "shapes"}
AXIS_TITLES: dict[str, str] = {"tile": "Tile", "order": "Order", "parallel": "Parallelism", "shape": "Shape"}

DIM_MAP: dict[str, dict[str, str]] = {
    "conv2d": {"K": "K", "C": "C", "Y": "P", "X": "Q", "R": "R", "S": "S"},
    "depthwise": {"K": "K", "C": "G", "Y": "P", "X": "Q", "R": "R", "S": "S"},
    "matmul": {"K": "N", "C": "K", "Y": "M", "X": "B"},
}
"""Flexion's dimension -> the loop nest's, per layer kind (:attr:`LoopNest.kind`)."""
OP_KINDS: dict[str, str] = {"conv2d": "conv2d", "depthwise": "depthwise_conv2d", "matmul": "matmul"}
"""Layer kind -> operator kind (the ``op_kinds`` selector of the constraints)."""

OUTPUT_STATIONARY: tuple[str, ...] = ("Y", "X", "K", "C", "R", "S")
WEIGHT_STATIONARY: tuple[str, ...] = ("K", "C", "R", "S", "Y", "X")
INPUT_STATIONARY: tuple[str, ...] = ("C", "Y", "X", "R", "S", "K")
STATIONARY_ORDERS: tuple[tuple[str, ...], ...] = (OUTPUT_STATIONARY, WEIGHT_STATIONARY, INPUT_STATIONARY)
"""PartFlex-0100 of §3.4.3: output-, weight- and input-stationary orders (the loops irrelevant to that operand
innermost)."""
BASELINE_ORDER = OUTPUT_STATIONARY  # §3.4.3 and Fig. 3.9 (Table 3.1 prints KCYXRS)
BASELINE_PARALLEL: tuple[str, str] = ("C", "K")  # Table 3.1: K-C parallel, K along the 64 columns of 16x64
BASELINE_TILE: dict[str, int] = {"K": 64, "C": 16, "Y": 3, "X": 3, "R": 3, "S": 3}  # Table 3.1


@dataclass(frozen=True)
class FlexClass:
    """A parsed ``flexibility`` document: per axis InFlex (``None`` choices and bit 0), PartFlex (the choices) or
    FullFlex (bit 1, ``None``), with the baseline and the PE array it is read against."""

    bits: Mapping[str, bool]  # axis -> flexible
    baseline_tile: Mapping[str, int]
    baseline_order: tuple[str, ...]
    baseline_parallel: tuple[str, str]
    baseline_shape: tuple[int, int]
    tile: Mapping[str, tuple[int, int | None]] | None  # PartFlex tile: dim -> (min, max)
    orders: tuple[tuple[str, ...], ...] | None
    parallels: tuple[tuple[str, str], ...] | None
    shapes: tuple[tuple[int, int], ...] | None  # as listed (or every block shape)
    shape_block: tuple[int, int] | None
    axes: tuple[str, str]  # the PE array's axis names (rows, columns)
    num_pes: int
    code: str  # the class bits, e.g. "0110"

    def level(self, axis: str) -> str:
        """``InFlex``, ``PartFlex`` or ``FullFlex`` on ``axis``."""
        if not self.bits[axis]:
            return "InFlex"
        return "FullFlex" if self.choices(axis) is None else "PartFlex"

    def choices(self, axis: str) -> tuple[Any, ...] | None:
        """The allowed choices on ``axis`` (one for InFlex), ``None`` when free (FullFlex)."""
        if axis == "tile":
            return (self.baseline_tile,) if not self.bits[axis] else (None if self.tile is None else (self.tile,))
        if axis == "order":
            return (self.baseline_order,) if not self.bits[axis] else self.orders
        if axis == "parallel":
            return (self.baseline_parallel,) if not self.bits[axis] else self.parallels
        return (self.baseline_shape,) if not self.bits[axis] else self.shapes

    @property
    def shape_options(self) -> tuple[tuple[int, int], ...] | None:
        """The shapes a solve may use (a block spec keeps only the shapes no other one contains), ``None`` free."""
        shapes = self.choices("shape")
        if shapes is None:
            return None
        if self.shape_block is not None:
            return tuple(s for s in shapes if not any(o != s and o[0] >= s[0] and o[1] >= s[1] for o in shapes))
        return tuple(shapes)


# ------------------------------------------------------------------------------------------------ parsing
def _where(*keys: str | int) -> tuple[str | int, ...]:
    return ("flexibility", *keys)


def block_shapes(block: Sequence[int], num_pes: int) -> tuple[tuple[int, int], ...]:
    """The array shapes composed of ``block`` (rows x columns of PEs) within ``num_pes``: one per number of block
    rows ``a`` (1 to the blocks that fit), with as many block columns as then fit (§3.4.5's PartFlex-0001-A/B)."""
    br, bc = int(block[0]), int(block[1])
    blocks = num_pes // (br * bc)
    return tuple((br * a, bc * (blocks // a)) for a in range(1, blocks + 1))


def parse(doc: Mapping[str, Any], accelerator: Accelerator) -> FlexClass:
    """The class of a (schema-valid) ``flexibility`` document on ``accelerator`` (meaning checked, located errors)."""
    axes = accelerator.pe_array.axes
    if len(axes) != 2:
        raise InputError(f"Flexion's classes need a PE array with two axes (rows, columns); "
                         f"'{accelerator.name}' has {len(axes)}", path=_where(), expected="a two-axis PE array")
    n = accelerator.pe_array.pes_per_array  # shapes are one array's (a scale-out accelerator has several)
    code = str(doc["class"])
    bits = {a: code[i] == "1" for i, a in enumerate(AXES)}
    for axis in AXES:
        key = AXIS_KEYS[axis]
        if key in doc and not bits[axis]:
            raise InputError(f"axis {AXIS_TITLES[axis]} is InFlex in class '{code}' (bit {'TOPS'[AXES.index(axis)]} "
                             f"is 0: the baseline); listing '{key}' makes it PartFlex: set its bit to 1",
                             path=_where(key), expected=f"no '{key}' or a class with that bit set")
    base = dict(doc.get("baseline") or {})
    tile = {**BASELINE_TILE, **dict(base.get("tile") or {})}
    shape = tuple(base.get("shape") or (axes[0][1], axes[1][1]))
    if shape[0] * shape[1] > n:
        raise InputError(f"baseline shape {shape[0]}x{shape[1]} has more than the array's {n} PEs",
                         path=_where("baseline", "shape"), expected=f"rows x columns <= {n}")
    bounds = None
    if "tile" in doc:
        bounds = {}
        for d, b in doc["tile"].items():
            lo, hi = (int(b), int(b)) if isinstance(b, int) else (int(b.get("min", 1)), b.get("max"))
            if hi is not None and lo > int(hi):
                raise InputError(f"tile {d}: min {lo} > max {hi}", path=_where("tile", d), expected="min <= max")
            bounds[d] = (lo, None if hi is None else int(hi))
    shapes: tuple[tuple[int, int], ...] | None = None
    block = None
    if "shapes" in doc:
        spec = doc["shapes"]
        if isinstance(spec, Mapping):
            block = (int(spec["block"][0]), int(spec["block"][1]))
            if block[0] * block[1] > n:
                raise InputError(f"a {block[0]}x{block[1]} block has more than the array's {n} PEs",
                                 path=_where("shapes", "block"), expected=f"rows x columns <= {n}")
            shapes = block_shapes(block, n)
        else:
            shapes = tuple((int(s[0]), int(s[1])) for s in spec)
            for i, s in enumerate(shapes):
                if s[0] * s[1] > n:
                    raise InputError(f"shape {s[0]}x{s[1]} has more than the array's {n} PEs",
                                     path=_where("shapes", i), expected=f"rows x columns <= {n}")
    orders = tuple(tuple(o) for o in doc["order"]) if "order" in doc else None
    if orders is not None:
        for i, o in enumerate(orders):
            if orders.index(o) != i:
                raise InputError("an order listed twice", path=_where("order", i), expected="distinct orders")
    parallels = tuple((p[0], p[1]) for p in doc["parallel"]) if "parallel" in doc else None
    return FlexClass(
        bits=bits, baseline_tile=tile, baseline_order=tuple(base.get("order") or BASELINE_ORDER),
        baseline_parallel=tuple(base.get("parallel") or BASELINE_PARALLEL),  # type: ignore[arg-type]
        baseline_shape=(int(shape[0]), int(shape[1])), tile=bounds, orders=orders, parallels=parallels,
        shapes=shapes, shape_block=block, axes=(axes[0][0], axes[1][0]), num_pes=n, code=code)


def choices(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``doc`` split into single-choice classes: one per combination of its listed orders and parallelisms (the class
    itself when it lists at most one of each). The class's optimum is the best of theirs."""
    orders = list(doc["order"]) if doc.get("order") else [None]
    pars = list(doc["parallel"]) if doc.get("parallel") else [None]
    out = []
    for o, p in itertools.product(orders, pars):
        d = {k: v for k, v in doc.items() if k not in ("order", "parallel")}
        if o is not None:
            d["order"] = [list(o)]
        if p is not None:
            d["parallel"] = [list(p)]
        out.append(d)
    return out


# ------------------------------------------------------------------------------------------------ expansion
def _record(kind: str, params: dict[str, Any], axis: str, name: str | None = None) -> Constraint:
    doc = {"kind": kind, **({"name": name} if name else {}), **params}
    return Constraint(kind, params, _where(axis), name, doc)


def _tile_factors(nest: LoopNest, tile: Mapping[str, Any], mode: str, on_array: Sequence[str],
                  padding: Mapping[str, int]) -> tuple[dict[str, Any], dict[str, int]]:
    """The buffer level's temporal factors (dim -> value or {min, max}) and the padding multiples (``padding``: the
    instance's ``options.padding``, which a padding record replaces). ``mode``: ``fixed`` (InFlex: the tile, 1 for
    the dimensions ``on_array``), ``at_most`` (InFlex tile under FullFlex parallelism) or ``bounds`` (PartFlex)."""
    dmap = DIM_MAP[nest.kind]
    factors: dict[str, Any] = {}
    pads: dict[str, int] = {}
    real = nest.real_sizes
    for f, d in dmap.items():
        if d not in real or nest.sizes[d] == 1:
            continue
        size = nest.sizes[d]
        spec = tile.get(f)
        if mode == "at_most":
            if spec is not None and int(spec) < size:
                factors[d] = {"max": int(spec)}
        elif mode == "fixed" or (spec is not None and (isinstance(spec, int) or spec[0] == spec[1])):
            t = 1 if f in on_array or spec is None else int(spec if isinstance(spec, int) else spec[0])
            if t >= real[d]:
                t = size
            elif size % t:
                pads[d] = t
            factors[d] = t
        elif spec is not None:
            lo, hi = spec
            bound = {"min": min(lo, size), "max": min(hi if hi is not None else size, size)}
            if bound["min"] > 1 or bound["max"] < size:
                factors[d] = {k: v for k, v in bound.items() if not (k == "min" and v == 1)}
    if pads:
        pads = {**{d: m for d, m in padding.items() if d in nest.dims and d not in pads}, **pads}
        sizes = {d: -(-real[d] // m) * m for d, m in pads.items()}
        for d, v in factors.items():
            if isinstance(v, int) and v == nest.sizes[d]:
                factors[d] = sizes.get(d, real[d])
    return factors, pads


def _kinds(nests: Sequence[LoopNest]) -> list[str]:
    return sorted({n.kind for n in nests}, key=list(DIM_MAP).index)


def _mapped(kind: str, dims: Sequence[str]) -> list[str]:
    return [DIM_MAP[kind][f] for f in dims if f in DIM_MAP[kind]]


def constraints_for(fc: FlexClass, nests: Sequence[LoopNest], arch: MappingArch,
                    padding: Mapping[str, int] | None = None) -> tuple[Constraint, ...]:
    """The constraints of a single-choice class ``fc`` for the layers ``nests`` mapped on ``arch`` (``padding``: the
    instance's ``options.padding``)."""
    padding = dict(padding or {})
    out: list[Constraint] = []
    tile = fc.choices("tile")
    tile_per_parallel: list[list[dict[str, Any]]] | None = None  # InFlex tile records per parallelism choice
    if tile is not None:
        if len(arch.levels) < 2:
            raise InputError("the Tile axis needs an on-chip buffer under main memory",
                             path=_where("tile" if fc.bits["tile"] else "class"),
                             expected="an accelerator with a buffer under main memory")
        fixed = not fc.bits["tile"]
        pars = fc.choices("parallel")
        mode = "bounds" if not fixed else "at_most" if pars is None else "fixed"
        on_array = pars[0] if mode == "fixed" and pars is not None and len(pars) == 1 else ()
        buffer, below = arch.levels[-2], arch.levels[:-2]
        if mode == "fixed" and pars is not None and len(pars) > 1:
            # the tile depends on the parallelism: its factors go into each parallelism option (same padding only)
            tile_per_parallel = []
            pads_of: list[list[dict[str, int]]] = []
            for par in pars:
                recs, pads_here = [], []
                for nest in nests:
                    factors, pads = _tile_factors(nest, tile[0], mode, par, padding)
                    pads_here.append(pads)
                    if factors:
                        recs.append({"kind": "factors", "layers": [nest.name], "target": buffer.name,
                                     "type": "temporal", "factors": factors})
                tile_per_parallel.append(recs)
                pads_of.append(pads_here)
            if any(p != pads_of[0] for p in pads_of):
                raise _several("parallel", len(pars))
        for nest in nests:
            factors, pads = _tile_factors(nest, tile[0], mode, on_array, padding)
            if pads:
                out.append(_record("padding", {"layers": [nest.name], "multiples": pads}, "tile", nest.name))
            if factors and tile_per_parallel is None:
                out.append(_record("factors", {"layers": [nest.name], "target": buffer.name, "type": "temporal",
                                               "factors": factors}, "tile", nest.name))
            ones = {d: 1 for d in nest.dims if nest.sizes[d] > 1}
            for lv in below if fixed and ones else ():
                out.append(_record("factors", {"layers": [nest.name], "target": lv.name, "type": "temporal",
                                               "factors": ones}, "tile", f"{nest.name} at {lv.name}"))
    orders = fc.choices("order")
    if orders is not None:
        per_order: list[list[dict[str, Any]]] = []
        for order in orders:
            recs = []
            for kind in _kinds(nests):
                dims = _mapped(kind, order)
                if len(dims) < 2:
                    continue
                for lv in arch.levels:
                    recs.append({"kind": "permutation", "op_kinds": [OP_KINDS[kind]], "target": lv.name,
                                 "order": dims})
            per_order.append(recs)
        if len(orders) == 1:
            for r in per_order[0]:
                out.append(_record("permutation", {k: v for k, v in r.items() if k != "kind"}, "order",
                                   f"{r['op_kinds'][0]} at {r['target']}"))
        elif all(per_order):
            out.append(_record("one_of", {"options": per_order}, "order"))
    pars = fc.choices("parallel")
    shapes = fc.shape_options
    rows, cols = fc.axes
    if pars is not None:
        per_par: list[list[dict[str, Any]]] = []
        for i, par in enumerate(pars):
            recs: list[dict[str, Any]] = []
            for kind in _kinds(nests):
                r, c = _mapped(kind, par[:1]), _mapped(kind, par[1:])
                axes = {cols: {"dims": r + c}} if shapes is None else {rows: {"dims": r}, cols: {"dims": c}}
                recs.append({"kind": "spatial", "op_kinds": [OP_KINDS[kind]], "axes": axes})
            per_par.append(recs + (tile_per_parallel[i] if tile_per_parallel is not None else []))
        if len(pars) == 1:
            for r in per_par[0]:
                out.append(_record("spatial", {k: v for k, v in r.items() if k != "kind"}, "parallel",
                                   r["op_kinds"][0]))
        else:
            out.append(_record("one_of", {"options": per_par}, "parallel"))
    shape_list = [[1, fc.num_pes]] if shapes is None else [list(s) for s in shapes]
    out.append(_record("shape", {"shapes": shape_list}, "shape"))
    return tuple(out)


def _several(axis: str, n: int) -> InputError:
    key = AXIS_KEYS[axis]
    return InputError(f"PartFlex {AXIS_TITLES[axis].lower()} lists {n} choices: one solve takes one of them (split "
                      "the class with dlaopt.formulations.mapping.flexibility.choices and keep the best, as "
                      "`dlaopt experiment flexion` does)", path=_where(key), expected=f"one '{key}' entry")


def mapped_nests(instance: Instance) -> list[LoopNest]:
    """The loop nests of the layers the instance maps (``options.layers``, default every mappable one; names that
    are not mappable layers are left to the problem's own checks)."""
    from dlaopt.formulations.mapping.loopnest import is_mappable, loopnest_from_operator

    wl = instance.graph
    names = instance.options.get("layers")
    ops = [op for op in wl.operators if is_mappable(op) and (names is None or op.name in names)]
    padding = dict(instance.options.get("padding") or {})
    return [loopnest_from_operator(wl, op, padding) for op in ops]


def expand(instance: Instance) -> tuple[Constraint, ...]:
    """The mapping constraints the instance's ``flexibility`` class stands for (paths ``("flexibility", axis)``):
    none without one. Several orders or parallelisms make a ``one_of`` record each."""
    if instance.flexibility is None:
        return ()
    from dlaopt.formulations.mapping.arch import arch_from_accelerator

    try:
        fc = parse(instance.flexibility, instance.accelerator)
        try:
            arch = arch_from_accelerator(instance.accelerator)
        except ValueError as exc:
            raise InputError(str(exc), path=("hardware",)) from None
        return constraints_for(fc, mapped_nests(instance), arch, instance.options.get("padding"))
    except InputError as exc:
        raise exc.located(file=instance.source) from None


__all__ = ["AXES", "AXIS_TITLES", "BASELINE_ORDER", "BASELINE_PARALLEL", "DIM_MAP", "FLEXION_DIMS", "OP_KINDS",
           "STATIONARY_ORDERS", "FlexClass", "block_shapes", "choices", "constraints_for", "expand", "mapped_nests",
           "parse"]
