"""Regenerate the ONNX model shipped with the example instances: ``python instances/onnx/make_models.py``.

``small-cnn.onnx`` is the branchy CNN that ``tests/onnx_models.py`` builds with ``onnx.helper`` (stem conv + BN +
ReLU, an inception-like block with a concat, a residual block with an add, a depthwise conv with ReLU6, global
average pool, flatten, a Gemm classifier, softmax), with a symbolic batch dimension and all-zero weights.
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests"))

from onnx_models import small_cnn  # noqa: E402


def main() -> None:
    path = HERE / "small-cnn.onnx"
    onnx.save(small_cnn(), path)
    print(f"{path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
