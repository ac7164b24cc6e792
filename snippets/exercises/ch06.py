"""第 06 章的练习：嵌入查表、BPE 的相邻符号对计数、合并一个词、一步合并。
参考答案：snippets/embedding.py、snippets/bpe.py。"""

from __future__ import annotations

from collections import Counter

import torch

from snippets import bpe, embedding
from snippets.exercises.core import Case, Exercise, Failure, Property, compare, matches_reference, raises, randn, register

DERIV = "06-embeddings-tokens/derivation.md"
CODE = ("06-embeddings-tokens/code.md", "code")
ALPHABET = "abcde"


# --------------------------------------------------------------------------- embedding_lookup
def _ref_lookup(tokens, weight):
    if not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.long:
        raise TypeError(f"tokens must be a torch.long tensor, got {getattr(tokens, 'dtype', type(tokens).__name__)}")
    if tokens.numel() and (tokens.min() < 0 or tokens.max() >= weight.shape[0]):
        raise ValueError(f"tokens must lie in [0, {weight.shape[0]}): tokens {tuple(tokens.shape)}, weight {tuple(weight.shape)}")
    return embedding.one_hot_lookup(tokens, weight)


def _make_lookup(rng, batch, n, vocab, d, dtype):
    return Case((torch.randint(vocab, (batch, n), generator=rng), randn(rng, vocab, d, dtype=dtype)))


def _make_bad_tokens(rng, which):
    weight = randn(rng, 5, 3)
    tokens = [torch.tensor([[0, 5]]), torch.tensor([[0.0, 1.0]])][which]
    return Case((tokens, weight), note=["id 5 超出词表 [0, 5)", "`tokens` 是浮点张量"][which])


register(Exercise(
    id="ch06.embedding_lookup", questions=("6.1",), name="embedding_lookup", title="嵌入查表",
    signature="embedding_lookup(tokens, weight)",
    statement="嵌入层就是查表：第 b 条序列第 t 个词元的向量是 weight 的第 `tokens[b, t]` 行"
              "（等价于独热向量乘嵌入矩阵）。",
    shapes="`tokens` (batch, n) torch.long，取值在 [0, |V|)；weight (|V|, d) → (batch, n, d)。",
    bad_input="`tokens` 不是 torch.long：TypeError；有 id 超出 [0, |V|)：ValueError。报错信息写出 `tokens`。",
    reference=_ref_lookup, solution=CODE,
    stub='''def embedding_lookup(tokens, weight):
    """tokens (batch, n) long，weight (|V|, d) → (batch, n, d)：第 tokens[b, t] 行。
    tokens 不是 long：TypeError；id 超出 [0, |V|)：ValueError（写出 tokens）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "第 `tokens[b, t]` 行，形状 (batch, n, d)",
                 "weight 的一行是一个词元的向量：`weight[tokens]`（或 `one_hot(tokens) @ weight`），不是列。", DERIV, "lookup",
                 _make_lookup, matches_reference(),
                 dims={"batch": [1, 2], "n": [1, 2, 4], "vocab": [1, 2, 3, 7], "d": [1, 2, 3, 5],
                       "dtype": [torch.float64, torch.float32]}),
        Property("bad-tokens", "越界的 id 或浮点 `tokens`：ValueError/TypeError，并写出参数名 `tokens`",
                 "查表前检查 dtype 与 `0 ≤ tokens < |V|`；IndexError 与 RuntimeError 都不算。", DERIV, "lookup",
                 _make_bad_tokens, raises("tokens"), dims={"which": [0, 1]}),
    ],
))


# --------------------------------------------------------------------------- count_pairs
def _check_words(words):
    if not isinstance(words, dict):
        raise TypeError(f"words must be a dict {{(symbol, ...): frequency}}, got {type(words).__name__}")
    for word, freq in words.items():
        if not isinstance(word, tuple) or isinstance(freq, bool) or not isinstance(freq, int) or freq < 1:
            raise ValueError(f"words must map tuples of symbols to positive int frequencies, got {word!r}: {freq!r}")


def _ref_count(words):
    _check_words(words)
    return bpe.count_pairs(words)


def _words(rng, n_words, length, merged):
    out = {}
    for i in range(n_words):
        size = int(torch.randint(1, length + 1, (1,), generator=rng))
        chars = [ALPHABET[int(c)] for c in torch.randint(3, (size,), generator=rng)]  # 只用 a、b、c：常有重复的对
        word = tuple(chars)
        if merged and len(word) >= 2:
            word = (word[0] + word[1],) + word[2:]  # 有的符号已经是合并出来的
        out[word] = out.get(word, 0) + int(torch.randint(1, 6, (1,), generator=rng))
    return out


def _make_words(rng, n_words, length, merged):
    return Case((_words(rng, n_words, length, merged),))


def _as_counts(got, expected, what="输出"):
    if not isinstance(got, dict):
        raise Failure(f"{what}应该是 dict 或 Counter（相邻符号对 → 次数），得到 {type(got).__name__}")
    got = {k: v for k, v in got.items() if v}
    if got != dict(expected):
        wrong = sorted(set(got) | set(expected), key=str)
        diffs = [f"{p}: 期望 {expected.get(p, 0)}，得到 {got.get(p, 0)}" for p in wrong if expected.get(p, 0) != got.get(p, 0)]
        raise Failure(f"{what}不对（{len(diffs)} 个对的次数不同）：\n" + "\n".join(diffs[:6]))


def _check_count(fn, case, reference):
    _as_counts(fn(*case.args), reference(*case.args))


WORD_DIMS = {"n_words": [1, 2, 3, 5], "length": [1, 2, 3, 5, 7], "merged": [False, True]}

register(Exercise(
    id="ch06.count_pairs", questions=("6.4",), name="count_pairs", title="数相邻符号对",
    signature="count_pairs(words)",
    statement="words 把每个词（符号的元组）映射到它的词频。数出每个相邻符号对出现的总次数：一个词里的每一处都算"
              "（重叠的也算，(a, a, a) 里的 (a, a) 算两次），再乘这个词的词频。",
    shapes="words: dict[tuple[str, ...], int]（词频为正整数）→ dict 或 Counter：(左符号, 右符号) → 次数。",
    bad_input="words 不是 dict：TypeError；词频不是正整数：ValueError。报错信息写出 words。",
    reference=_ref_count, solution=CODE,
    stub='''def count_pairs(words):
    """words {(符号, …): 词频} → {(左, 右): 总次数}：每个词里的每一处都算，再乘词频。
    words 不是 dict：TypeError；词频不是正整数：ValueError（写出 words）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "每一处相邻对都算，并乘以词频",
                 "zip(symbols, symbols[1:]) 给出一个词里的全部相邻对（包括最后一对、包括重复的）；每一处加 freq，而不是加 1。",
                 DERIV, "bpe", _make_words, _check_count, dims=WORD_DIMS),
        Property("bad-words", "词频为 0 或负数：ValueError，并写出参数名 words",
                 "先检查每个词频是正整数。", DERIV, "bpe",
                 lambda rng: Case(({("a", "b"): 0},), note="词频为 0"), raises("words")),
    ],
))


# --------------------------------------------------------------------------- merge_word
def _ref_merge(symbols, pair):
    if not isinstance(pair, tuple) or len(pair) != 2:
        raise ValueError(f"pair must be a tuple of two symbols, got pair {pair!r}")
    return bpe.merge_word(tuple(symbols), pair)


def _make_merge(rng, length, repeat):
    chars = [ALPHABET[int(c)] for c in torch.randint(2, (length,), generator=rng)]  # 只用 a、b：常有连续的相同对
    symbols = tuple(chars)
    if repeat:
        symbols = ("a",) * length  # (a, a, a, …)：重叠的对
    pair = ("a", "a") if repeat else (symbols[0], symbols[1]) if length >= 2 else ("a", "b")
    return Case((symbols, pair), note="一串相同的符号" if repeat else "")


def _check_merge(fn, case, reference):
    got, expected = fn(*case.args), reference(*case.args)
    if not isinstance(got, tuple):
        raise Failure(f"应该返回 tuple（词是符号的元组，要能当 dict 的键），得到 {type(got).__name__} {got!r}")
    compare(got, expected)


register(Exercise(
    id="ch06.merge_word", questions=("6.4",), name="merge_word", title="在一个词里合并一个符号对",
    signature="merge_word(symbols, pair)",
    statement="在一个词（符号的元组）里从左到右合并所有不重叠的 pair：例如 (a, a, a) 合并 (a, a) 得 (aa, a)，"
              "(a, b, a, b) 合并 (a, b) 得 (ab, ab)。返回新的元组。",
    shapes="symbols: tuple[str, ...]，pair: (str, str) → tuple[str, ...]。",
    bad_input="pair 不是两个符号的元组：ValueError，报错信息写出 pair。",
    reference=_ref_merge, solution=CODE,
    stub='''def merge_word(symbols, pair):
    """从左到右合并所有不重叠的 pair：(a, a, a) 合并 (a, a) → (aa, a)。返回 tuple。
    pair 不是两个符号的元组：ValueError（写出 pair）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("matches", "合并每一处（不只第一处），返回 tuple",
                 "一个词里可能有好几处 pair：一直扫到词尾。", DERIV, "bpe",
                 _make_merge, _check_merge, dims={"length": [1, 2, 3, 4, 6, 8], "repeat": [False]}),
        Property("overlap", "重叠时从左到右、不重叠：(a, a, a) → (aa, a)",
                 "合并了 i、i+1 两个符号之后，下一次从 i+2 开始看；不能让一个符号参加两次合并，也不能从右往左扫。",
                 DERIV, "bpe", _make_merge, _check_merge, dims={"length": [3, 4, 5, 7], "repeat": [True]}),
        Property("bad-pair", "pair 不是两个符号：ValueError，并写出参数名 pair",
                 "检查 len(pair) == 2。", DERIV, "bpe",
                 lambda rng: Case((("a", "b", "c"), ("a", "b", "c")), note="pair 有三个符号"), raises("pair")),
    ],
))


# --------------------------------------------------------------------------- bpe_merge_step
def _ref_step(words):
    _check_words(words)
    pairs = bpe.count_pairs(words)
    if not pairs:
        raise ValueError(f"words has no adjacent pair to merge: every word is one symbol ({len(words)} words)")
    rank = {s: i for i, s in enumerate(sorted({s for w in words for s in w}))}
    best = max(pairs, key=lambda p: (pairs[p], -rank[p[0]], -rank[p[1]]))  # bpe_train 的规则
    merged = Counter()
    for w, f in words.items():
        merged[bpe.merge_word(w, best)] += f
    return best, dict(merged)


def _make_step(rng, n_words, length, merged):
    words = _words(rng, n_words, length, merged)
    if all(len(w) < 2 for w in words):
        words[("a", "b")] = 1
    return Case((words,))


def _make_tie(rng, length, freq):
    letters = [ALPHABET[int(i)] for i in torch.randperm(len(ALPHABET), generator=rng)[:length]]
    return Case(({tuple(letters): freq},), note="每个相邻对都只出现一次：全是平局")


def _check_step(fn, case, reference):
    (words,) = case.args
    expected_pair, expected_words = reference(words)
    got = fn(dict(words))
    if not isinstance(got, tuple) or len(got) != 2:
        raise Failure(f"应该返回 (pair, new_words) 两个值，得到 {type(got).__name__}")
    pair, new_words = got
    if pair != expected_pair:
        counts = bpe.count_pairs(words)
        raise Failure(f"选的对不对：期望 {expected_pair}（出现 {counts[expected_pair]} 次），"
                      f"得到 {pair}（出现 {counts.get(pair, 0)} 次）")
    _as_counts(new_words, expected_words, what="合并后的 words ")


register(Exercise(
    id="ch06.bpe_merge_step", questions=("6.4", "6.10"), name="bpe_merge_step", title="BPE 的一步合并",
    signature="bpe_merge_step(words)",
    statement="BPE 训练的一步：数出全部相邻符号对（乘词频），选出现次数最多的一对；次数相同时，取按字符串比较最小的那一对"
              "（先比左符号，再比右符号）。在每个词里合并它，返回 (选中的对, 新的 words)，词频不变。",
    shapes="words: dict[tuple[str, ...], int] → (pair: (str, str), new_words: dict[tuple[str, ...], int])。",
    bad_input="每个词都只有一个符号（没有可合并的对）：ValueError，报错信息写出 words。",
    reference=_ref_step, solution=CODE,
    stub='''def bpe_merge_step(words):
    """选出现次数最多的相邻对（次数相同取字符串比较最小的），在每个词里合并它。
    words {(符号, …): 词频} → (pair, new_words)。没有可合并的对：ValueError（写出 words）。"""
    raise NotImplementedError("在这里写你的实现")
''',
    properties=[
        Property("best-pair", "选中的是出现次数最多的对（乘了词频）；新 words 在每个词里合并了它",
                 "max 的键是 (次数, 反过来的字符串顺序)：次数相同时要最小的对；合并要用上一题的 merge_word，词频原样保留。",
                 DERIV, "bpe", _make_step, _check_step, dims=WORD_DIMS),
        Property("tie-break", "次数相同的几对：取按字符串比较最小的那一对",
                 "平局时要确定的规则：min(平局的对)，先比左符号、再比右符号；不能取最大的，也不能取「先遇到的」。",
                 DERIV, "bpe", _make_tie, _check_step, dims={"length": [3, 4, 5], "freq": [1, 2, 7]}, tries=6),
        Property("bad-words", "没有可合并的对：ValueError，并写出参数名 words",
                 "count_pairs 为空时报错，而不是 max() 抛出的「empty sequence」。", DERIV, "bpe",
                 lambda rng: Case(({("ab",): 3, ("c",): 1},), note="每个词只有一个符号"), raises("words")),
    ],
))
