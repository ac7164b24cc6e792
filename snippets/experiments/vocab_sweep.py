"""实验：词表大小与序列长度，英文与中文；从零写的 BPE 与 tokenizers 库逐条对照（第 06 章）。

语料在 snippets/data/（本仓库自己写的 81 对中英平行句子，以及由 make_tiefree.py 生成的无并列语料）。

1. 对照：在三份语料上分别用 snippets.bpe.bpe_train 与 Hugging Face tokenizers 的 BpeTrainer
   （同样的 Metaspace 预切分）学同样多条合并，记录两份合并列表从第几条开始不同（没有不同记 null）、
   学习过程中有多少步的最高次数出现并列，以及每个句子编码再解码是否逐字符还原。
2. 扫描：每种语言学一次 max_merges 条合并；合并是按顺序学的，前 k 条就是「只学 k 条」的结果，
   所以用前 k 条编码每个句子，得到词表大小 = 基本字符数 + k 时的平均词元数。
   另用 tokenizers 的字节级 BPE（GPT-2 的做法：基本符号是 256 个字节）在同样多条合并下量一次。

运行：python -m snippets.experiments.vocab_sweep --preset full   （CPU，单线程）
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from tqdm import tqdm

from snippets.bpe import SPACE, bpe_decode, bpe_encode, bpe_train, bpe_vocab, count_pairs, merge_word, pretokenize
from snippets.experiments._cli import experiment_main

KIND = "vocab-sweep"
MODULE = "snippets.experiments.vocab_sweep"
SEED = 0
DATA = Path(__file__).resolve().parents[1] / "data"
CORPORA = {"en": "corpus_en.txt", "zh": "corpus_zh.txt", "tiefree": "tiefree_en.txt"}
TIEFREE_MERGES = 50  # 与 snippets/data/make_tiefree.py 相同：tiefree_en.txt 的前 50 次合并没有并列

PRESETS = {
    "tiny": {"merge_grid": [0, 20, 40], "agree_merges": {"en": 40, "zh": 40, "tiefree": TIEFREE_MERGES}},
    "quick": {"merge_grid": [0, 50, 100, 200, 400],
              "agree_merges": {"en": 400, "zh": 400, "tiefree": TIEFREE_MERGES}},
    "full": {"merge_grid": [0, 25, 50, 100, 200, 400, 800],
             "agree_merges": {"en": 1600, "zh": 1600, "tiefree": TIEFREE_MERGES}},
}


def read_corpus(name: str) -> str:
    return (DATA / CORPORA[name]).read_text(encoding="utf-8")


def sentences(corpus: str) -> list[str]:
    return [line for line in corpus.splitlines() if line.strip()]


def library_bpe(corpus: str, num_merges: int, byte_level: bool = False) -> tuple[list[tuple[str, str]], Tokenizer]:
    """tokenizers 库的 BPE：Metaspace 预切分（与 snippets.bpe 相同），或 GPT-2 的字节级预切分。"""
    tok = Tokenizer(models.BPE())
    if byte_level:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
        base = len(pre_tokenizers.ByteLevel.alphabet())  # 256 个字节
        trainer = trainers.BpeTrainer(vocab_size=base + num_merges, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    else:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always", split=True)
        base = len(bpe_vocab(corpus, []))
        trainer = trainers.BpeTrainer(vocab_size=base + num_merges, show_progress=False)
    tok.train_from_iterator(sentences(corpus), trainer)
    merges = [tuple(m) for m in json.loads(tok.to_str())["model"]["merges"]]
    return merges, tok


def tie_steps(corpus: str, merges: list[tuple[str, str]]) -> list[int]:
    """按 merges 重放训练：返回最高次数出现并列的那些步（从 0 数）。"""
    words = Counter(tuple(w) for line in sentences(corpus) for w in pretokenize(line))
    ties = []
    for step, pair in enumerate(merges):
        counts = count_pairs(words)
        top = max(counts.values())
        if sum(1 for c in counts.values() if c == top) > 1:
            ties.append(step)
        assert counts[pair] == top, f"step {step}: {pair} is not a most frequent pair"
        words = Counter({merge_word(w, pair): f for w, f in words.items()})
    return ties


def agreement(name: str, num_merges: int) -> dict:
    corpus = read_corpus(name)
    ours = bpe_train(corpus, num_merges)
    theirs, tok = library_bpe(corpus, num_merges)
    first_diff = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
    if first_diff is None and len(ours) != len(theirs):
        first_diff = min(len(ours), len(theirs))
    lines = sentences(corpus)
    same_tokens = sum(bpe_encode(s, ours) == tok.encode(s).tokens for s in lines)
    vocab = bpe_vocab(corpus, ours)
    ties = tie_steps(corpus, ours)
    return {"corpus": name, "num_merges": num_merges, "ours": len(ours), "library": len(theirs),
            "first_difference": first_diff, "tie_steps": len(ties),
            "first_tie": ties[0] if ties else None,
            "base_size": len(bpe_vocab(corpus, [])), "vocab_size": len(vocab),
            "sentences": len(lines), "same_tokens": same_tokens,
            "round_trip": sum(bpe_decode(bpe_encode(s, ours)) == s for s in lines)}


def sweep(lang: str, grid: list[int]) -> dict:
    corpus = read_corpus(lang)
    lines = sentences(corpus)
    merges = bpe_train(corpus, max(grid)) if max(grid) > 0 else []
    base = len(bpe_vocab(corpus, []))
    points = []
    for k in grid:
        lengths = [len(bpe_encode(s, merges[:k])) for s in lines]
        byte_tok = library_bpe(corpus, k, byte_level=True)[1]
        byte_lengths = [len(byte_tok.encode(s).tokens) for s in lines]
        points.append({"merges": len(merges[:k]), "vocab_size": len(bpe_vocab(corpus, merges[:k])),
                       "tokens_mean": statistics.fmean(lengths),
                       "byte_level_vocab_size": 256 + k, "byte_level_tokens_mean": statistics.fmean(byte_lengths)})
    return {"lang": lang, "sentences": len(lines), "base_size": base, "learned_merges": len(merges),
            "chars_mean": statistics.fmean(len(s) for s in lines),
            "utf8_bytes_mean": statistics.fmean(len(s.encode("utf-8")) for s in lines),
            "words_mean": statistics.fmean(len(s.split()) for s in lines),
            "points": points}


def run(preset: str, cfg: dict) -> dict:
    jobs = [("agree", n) for n in CORPORA] + [("sweep", lang) for lang in ("en", "zh")]
    agree, sweeps = [], []
    for what, name in tqdm(jobs, desc=KIND, file=sys.stderr, unit="job"):
        if what == "agree":
            agree.append(agreement(name, cfg["agree_merges"][name]))
        else:
            sweeps.append(sweep(name, cfg["merge_grid"]))
    return {"config": {**cfg, "corpora": dict(CORPORA), "tokenizers_pre_tokenizer": "Metaspace(always, split)"},
            "agreement": agree, "sweeps": sweeps}


def main(argv=None) -> int:
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, default_preset="quick")


if __name__ == "__main__":
    raise SystemExit(main())
