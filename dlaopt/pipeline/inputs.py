"""What ``dlaopt compile`` is given, turned into the workload / hardware / platform parts of instance documents.

* a **workload** is a zoo name (with ``params``), an ONNX model (``*.onnx``), a workload file (an inline graph
  document, as ``dlaopt import`` writes) or an instance file (its ``workload``);
* the **hardware** is a preset name (with ``params``), a hardware file (an inline accelerator or ``{preset, params}``)
  or an instance file (its ``hardware``);
* a **platform** is a platform name (with ``params``) or a file with ``{platform, params}`` or an inline platform.

Every stage instance of the pipeline is built from these documents, so each can be written out and re-checked on its
own with ``dlaopt verify``. Files are resolved now (paths made absolute) so the documents stay valid anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dlaopt.errors import InputError
from dlaopt.io.instance import load_mapping

_GRAPH_KEYS = ("zoo", "onnx", "operators")


def workload_document(spec: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``workload`` document of ``spec`` (see the module docstring)."""
    params = dict(params or {})
    path = Path(spec)
    if path.suffix.lower() == ".onnx":
        if not path.is_file():
            raise InputError(f"no ONNX model at '{spec}'", path=("workload",), expected="an existing .onnx file")
        return {"onnx": str(path.resolve()), **params}
    if path.suffix.lower() in (".yaml", ".yml", ".json") or path.is_file():
        doc = load_mapping(path, what="workload")
        wdoc = doc.get("workload", doc)
        if not isinstance(wdoc, Mapping) or not any(k in wdoc for k in _GRAPH_KEYS):
            raise InputError("not a workload: expected a graph (tensors, operators), {zoo, params}, {onnx} or an "
                             "instance file with one", file=str(path), path=("workload",) if "workload" in doc else (),
                             expected="a network graph (job tables and task groups are not compiled)")
        out = dict(wdoc)
        if "onnx" in out and not Path(str(out["onnx"])).is_absolute():
            out["onnx"] = str((path.parent / str(out["onnx"])).resolve())
        if params:
            if "zoo" not in out:
                raise InputError("--param applies to zoo networks only", file=str(path), path=("workload",))
            out["params"] = {**dict(out.get("params") or {}), **params}
        return out
    return {"zoo": spec, "params": params}


def hardware_document(spec: str, params: Mapping[str, Any] | None = None, *, platform: bool = False
                      ) -> dict[str, Any]:
    """The ``hardware`` document of a preset (``platform=False``) or platform name, or of a file."""
    params = dict(params or {})
    key = "platform" if platform else "preset"
    path = Path(spec)
    if path.suffix.lower() in (".yaml", ".yml", ".json") or path.is_file():
        doc = load_mapping(path, what="platform" if platform else "hardware")
        hdoc = dict(doc.get("hardware", doc))
        if platform != ("platform" in hdoc or "accelerators" in hdoc):
            raise InputError(f"not {'a platform' if platform else 'one accelerator'}", file=str(path),
                             path=("hardware",) if "hardware" in doc else (),
                             expected="{platform, params} or {accelerators, system_bandwidth_gbps}" if platform
                             else "{preset, params} or an inline accelerator")
        if params:
            if key not in hdoc:
                raise InputError(f"parameters apply to a named {key} only", file=str(path))
            hdoc["params"] = {**dict(hdoc.get("params") or {}), **params}
        return hdoc
    return {key: spec, "params": params}


__all__ = ["hardware_document", "workload_document"]
