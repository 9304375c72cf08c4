"""The built-in network zoo: every network generated from code with its published layer shapes.

``ZOO.create(name, params)`` builds a validated :class:`~dlaopt.workload.Workload`; ``dlaopt zoo`` lists them.
Importing this package registers every network:

* :mod:`dlaopt.zoo.cnn_small` — the thesis' SMAUG models ``cifar-cnn10``, ``lenet5``, ``minerva``, ``elu``,
  ``large-elu``, ``resnet-cifar``, ``vgg-cifar``;
* :mod:`dlaopt.zoo.recurrent` — ``lstm`` (unrolled, weights shared across time steps);
* :mod:`dlaopt.zoo.imagenet` — ``alexnet``, ``vgg16``, ``resnet18``, ``resnet50`` (v1.5 or v1), ``squeezenet``
  (1.1 or 1.0), ``mobilenet-v2``, ``googlenet``, ``mnasnet``;
* :mod:`dlaopt.zoo.transformer` — ``bert-base``, ``bert-large``, ``trxl``, ``flaubert``, ``t5``, ``xlm`` (FLAT's
  attention models) and ``llama-block`` (a Llama-style decoder block with Llama-2-7B's shapes);
* :mod:`dlaopt.zoo.recommendation` — ``dlrm``, ``wide-deep``, ``ncf`` (batch 64 by default) and ``gpt2``;
* :mod:`dlaopt.zoo.wavenet` — ``parallel-wavenet`` (the IAF student of Parallel WaveNet, data-movement chains).

Every factory takes keyword-only parameters with defaults, at least ``batch`` (default 1; 64 for the recommendation
models) and ``dtype_bytes`` (default 2: SMAUG runs fp16).
"""

# Each module registers its networks with ZOO (defined in ``_common``) when it is imported.
from dlaopt.zoo import cnn_small, imagenet, recommendation, recurrent, transformer, wavenet
from dlaopt.zoo._common import ZOO

__all__ = ["ZOO", "cnn_small", "imagenet", "recommendation", "recurrent", "transformer", "wavenet"]
