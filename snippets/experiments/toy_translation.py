"""实验：一个玩具翻译任务上的贪心、束搜索、长度惩罚与检查点平均（第 09 章，论文 §6.1）。

论文在 WMT 上用束宽 4、α = 0.6 的束搜索，并平均最后 5 个（big：20 个）检查点；这些设置在那里如何起作用，
这里无法重算。这个实验在一个有**真参考译文**的小任务上把它们逐个量一次，BLEU 由本章的 corpus_bleu 与
sacreBLEU 各算一遍：

    任务      合成语法的「英语」→「北欧式」翻译：源句 = 主语 动词 宾语 [介词短语] [副词] .，
              名词短语 = 限定词 形容词{0,2} 名词；目标语逐词换成另一套词，并改语序：形容词移到名词之后，
              副词紧跟主语，动词移到句末（SOV）。参考译文由规则唯一确定，是真正的参考，不是模型的输出。
    模型      读者的 Transformer（snippets/transformer.py：post-LN，三处权重共享，嵌入 ×√d），d = 64，
              4 个头，编码器、解码器各 2 层，d_ff = 128，dropout 0.1，标签平滑 0.1（§5.4）
    训练      Adam(0.9, 0.98, 1e−9)，学习率先线性预热再按步数的 −1/2 次方衰减（§5.3 公式的形状），
              每步从语法里抽一批新句子；最后 ckpt_last 步里每 ckpt_every 步存一个检查点
    评估      同一个测试集（另一个种子抽的 test_sentences 句；语法的句子数有限，测试句可能在训练流里出现，
              结果如实记下出现过的比例）上比较：
                greedy        最后一个检查点，贪心
                beam4         最后一个检查点，束宽 4，α = 0（不做长度归一化）
                beam4-lp      最后一个检查点，束宽 4，α = 0.6（论文的设置）
                avg-greedy    最后 k 个检查点的平均，贪心
                avg-beam4-lp  最后 k 个检查点的平均，束宽 4，α = 0.6
              每种方法记下本章的 BLEU、sacreBLEU、简短惩罚用的长度比 c/r、整句完全正确的比例，
              以及（检查点平均的）测试集上的交叉熵。

预设：tiny（测试用，几秒，结论没有意义）、quick（2 个种子，300 步，40 句，约 1 分钟）、full（8 个种子，
600 步，150 句，页面用它）、early（同 full，步数减半为 300，写 results/toy-translation-early.json）、long（前 3 个
种子，步数 3 倍为 1800，写 results/toy-translation-long.json：那里五种方法都到了上限，更多种子问不出新东西）。
early 与 long 回答「训练预算不同，读法会不会变」。3 个种子分不出的比较，8 个种子才有机会分出来。
运行用了多久、当时机器的负载，看结果文件的 provenance（页面表下的出处行也写出用时）。

运行：python -m snippets.experiments.toy_translation --preset full   （CPU，单线程）
"""

from __future__ import annotations

import statistics
import sys

import sacrebleu
import torch
from torch import nn
from tqdm import tqdm

from snippets.attention import padding_mask
from snippets.decoding import BeamStepper, average_checkpoints, beam_search, corpus_bleu, greedy_search
from snippets.experiments._cli import experiment_main
from snippets.transformer import Transformer

KIND = "toy-translation"
MODULE = "snippets.experiments.toy_translation"
SEED = 0

# ---------- 语法：源语词 → 目标语词 ----------
DETERMINERS = {"the": "de", "a": "en", "my": "min", "every": "hver"}
ADJECTIVES = {"small": "lille", "red": "rod", "old": "gammel", "happy": "glad", "quiet": "stille",
              "green": "gronn", "big": "stor", "cold": "kald"}
NOUNS = {"cat": "katt", "dog": "hund", "bird": "fugl", "house": "hus", "tree": "tre", "river": "elv",
         "book": "bok", "child": "barn", "garden": "hage", "teacher": "laerer", "window": "vindu", "boat": "bat"}
VERBS = {"sees": "ser", "likes": "liker", "finds": "finner", "paints": "maler", "follows": "folger",
         "visits": "besoker"}
PREPOSITIONS = {"near": "ved", "behind": "bak", "in": "i", "under": "unner"}
ADVERBS = {"today": "idag", "again": "igjen", "slowly": "sakte"}
LEXICON = {**DETERMINERS, **ADJECTIVES, **NOUNS, **VERBS, **PREPOSITIONS, **ADVERBS, ".": "."}
PAD, BOS, EOS = "<pad>", "<s>", "</s>"
VOCAB = [PAD, BOS, EOS] + sorted(set(LEXICON) | set(LEXICON.values()))   # 源语与目标语共用一个词表（§3.4 共享权重）
INDEX = {w: i for i, w in enumerate(VOCAB)}


def sample_pair(gen: torch.Generator) -> tuple[str, str]:
    """按语法抽一个句对：(源句, 参考译文)，词之间用空格分开。"""
    def pick(words: dict) -> str:
        keys = list(words)
        return keys[int(torch.randint(len(keys), (1,), generator=gen))]

    def noun_phrase() -> tuple[list[str], list[str]]:
        det, noun = pick(DETERMINERS), pick(NOUNS)
        adjs = [pick(ADJECTIVES) for _ in range(int(torch.randint(3, (1,), generator=gen)))]
        src = [det, *adjs, noun]
        tgt = [LEXICON[det], LEXICON[noun], *(LEXICON[a] for a in adjs)]    # 形容词移到名词之后
        return src, tgt

    (s_src, s_tgt), verb, (o_src, o_tgt) = noun_phrase(), pick(VERBS), noun_phrase()
    pp_src, pp_tgt, adv_src, adv_tgt = [], [], [], []
    if int(torch.randint(2, (1,), generator=gen)):
        prep, (np_src, np_tgt) = pick(PREPOSITIONS), noun_phrase()
        pp_src, pp_tgt = [prep, *np_src], [LEXICON[prep], *np_tgt]
    if int(torch.randint(2, (1,), generator=gen)):
        adv = pick(ADVERBS)
        adv_src, adv_tgt = [adv], [LEXICON[adv]]
    src = [*s_src, verb, *o_src, *pp_src, *adv_src, "."]
    tgt = [*s_tgt, *adv_tgt, *o_tgt, *pp_tgt, LEXICON[verb], "."]        # 副词跟主语，动词到句末
    return " ".join(src), " ".join(tgt)


def encode(sentences: list[str], add_eos: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """句子 → 词 id (batch, n)（右侧补 PAD）与各句长度 (batch,)。"""
    ids = [[INDEX[w] for w in s.split()] + ([INDEX[EOS]] if add_eos else []) for s in sentences]
    n = max(len(x) for x in ids)
    out = torch.full((len(ids), n), INDEX[PAD], dtype=torch.long)
    for i, x in enumerate(ids):
        out[i, :len(x)] = torch.tensor(x)
    return out, torch.tensor([len(x) for x in ids])


def detokenize(ids: list[int]) -> str:
    words = [VOCAB[i] for i in ids]
    if EOS in words:
        words = words[:words.index(EOS)]
    return " ".join(words)


MODEL = {"d_model": 64, "num_heads": 4, "num_layers": 2, "d_ff": 128, "dropout": 0.1, "max_len": 64}
PRESETS = {
    "tiny": {"seeds": [0], "steps": 6, "warmup_steps": 2, "batch_size": 8, "lr": 2e-3, "ckpt_every": 2,
             "ckpt_last": 6, "average_k": 3, "test_sentences": 6, "max_extra": 5},
    "quick": {"seeds": [0, 1], "steps": 300, "warmup_steps": 50, "batch_size": 32, "lr": 2e-3, "ckpt_every": 20,
              "ckpt_last": 100, "average_k": 5, "test_sentences": 40, "max_extra": 50},
    "full": {"seeds": [0, 1, 2, 3, 4, 5, 6, 7], "steps": 600, "warmup_steps": 100, "batch_size": 32, "lr": 2e-3,
             "ckpt_every": 20, "ckpt_last": 100, "average_k": 5, "test_sentences": 150, "max_extra": 50},
    # early：与 full 相同，只是步数减半；模型的分布还不够尖时，解码方式的差别才显出来
    "early": {"seeds": [0, 1, 2, 3, 4, 5, 6, 7], "steps": 300, "warmup_steps": 100, "batch_size": 32, "lr": 2e-3,
              "ckpt_every": 20, "ckpt_last": 100, "average_k": 5, "test_sentences": 150, "max_extra": 50},
    "long": {"seeds": [0, 1, 2], "steps": 1800, "warmup_steps": 100, "batch_size": 32, "lr": 2e-3,
             "ckpt_every": 20, "ckpt_last": 100, "average_k": 5, "test_sentences": 150, "max_extra": 50},
}
LONG_OUT = "toy-translation-long.json"
EARLY_OUT = "toy-translation-early.json"
METHODS = ["greedy", "beam4", "beam4-lp", "avg-greedy", "avg-beam4-lp"]
TEST_SEED = 10_000


def lr_factor(step: int, warmup: int) -> float:
    """§5.3 公式的形状：前 warmup 步线性升到 1，之后按 (warmup/step)^{1/2} 衰减（不降到 0，检查点之间仍有差别）。"""
    s = step + 1
    return min(s / warmup, (warmup / s) ** 0.5)


def build_model() -> Transformer:
    return Transformer(len(VOCAB), **MODEL)


def shift_right(tgt: torch.Tensor) -> torch.Tensor:
    bos = torch.full((tgt.shape[0], 1), INDEX[BOS], dtype=torch.long)
    return torch.cat([bos, tgt[:, :-1]], dim=1)


def batch_loss(model: Transformer, src_text: list[str], tgt_text: list[str], smoothing: float) -> torch.Tensor:
    src, src_len = encode(src_text, add_eos=False)
    tgt, _ = encode(tgt_text, add_eos=True)
    logits = model(src, shift_right(tgt), src_mask=padding_mask(src_len, src.shape[1]))   # (batch, m, V)
    return nn.functional.cross_entropy(logits.reshape(-1, len(VOCAB)), tgt.reshape(-1),
                                       ignore_index=INDEX[PAD], label_smoothing=smoothing)


@torch.no_grad()
def translate(model: Transformer, sentences: list[str], method: str, max_extra: int) -> list[str]:
    """逐句解码；最大输出长度 = 输入长度 + max_extra（§6.1：input length + 50）。"""
    model.eval()
    out = []
    for s in sentences:
        src, _ = encode([s], add_eos=False)                                 # (1, n)
        step = BeamStepper(model, src)
        max_len = min(src.shape[1] + max_extra, model.max_len - 1)
        if method.endswith("greedy"):
            ids = greedy_search(step, INDEX[BOS], INDEX[EOS], max_len=max_len)
        else:
            ids = beam_search(step, INDEX[BOS], INDEX[EOS], beam_size=4, max_len=max_len,
                              alpha=0.6 if method.endswith("-lp") else 0.0)
        out.append(detokenize(ids))
    return out


def score(hyps: list[str], refs: list[str]) -> dict:
    metric = sacrebleu.BLEU()                                               # 默认设置：13a、区分大小写、exp 平滑
    sb = metric.corpus_score(hyps, [refs])
    return {"bleu": corpus_bleu(hyps, refs), "sacrebleu": sb.score, "signature": str(metric.get_signature()),
            "length_ratio": sb.sys_len / sb.ref_len, "exact_match": sum(h == r for h, r in zip(hyps, refs)) / len(refs)}


def run_one(seed: int, cfg: dict, test: list[tuple[str, str]]) -> dict:
    torch.manual_seed(seed)
    model = build_model()
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"], betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg["warmup_steps"]))
    test_src = {s for s, _ in test}
    seen, checkpoints, losses = set(), [], []
    model.train()
    for step in range(1, cfg["steps"] + 1):
        pairs = [sample_pair(gen) for _ in range(cfg["batch_size"])]
        seen.update(s for s, _ in pairs if s in test_src)
        loss = batch_loss(model, [s for s, _ in pairs], [t for _, t in pairs], smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        if step > cfg["steps"] - cfg["ckpt_last"] and step % cfg["ckpt_every"] == 0:
            checkpoints.append({k: v.detach().clone() for k, v in model.state_dict().items()})
    last = build_model()
    last.load_state_dict(checkpoints[-1])
    averaged = build_model()
    averaged.load_state_dict(average_checkpoints(checkpoints[-cfg["average_k"]:]))
    srcs, refs = [s for s, _ in test], [t for _, t in test]
    out = {"seed": seed, "final_train_loss": statistics.fmean(losses[-20:]),
           "test_sentences_seen_in_training": len(seen) / len(test_src), "methods": {}, "test_loss": {},
           "hypotheses": {}}
    for name, model_ in (("last", last), ("averaged", averaged)):
        model_.eval()
        with torch.no_grad():
            out["test_loss"][name] = batch_loss(model_, srcs, refs, smoothing=0.0).item()
    for method in METHODS:
        hyps = translate(averaged if method.startswith("avg") else last, srcs, method, cfg["max_extra"])
        out["methods"][method] = score(hyps, refs)
        out["hypotheses"][method] = hyps                                    # 逐句保存：BLEU 差按句子配对重抽（sacreBLEU）
        if method == "beam4-lp":
            out["examples"] = [{"source": s, "reference": r, "hypothesis": h}
                               for s, r, h in list(zip(srcs, refs, hyps))[:3]]
    return out


def summarize(runs: list[dict]) -> list[dict]:
    rows = []
    for method in METHODS:
        bleu = [r["methods"][method]["bleu"] for r in runs]
        rows.append({"method": method, "n_seeds": len(runs), "bleu_mean": statistics.fmean(bleu),
                     "bleu_min": min(bleu), "bleu_max": max(bleu),
                     "sacrebleu_mean": statistics.fmean(r["methods"][method]["sacrebleu"] for r in runs),
                     "length_ratio_mean": statistics.fmean(r["methods"][method]["length_ratio"] for r in runs),
                     "exact_match_mean": statistics.fmean(r["methods"][method]["exact_match"] for r in runs)})
    return rows


def run(preset: str, cfg: dict) -> dict:
    gen = torch.Generator().manual_seed(TEST_SEED)
    test = [sample_pair(gen) for _ in range(cfg["test_sentences"])]
    runs = [run_one(seed, cfg, test) for seed in tqdm(cfg["seeds"], desc=KIND, file=sys.stderr, unit="seed")]
    return {"task": {"name": "synthetic-svo-to-sov", "vocab_size": len(VOCAB), **MODEL,
                     "label_smoothing": 0.1, "beam_size": 4, "alpha": 0.6},
            "test_set": {"sources": [s for s, _ in test], "references": [t for _, t in test]},
            "config": {**cfg, "optimizer": "Adam(betas=(0.9, 0.98), eps=1e-9)", "threads": 1},
            "runs": runs, "summary": summarize(runs)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    return experiment_main(MODULE, KIND, PRESETS, run, argv, seed=SEED, default_preset="quick",
                           outputs={"long": LONG_OUT, "early": EARLY_OUT})


if __name__ == "__main__":
    raise SystemExit(main())
