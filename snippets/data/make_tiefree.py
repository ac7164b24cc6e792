"""生成 tiefree_en.txt：把 corpus_en.txt 里的每个词型按随机次数重复、打乱，每行 12 个词。

目的：得到一个「前 TIEFREE_MERGES 次合并都没有并列」的语料，在它上面任何正确的 BPE 实现，
不论并列时怎样取舍，都必须学出同样的合并、同样的顺序（tests/ch06 检查这一性质）。
运行：python snippets/data/make_tiefree.py（输出确定，与提交的文件逐字节相同）。
"""

import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED, MAX_REPEAT, PER_LINE = 1, 40, 12
TIEFREE_MERGES = 50


def make_tiefree_text() -> str:
    text = (HERE / "corpus_en.txt").read_text(encoding="utf-8")
    types = sorted({w for line in text.splitlines() for w in line.split()})
    rng = random.Random(SEED)
    words = [w for w in types for _ in range(rng.randint(1, MAX_REPEAT))]
    rng.shuffle(words)
    return "".join(" ".join(words[i:i + PER_LINE]) + "\n" for i in range(0, len(words), PER_LINE))


if __name__ == "__main__":
    (HERE / "tiefree_en.txt").write_text(make_tiefree_text(), encoding="utf-8")
