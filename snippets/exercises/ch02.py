"""第 02 章的练习：因果掩码、解码器掩码（因果 & 填充）、一个解码器层。参考答案：snippets/attention.py、snippets/transformer.py。"""

from __future__ import annotations

import torch

from snippets import attention, transformer
from snippets.exercises.core import DEVICE, Case, Exercise, Failure, Property, Text, matches_reference, raises, randn, register

DECODER = "02-architecture/derivation-decoder.md"
CODE = ("02-architecture/code.md", "code")


# --------------------------------------------------------------------------- causal_mask
def _ref_causal(n):
    return attention.causal_mask(n)


def _make_bad_n(rng, which):
    return Case(([0, 2.0][which],), note=["n = 0", "n 是浮点数 2.0"][which])


register(Exercise(
    id="ch02.causal_mask", questions=("2.5", "2.12"), name="causal_mask", title="因果掩码",
    signature="causal_mask(n)",
    statement="返回 n × n 的 bool 掩码：位置 i 只能看 j ≤ i（对角线及其下方为 True）。True 表示可以看。",
    shapes="n 是正整数 → (n, n) bool。",
    bad_input="n 不是 int：TypeError；n < 1：ValueError。报错信息写出 n。",
    reference=_ref_causal, solution=CODE,
    stub='''def causal_mask(n):
    """(n, n) bool，位置 i 只能看 j ≤ i（含对角线）。n 不是 int：TypeError；n < 1：ValueError（写出 n）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "对角线及其下方为 True、上方为 False，dtype 为 bool",
                 "位置 i 能看自己（对角线为 True），不能看 j > i；用 torch.ones(n, n, dtype=torch.bool).tril()（在模型里用时加 device=，与输入放在同一设备上）。",
                 DECODER, "three-attentions", lambda rng, n: Case((n,)), matches_reference(),
                 dims={"n": [1, 2, 3, 4, 7]}, tries=5),
        Property("bad-n", "n 不是正整数：TypeError/ValueError，并写出参数名 n",
                 "先检查 isinstance(n, int) 和 n ≥ 1。", DECODER, "three-attentions",
                 _make_bad_n, raises("n"), dims={"which": [0, 1]}),
    ],
))


# --------------------------------------------------------------------------- decoder_mask
def _ref_decoder_mask(lengths, n):
    return attention.causal_mask(n) & attention.padding_mask(lengths, n)


def _make_lengths(rng, batch, n):
    lengths = torch.randint(1, n + 1, (batch,), generator=rng)
    lengths[0] = max(1, n - 1) if n > 1 else 1  # 第一条序列尽量带一个填充位置
    return Case((lengths, n))


def _make_bad_lengths(rng, which):
    lengths = [torch.tensor([2, 5], device=DEVICE), torch.tensor([2.0, 3.0], device=DEVICE)][which]
    return Case((lengths, 4), note=["lengths 里的 5 超过 n = 4", "lengths 是浮点张量"][which])


register(Exercise(
    id="ch02.decoder_mask", questions=("2.1",), name="decoder_mask", title="解码器自注意力的掩码",
    signature="decoder_mask(lengths, n)",
    statement="批里第 b 条目标序列的前 lengths[b] 个位置是真实词元，其余是填充。返回解码器自注意力用的掩码："
              "查询 i 能看键 j，当且仅当 j ≤ i（因果）并且 j 不是填充位置。填充遮的是键（最后一维），不是查询。",
    shapes="lengths (batch,) 整数张量，取值在 [0, n]；n 是正整数 → (batch, n, n) bool。",
    bad_input="lengths 不是整数张量：TypeError；lengths 里有 < 0 或 > n 的值：ValueError。报错信息写出 lengths。",
    reference=_ref_decoder_mask, solution=CODE,
    stub='''def decoder_mask(lengths, n):
    """lengths (batch,) 整数，n → (batch, n, n) bool：查询 i 能看键 j ⇔ j ≤ i 且 j < lengths[b]。
    lengths 不是整数：TypeError；取值不在 [0, n]：ValueError（写出 lengths）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "因果与填充同时生效：(batch, n, n)，键 j 可看 ⇔ j ≤ i 且 j < lengths[b]",
                 "两个掩码取 &：因果掩码 (n, n) 与填充掩码 (batch, 1, n)。填充掩码的 1 在查询那一维，遮的是键。",
                 DECODER, "shift-right", _make_lengths, matches_reference(),
                 dims={"batch": [1, 2, 3], "n": [1, 2, 3, 5, 6]}),
        Property("bad-lengths", "lengths 越界或不是整数：ValueError/TypeError，并写出参数名 lengths",
                 "检查 lengths 的 dtype（不能是浮点、bool），以及 0 ≤ lengths ≤ n。", DECODER, "shift-right",
                 _make_bad_lengths, raises("lengths"), dims={"which": [0, 1]}),
    ],
))


# --------------------------------------------------------------------------- decoder_layer
def _ref_layer(layer, y, memory, memory_mask=None):
    layer.eval()
    with torch.no_grad():
        return layer(y, memory, attention.causal_mask(y.shape[1]), memory_mask)


def _layer(rng, d_model, heads, dtype):
    layer = transformer.DecoderLayer(d_model, heads, 2 * d_model, dropout=0.0).to(dtype)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(randn(rng, *p.shape, dtype=dtype, scale=0.4))
    return layer.eval()


def _show(layer, y, memory, mask=None):
    shown = {"layer": Text(f"DecoderLayer(d_model={layer.d_model}, num_heads={layer.self_attn.num_heads}, "
                      f"d_ff={layer.ffn.linear1.out_features})，随机权重，eval()"), "y": y, "memory": memory}
    if mask is not None:
        shown["memory_mask"] = mask
    return shown


def _make_layer(rng, batch, m, n, heads, dtype, with_mask=False):
    layer = _layer(rng, 4 * heads, heads, dtype)
    y, memory = randn(rng, batch, m, 4 * heads, dtype=dtype), randn(rng, batch, n, 4 * heads, dtype=dtype)
    if not with_mask:
        return Case((layer, y, memory), show=_show(layer, y, memory))
    mask = attention.padding_mask(torch.tensor([max(1, n - 1)] + [n] * (batch - 1), device=DEVICE), n)  # (batch, 1, n)
    return Case((layer, y, memory), {"memory_mask": mask}, show=_show(layer, y, memory, mask),
                note="第一条源句的最后一个位置是填充")


def _check_causal(fn, case, reference):
    layer, y, memory = case.args
    out = fn(layer, y, memory)
    t = y.shape[1] - 1  # 只改最后一个位置
    y2 = y.clone()
    y2[:, t] += 3.0
    out2 = fn(layer, y2, memory)
    if not isinstance(out, torch.Tensor) or out.shape != y.shape:
        raise Failure(f"输出应该是形状 {tuple(y.shape)} 的张量，得到 {getattr(out, 'shape', type(out).__name__)}")
    diff = (out2[:, :t] - out[:, :t]).abs().max().item() if t > 0 else 0.0
    if diff > 1e-6:
        raise Failure(f"只改了 y 的最后一个位置（第 {t} 个），前面位置的输出却变了（最大变化 {diff:.3g}）："
                      f"前面的位置看到了未来")


LAYER_DIMS = {"batch": [1, 2], "m": [2, 3, 5], "n": [1, 2, 4], "heads": [1, 2], "dtype": [torch.float64, torch.float32]}

register(Exercise(
    id="ch02.decoder_layer", questions=("2.1", "2.6"), name="decoder_layer", title="一个解码器层（Post-LN）",
    signature="decoder_layer(layer, y, memory, memory_mask=None)",
    statement="用 layer（snippets.transformer.DecoderLayer，已设为 eval()）里的子模块，写出论文的解码器层：\n"
              "1. 带因果掩码的自注意力 layer.self_attn(y, y, y, mask)（因果掩码由你自己造）+ 残差，layer.norm1；\n"
              "2. 交叉注意力 layer.cross_attn(y, memory, memory, memory_mask)（Q 来自解码器，K、V 来自编码器输出）"
              "+ 残差，layer.norm2；\n3. layer.ffn + 残差，layer.norm3。\n"
              "三处都是 Post-LN：LayerNorm(x + Sublayer(x))。注意力模块返回 (out, weights)，只用 out。",
    shapes="y (batch, m, d_model)，memory (batch, n, d_model)，memory_mask 为 bool，能广播到 (batch, m, n) 或 None"
           " → (batch, m, d_model)。",
    bad_input="memory 的最后一维不是 d_model、或批大小与 y 不同：ValueError，报错信息写出 memory 和形状。",
    reference=_ref_layer, solution=CODE,
    stub='''def decoder_layer(layer, y, memory, memory_mask=None):
    """layer：snippets.transformer.DecoderLayer（eval）。Post-LN：
    y = norm1(y + self_attn(y, y, y, 因果掩码))，y = norm2(y + cross_attn(y, memory, memory, memory_mask))，
    y = norm3(y + ffn(y))。y (batch, m, d)，memory (batch, n, d) → (batch, m, d)。
    memory 形状不对：ValueError（写出 memory）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("causal", "改动 y 的最后一个位置，前面位置的输出不变（自注意力带因果掩码）",
                 "自注意力要带因果掩码 causal_mask(m)：位置 i 只看 j ≤ i。交叉注意力不需要因果掩码。",
                 DECODER, "causality-proof", _make_layer, _check_causal, dims=LAYER_DIMS, tries=8),
        Property("matches", "与论文的 Post-LN 解码器层一致：自注意力 → 交叉注意力 → FFN，每个子层后 LayerNorm(x + Sublayer(x))",
                 "Post-LN 是 norm(x + sublayer(x))，不是 x + sublayer(norm(x))；交叉注意力的查询来自 y，键、值来自 memory；"
                 "三个子层各用自己的 norm1、norm2、norm3。", DECODER, "decoder-layer",
                 _make_layer, matches_reference(), dims=LAYER_DIMS, tries=8),
        Property("memory-mask", "memory_mask 遮住源句的填充位置",
                 "memory_mask 要交给交叉注意力（它遮的是 memory 的位置），不是自注意力。", DECODER, "three-attentions",
                 lambda rng, **d: _make_layer(rng, with_mask=True, **d), matches_reference(), dims=LAYER_DIMS, tries=8),
        Property("bad-memory", "memory 的宽度不是 d_model：ValueError，并写出参数名 memory",
                 "比较 memory.shape[-1] 与 layer.d_model、memory.shape[0] 与 y.shape[0]。", DECODER, "decoder-layer",
                 lambda rng: Case((_layer(rng, 4, 1, torch.float64), randn(rng, 1, 2, 4), randn(rng, 1, 3, 6)),
                                  note="memory 的宽度 6 ≠ d_model = 4"), raises("memory")),
    ],
))
