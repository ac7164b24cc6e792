"""第 06 章练习的答案（见 answers_ch01.py 的说明）。"""

from collections import Counter, defaultdict

import torch


def _check_tokens(tokens, weight):
    if tokens.dtype != torch.long:
        raise TypeError(f"tokens must be torch.long, got {tokens.dtype}")
    if tokens.numel() and (tokens.min() < 0 or tokens.max() >= weight.shape[0]):
        raise ValueError(f"tokens out of range [0, {weight.shape[0]})")


def lookup_wrong_reshape(tokens, weight):
    _check_tokens(tokens, weight)
    batch, n = tokens.shape
    rows = weight[tokens.reshape(-1)]  # (batch·n, d)，按行展平
    return rows.view(n, batch, -1).transpose(0, 1)  # 还原时把 batch、n 的顺序弄反了


def lookup_one_hot_transposed(tokens, weight):
    _check_tokens(tokens, weight)
    one_hot = torch.nn.functional.one_hot(tokens, weight.shape[1]).to(weight.dtype)
    return one_hot @ weight.T


def lookup_float32(tokens, weight):
    _check_tokens(tokens, weight)
    return torch.nn.functional.one_hot(tokens, weight.shape[0]).float() @ weight.float()


def lookup_no_check(tokens, weight):
    return weight[tokens]


def lookup_index_select(tokens, weight):
    _check_tokens(tokens, weight)
    return weight.index_select(0, tokens.reshape(-1)).reshape(*tokens.shape, weight.shape[1])


def _check_words(words):
    for w, f in words.items():
        if not isinstance(f, int) or f < 1:
            raise ValueError(f"words: frequency of {w} must be a positive int, got {f}")


def count_ignores_freq(words):
    _check_words(words)
    return Counter(p for w in words for p in zip(w, w[1:]))


def count_once_per_word(words):
    _check_words(words)
    c = Counter()
    for w, f in words.items():
        for p in set(zip(w, w[1:])):
            c[p] += f
    return c


def count_skips_last(words):
    _check_words(words)
    c = Counter()
    for w, f in words.items():
        for i in range(len(w) - 2):  # 漏了最后一对
            c[(w[i], w[i + 1])] += f
    return c


def count_no_check(words):
    c = Counter()
    for w, f in words.items():
        for p in zip(w, w[1:]):
            c[p] += f
    return c


def count_defaultdict(words):
    if not isinstance(words, dict) or any(not isinstance(f, int) or f <= 0 for f in words.values()):
        raise ValueError("words must map words to positive int frequencies")
    out = defaultdict(int)
    for w, f in words.items():
        for i in range(len(w) - 1):
            out[w[i], w[i + 1]] += f
    return dict(out)


def _check_pair(pair):
    if not isinstance(pair, tuple) or len(pair) != 2:
        raise ValueError(f"pair must be two symbols, got {pair!r}")


def merge_first_only(symbols, pair):
    _check_pair(pair)
    for i in range(len(symbols) - 1):
        if (symbols[i], symbols[i + 1]) == pair:
            return symbols[:i] + (symbols[i] + symbols[i + 1],) + symbols[i + 2:]
    return tuple(symbols)


def merge_right_to_left(symbols, pair):
    _check_pair(pair)
    out, i = [], len(symbols) - 1
    while i >= 0:
        if i >= 1 and (symbols[i - 1], symbols[i]) == pair:
            out.append(symbols[i - 1] + symbols[i])
            i -= 2
        else:
            out.append(symbols[i])
            i -= 1
    return tuple(reversed(out))


def merge_returns_list(symbols, pair):
    _check_pair(pair)
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def merge_no_check(symbols, pair):
    return tuple(merge_returns_list(symbols, tuple(pair[:2])) if len(pair) >= 2 else symbols)


def merge_recursive(symbols, pair):
    if not isinstance(pair, tuple) or len(pair) != 2:
        raise ValueError(f"pair must be a 2-tuple, got pair={pair!r}")
    if len(symbols) < 2:
        return tuple(symbols)
    if (symbols[0], symbols[1]) == pair:
        return (symbols[0] + symbols[1],) + merge_recursive(symbols[2:], pair)
    return (symbols[0],) + merge_recursive(symbols[1:], pair)


def _step(words, tie="min", freq=True, merge=merge_recursive):
    c = Counter()
    for w, f in words.items():
        for p in zip(w, w[1:]):
            c[p] += f if freq else 1
    if not c:
        raise ValueError(f"words has nothing to merge: {len(words)} words")
    top = max(c.values())
    best = (min if tie == "min" else max)(p for p in c if c[p] == top)
    return best, {merge(w, best): f for w, f in words.items()}


def step_tie_max(words):
    return _step(words, tie="max")


def step_ignores_freq(words):
    return _step(words, freq=False)


def step_first_only(words):
    return _step(words, merge=merge_first_only)


def step_no_check(words):
    c = Counter()
    for w, f in words.items():
        for p in zip(w, w[1:]):
            c[p] += f
    best = max(sorted(c), key=lambda p: c[p]) if c else None
    return best, {merge_recursive(w, best) if best else w: f for w, f in words.items()}


def step_sorted(words):
    """写法不同：把全部对按 (−次数, 对) 排序取第一个。"""
    pairs = Counter()
    for w, f in words.items():
        pairs.update({p: f for p in []})
        for i in range(len(w) - 1):
            pairs[(w[i], w[i + 1])] += f
    if not pairs:
        raise ValueError("words: no adjacent pair left to merge")
    best = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    return best, {merge_recursive(w, best): f for w, f in words.items()}


WRONG = {
    "ch06.embedding_lookup": [("matches", lookup_wrong_reshape), ("matches", lookup_one_hot_transposed),
                              ("matches", lookup_float32), ("bad-tokens", lookup_no_check)],
    "ch06.count_pairs": [("matches", count_ignores_freq), ("matches", count_once_per_word), ("matches", count_skips_last),
                         ("bad-words", count_no_check)],
    "ch06.merge_word": [("matches", merge_first_only), ("overlap", merge_right_to_left), ("matches", merge_returns_list),
                        ("bad-pair", merge_no_check)],
    "ch06.bpe_merge_step": [("tie-break", step_tie_max), ("best-pair", step_ignores_freq),
                            ("best-pair", step_first_only), ("bad-words", step_no_check)],
}
RIGHT = {"ch06.embedding_lookup": [lookup_index_select], "ch06.count_pairs": [count_defaultdict],
         "ch06.merge_word": [merge_recursive], "ch06.bpe_merge_step": [step_sorted]}
