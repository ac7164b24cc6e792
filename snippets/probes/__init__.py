"""复杂度探针（complexity probes）：把论文 Table 1 测出来，而不只是引用。

运行::

    python -m snippets.probes --device cpu --preset quick --out results/cpu-<tag>.json
    python -m snippets.probes --device cuda --preset full --out results/cuda-<tag>.json

子模块（都可单独导入；本包的 ``__init__`` 不导入 torch，这样 ``__main__`` 能在导入
torch 之前把线程数固定为 1）：

- :mod:`~snippets.probes.facts`       每种层的事实（闭式 FLOPs、论文指数、Table 1 的行）：唯一的登记处
- :mod:`~snippets.probes.layers`      探针测的层：页面上的读者代码（外加 GRU、卷积、SDPA）
- :mod:`~snippets.probes.flops`       FLOPs 计数 vs 闭式、交叉点（二分法）
- :mod:`~snippets.probes.paths`       最大路径长度：最小堆叠深度（float64 雅可比）
- :mod:`~snippets.probes.sequential`  顺序操作数：``make_fx`` 前向图的关键路径
- :mod:`~snippets.probes.memory`      精确分配字节数：朴素注意力、SDPA、在线 softmax
- :mod:`~snippets.probes.walltime`    墙钟时间：n、d 扫描，log-log 斜率（子进程，单线程）
- :mod:`~snippets.probes.gradients`   梯度衰减：‖∂L/∂x_{T−k}‖ 随 k 的斜率
- :mod:`~snippets.probes.results`     结果文件的 kind 与模式表达不了的检查（读写与出处在 snippets.results）
- :mod:`~snippets.probes.fit`         log-log 拟合与斜率的 spread
- :mod:`~snippets.probes.runner`      预设（tiny / quick / full）与命令行实现
"""
