"""An on-disk cache of solved layers, shared across runs and worker processes (option ``cache_dir``).

A layer's entry is keyed by everything its mapping problem depends on, and nothing else:

* the layer: operator kind, loop dimensions, (padded) bounds and real bounds, each operand's index projections
  (stride, dilation) and word size — not its name, so identical layers of different networks share an entry;
* the hardware and the layer's constraint space: every architecture the layer may be mapped on (levels, stores,
  capacities, energies, bandwidths, fanouts, links; the PE-array shapes a shape constraint allows, the bypasses),
  the factor bounds, spatial allowances, loop-order chains and minimum utilization in force, and the MAC units
  utilization counts — not the accelerator's name nor the labels of the constraints;
* the objective, the cost model's ``roots`` and ``capacity_limits`` when given, and :data:`COST_MODEL_VERSION`
  (a digest of the cost model's sources, so an entry never outlives the model that scored it).

The key is the SHA-256 of that canonical document; the document itself is stored in the entry and compared on
read (a file under the right name with another key is ignored). Entries of one hardware, space shape and objective
share a directory (its *context*), which is what a layer that has no entry of its own searches for similar layers.

An entry holds a mapping, the PE-array shape it is for, its objective, the bound proven for the layer (if any) and
the status (``optimal`` when the bound proves it within ``gap``). Nothing read is trusted blindly:

* reads are bounded (:data:`MAX_ENTRY_BYTES`, only regular files, never following a FIFO or a device) and any file
  that does not parse into a well-formed entry is ignored — a corrupt, truncated or hostile file never stops a run;
* every hit is re-evaluated by the cost model on the layer's architecture and checked against its constraint space
  (:func:`lookup`); a mapping that is not valid there is dropped, and a stored proven optimum is returned as such
  only when the re-evaluated objective matches the stored one (and the stored bound is consistent with it).

Writes are atomic (a temporary file in the same directory, flushed, then ``os.replace``) and serialized per context
with an advisory lock where the platform has one; an entry is only replaced by a better one (proven beats unproven,
then the lower objective), so concurrent writers leave the best of their entries, never a torn file. A cache
directory that cannot be written is reported once per process and otherwise ignored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import stat
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlaopt.formulations.mapping.cost import evaluate_mapping
from dlaopt.formulations.mapping.heuristics import Limits, Roots
from dlaopt.formulations.mapping.loopnest import LoopNest
from dlaopt.formulations.mapping.mapping import Mapping, mapping_errors
from dlaopt.formulations.mapping.space import LayerSpace

FORMAT = 1
MAX_ENTRY_BYTES = 1 << 20  # an entry is a few KB; anything larger is not one of ours
MAX_SCAN = 256  # entries of a context read when looking for similar layers
MATCH_RTOL = 1e-9  # re-evaluated vs stored objective
_IGNORED_FIELDS = {"source", "sources", "utilization_source"}  # labels, not semantics
_warned: set[str] = set()


def _cost_model_version() -> str:
    """A digest of the sources the cost of a mapping depends on."""
    here = Path(__file__).parent
    h = hashlib.sha256(b"dlaopt-mapping-cost-model")
    for name in ("cost.py", "arch.py", "loopnest.py", "mapping.py"):
        with contextlib.suppress(OSError):
            h.update((here / name).read_bytes())
    return h.hexdigest()[:16]


COST_MODEL_VERSION = _cost_model_version()


# ================================================================================================ keys
def canonical(obj: Any) -> Any:
    """A JSON-ready canonical form of dataclasses, sets, tuples, dicts and numbers (labels left out, sets sorted,
    floats as their repr so that ``inf`` and ``-0.0`` survive)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {"__type": type(obj).__name__}
        for f in dataclasses.fields(obj):
            if f.name in _IGNORED_FIELDS or (type(obj).__name__ == "MappingArch" and f.name == "name"):
                continue
            out[f.name] = canonical(getattr(obj, f.name))
        return out
    if isinstance(obj, (frozenset, set)):
        return sorted((canonical(x) for x in obj), key=lambda x: json.dumps(x, sort_keys=True))
    if isinstance(obj, (list, tuple)):
        return [canonical(x) for x in obj]
    if isinstance(obj, dict):
        return [[canonical(k), canonical(v)] for k, v in sorted(obj.items(), key=lambda kv: repr(kv[0]))]
    if isinstance(obj, bool) or obj is None or isinstance(obj, (int, str)):
        return obj
    if isinstance(obj, float):
        return {"float": repr(obj)}
    raise TypeError(f"cannot key a {type(obj).__name__}")


def layer_doc(nest: LoopNest) -> dict[str, Any]:
    """The layer part of a key: what its mapping problem depends on (not its name nor its tensors' names)."""
    return {"kind": nest.kind, "dims": list(nest.dims), "sizes": [[d, nest.sizes[d]] for d in nest.dims],
            "real_sizes": [[d, nest.real_sizes[d]] for d in nest.dims],
            "operands": [[o.name, canonical(o.coords), o.word_bytes] for o in nest.operands]}


def context_doc(space: LayerSpace, objective: str, roots: Roots = None, capacity_limits: Limits = None
                ) -> dict[str, Any]:
    """The hardware part of a key: the architectures the layer may be mapped on, the MAC units, the objective,
    roots and capacity limits, and the cost model version."""
    archs = [canonical(c) for alt in space.choices for c in alt.archs]
    return {"format": FORMAT, "cost_model": COST_MODEL_VERSION, "archs": archs, "mac_units": space.mac_units,
            "objective": objective, "roots": canonical(dict(roots) if roots else None),
            "capacity_limits": canonical(dict(capacity_limits) if capacity_limits else None)}


def _digest(doc: Any) -> tuple[str, str]:
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest(), text


@dataclass(frozen=True)
class Key:
    context: str  # digest of context_doc: the directory
    layer: str  # digest of the whole key document: the file name
    text: str  # the whole key document, stored in the entry and compared on read


def key_for(nest: LoopNest, space: LayerSpace, objective: str, roots: Roots = None,
            capacity_limits: Limits = None) -> Key:
    """The cache key of ``nest`` within ``space`` (its whole constraint space: bounds, chains, utilization,
    alternatives) for ``objective``."""
    ctx = context_doc(space, objective, roots, capacity_limits)
    context, _ = _digest(ctx)
    layer, text = _digest({"context": ctx, "layer": layer_doc(nest), "space": canonical(space)})
    return Key(context[:32], layer, text)


# ================================================================================================ entries
@dataclass(frozen=True)
class Entry:
    """A cached solution of one layer (as stored; see :func:`lookup` for a verified hit)."""

    mapping: Mapping
    shape: tuple[int, int] | None
    objective: float
    bound: float | None
    status: str  # "optimal" (the bound proves it within gap) or "feasible"
    gap: float | None  # the relative gap the status was proven to
    method: str  # what found it: exact, ga, ...
    layer: LoopNest | None = None  # the layer it was solved for (for similarity searches), when readable

    @property
    def proven(self) -> bool:
        return self.status == "optimal" and self.bound is not None

    def better_than(self, other: Entry) -> bool:
        if self.proven != other.proven:
            return self.proven
        if self.proven and other.proven and (self.gap or 0.0) != (other.gap or 0.0):
            return (self.gap or 0.0) < (other.gap or 0.0)
        return self.objective < other.objective * (1 - 1e-12)


def _int(v: Any, lo: int = 1, hi: int = 1 << 40) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise ValueError("not an integer in range")
    return v


def _num(v: Any) -> float:
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(float(v)):
        raise ValueError("not a finite number")
    return float(v)


def _parse(doc: Any, key: Key) -> tuple[Entry, dict[str, Any] | None]:
    """A stored document as an entry (``ValueError`` / ``TypeError`` / ``KeyError`` when it is not one of ours for
    ``key``) and the stored layer document."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("key") != key.text:
        raise ValueError("another key or format")
    m = doc["mapping"]
    if not isinstance(m, dict) or not isinstance(m.get("factors"), dict) or not isinstance(m.get("orders"), list):
        raise ValueError("mapping")
    factors = {}
    for d, fs in m["factors"].items():
        if not isinstance(d, str) or not isinstance(fs, list) or len(fs) > 64:
            raise ValueError("factors")
        factors[d] = tuple(_int(f) for f in fs)
    orders = []
    for o in m["orders"]:
        if not isinstance(o, list) or len(o) > 64 or not all(isinstance(d, str) for d in o):
            raise ValueError("orders")
        orders.append(tuple(o))
    shape = doc.get("shape")
    if shape is not None:
        if not isinstance(shape, list) or len(shape) != 2:
            raise ValueError("shape")
        shape = (_int(shape[0]), _int(shape[1]))
    bound = doc.get("bound")
    status = doc.get("status")
    gap = doc.get("gap")
    if status not in ("optimal", "feasible"):
        raise ValueError("status")
    method = doc.get("method", "")
    entry = Entry(Mapping(factors, tuple(orders)), shape, _num(doc["objective"]),
                  None if bound is None else _num(bound), status, None if gap is None else _num(gap),
                  method if isinstance(method, str) else "")
    layer = doc.get("layer_doc")
    return entry, layer if isinstance(layer, dict) else None


def _read_bounded(path: Path) -> Any:
    """The JSON document in ``path``, read without blocking on special files nor reading more than
    :data:`MAX_ENTRY_BYTES` (``None`` when it is not a readable regular file of that size, or not JSON)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
            return None
        chunks, size = [], 0
        while size <= MAX_ENTRY_BYTES:
            b = os.read(fd, 65536)
            if not b:
                break
            chunks.append(b)
            size += len(b)
        if size > MAX_ENTRY_BYTES:
            return None
        return json.loads(b"".join(chunks).decode("utf-8"))
    except (OSError, ValueError, RecursionError, MemoryError):
        return None
    finally:
        os.close(fd)


def _layer_from_doc(doc: dict[str, Any]) -> LoopNest | None:
    """The layer a stored ``layer_doc`` describes (``None`` when it does not describe one)."""
    from dlaopt.formulations.mapping.loopnest import Coordinate, Operand

    try:
        dims = tuple(doc["dims"])
        if not all(isinstance(d, str) for d in dims) or len(dims) > 16:
            return None
        sizes = {str(d): _int(n) for d, n in doc["sizes"]}
        real = {str(d): _int(n) for d, n in doc["real_sizes"]}
        ops = []
        for name, coords, wb in doc["operands"]:
            cs = tuple(Coordinate(tuple((str(d), _int(c, 0, 1 << 20)) for d, c in t["terms"])) for t in coords)
            ops.append(Operand(str(name), "", cs, _int(wb, 1, 64)))
        return LoopNest(str(doc.get("name", "cached")), str(doc["kind"]), dims, sizes, tuple(ops), real)
    except (KeyError, TypeError, ValueError):
        return None


# ================================================================================================ the cache
class LayerCache:
    """The cache in directory ``root`` (created on first write)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.writes = 0
        self.write_errors = 0

    def _dir(self, key: Key) -> Path:
        return self.root / f"v{FORMAT}" / key.context

    def path(self, key: Key) -> Path:
        return self._dir(key) / f"{key.layer}.json"

    # -------------------------------------------------------------------------------------------- reads
    def get(self, key: Key) -> Entry | None:
        """The stored entry for ``key`` as stored (unverified; see :func:`lookup`), or ``None``."""
        doc = _read_bounded(self.path(key))
        try:
            return _parse(doc, key)[0]
        except (ValueError, TypeError, KeyError, AttributeError):
            return None

    def similar(self, key: Key, limit: int = MAX_SCAN) -> list[Entry]:
        """Entries of other layers in ``key``'s context (same hardware, objective, cost model), at most ``limit``
        read, in file-name order, each with the layer it was solved for."""
        d = self._dir(key)
        try:
            names = sorted(n for n in os.listdir(d) if n.endswith(".json") and n != f"{key.layer}.json")
        except OSError:
            return []
        out: list[Entry] = []
        for n in names[:limit]:
            doc = _read_bounded(d / n)
            if not isinstance(doc, dict) or not isinstance(doc.get("key"), str):
                continue
            other = Key(key.context, n[: -len(".json")], doc["key"])
            try:
                entry, ldoc = _parse(doc, other)
            except (ValueError, TypeError, KeyError, AttributeError):
                continue
            if hashlib.sha256(other.text.encode()).hexdigest() != other.layer or ldoc is None:
                continue
            nest = _layer_from_doc(ldoc)
            if nest is not None:
                out.append(dataclasses.replace(entry, layer=nest))
        return out

    # -------------------------------------------------------------------------------------------- writes
    @contextlib.contextmanager
    def _locked(self, d: Path) -> Iterator[None]:
        try:
            import fcntl
        except ImportError:  # no advisory locks: the atomic replace alone keeps files whole
            yield
            return
        fd = os.open(d / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def put(self, key: Key, nest: LoopNest, entry: Entry,
            recheck: Callable[[Entry], Entry | None] | None = None) -> bool:
        """Store ``entry`` unless the stored one is at least as good (see :meth:`Entry.better_than`); atomic.
        ``recheck`` turns the stored entry into what it is worth now (``None``: nothing, e.g. it no longer verifies;
        it is then overwritten). ``False`` when nothing was written (not better, or the directory cannot be
        written: warned once)."""
        d = self._dir(key)
        doc = {"format": FORMAT, "key": key.text, "layer": nest.name,
               "layer_doc": {**layer_doc(nest), "name": nest.name},
               "mapping": {"factors": {k: list(v) for k, v in entry.mapping.factors.items()},
                           "orders": [list(o) for o in entry.mapping.orders]},
               "shape": None if entry.shape is None else list(entry.shape), "objective": entry.objective,
               "bound": entry.bound, "status": entry.status, "gap": entry.gap, "method": entry.method,
               "written": time.time()}
        try:
            d.mkdir(parents=True, exist_ok=True)
            with self._locked(d):
                old = self.get(key)
                if old is not None and recheck is not None:
                    old = recheck(old)
                if old is not None and not entry.better_than(old):
                    return False
                fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=d)
                try:
                    with os.fdopen(fd, "w") as f:
                        json.dump(doc, f, separators=(",", ":"))
                        f.flush()
                        os.fsync(f.fileno())
                    os.replace(tmp, self.path(key))
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
                    raise
        except (OSError, ValueError) as exc:
            self.write_errors += 1
            if str(self.root) not in _warned:
                _warned.add(str(self.root))
                warnings.warn(f"layer cache {self.root}: not written ({exc})", RuntimeWarning, stacklevel=2)
            return False
        self.writes += 1
        return True


# ================================================================================================ verified hits
@dataclass(frozen=True)
class Hit:
    """A cache entry verified for this layer: ``value`` is the cost model's objective of ``mapping`` now, on the
    architecture of ``shape``; ``proven`` says the stored optimum may be returned as is (same key, re-evaluation
    matches, stored bound consistent, proven within ``gap``)."""

    mapping: Mapping
    shape: tuple[int, int] | None
    value: float
    bound: float | None
    proven: bool
    gap: float | None
    method: str


def verify(entry: Entry, nest: LoopNest, space: LayerSpace, objective: str, *, roots: Roots = None,
           capacity_limits: Limits = None) -> Hit | None:
    """``entry`` re-evaluated for ``nest`` within ``space``: ``None`` unless its mapping is structurally valid on
    the architecture choice of its shape, keeps the space (its alternative, if any) and the cost model finds it
    valid."""
    from dlaopt.formulations.mapping.exact import outside_space

    for alt in space.choices:
        for choice in alt.archs:
            if choice.shape != entry.shape:
                continue
            arch = choice.arch
            if mapping_errors(nest, arch, entry.mapping) or outside_space(nest, arch, alt, entry.mapping):
                continue
            rep = evaluate_mapping(nest, arch, entry.mapping, roots=roots, capacity_limits=capacity_limits)
            if not rep.valid:
                continue
            value = float(rep.objective(objective))
            match = abs(value - entry.objective) <= MATCH_RTOL * max(1.0, abs(entry.objective))
            bound_ok = entry.bound is not None and entry.bound <= value * (1 + MATCH_RTOL)
            return Hit(entry.mapping, entry.shape, value, entry.bound if bound_ok else None,
                       entry.proven and match and bound_ok, entry.gap, entry.method)
    return None


def lookup(cache: LayerCache, nest: LoopNest, space: LayerSpace, objective: str, *, roots: Roots = None,
           capacity_limits: Limits = None) -> Hit | None:
    """The verified entry of ``nest`` (:func:`verify`), or ``None``."""
    key = key_for(nest, space, objective, roots, capacity_limits)
    entry = cache.get(key)
    return None if entry is None else verify(entry, nest, space, objective, roots=roots,
                                             capacity_limits=capacity_limits)


def store(cache: LayerCache, nest: LoopNest, space: LayerSpace, objective: str, mapping: Mapping,
          shape: tuple[int, int] | None, value: float, bound: float | None, status: str, gap: float | None,
          method: str, *, roots: Roots = None, capacity_limits: Limits = None) -> bool:
    """Store a solution of ``nest`` after checking it (:func:`verify` against its own claims): a mapping the cost
    model does not find valid in the space, or whose objective is not ``value``, is not stored. ``status`` other
    than ``optimal`` is stored as ``feasible``."""
    st = "optimal" if status == "optimal" and bound is not None else "feasible"
    entry = Entry(mapping, None if shape is None else (int(shape[0]), int(shape[1])), float(value),
                  None if bound is None else float(min(bound, value)), st, gap, method)
    hit = verify(entry, nest, space, objective, roots=roots, capacity_limits=capacity_limits)
    if hit is None or abs(hit.value - value) > MATCH_RTOL * max(1.0, abs(value)):
        return False
    def recheck(old: Entry) -> Entry | None:
        h = verify(old, nest, space, objective, roots=roots, capacity_limits=capacity_limits)
        if h is None:
            return None
        return dataclasses.replace(old, objective=h.value, status="optimal" if h.proven else "feasible",
                                   bound=h.bound)

    return cache.put(key_for(nest, space, objective, roots, capacity_limits), nest, entry, recheck)


def similar_entries(cache: LayerCache, nest: LoopNest, space: LayerSpace, objective: str, *, roots: Roots = None,
                    capacity_limits: Limits = None) -> list[Entry]:
    """Entries of other layers on the same hardware for the same objective (to adapt: :mod:`.reuse`)."""
    return cache.similar(key_for(nest, space, objective, roots, capacity_limits))


__all__ = ["COST_MODEL_VERSION", "MAX_ENTRY_BYTES", "Entry", "Hit", "Key", "LayerCache", "canonical", "key_for",
           "lookup", "similar_entries", "store", "verify"]
