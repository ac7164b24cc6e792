"""输入检查：snippets/rnn.py 与 snippets/lstm.py 共用的一个形状检查函数。

页面在展示完算法之后引入本文件的 imports、checks 两节；rnn.py、lstm.py 的小节在函数体里
按名字调用 _check_tensor。测试：tests/ch01/test_ch01_bad_input.py。
"""

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
