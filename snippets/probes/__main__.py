"""``python -m snippets.probes``：在导入 torch **之前**把线程数固定为 1，再运行探针。"""

import os

# 必须在 import torch 之前设置：BLAS/OpenMP 在加载时读取这些变量。
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"

import sys  # noqa: E402

import torch  # noqa: E402

torch.set_num_threads(1)

from .runner import main  # noqa: E402

sys.exit(main())
