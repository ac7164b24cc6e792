"""第 06 章「嵌入、权重共享与分词」：从零写的字节对编码（BPE，Sennrich et al., 2016）。

约定与 SentencePiece、Hugging Face tokenizers 的 Metaspace 相同：空格写成 "▁"（U+2581），
并且在每个词的开头；一个「词」就是 "▁" 加上到下一个空格为止的字符。训练按行统计词频，
合并只发生在词的内部。解码把符号拼起来、"▁" 换回空格、去掉开头补的那一个空格，
所以任何不含 "▁" 的字符串都能逐字符还原。
"""

# --8<-- [start:imports]
import re
from collections import Counter
# --8<-- [end:imports]


# --8<-- [start:pretokenize]
SPACE = "\u2581"  # "▁"：代表空格的符号


def pretokenize(text: str) -> list[str]:
    """把一行文本切成词：空格变成 "▁"，开头补一个 "▁"，每个 "▁" 开始一个新词。

    空串得 ["▁"]（开头补的那一个），不是 Hugging Face tokenizers 的 Metaspace 给的 []：
    这样 bpe_decode(bpe_encode("", m)) == ""，往返对空串也成立。
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if SPACE in text:
        raise ValueError(f"text must not contain {SPACE!r} (it stands for the space)")
    return re.findall(f"{SPACE}[^{SPACE}]*", SPACE + text.replace(" ", SPACE))
# --8<-- [end:pretokenize]


# --8<-- [start:train]
def count_pairs(words: dict) -> Counter:
    """相邻符号对的出现次数：每个词里的每一处都算，再乘这个词的词频。"""
    pairs = Counter()
    for symbols, freq in words.items():
        for pair in zip(symbols, symbols[1:]):
            pairs[pair] += freq
    return pairs


def merge_word(symbols: tuple, pair: tuple) -> tuple:
    """在一个词里从左到右合并所有不重叠的 pair，例如 (a, a, a) 合并 (a, a) 得 (aa, a)。"""
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def bpe_train(corpus: str, num_merges: int) -> list[tuple[str, str]]:
    """从语料学出至多 num_merges 条合并规则，按学到的先后排列。

    每一步合并出现次数最多的相邻符号对；次数相同时，取两个符号在词表里的编号
    （基本字符按码位排序在前，合并出的新符号按出现先后接在后面）字典序最小的那一对，
    这与 Hugging Face tokenizers 的 BpeTrainer 的规则相同。没有可合并的对时提前停止。
    """
    if not isinstance(corpus, str):
        raise TypeError(f"corpus must be a str, got {type(corpus).__name__}")
    if isinstance(num_merges, bool) or not isinstance(num_merges, int) or num_merges <= 0:
        raise ValueError(f"num_merges must be a positive int, got num_merges={num_merges!r}")
    lines = [line for line in corpus.splitlines() if line.strip()]
    if not lines:
        raise ValueError("corpus is empty: it has no non-blank line to learn merges from")
    words = Counter(tuple(w) for line in lines for w in pretokenize(line))  # {(符号, …): 词频}
    rank = {ch: i for i, ch in enumerate(sorted({ch for w in words for ch in w}))}
    merges = []
    for _ in range(num_merges):
        pairs = count_pairs(words)
        if not pairs:
            break  # 每个词都已经是一个符号
        best = max(pairs, key=lambda p: (pairs[p], -rank[p[0]], -rank[p[1]]))
        merges.append(best)
        rank.setdefault(best[0] + best[1], len(rank))
        words = Counter({merge_word(w, best): f for w, f in words.items()})
    return merges
# --8<-- [end:train]


# --8<-- [start:encode]
def bpe_encode(text: str, merges: list[tuple[str, str]]) -> list[str]:
    """按学到的顺序应用合并规则：每个词里反复合并「最早学到」的那一对，直到没有可合并的。"""
    priority = {pair: i for i, pair in enumerate(merges)}  # 越早学到，越先合并
    tokens = []
    for word in pretokenize(text):
        symbols = tuple(word)
        while len(symbols) > 1:
            pair = min(zip(symbols, symbols[1:]), key=lambda p: priority.get(p, len(priority)))
            if pair not in priority:
                break
            symbols = merge_word(symbols, pair)
        tokens.extend(symbols)
    return tokens


def bpe_decode(tokens: list[str]) -> str:
    """拼接、把 "▁" 换回空格、去掉开头补的那个空格：bpe_decode(bpe_encode(t, m)) == t。"""
    text = "".join(tokens)
    if not text.startswith(SPACE):
        raise ValueError(f"tokens must start with {SPACE!r} (as bpe_encode returns them), got {tokens[:3]}")
    return text[1:].replace(SPACE, " ")
# --8<-- [end:encode]


# --8<-- [start:vocab]
def bpe_vocab(corpus: str, merges: list[tuple[str, str]]) -> list[str]:
    """词表 = 基本字符（语料里出现的每个字符，按码位排序）+ 每条合并产生的新符号。"""
    base = sorted({ch for line in corpus.splitlines() if line.strip() for ch in SPACE + line.replace(" ", SPACE)})
    vocab = list(base)
    for a, b in merges:
        if a + b not in vocab:  # 两条不同的合并可能拼出同一个字符串，此时词表不增长
            vocab.append(a + b)
    return vocab
# --8<-- [end:vocab]
