"""实验：词表大小与序列长度，英文与中文；从零写的 BPE 与 tokenizers 库逐条对照（第 06 章）。

语料在 snippets/data/（本仓库自己写的 81 对中英平行句子，以及由 make_tiefree.py 生成的无并列语料）。

1. 对照：在三份语料上分别用 snippets.bpe.bpe_train 与 Hugging Face tokenizers 的 BpeTrainer
   （同样的 Metaspace 预切分）学同样多条合并，记录两份合并列表从第几条开始不同（没有不同记 null）、
   学习过程中有多少步的最高次数出现并列，以及每个句子编码再解码是否逐字符还原。
2. 扫描：把每种语言的句子分成训练部分与留出部分（第 0、4、8……句留出，共 21 句；其余 60 句训练），
   只在训练部分上学一次 max_merges 条合并；合并是按顺序学的，前 k 条就是「只学 k 条」的结果，
   所以用前 k 条编码每个句子，得到词表大小 = 基本字符数 + k 时的平均词元数，留出句子（主要读数）与
   训练句子（样本内，对照）分开记。在训练句子上，每条合并按构造至少减少一个词元，所以样本内的
   下降不说明什么；留出句子上下降多少才是测量。
   另用 tokenizers 的字节级 BPE（GPT-2 的做法：基本符号是 256 个字节）在同样的训练句子、同样多条合并下量一次。

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
HELDOUT_EVERY = 4    # 扫描时第 0、4、8……句留出，不参与学合并

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


def split(lines: list[str]) -> tuple[list[str], list[str]]:
    """(训练句子, 留出句子)：下标是 HELDOUT_EVERY 的倍数的句子留出。"""
    return ([s for i, s in enumerate(lines) if i % HELDOUT_EVERY],
            [s for i, s in enumerate(lines) if i % HELDOUT_EVERY == 0])


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
    """合并只在训练句子上学；tokens_mean 是留出句子的每句平均词元数，train_tokens_mean 是训练句子的。"""
    lines = sentences(read_corpus(lang))
    train, held = split(lines)
    corpus = "\n".join(train)
    merges = bpe_train(corpus, max(grid)) if max(grid) > 0 else []
    base = len(bpe_vocab(corpus, []))
    points = []
    for k in grid:
        byte_tok = library_bpe(corpus, k, byte_level=True)[1]
        points.append({"merges": len(merges[:k]), "vocab_size": len(bpe_vocab(corpus, merges[:k])),
                       "tokens_mean": statistics.fmean(len(bpe_encode(s, merges[:k])) for s in held),
                       "train_tokens_mean": statistics.fmean(len(bpe_encode(s, merges[:k])) for s in train),
                       "byte_level_vocab_size": 256 + k,
                       "byte_level_tokens_mean": statistics.fmean(len(byte_tok.encode(s).tokens) for s in held),
                       "byte_level_train_tokens_mean": statistics.fmean(len(byte_tok.encode(s).tokens)
                                                                        for s in train)})
    seen = bpe_vocab(corpus, [])                                           # 训练句子里出现过的字符（含「▁」）
    unseen = [ch for s in held for w in pretokenize(s) for ch in w if ch not in seen]
    return {"lang": lang, "sentences": len(lines), "train_sentences": len(train), "heldout_sentences": len(held),
            "base_size": base, "learned_merges": len(merges),
            "heldout_unseen_chars": len(set(unseen)), "heldout_unseen_occurrences": len(unseen),
            "chars_mean": statistics.fmean(len(s) for s in held),                  # 以下三项：留出句子
            "utf8_bytes_mean": statistics.fmean(len(s.encode("utf-8")) for s in held),
            "words_mean": statistics.fmean(len(s.split()) for s in held),
            "points": points}


def run(preset: str, cfg: dict) -> dict:
    jobs = [("agree", n) for n in CORPORA] + [("sweep", lang) for lang in ("en", "zh")]
    agree, sweeps = [], []
    for what, name in tqdm(jobs, desc=KIND, file=sys.stderr, unit="job"):
        if what == "agree":
            agree.append(agreement(name, cfg["agree_merges"][name]))
        else:
            sweeps.append(sweep(name, cfg["merge_grid"]))
    return {"config": {**cfg, "corpora": dict(CORPORA), "tokenizers_pre_tokenizer": "Metaspace(always, split)",
                       "heldout_every": HELDOUT_EVERY},
            "agreement": agree, "sweeps": sweeps}


def main(argv=None) -> int:
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, default_preset="quick")


if __name__ == "__main__":
    raise SystemExit(main())
