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
                   text="base 模型、共享词表 37000：共享嵌入 18,944,000 个参数，占 63,082,496 的 30.0%；不共享时三份共 56,832,000，占 100,970,496 的 56.3%；EN-FR 的 32000 词表是 16,384,000")
def test_embedding_share_of_base_model():
    tied = transformer_param_count(37000, 512, 6, 2048, tie_weights=True)
    untied = transformer_param_count(37000, 512, 6, 2048, tie_weights=False)
    emb = tied - transformer_param_count(0, 512, 6, 2048)
    assert untied - tied == 2 * emb
    assert_states(CH06, f"{emb:,}", f"{tied:,}", f"{3 * emb:,}", f"{untied:,}",
                  f"{100 * emb / tied:.1f}%", f"{100 * 3 * emb / untied:.1f}%")
    enfr = transformer_param_count(32000, 512, 6, 2048) - transformer_param_count(0, 512, 6, 2048)
    assert_states(CH06, f"{enfr:,}")


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


@pytest.mark.claim("ch06-emb-pe-ratio", paper="§3.4, §3.5",
                   text="d = 512、|V| = 37000：每个位置 ‖PE‖² = d/2；乘 √d 后，N(0, 1) 初始化的嵌入范数约为位置编码的 √(2d) = 32 倍，N(0, 1/d) 约为 √2 倍（相对误差 < 1%）")
def test_embedding_to_positional_encoding_ratio():
    d, vocab = 512, 37000
    pe = sinusoidal_positional_encoding(1000, d, dtype=F64)
    assert torch.allclose(pe.pow(2).sum(-1), torch.full((1000,), d / 2, dtype=F64), atol=1e-9)
    g = gen(7)
    unit = torch.randn(vocab, d, generator=g)
    t2t = torch.randn(vocab, d, generator=g) / math.sqrt(d)
    assert abs(embedding_to_pe_ratio(unit, math.sqrt(d), pe) / math.sqrt(2 * d) - 1) < 0.01
    assert abs(embedding_to_pe_ratio(t2t, math.sqrt(d), pe) / math.sqrt(2) - 1) < 0.01
    assert abs(embedding_to_pe_ratio(unit, 1.0, pe) / math.sqrt(2) - 1) < 0.01        # 不乘 √d 的 N(0, 1)
    assert_states(CH06, rf"\sqrt{{2d}}={math.isqrt(2 * d)}")
    with pytest.raises(ValueError, match="share d"):
        embedding_to_pe_ratio(unit[:, :8], 1.0, pe)


@pytest.mark.claim("ch06-tied-logit-scale", paper="§3.4",
                   text="共享矩阵也是输出投影：对每维方差为 1 的解码器输出，N(0, 1) 的矩阵给出标准差约 √d 的 logits，N(0, 1/d) 给出约 1（相对误差 < 5%）")
def test_tied_matrix_sets_the_logit_scale():
    d, vocab = 256, 4000
    h = rand(512, d, seed=8)                                              # (n, d)，每维方差 1，像 LayerNorm 之后
    for std, expected in ((1.0, math.sqrt(d)), (1 / math.sqrt(d), 1.0)):
        e = rand(vocab, d, seed=9) * std
        assert abs((h @ e.T).std().item() / expected - 1) < 0.05
