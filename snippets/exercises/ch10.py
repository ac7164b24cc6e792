"""第 10 章的练习：表 3 一行的参数量、与百万的比较、句法树的线性化。参考答案：snippets/variations.py。"""

from __future__ import annotations

import torch

from snippets import variations
from snippets.exercises.core import Case, Exercise, Property, matches_reference, raises, register

DERIV = "10-variations/derivation.md"
PARSING = "10-variations/parsing.md"
CODE = ("10-variations/code.md", "code")


# --------------------------------------------------------------------------- table3_param_count
def _ref_count(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied=True):
    return variations.table3_param_count(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied)


def _make_row(rng, row, vocab, tied):
    r = variations.table3()[row]
    return Case((r["N"], r["d_model"], r["d_ff"], r["h"], r["d_k"], r["d_v"], vocab), {"tied": tied},
                note=f"表 3 的第 {row + 1} 行（{r['group']}：{', '.join(r['changed']) or 'base'}）")


def _make_small(rng, n_layers, d_model, heads, d_k, d_v, tied):
    return Case((n_layers, d_model, 2 * d_model, heads, d_k, d_v, 11), {"tied": tied})


register(Exercise(
    id="ch10.table3_param_count", name="table3_param_count", questions=("10.2",), title="表 3 一行的参数量",
    signature="table3_param_count(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied=True)",
    statement="按读者模型的约定数出一个编码器–解码器 Transformer 的参数：每个线性层带偏置；W^Q、W^K 是 d_model → h·d_k，"
              "W^V 是 d_model → h·d_v，W^O 是 h·d_v → d_model；FFN 两层 d_model → d_ff → d_model；每个 LayerNorm 有增益和偏置"
              "（各 d_model），编码器层 2 个、解码器层 3 个（post-LN，没有末尾的 LayerNorm）；解码器层有自注意力和交叉注意力两个注意力；"
              "输出投影没有偏置。tied=True 时源嵌入、目标嵌入、输出投影共用一个 |V|×d_model 矩阵（只算一次），"
              "否则三个各算一次。正弦位置编码没有参数。",
    shapes="全部是正整数，tied 是 bool → int。",
    bad_input="任何一个尺寸不是正整数（例如 d_k = 0）：ValueError，报错信息写出那个参数名。",
    reference=_ref_count, solution=CODE,
    stub='''def table3_param_count(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab, tied=True):
    """编码器 N 层 + 解码器 N 层 + 嵌入：线性层都带偏置，LayerNorm 各 2·d_model，输出投影无偏置，
    tied=True 时三处嵌入共用一个 |V|×d_model 矩阵。→ int。尺寸不是正整数：ValueError（写出参数名）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("small", "小模型（h·d_k 与 d_model 不一定相等）：参数个数与读者模型的约定一致",
                 "W^Q、W^K 的宽度是 h·d_k、W^V 与 W^O 的是 h·d_v，不一定等于 d_model；每个线性层都带偏置；"
                 "解码器层有两个注意力、三个 LayerNorm；LayerNorm 有增益和偏置两组。", DERIV, "param-count",
                 _make_small, matches_reference(),
                 dims={"n_layers": [1, 2, 3], "d_model": [4, 8], "heads": [1, 2, 4], "d_k": [2, 4, 8], "d_v": [2, 4],
                       "tied": [True]}, tries=16),
        Property("table3", "表 3 的各行（词表 37000）：共享与不共享嵌入",
                 "tied=True 时三处嵌入只算一次 |V|·d_model；不共享时算三次；输出投影没有偏置。", DERIV, "implied-vocab",
                 _make_row, matches_reference(),
                 dims={"row": list(range(20)), "vocab": [37000], "tied": [True, False]}, tries=16),
        Property("bad-d_k", "d_k = 0：ValueError，并写出参数名 d_k",
                 "逐个检查尺寸是正整数，报错信息写出出错的那个。", DERIV, "param-count",
                 lambda rng: Case((6, 512, 2048, 8, 0, 64, 37000), note="d_k = 0"), raises("d_k")),
    ],
))


# --------------------------------------------------------------------------- rounds_to
def _ref_rounds(count, reported_millions):
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"count must be a non-negative int, got count={count!r}")
    return variations.rounds_to(count, reported_millions)


def _make_rounds(rng, millions, offset):
    return Case((millions * 1_000_000 + offset, millions), note=f"count = {millions}M {offset:+d}")


register(Exercise(
    id="ch10.rounds_to", name="rounds_to", questions=("10.2",), title="四舍五入到百万",
    signature="rounds_to(count, reported_millions)",
    statement="表 3 的参数量以百万为单位、四舍五入后报告。判断 count 四舍五入到百万之后是否等于 reported_millions："
              "x.5 一律进位（65,500,000 → 66），不是 Python round 的「银行家舍入」（round(64.5) == 64）。返回 bool。",
    shapes="count 非负整数，reported_millions 整数 → bool。",
    bad_input="count 不是非负整数：ValueError，报错信息写出 count。",
    reference=_ref_rounds, solution=CODE,
    stub='''def rounds_to(count, reported_millions):
    """count 四舍五入（.5 进位）到百万后是否等于 reported_millions。→ bool。
    count 不是非负整数：ValueError（写出 count）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "远离 .5 的数：四舍五入到百万",
                 "除以 10⁶ 再四舍五入；比较的是整数百万。", DERIV, "param-count", _make_rounds, matches_reference(),
                 dims={"millions": [65, 58, 213, 1, 2], "offset": [0, 1, 400_000, -400_000, 600_000, -600_000]}),
        Property("half", "恰好 .5：进位（64,500,000 → 65，65,500,000 → 66）",
                 "Python 的 round 在 .5 上取偶数（round(64.5) == 64）：用 floor(x + 0.5)。", DERIV, "param-count",
                 lambda rng, millions, reported: Case((millions * 1_000_000 + 500_000, reported),
                                                       note=f"count = {millions}.5M"),
                 matches_reference(), dims={"millions": [64, 65, 0, 212], "reported": [64, 65, 66, 0, 1, 212, 213]}),
        Property("bad-count", "count 是负数：ValueError，并写出参数名 count",
                 "参数个数不会是负数：先检查。", DERIV, "param-count",
                 lambda rng: Case((-5, 0), note="count = -5"), raises("count")),
    ],
))


# --------------------------------------------------------------------------- linearize_tree
def _check_tree(tree, name="tree"):
    if isinstance(tree, str):
        return
    if not (isinstance(tree, tuple) and len(tree) == 2 and isinstance(tree[0], str) and isinstance(tree[1], list)):
        raise ValueError(f"{name} must be a word (str) or a (label, [children]) pair, got {tree!r}")
    for child in tree[1]:
        _check_tree(child, name)


def _ref_linearize(tree):
    _check_tree(tree)
    if isinstance(tree, str):
        raise ValueError(f"tree must be a (label, [children]) pair at the top, got the word {tree!r}")
    return variations.linearize_tree(tree)


def _random_tree(rng, depth, width):
    labels = ["S", "NP", "VP", "PP"]
    words = ["the", "cat", "sat", "on", "mat"]

    def build(level):
        label = labels[int(torch.randint(len(labels), (1,), generator=rng))]
        n = 1 + int(torch.randint(width, (1,), generator=rng))
        children = []
        for _ in range(n):
            if level < depth and bool(torch.rand(1, generator=rng) < 0.6):
                children.append(build(level + 1))
            else:
                children.append(words[int(torch.randint(len(words), (1,), generator=rng))])
        return (label, children)

    return build(1)


register(Exercise(
    id="ch10.linearize_tree", name="linearize_tree", questions=("10.7",), title="把句法树写成一串符号",
    signature="linearize_tree(tree)",
    statement="论文 §6.3 把成分句法分析当作翻译：输出是树的线性化。tree 是 (标签, [子树或词, …])，词是字符串。"
              "深度优先写出：每个成分先写开括号符号 `(标签`，再依次写它的子树和词，最后写闭括号符号 `)标签`，"
              "例如 `(S (NP the cat )NP (VP sat )VP )S`。n 个词、k 个成分的句子输出 n + 2k 个符号。",
    shapes="tree：(str, list) 的嵌套元组 → list[str]。",
    bad_input="tree 不是 (标签, [子节点]) 的结构（例如子节点列表写成了元组，或最外层就是一个词）：ValueError，报错信息写出 tree。",
    reference=_ref_linearize, solution=("10-variations/parsing.md", "parsing-task"),
    stub='''def linearize_tree(tree):
    """(标签, [子树或词, …]) → ["(S", "(NP", "the", "cat", ")NP", …, ")S"]：深度优先，每个成分一对括号符号。
    结构不对：ValueError（写出 tree）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "深度优先、每个成分一对带标签的括号符号，共 n + 2k 个",
                 "每个成分写两次标签：开头 `(` 加标签，结尾 `)` 加标签；词原样照写；子节点按顺序递归。", PARSING, "parsing-task",
                 lambda rng, depth, width: Case((_random_tree(rng, depth, width),)), matches_reference(),
                 dims={"depth": [1, 2, 3, 4], "width": [1, 2, 3, 4]}, tries=16),
        Property("bad-tree", "子节点列表写成了元组：ValueError，并写出参数名 tree",
                 "检查每个成分是 (str, list)：元组也能迭代，不检查就会悄悄当成列表。", PARSING, "parsing-task",
                 lambda rng: Case((("S", ("the", "cat")),), note="子节点是元组"), raises("tree")),
    ],
))
