"""Chapter 06: embeddings as a lookup, three-way weight tying (what is shared, what it saves, where
the gradient goes), and the scale of the tied matrix against the sinusoidal positional encoding."""

from __future__ import annotations

import math

import pytest
import torch

from snippets.embedding import embedding_to_pe_ratio, one_hot_lookup, shared_parameter_groups
from snippets.transformer import (TokenEmbedding, Transformer, count_parameters, sinusoidal_positional_encoding,
                                  transformer_param_count)
from tests.support.pages import assert_states, chapter
from tests.support.reference import F64, gen, rand

CH06 = chapter("06")
TRIO = ["src_embed.weight", "tgt_embed.weight", "output_projection.weight"]


def small(tie: bool = True, vocab: int = 50, d: int = 16) -> Transformer:
    torch.manual_seed(0)
    return Transformer(vocab, d_model=d, num_heads=2, num_layers=1, d_ff=32, dropout=0.0, tie_weights=tie)


@pytest.mark.claim("ch06-lookup-one-hot", paper="§3.4",
                   text="查表等于独热矩阵乘嵌入矩阵：前向逐元素相等，梯度只落在被查到的行上，每行的梯度是该词出现处梯度之和")
def test_lookup_is_one_hot_times_matrix():
    weight = rand(40, 8, seed=1).requires_grad_()
    tokens = torch.tensor([[3, 7, 3, 0], [39, 7, 7, 1]])
    by_index = weight[tokens]                                    # (2, 4, 8)
    by_one_hot = one_hot_lookup(tokens, weight)
    assert torch.equal(by_index, by_one_hot)
    emb = TokenEmbedding(40, 8, scale_embedding=False).double()
    with torch.no_grad():
        emb.weight.copy_(weight)
    assert torch.equal(emb(tokens), by_index)
    g = rand(2, 4, 8, seed=2)
    (grad,) = torch.autograd.grad((by_one_hot * g).sum(), weight)
    touched = sorted(set(tokens.flatten().tolist()))
    assert torch.count_nonzero(grad.abs().sum(-1)).item() == len(touched)
    assert torch.allclose(grad[7], g[0, 1] + g[1, 1] + g[1, 2])   # 词 7 出现三次：梯度相加
    with pytest.raises(TypeError, match="torch.long"):
        one_hot_lookup(tokens.int(), weight)


@pytest.mark.claim("ch06-embedding-share", paper="§3.4, §5.1",
                   text="base 模型、共享词表 37000：共享嵌入 18,944,000 个参数，占 63,082,496 的 30.0%；不共享时三份共 56,832,000，占 100,970,496 的 56.3%；EN-FR 的 32000 词表是 16,384,000（数的是 meta 设备上真的 Transformer）")
def test_embedding_share_of_base_model():
    with torch.device("meta"):                                   # 只建形状，不分配内存
        tied, untied, enfr = Transformer(37000), Transformer(37000, tie_weights=False), Transformer(32000)
    emb = tied.src_embed.weight.numel()
    n_tied, n_untied = count_parameters(tied), count_parameters(untied)
    three = sum(getattr(untied, m).weight.numel() for m in ("src_embed", "tgt_embed", "output_projection"))
    assert (n_tied, n_untied) == (transformer_param_count(37000, 512, 6, 2048, tie_weights=True),
                                  transformer_param_count(37000, 512, 6, 2048, tie_weights=False))
    for page in ("derivation.md", "questions.md"):                  # 推导与题库各自写了一遍
        assert_states(CH06 + page, f"{emb:,}", f"{n_tied:,}", f"{three:,}", f"{n_untied:,}",
                      f"{100 * emb / n_tied:.1f}%", f"{100 * three / n_untied:.1f}%",
                      f"{enfr.src_embed.weight.numel():,}")


@pytest.mark.claim("ch06-tying-saves", paper="§3.4",
                   text="三处共享时三个名字的 data_ptr 相同；每多共享一对恰好少 |V|·d 个参数，三处共享比不共享少 2|V|·d")
def test_tying_saves_exactly_v_times_d_per_pair():
    vocab, d = 50, 16
    tied, untied = small(True, vocab, d), small(False, vocab, d)
    assert shared_parameter_groups(tied) == [TRIO]
    assert shared_parameter_groups(untied) == []
    assert count_parameters(untied) - count_parameters(tied) == 2 * vocab * d
    two_way = small(False, vocab, d)
    two_way.output_projection.weight = two_way.tgt_embed.weight      # 只共享目标嵌入与输出投影
    assert shared_parameter_groups(two_way) == [["tgt_embed.weight", "output_projection.weight"]]
    assert count_parameters(untied) - count_parameters(two_way) == vocab * d
    for model in (tied, untied, two_way):
        assert count_parameters(model) == sum(p.numel() for p in {p.data_ptr(): p for p in model.parameters()}.values())


@pytest.mark.claim("ch06-tying-gradient", paper="§3.4",
                   text="共享矩阵的梯度等于三处用法各自梯度之和（与把三份拷贝分开算梯度再相加逐元素一致），输出投影就是 h Eᵀ")
def test_tied_gradient_is_the_sum_of_three_uses():
    tied = small(True).double()
    untied = small(False).double()
    untied.load_state_dict({k: v for k, v in tied.state_dict().items()}, strict=False)
    with torch.no_grad():
        for name in ("src_embed", "tgt_embed"):
            getattr(untied, name).weight.copy_(tied.src_embed.weight)
        untied.output_projection.weight.copy_(tied.src_embed.weight)
    src = torch.randint(0, 50, (3, 7), generator=gen(3))
    tgt = torch.randint(0, 50, (3, 5), generator=gen(4))
    target = torch.randint(0, 50, (3, 5), generator=gen(5))
    losses = [torch.nn.functional.cross_entropy(m(src, tgt).reshape(-1, 50), target.reshape(-1)) for m in (tied, untied)]
    assert torch.allclose(losses[0], losses[1], atol=1e-12)
    for loss in losses:
        loss.backward()
    total = sum(getattr(untied, n).weight.grad for n in ("src_embed", "tgt_embed", "output_projection"))
    assert torch.allclose(tied.src_embed.weight.grad, total, atol=1e-12)
    h = rand(2, 4, 16, seed=6)
    assert torch.allclose(tied.output_projection(h), h @ tied.src_embed.weight.T, atol=1e-12)


@pytest.mark.claim("ch06-default-inits", paper="§3.4",
                   text="nn.Embedding 的默认初始化是 N(0, 1)，本书 TokenEmbedding 是 N(0, 1/d_model)（标准差相对误差 < 2%）")
def test_default_initialisations():
    torch.manual_seed(0)
    d = 512
    assert abs(torch.nn.Embedding(2000, d).weight.std().item() - 1.0) < 0.02
    assert abs(TokenEmbedding(2000, d).weight.std().item() * math.sqrt(d) - 1.0) < 0.02


@pytest.fixture(scope="module")
def base_width() -> Transformer:
    """论文的 d = 512、|V| = 37000，只留 1 层（嵌入与位置编码不随层数变）。"""
    torch.manual_seed(0)
    return Transformer(37000, d_model=512, num_heads=8, num_layers=1, d_ff=2048, dropout=0.0)


@pytest.mark.claim("ch06-emb-pe-ratio", paper="§3.4, §3.5",
                   text="d = 512、|V| = 37000 的 Transformer 初始化时：每个位置 ‖PE‖² = d/2；乘 √d 后，默认的 N(0, 1/d) 嵌入范数约为位置编码的 √2 倍，改成 N(0, 1) 后约为 √(2d) = 32 倍（相对误差 < 1%）")
def test_embedding_to_positional_encoding_ratio(base_width):
    model, d = base_width, 512
    emb, pe = model.src_embed, model.positional.pe                     # (37000, 512)、(max_len, 512)
    assert torch.allclose(pe.double().pow(2).sum(-1), torch.full((pe.shape[0],), d / 2, dtype=F64), atol=1e-3)
    assert emb.scale == math.sqrt(d)
    assert abs(embedding_to_pe_ratio(emb.weight, emb.scale, pe) / math.sqrt(2) - 1) < 0.01
    unit = torch.nn.Embedding(*emb.weight.shape).weight                 # nn.Embedding 的默认 N(0, 1)
    assert abs(embedding_to_pe_ratio(unit, emb.scale, pe) / math.sqrt(2 * d) - 1) < 0.01
    assert abs(embedding_to_pe_ratio(unit, 1.0, pe) / math.sqrt(2) - 1) < 0.01        # 不乘 √d 的 N(0, 1)
    assert_states(CH06, rf"\sqrt{{2d}}={math.isqrt(2 * d)}")
    with pytest.raises(ValueError, match="share d"):
        embedding_to_pe_ratio(unit[:, :8], 1.0, pe)


def initial_logits(model: Transformer, vocab: int) -> dict:
    """初始化时的 logits：解码器当前输入词元那一列（self）与其余各列（other）分开统计。"""
    src = torch.randint(0, vocab, (16, 12), generator=gen(10))
    tgt_in = torch.randint(0, vocab, (16, 12), generator=gen(11))     # (16, 12) 解码器输入
    with torch.no_grad():
        logits = model.eval()(src, tgt_in)                             # (16, 12, |V|)
    is_self = torch.nn.functional.one_hot(tgt_in, vocab).bool()
    return {"self": logits[is_self].mean().item(), "other_mean": logits[~is_self].mean().item(),
            "other_std": logits[~is_self].std().item(),
            "argmax_is_input": (logits.argmax(-1) == tgt_in).double().mean().item()}


@pytest.mark.claim("ch06-tied-logit-scale", paper="§3.4",
                   text="初始化时的 Transformer（d = 512、2 层、三处共享）：其余 logits 的标准差是 σ√d（N(0, 1/d) 约 1，N(0, 1) 约 √d，相对误差 < 5%），但当前输入词元那一列约为 c√d‖e_y‖（0.5 < c < 1），每个位置的 argmax 都是当前输入词元；不共享时这一列不突出")
def test_tied_matrix_sets_the_logit_scale():
    vocab, d = 2000, 512
    torch.manual_seed(12)
    tied = Transformer(vocab, d_model=d, num_heads=8, num_layers=2, d_ff=4 * d, dropout=0.0)
    t2t = initial_logits(tied, vocab)                                  # 默认 N(0, 1/d)：‖e_y‖ ≈ 1
    assert abs(t2t["other_std"] - 1) < 0.05 and abs(t2t["other_mean"]) < 0.1
    assert 0.5 < t2t["self"] / math.sqrt(d) < 1 and t2t["argmax_is_input"] == 1.0
    assert_states(CH06, f"平均约{t2t['self']:.0f}（约{t2t['self'] / math.sqrt(d):.2f}\\sqrtd）",
                  f"标准差{t2t['other_std']:.2f}", f"约{math.sqrt(d):.1f}")
    with torch.no_grad():
        tied.src_embed.weight.normal_(0.0, 1.0)                        # N(0, 1)：‖e_y‖ ≈ √d
    unit = initial_logits(tied, vocab)
    assert abs(unit["other_std"] / math.sqrt(d) - 1) < 0.05
    assert 0.5 < unit["self"] / d < 1 and unit["argmax_is_input"] == 1.0
    torch.manual_seed(12)
    untied = Transformer(vocab, d_model=d, num_heads=8, num_layers=2, d_ff=4 * d, dropout=0.0, tie_weights=False)
    with torch.no_grad():
        untied.output_projection.weight.normal_(0.0, 1 / math.sqrt(d))  # 输出投影单独取 N(0, 1/d)
    free = initial_logits(untied, vocab)
    assert abs(free["other_std"] - 1) < 0.05 and abs(free["self"]) < 0.5 and free["argmax_is_input"] < 0.05
