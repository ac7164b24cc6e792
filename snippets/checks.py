"""输入检查：snippets/rnn.py 与 snippets/lstm.py 等共用的一个形状检查函数，以及契约测试用的开关。

页面在展示完算法之后引入本文件的 imports、checks 两节；rnn.py、lstm.py 的小节在函数体里
按名字调用 _check_tensor。测试：tests/ch01/test_ch01_bad_input.py。

读数值的检查（lengths 的范围、词 id 是否越界、键的范数……）写成 ``if VALUE_CHECKS and …``：每个有这种
检查的模块在它的小节里定义 ``VALUE_CHECKS = True``。PyTorch 的 meta 设备只有形状、没有数值，契约测试
（tests/contract/）在 meta 上运行每个函数时，用下面各节之外的 ``values_unchecked()`` 把它们一起关掉，
而不是让读者代码按设备分支。
"""

import contextlib
import sys

# --8<-- [start:imports]
import torch
# --8<-- [end:imports]


# --8<-- [start:checks]
def _check_tensor(name, t, meaning, shape, dtype=None):
    """t 必须是浮点张量（给出 dtype 时还要相同），形状与 shape 一致。

    meaning 写出各维的含义，如 "(batch, n, input_size)"，只用在报错信息里；
    shape 是期望的形状，None 表示那一维任意，如 (None, None, 8)。维数就是 len(shape)。
    """
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    got = f"{name} {tuple(t.shape)}"
    if not t.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {t.dtype}: {got}")
    if dtype is not None and t.dtype != dtype:
        raise TypeError(f"{name} has dtype {t.dtype} but the weights have {dtype}: {got}")
    if t.dim() != len(shape):
        raise ValueError(f"{name} must have shape {meaning}, got {got}")
    expected = tuple(t.shape[i] if size is None else size for i, size in enumerate(shape))
    if tuple(t.shape) != expected:
        raise ValueError(f"{name} must have shape {meaning} = {expected}, got {got}")
# --8<-- [end:checks]


@contextlib.contextmanager
def values_unchecked():
    """在 with 块里关掉所有已导入的 snippets 模块中读数值的输入检查（它们的 VALUE_CHECKS），出块时恢复。

    只给 meta 设备上的契约测试用（tests/contract/）：meta 张量没有数值，读不了。形状、dtype 的检查照旧。
    """
    modules = [m for name, m in list(sys.modules.items())
               if (name == "snippets" or name.startswith("snippets.")) and hasattr(m, "VALUE_CHECKS")]
    saved = [m.VALUE_CHECKS for m in modules]
    for m in modules:
        m.VALUE_CHECKS = False
    try:
        yield
    finally:
        for m, value in zip(modules, saved):
            m.VALUE_CHECKS = value
