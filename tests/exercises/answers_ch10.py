"""第 10 章练习的答案（见 answers_ch01.py 的说明）。"""

import math


def _check(**sizes):
    for name, v in sizes.items():
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {name}={v}")


def _count(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied=True, norms=True, cross=True, wo_square=False,
           untied_twice=False, check=True):
    if check:
        _check(n_layers=n_layers, d_model=d_model, d_ff=d_ff, n_heads=n_heads, d_k=d_k, d_v=d_v, vocab=vocab)
    qk = 2 * (d_model * n_heads * d_k + n_heads * d_k)
    v = d_model * n_heads * d_v + n_heads * d_v
    o = (d_model * d_model if wo_square else n_heads * d_v * d_model) + d_model
    att = qk + v + o
    ffn = 2 * d_model * d_ff + d_ff + d_model
    ln = 2 * d_model if norms else 0
    enc = att + ffn + 2 * ln
    dec = (2 if cross else 1) * att + ffn + 3 * ln
    emb = vocab * d_model * (1 if tied else (2 if untied_twice else 3))
    return n_layers * (enc + dec) + emb


def count_no_layernorm(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied=True):
    return _count(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied, norms=False)


def count_no_cross_attention(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied=True):
    return _count(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied, cross=False)


def count_wo_square(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied=True):
    return _count(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied, wo_square=True)


def count_untied_twice(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied=True):
    return _count(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied, untied_twice=True)


def count_no_check(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied=True):
    return _count(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied, check=False)


def count_by_modules(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied=True):
    """写法不同：在 meta 设备上真的搭出每一层的线性层与 LayerNorm，再数 numel。"""
    import torch
    from torch import nn

    _check(n_layers=n_layers, d_model=d_model, d_ff=d_ff, n_heads=n_heads, d_k=d_k, d_v=d_v, vocab=vocab)
    with torch.device("meta"):
        def attention():
            return [nn.Linear(d_model, n_heads * d_k), nn.Linear(d_model, n_heads * d_k),
                    nn.Linear(d_model, n_heads * d_v), nn.Linear(n_heads * d_v, d_model)]

        def ffn():
            return [nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)]

        enc = attention() + ffn() + [nn.LayerNorm(d_model) for _ in range(2)]
        dec = attention() + attention() + ffn() + [nn.LayerNorm(d_model) for _ in range(3)]
        per_layer = sum(p.numel() for m in enc + dec for p in m.parameters())
    return n_layers * per_layer + (1 if tied else 3) * vocab * d_model


def _check_count(count):
    if not isinstance(count, int) or count < 0:
        raise ValueError(f"count must be a non-negative int, got count={count}")


def rounds_bankers(count, reported_millions):
    _check_count(count)
    return round(count / 1e6) == reported_millions


def rounds_truncates(count, reported_millions):
    _check_count(count)
    return count // 1_000_000 == reported_millions


def rounds_within_one(count, reported_millions):
    _check_count(count)
    return abs(count / 1e6 - reported_millions) <= 1  # 「差不多」


def rounds_no_check(count, reported_millions):
    return math.floor(count / 1e6 + 0.5) == reported_millions


def rounds_integer(count, reported_millions):
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"count={count} must be a non-negative int")
    return (count + 500_000) // 1_000_000 == reported_millions


def _lin(tree, closing=True, labels=True, check=True):
    if check and not (isinstance(tree, tuple) and len(tree) == 2 and isinstance(tree[1], list)):
        raise ValueError(f"tree must be (label, [children]), got {tree!r}")
    label, children = tree
    out = ["(" + label if labels else "("]
    for child in children:
        out += [child] if isinstance(child, str) else _lin(child, closing, labels, check)
    return out + ([")" + label if labels else ")"] if closing else [])


def lin_no_closing(tree):
    return _lin(tree, closing=False)


def lin_unlabelled_brackets(tree):
    return _lin(tree, labels=False)


def lin_breadth_first(tree):
    if not (isinstance(tree, tuple) and isinstance(tree[1], list)):
        raise ValueError(f"tree must be (label, [children]), got {tree!r}")
    label, children = tree
    out = ["(" + label] + [c for c in children if isinstance(c, str)]
    for c in children:
        if not isinstance(c, str):
            out += lin_breadth_first(c)  # 先写完所有词，再写子成分：顺序乱了
    return out + [")" + label]


def lin_no_check(tree):
    label, children = tree
    out = ["(" + label]
    for child in children:
        out += [child] if isinstance(child, str) else lin_no_check(child)
    return out + [")" + label]


def lin_iterative(tree):
    """写法不同：用显式的栈，不递归。"""
    def valid(t):
        return isinstance(t, str) or (isinstance(t, tuple) and len(t) == 2 and isinstance(t[0], str)
                                      and isinstance(t[1], list) and all(valid(c) for c in t[1]))

    if isinstance(tree, str) or not valid(tree):
        raise ValueError(f"tree is not a (label, [children]) structure: {tree!r}")
    out, stack = [], [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, tuple) and item[0] == "__close__":
            out.append(")" + item[1])
        else:
            label, children = item
            out.append("(" + label)
            stack.append(("__close__", label))
            stack.extend(reversed(children))
    return out


WRONG = {
    "ch10.table3_param_count": [("small", count_no_layernorm), ("small", count_no_cross_attention),
                                ("small", count_wo_square), ("table3", count_untied_twice), ("bad-d_k", count_no_check)],
    "ch10.rounds_to": [("half", rounds_bankers), ("matches", rounds_truncates), ("matches", rounds_within_one),
                       ("bad-count", rounds_no_check)],
    "ch10.linearize_tree": [("matches", lin_no_closing), ("matches", lin_unlabelled_brackets),
                            ("matches", lin_breadth_first), ("bad-tree", lin_no_check)],
}
RIGHT = {"ch10.table3_param_count": [count_by_modules], "ch10.rounds_to": [rounds_integer],
         "ch10.linearize_tree": [lin_iterative]}
