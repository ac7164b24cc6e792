"""Chapter 06: BPE from scratch (snippets/bpe.py) against the tokenizers library, round trips,
the merge count, bad input, and each module's sections copied out and run in file order."""

from __future__ import annotations

import json
import random
import runpy

import pytest

from snippets.bpe import SPACE, bpe_decode, bpe_encode, bpe_train, bpe_vocab, pretokenize
from snippets.experiments.vocab_sweep import DATA, TIEFREE_MERGES, library_bpe, read_corpus, sentences, tie_steps


@pytest.fixture(scope="module")
def corpora() -> dict[str, str]:
    return {name: read_corpus(name) for name in ("en", "zh", "tiefree")}


@pytest.mark.claim("ch06-bpe-errors", paper="§5.1",
                   text="bpe_train 对空语料、非正的合并数、非字符串输入给出写明参数的错误；文本里出现 ▁ 时 pretokenize 报错")
@pytest.mark.parametrize("call, exc, words", [
    (lambda: bpe_train("", 10), ValueError, "corpus is empty"),
    (lambda: bpe_train(" \n\n  ", 10), ValueError, "corpus is empty"),
    (lambda: bpe_train("low lower", 0), ValueError, "num_merges must be a positive int"),
    (lambda: bpe_train("low lower", -3), ValueError, "num_merges=-3"),
    (lambda: bpe_train("low lower", 2.0), ValueError, "num_merges=2.0"),
    (lambda: bpe_train("low lower", True), ValueError, "num_merges=True"),
    (lambda: bpe_train(["low"], 5), TypeError, "corpus must be a str"),
    (lambda: pretokenize(f"a{SPACE}b"), ValueError, "must not contain"),
    (lambda: bpe_decode(["ab"]), ValueError, "must start with"),
])
def test_bad_input_is_named(call, exc, words):
    with pytest.raises(exc, match=words):
        call()


@pytest.mark.claim("ch06-bpe-round-trip", paper="§5.1",
                   text="编码再解码逐字符还原：语料的每一句，以及含多个空格、首尾空格、换行、没见过的字符的随机字符串")
def test_round_trip_is_exact(corpora):
    merges = bpe_train(corpora["en"] + "\n" + corpora["zh"], 300)
    texts = sentences(corpora["en"]) + sentences(corpora["zh"])
    rng = random.Random(0)
    alphabet = "ab cé中文 \n\t!"
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(300)]
    texts += ["", " ", "  leading", "trailing  ", "x  y   z", "Ω≈ç√∫"]
    for text in texts:
        tokens = bpe_encode(text, merges)
        assert bpe_decode(tokens) == text
        assert all(tok.count(SPACE) <= 1 and (SPACE not in tok or tok.startswith(SPACE)) for tok in tokens)


@pytest.mark.claim("ch06-bpe-library-tiefree", paper="§5.1",
                   text="在无并列的语料上（前 50 次合并每一步的最高次数都唯一），从零写的 BPE 与 tokenizers 的 BpeTrainer 学出同样的合并、同样的顺序，每句编码相同")
def test_same_merges_as_the_library_on_the_tie_free_corpus(corpora):
    made = runpy.run_path(str(DATA / "make_tiefree.py"))
    assert made["make_tiefree_text"]() == corpora["tiefree"]             # 提交的文件就是生成脚本的输出
    assert made["TIEFREE_MERGES"] == TIEFREE_MERGES
    ours = bpe_train(corpora["tiefree"], TIEFREE_MERGES)
    assert tie_steps(corpora["tiefree"], ours) == []
    theirs, tok = library_bpe(corpora["tiefree"], TIEFREE_MERGES)
    assert ours == theirs and len(ours) == TIEFREE_MERGES
    for s in sentences(corpora["tiefree"])[:200]:
        assert bpe_encode(s, ours) == tok.encode(s).tokens


@pytest.mark.claim("ch06-bpe-library-ties", paper="§5.1",
                   text="在有并列的中英文语料上（英文第 0 步就并列），因为并列时按同一规则取舍（符号编号的字典序），前 400 条合并与 tokenizers 也逐条相同")
def test_same_merges_as_the_library_with_ties(corpora):
    for name in ("en", "zh"):
        ours = bpe_train(corpora[name], 400)
        theirs, tok = library_bpe(corpora[name], 400)
        assert tie_steps(corpora[name], ours[:10])                        # 前 10 步里就有并列
        assert ours == theirs
        assert all(bpe_encode(s, ours) == tok.encode(s).tokens for s in sentences(corpora[name]))


@pytest.mark.claim("ch06-merges-count", paper="§5.1",
                   text="合并次数 = 词表大小 − 基本符号数 − 特殊词元数：从零写的与 tokenizers 的词表都满足（本章语料上每次合并都产生新符号）")
def test_merge_count_is_vocab_minus_base(corpora):
    for name in ("en", "zh"):
        base = len(bpe_vocab(corpora[name], []))
        merges = bpe_train(corpora[name], 200)
        assert len(bpe_vocab(corpora[name], merges)) == base + len(merges) == base + 200
        _, tok = library_bpe(corpora[name], 200)
        assert tok.get_vocab_size() == base + 200
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always", split=True)
    base = len(bpe_vocab(corpora["en"], []))
    tok.train_from_iterator(sentences(corpora["en"]), trainers.BpeTrainer(
        vocab_size=base + 100, special_tokens=["<pad>", "<s>", "</s>"], show_progress=False))
    merges = json.loads(tok.to_str())["model"]["merges"]
    assert len(merges) == tok.get_vocab_size() - base - 3 and tok.get_vocab_size() == base + 100


def test_pretokenize_matches_the_library_metaspace(corpora):
    from tokenizers import pre_tokenizers
    meta = pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always", split=True)
    for s in sentences(corpora["en"])[:20] + sentences(corpora["zh"])[:20]:
        assert pretokenize(s) == [w for w, _ in meta.pre_tokenize_str(s)]
