"""第 10 章「模型变体、句法分析与结论」背后的代码：论文表 3 的每一行（数据）与按读者模型的约定数出的参数量。

table3() 是表 3 在本项目里唯一的一份抄录（页面的生成表格与测试都读它）；table3_param_count 按
snippets/transformer.py 的约定闭式地数参数。测试（tests/ch10/）在 meta 设备上按表 3 的每一行搭出读者的
Transformer，断言两者逐个相等。build_reader_model 在所有小节之外（页面不显示它，只在测试与示例里用）。
"""

# --8<-- [start:imports]
import math
# --8<-- [end:imports]


# --8<-- [start:table3]
# 论文表 3（§6.2，newstest2013 开发集；困惑度按 word-piece 计，BLEU 用束搜索、不做检查点平均）。
# 表里空着的格子按表注「与 base 相同」补上；params_m 为 None 表示论文没有报告参数量。
_BASE = {"N": 6, "d_model": 512, "d_ff": 2048, "h": 8, "d_k": 64, "d_v": 64,
         "p_drop": 0.1, "eps_ls": 0.1, "steps": 100_000, "positions": "sinusoid"}
# (组, 改了什么, 困惑度, BLEU, 参数量/百万)
_ROWS = [
    ("base", {}, 4.92, 25.8, 65),
    ("A", {"h": 1, "d_k": 512, "d_v": 512}, 5.29, 24.9, None),
    ("A", {"h": 4, "d_k": 128, "d_v": 128}, 5.00, 25.5, None),
    ("A", {"h": 16, "d_k": 32, "d_v": 32}, 4.91, 25.8, None),
    ("A", {"h": 32, "d_k": 16, "d_v": 16}, 5.01, 25.4, None),
    ("B", {"d_k": 16}, 5.16, 25.1, 58),
    ("B", {"d_k": 32}, 5.01, 25.4, 60),
    ("C", {"N": 2}, 6.11, 23.7, 36),
    ("C", {"N": 4}, 5.19, 25.3, 50),
    ("C", {"N": 8}, 4.88, 25.5, 80),
    ("C", {"d_model": 256, "d_k": 32, "d_v": 32}, 5.75, 24.5, 28),
    ("C", {"d_model": 1024, "d_k": 128, "d_v": 128}, 4.66, 26.0, 168),
    ("C", {"d_ff": 1024}, 5.12, 25.4, 53),
    ("C", {"d_ff": 4096}, 4.75, 26.2, 90),
    ("D", {"p_drop": 0.0}, 5.77, 24.6, None),
    ("D", {"p_drop": 0.2}, 4.95, 25.5, None),
    ("D", {"eps_ls": 0.0}, 4.67, 25.3, None),
    ("D", {"eps_ls": 0.2}, 5.47, 25.7, None),
    ("E", {"positions": "learned"}, 4.92, 25.7, None),
    ("big", {"d_model": 1024, "d_ff": 4096, "h": 16, "p_drop": 0.3, "steps": 300_000}, 4.33, 26.4, 213),
]


def table3() -> list[dict]:
    """表 3 的 20 行，每行一个 dict：group、changed（改了哪些列）、全部配置、ppl、bleu、params_m。"""
    rows = []
    for group, changed, ppl, bleu, params_m in _ROWS:
        rows.append({"group": group, "changed": sorted(changed), **_BASE, **changed,
                     "ppl": ppl, "bleu": bleu, "params_m": params_m})
    return rows
# --8<-- [end:table3]


# --8<-- [start:param-count]
def table3_param_count(n_layers, d_model, d_ff, n_heads, d_k, d_v, vocab,
                       tied=True, learned_positions=0):
    """按读者模型的约定数参数：每个线性层都带偏置，每个 LayerNorm 有增益和偏置（各 d_model），
    post-LN 没有末尾 LayerNorm，输出投影无偏置；tied=True 时源嵌入、目标嵌入、输出投影共用一个 |V|×d 矩阵。
    learned_positions：可学习位置嵌入表的行数（表 3 (E)；0 = 正弦编码，没有参数）。"""
    _check_table3_args(n_layers=n_layers, d_model=d_model, d_ff=d_ff, n_heads=n_heads, d_k=d_k,
                       d_v=d_v, vocab=vocab, learned_positions=learned_positions)
    qk = 2 * (d_model * n_heads * d_k + n_heads * d_k)          # W^Q、W^K：d_model → h·d_k，各带偏置
    v = d_model * n_heads * d_v + n_heads * d_v                  # W^V：d_model → h·d_v
    o = n_heads * d_v * d_model + d_model                        # W^O：h·d_v → d_model
    attention = qk + v + o
    ffn = 2 * d_model * d_ff + d_ff + d_model                    # W1、b1、W2、b2
    encoder_layer = attention + ffn + 2 * (2 * d_model)          # 2 个 LayerNorm
    decoder_layer = 2 * attention + ffn + 3 * (2 * d_model)      # 自注意力 + 交叉注意力，3 个 LayerNorm
    embeddings = vocab * d_model * (1 if tied else 3)            # 共享时只算一次
    return n_layers * (encoder_layer + decoder_layer) + embeddings + learned_positions * d_model
# --8<-- [end:param-count]


# --8<-- [start:parsing]
# 论文 §6.3 写明的句法分析设置（没有写的：d_ff、h、训练步数、dropout 取值、学习率）
PARSING_SETTINGS = {"layers": 4, "d_model": 1024, "wsj_sentences": 40_000, "semi_supervised_sentences": 17_000_000,
                    "vocab_wsj": 16_000, "vocab_semi": 32_000, "max_extra_output": 300, "beam": 21, "alpha": 0.3}
# 表 4（WSJ 第 23 节 F1），按论文的顺序：(解析器, 训练方式, F1)
TABLE4 = [
    ("Vinyals & Kaiser el al. (2014)", "WSJ only, discriminative", 88.3),
    ("Petrov et al. (2006)", "WSJ only, discriminative", 90.4),
    ("Zhu et al. (2013)", "WSJ only, discriminative", 90.4),
    ("Dyer et al. (2016)", "WSJ only, discriminative", 91.7),
    ("Transformer (4 layers)", "WSJ only, discriminative", 91.3),
    ("Zhu et al. (2013)", "semi-supervised", 91.3),
    ("Huang & Harper (2009)", "semi-supervised", 91.3),
    ("McClosky et al. (2006)", "semi-supervised", 92.1),
    ("Vinyals & Kaiser el al. (2014)", "semi-supervised", 92.1),
    ("Transformer (4 layers)", "semi-supervised", 92.7),
    ("Luong et al. (2015)", "multi-task", 93.0),
    ("Dyer et al. (2016)", "generative", 93.3),
]


def linearize_tree(tree):
    """把一棵成分句法树写成一串符号（深度优先）：(S (NP the cat )NP (VP sat )VP )S。

    tree 是 (标签, [子树或词, ...])；词是字符串。输出里每个成分贡献开、闭两个括号符号，
    所以 n 个词、k 个成分的句子输出 n + 2k 个符号：输出比输入长得多，而且括号必须配对。"""
    label, children = tree
    out = ["(" + label]
    for child in children:
        out += [child] if isinstance(child, str) else linearize_tree(child)
    return out + [")" + label]
# --8<-- [end:parsing]


# --8<-- [start:checks]
def _check_table3_args(**sizes):
    """每个尺寸必须是整数；learned_positions 可以是 0，其余至少是 1。报错时写出全部尺寸。"""
    shown = ", ".join(f"{k}={v!r}" for k, v in sizes.items())
    for name, value in sizes.items():
        low = 0 if name == "learned_positions" else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {name}={value!r} ({shown})")


def _check_row_positions(row: dict, learned_positions: int) -> None:
    """行里写了 positions 时，learned_positions 必须与它一致：(E) 行要一张表，正弦的行不要。"""
    positions = row.get("positions")
    if positions == "learned" and learned_positions == 0:
        raise ValueError("row has positions='learned' (Table 3 (E)): pass learned_positions > 0, the table's rows; "
                         "got learned_positions=0")
    if positions == "sinusoid" and learned_positions > 0:
        raise ValueError(f"row has positions='sinusoid' (no parameters): learned_positions must be 0, "
                         f"got learned_positions={learned_positions}")
# --8<-- [end:checks]


def row_param_count(row: dict, vocab: int, learned_positions: int = 0) -> int:
    """表 3 的一行（table3() 的 dict）按 table3_param_count 数出的参数量。"""
    _check_row_positions(row, learned_positions)
    return table3_param_count(row["N"], row["d_model"], row["d_ff"], row["h"], row["d_k"], row["d_v"], vocab,
                              learned_positions=learned_positions)


def build_reader_model(row: dict, vocab: int, learned_positions: int = 0):
    """按表 3 的一行搭出读者的 Transformer（snippets/transformer.py），在调用者的默认设备上
    （测试用 ``with torch.device("meta")``，不分配内存）。

    读者模型的值头宽固定为 d_model / h，所以 h·d_v 必须等于 d_model（表 3 的每一行都满足）；
    learned_positions > 0 时把正弦编码的缓冲区换成一张可学习的 (learned_positions, d_model) 表（表 3 (E)）。
    """
    import torch
    from torch import nn

    from snippets.transformer import Transformer

    _check_row_positions(row, learned_positions)
    if row["h"] * row["d_v"] != row["d_model"]:
        raise ValueError(f"the reader model needs h·d_v = d_model, got h={row['h']}, d_v={row['d_v']}, "
                         f"d_model={row['d_model']}")
    model = Transformer(vocab, d_model=row["d_model"], num_heads=row["h"], num_layers=row["N"],
                        d_ff=row["d_ff"], dropout=row["p_drop"], d_k=row["d_k"])
    if learned_positions:
        pe = model.positional
        del pe.pe                                                # 去掉正弦缓冲区
        pe.pe = nn.Parameter(torch.randn(learned_positions, row["d_model"]) * 0.02)
        pe.max_len = learned_positions
    return model


def rounds_to(count: int, reported_millions: int) -> bool:
    """count 四舍五入到百万后是否等于论文报告的值。"""
    return math.floor(count / 1e6 + 0.5) == reported_millions
