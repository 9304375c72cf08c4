"""Instance options and objectives of the mapping problem (kept import-light for instance validation)."""

from __future__ import annotations

from typing import Any

from dlaopt.specs.constraints import LAYER_SELECTOR, constraints_schema, fixed_or_bounded
from dlaopt.specs.tuning import tuning_schema

OBJECTIVES: tuple[str, ...] = ("energy", "latency", "edp")
"""Per layer, from the cost model (:mod:`dlaopt.formulations.mapping.cost`): ``energy`` in pJ, ``latency`` in cycles,
``edp`` = energy x latency. For several layers: total energy, total latency (layers run one after another), and the
sum of the layers' EDPs (each layer mapped for its own EDP; the product of the totals is reported as a metric)."""

EXACT_LEVERS: dict[str, str] = {
    "near_first": "EDP: solve the least energy under a latency cap just above the least latency (where the fast and "
    "frugal mappings lie) before the least energy at any latency, whose tables its incumbent then cuts",
    "tight_top": "EDP: the walk over latency caps ends where the least energy times the latency reaches the best "
    "EDP (nothing slower can beat it), and a cap's energy bound also bounds every smaller cap",
    "ga_race": "under a time limit, with a core spare, the GA runs in another (niced) process alongside the exact "
    "method (same seed and time limit); its mapping cuts the walk's value tables once it is in and is the answer "
    "when it is better",
    "reuse": "warm-start each layer from its most similar solved layer, its mapping adapted to the layer's shape "
    "(seed 001 §5.3.1), and reuse proven layers of the on-disk cache (option cache_dir); also seeds GA and random",
}
"""Levers of the exact method (``options.exact_tuning``, each on by default; see :mod:`dlaopt.specs.tuning`)."""

OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "layers": {
            "type": ["array", "null"],
            "items": {"type": "string", "minLength": 1},
            "uniqueItems": True,
            "default": None,
            "description": "Names of the conv / depthwise / matmul operators to map (default: all of them). Layers "
            "of identical shape are solved once.",
        },
        "padding": {
            "type": "object",
            "additionalProperties": {"type": "integer", "minimum": 1},
            "default": {},
            "description": "Round loop dimensions up to a multiple, e.g. {P: 8}: friendlier factors at the price "
            "of wasted work (counted in energy; utilization uses the real MACs).",
        },
        "workers": {
            "type": "integer",
            "minimum": 0,
            "default": 0,
            "description": "Processes mapping layers in parallel (0: one per CPU, at most one per unique layer).",
        },
        "random_samples": {
            "type": "integer",
            "minimum": 1,
            "default": 10000,
            "description": "Samples of the 'random' mapper per layer (seed 001 §4.4.1 uses 10K for every method).",
        },
        "ga_population": {"type": "integer", "minimum": 2, "default": 200,
                          "description": "GAMMA population (seed 001 §4.4.1: 200)."},
        "ga_generations": {"type": "integer", "minimum": 1, "default": 50,
                           "description": "GAMMA generations (seed 001 §4.4.1: 50)."},
        "warm_start": {
            "type": "array",
            "items": {"type": "string"},
            "default": ["nvdla", "eyeriss", "shidiannao"],
            "description": "Heuristics whose best mapping warm-starts the exact method.",
        },
        "exhaustive_limit": {
            "type": "integer",
            "minimum": 1,
            "default": 2000000,
            "description": "The 'exhaustive' method refuses layers with more mappings than this.",
        },
        "cache_dir": {
            "type": ["string", "null"],
            "minLength": 1,
            "default": None,
            "description": "A directory of solved layers shared across runs (created if missing): a layer of the "
            "same shape, hardware, constraints and objective proven optimal before is reused after the cost model "
            "re-evaluates it; other solved layers warm-start similar ones (seed 001 §5.3.1). Null: no cache. "
            "Used while the exact_tuning lever 'reuse' is on.",
        },
        "exact_tuning": tuning_schema(EXACT_LEVERS),
    },
}

DEFAULT_OPTIONS: dict[str, Any] = {k: v["default"] for k, v in OPTIONS_SCHEMA["properties"].items()}

_DIMS = ["N", "G", "K", "C", "P", "Q", "R", "S", "B", "M"]
_DIM_LIST: dict[str, Any] = {"type": "array", "items": {"enum": _DIMS}, "minItems": 1, "uniqueItems": True}
_TARGET: dict[str, Any] = {
    "type": "string", "minLength": 1,
    "description": "A storage level, by its name or the name of one of its memories (dlaopt show lists them), "
    "innermost to outermost as Timeloop's 'target'."}
_BOUND: dict[str, Any] = fixed_or_bounded("A fixed factor, or {min, max} bounds on it.")

CONSTRAINTS: dict[str, Any] = {
    "factors": {
        "description": "Fixed or bounded loop factors of the selected layers at one level (Timeloop 'factors'): "
        "type temporal (the level's own loops) or spatial (the fanout below it; 'axis' picks one axis, else their "
        "product).",
        "required": ["target", "factors"],
        "properties": {
            "target": _TARGET,
            "type": {"enum": ["temporal", "spatial"], "default": "temporal"},
            "axis": {"type": "string", "minLength": 1, "description": "A spatial axis of the fanout (e.g. X, Y)."},
            "factors": {"type": "object", "minProperties": 1, "propertyNames": {"enum": _DIMS},
                        "additionalProperties": _BOUND},
        },
    },
    "permutation": {
        "description": "The loop order at one level, outermost first (Timeloop 'permutation'): every dimension "
        "listed fixes the order; a subset fixes their relative order ([K, C]: C inside K). Loops of factor 1 are "
        "free.",
        "required": ["target", "order"],
        "properties": {"target": _TARGET, "order": _DIM_LIST},
    },
    "spatial": {
        "description": "The dimensions each axis of a fanout may unroll, and the most of the axis it may use "
        "(target: the level above the fanout; default the PE array's).",
        "required": ["axes"],
        "properties": {
            "target": _TARGET,
            "axes": {"type": "object", "minProperties": 1, "additionalProperties": {
                "type": "object", "additionalProperties": False, "minProperties": 1,
                "properties": {"dims": {"type": "array", "items": {"enum": _DIMS}, "uniqueItems": True},
                               "max": {"type": "integer", "minimum": 1}}}},
        },
    },
    "bypass": {
        "description": "Operands (I, W, O) that bypass a level: it keeps none of their tiles (Timeloop 'bypass').",
        "required": ["target", "operands"],
        "properties": {"target": _TARGET,
                       "operands": {"type": "array", "items": {"enum": ["I", "W", "O"]}, "minItems": 1,
                                    "uniqueItems": True}},
    },
    "utilization": {
        "description": "A minimum spatial utilization: the share of the MAC units a mapping keeps busy (Timeloop "
        "'utilization').",
        "required": ["min"],
        "properties": {"min": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}},
    },
    "padding": {
        "description": "Whether the selected layers may be padded (options.padding); allowed: false maps them "
        "at their own sizes, 'multiples' pads them to these multiples.",
        "properties": {"allowed": {"type": "boolean"},
                       "multiples": {"type": "object", "minProperties": 1, "propertyNames": {"enum": _DIMS},
                                     "additionalProperties": {"type": "integer", "minimum": 1}}},
    },
    "shape": {
        "description": "The shapes (rows x columns) the PE array may take for the selected layers, each with at "
        "most the array's PEs (Flexion's Shape axis); each layer uses one of them.",
        "required": ["shapes"],
        "properties": {"shapes": {"type": "array", "minItems": 1, "uniqueItems": True, "items": {
            "type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "integer", "minimum": 1}}}},
    },
}
for _kind in CONSTRAINTS.values():  # every mapping constraint selects layers by name or operator kind
    _kind["properties"] = {**LAYER_SELECTOR, **_kind["properties"]}

ONE_OF_KINDS: tuple[str, ...] = ("factors", "permutation", "spatial", "utilization")
"""The kinds an option of a ``one_of`` may hold (constraints on the loops of a layer, not on its sizes or its
architecture)."""


def _option_item() -> dict[str, Any]:
    """The schema of one record of a ``one_of`` option: a constraint of :data:`ONE_OF_KINDS`, checked by the same
    per-kind rules as the ``constraints`` list (:func:`constraints_schema`), without a ``name`` of its own."""
    item = constraints_schema({k: CONSTRAINTS[k] for k in ONE_OF_KINDS})["items"]
    for rule in item["allOf"]:
        rule["then"]["properties"].pop("name", None)
    return item


CONSTRAINTS["one_of"] = {
    "description": "A disjunction: each selected layer meets every record of at least one option (e.g. one of "
    "several loop orders, or of several parallelisms: Flexion's PartFlex order and parallelism, seed 001 Ch. 3). "
    "An option is a list of factors / permutation / spatial / utilization records (without names; their own "
    "layers / op_kinds narrow them further).",
    "required": ["options"],
    "properties": {**LAYER_SELECTOR, "options": {"type": "array", "minItems": 1, "items": {
        "type": "array", "minItems": 1, "items": _option_item()}}},
}

# ------------------------------------------------------------------------------------------------ flexibility
FLEXION_DIMS: tuple[str, ...] = ("K", "C", "Y", "X", "R", "S")
"""Flexion's loop dimensions (seed 001, Chapter 3): output channels K, input channels C, rows Y, columns X, filter
rows R and columns S. They name the dimensions of every mappable layer: dlaopt's K, C, P, Q, R, S of a conv2d (Y, X
are output rows and columns here; the thesis' MAESTRO layers give input rows), K, G, P, Q, R, S of a depthwise conv
(its channels are Flexion's C, as the thesis writes depthwise layers with K = 1), N, K, M, B of a matmul (output
features, reduction, rows, batch; no R, S)."""

_FLEX_DIM: dict[str, Any] = {"enum": list(FLEXION_DIMS)}
_FLEX_ORDER: dict[str, Any] = {"type": "array", "items": _FLEX_DIM, "minItems": 2, "uniqueItems": True,
                               "description": "A loop order, outermost first (a subset fixes their relative order)."}
_FLEX_PAIR: dict[str, Any] = {"type": "array", "items": _FLEX_DIM, "minItems": 2, "maxItems": 2, "uniqueItems": True,
                              "description": "[dimension unrolled along the array's rows, along its columns]."}
_FLEX_SHAPE: dict[str, Any] = {"type": "array", "minItems": 2, "maxItems": 2,
                               "items": {"type": "integer", "minimum": 1},
                               "description": "[rows, columns] of PEs."}
_FLEX_TILE: dict[str, Any] = {"type": "object", "minProperties": 1, "propertyNames": _FLEX_DIM,
                              "additionalProperties": _BOUND}

FLEXIBILITY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["class"],
    "description": "A flexibility class of seed 001's Chapter 3 (Flexion): four bits T O P S (Tile, Order, "
    "Parallelism, Shape). A bit 0 fixes its axis to the baseline (InFlex); a bit 1 with a listed subset allows that "
    "subset (PartFlex); a bit 1 with nothing listed leaves the axis free (FullFlex). It expands to mapping "
    "constraints (named flexibility.tile, flexibility.order, ...); dimensions use Flexion's letters K C Y X R S.",
    "properties": {
        "class": {"type": "string", "pattern": "^[01]{4}$",
                  "description": "The bits T O P S, e.g. '0110': order and parallelism flexible."},
        "baseline": {
            "type": "object", "additionalProperties": False,
            "description": "The InFlex configuration (default: Table 3.1's, with the array's own shape).",
            "properties": {
                "tile": {**_FLEX_TILE, "additionalProperties": {"type": "integer", "minimum": 1},
                         "description": "The on-chip buffer's tile per dimension, iterated by each PE; a dimension "
                         "the parallelism in force unrolls takes its tile from the array instead (default Table "
                         "3.1's K:64 C:16 Y:3 X:3 R:3 S:3). A tile that does not divide a layer's dimension pads it "
                         "to a multiple; one larger is cut to the layer."},
                "order": {**_FLEX_ORDER, "description": "The loop order at every level, outermost first (default "
                          "Y X K C R S, the output-stationary order of §3.4.3)."},
                "parallel": {**_FLEX_PAIR, "description": "[rows, columns] dimensions (default [C, K]: Table 3.1's "
                             "K-C parallelism, K along the 64 columns)."},
                "shape": {**_FLEX_SHAPE, "description": "The PE array's shape (default: the accelerator's)."},
            },
        },
        "tile": {**_FLEX_TILE, "description": "PartFlex tile: fixed or {min, max} buffer tile sizes per dimension "
                 "(bit T = 1; absent: any tile that fits). The hard-partitioned buffer of §3.4.2's PartFlex-1000 "
                 "is hardware: the flexion preset's partition parameter."},
        "order": {"type": "array", "minItems": 1, "items": _FLEX_ORDER,
                  "description": "PartFlex order: the loop orders allowed (bit O = 1), each at every level."},
        "parallel": {"type": "array", "minItems": 1, "uniqueItems": True, "items": _FLEX_PAIR,
                     "description": "PartFlex parallelism: the [rows, columns] dimension pairs allowed (bit P = 1)."},
        "shapes": {
            "description": "PartFlex shape (bit S = 1): the array shapes allowed, or {block: [rows, columns]}: every "
            "shape composed of such blocks (one per number of block rows, as many block columns as the PEs allow).",
            "anyOf": [
                {"type": "array", "minItems": 1, "uniqueItems": True, "items": _FLEX_SHAPE},
                {"type": "object", "additionalProperties": False, "required": ["block"],
                 "properties": {"block": _FLEX_SHAPE}},
            ],
        },
    },
}
