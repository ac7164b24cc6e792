"""The registry of the reader code's public API: one entry per public name, grouped by module, in the order
of the module. How an entry reads: tests/contract/spec.py. The suite: tests/contract/test_contract.py.

``i`` is the inputs maker (tests/contract/inputs.py): ``i.batched(n, d)`` is a (B, n, d) tensor (B = 2, or 1
in the batch test's single-row runs), ``i.randn(d)`` an unbatched one, ``i.module(lambda: Cls(...))`` a module
on the entry's device and dtype. Sizes are small on purpose: the suite runs in ``make test-fast``.
"""

from __future__ import annotations

import math

import torch

from snippets import (additive, attention, bpe, checks, decoding, embedding, ffn, flash, linear_attention, llama,
                      lstm, mla, multihead, norms, positional, residual_stream, ring, rnn, serving, softmax,
                      sparse_attention, stats, training, transformer, variations)
from tests.contract.spec import ALL, F32, F64, Edge, Entry, pure

NUMBERS = "arithmetic on Python numbers: no tensor in, no tensor made"
TEXT = "text processing: strings in, strings or counts out"
FP64_ONLY = (F64, F32)  # where bf16 is not offered
NOT_BATCHED = "its inputs have no batch dimension"


def _qkv(i, n=5, n_k=None, d=4, d_v=3, h=None):
    """q (B, [h,] n, d), k (B, [h,] n_k, d), v (B, [h,] n_k, d_v)."""
    lead = () if h is None else (h,)
    n_k = n if n_k is None else n_k
    return i.batched(*lead, n, d), i.batched(*lead, n_k, d), i.batched(*lead, n_k, d_v)


def _cpu(*shape, fill=0.0):
    return torch.full(shape, fill, dtype=torch.float64)


def _masked_row(n=4, d=3):
    """q, k, v for one sequence and a mask whose row 1 is all False (a fully masked query)."""
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, n, d, generator=g, dtype=torch.float64) for _ in range(3))
    mask = torch.ones(1, n, n, dtype=torch.bool)
    mask[0, 1] = False
    return q, k, v, mask


def _one(d=3):
    """q, k, v of one sequence of length 1."""
    return tuple(torch.full((1, 1, d), 0.5, dtype=torch.float64) for _ in range(3))


def _row_is_zero(out):
    out = out[0] if isinstance(out, tuple) else out
    return bool((out[0, 1] == 0).all())


def _ids(i, vocab=11, n=5):
    return i.batched_ints(vocab, n)


def _tiny_transformer():
    return transformer.Transformer(vocab_size=11, d_model=8, num_heads=2, num_layers=1, d_ff=16, dropout=0.0,
                                   max_len=16)


def _tiny_llama():
    return llama.LlamaDecoder(vocab_size=11, d_model=8, n_layers=1, n_heads=2, n_kv_heads=1, d_ff=16)


def _paged(i):
    pool = serving.BlockPool(8, 2, 2, 3, dtype=i.dtype, device=i.device)
    cache = serving.PagedKVCache(pool)
    k, v = i.batched(2, 3, 3), i.batched(2, 3, 3)
    return cache.update(k, v)


def _stepper(i):
    """BeamStepper on a tiny model: one step of log-probabilities for 2 prefixes of (bos, x)."""
    model = i.module(_tiny_transformer)
    src = i.batched_ints(11, 4)[:1]
    step = decoding.BeamStepper(model, src)
    first = step(torch.zeros(1, 1, dtype=torch.long, device=i.device))
    second = step(torch.tensor([[0, 3], [0, 5]], device=i.device))
    return first, second


REGISTRY = [
    # --- snippets/additive.py -------------------------------------------------------------------------------
    Entry("additive.additive_scores",
          lambda i: additive.additive_scores(i.batched(4, 5), i.batched(6, 3), i.randn(5, 7), i.randn(3, 7),
                                             i.randn(7), i.randn(7))),
    Entry("additive.additive_attention",
          lambda i: additive.additive_attention(i.batched(4, 5), i.batched(6, 3), i.batched(6, 2), i.randn(5, 7),
                                                i.randn(3, 7), i.randn(7), i.batched_mask(4, 6), i.randn(7)),
          edges=(Edge("fully-masked-row", lambda i: additive.additive_attention(
              *_masked_row()[:3], _cpu(3, 2), _cpu(3, 2), _cpu(2), _masked_row()[3]), check=_row_is_zero),)),
    Entry("additive.AdditiveAttention",
          lambda i: i.module(lambda: additive.AdditiveAttention(5, 3, 7))(i.batched(4, 5), i.batched(6, 3),
                                                                         i.batched(6, 2), i.batched_mask(4, 6))),
    pure("additive.attention_cost", NUMBERS,
         Edge("unknown-kind", lambda i: additive.attention_cost("mul", 1, 1, 1, 2, 2, 2, 2), ValueError, "kind"),
         Edge("zero-size", lambda i: additive.attention_cost("dot", 1, 0, 1, 2, 2, 2, 2), ValueError, "n_q")),

    # --- snippets/attention.py ------------------------------------------------------------------------------
    Entry("attention.scaled_dot_product_attention",
          lambda i: attention.scaled_dot_product_attention(*_qkv(i, 4, 6), i.batched_mask(4, 6)),
          edges=(Edge("fully-masked-row", lambda i: attention.scaled_dot_product_attention(*_masked_row()),
                      check=_row_is_zero),
                 Edge("length-1", lambda i: attention.scaled_dot_product_attention(*_one())),
                 Edge("empty", lambda i: attention.scaled_dot_product_attention(*(_cpu(1, 0, 3),) * 3),
                      ValueError, "empty"))),
    Entry("attention.causal_mask", lambda i: attention.causal_mask(5, device=i.device),
          dtypes=(F64,), why_dtypes="a bool mask: no float dtype", batch=False, why_batch=NOT_BATCHED,
          edges=(Edge("n=0", lambda i: attention.causal_mask(0), ValueError, "n must be"),)),
    Entry("attention.padding_mask", lambda i: attention.padding_mask(i.lengths(6), 6),
          dtypes=(F64,), why_dtypes="a bool mask from integer lengths",
          edges=(Edge("length-0-row", lambda i: attention.padding_mask(torch.tensor([0, 2]), 3),
                      check=lambda m: not bool(m[0].any())),
                 Edge("length>n", lambda i: attention.padding_mask(torch.tensor([4]), 3), ValueError, "lengths"))),
    Entry("attention.MultiHeadAttention",
          lambda i: i.module(lambda: attention.MultiHeadAttention(8, 2))(i.batched(4, 8), i.batched(5, 8),
                                                                        i.batched(5, 8), i.batched_mask(4, 5))),
    Entry("attention.KVCache",
          lambda i: attention.KVCache().update(i.batched(2, 3, 4), i.batched(2, 3, 4)),
          edges=(Edge("empty-nbytes", lambda i: attention.KVCache().nbytes(), check=lambda b: b == 0),)),
    Entry("attention.restricted_attention",
          lambda i: attention.restricted_attention(*_qkv(i, 6, 6), 1, i.batched_mask(1, 6)),
          edges=(Edge("r=0", lambda i: attention.restricted_attention(*_masked_row(3)[:3], 0)),
                 Edge("r<0", lambda i: attention.restricted_attention(*_masked_row(3)[:3], -1), ValueError, "r"))),
    Entry("attention.online_softmax_update",
          lambda i: attention.online_softmax_update(i.batched(3, 1), i.batched_uniform(3, 1, lo=0.5, hi=2),
                                                    i.batched(3, 2), i.batched(3, 4), i.batched(4, 2)),
          accurate=3e-2),
    Entry("attention.online_softmax_attention",
          lambda i: attention.online_softmax_attention(i.batched(3, 4), i.batched(96, 4), i.batched_uniform(96, 2, lo=1, hi=2),
                                                       block=1, mask=i.batched_mask(3, 96)),
          accurate=6e-3,
          edges=(Edge("fully-masked-row", lambda i: attention.online_softmax_attention(
              *_masked_row()[:3], block=2, mask=_masked_row()[3]), check=lambda o: bool((o[0, 1] == 0).all())),
                 Edge("block=0", lambda i: attention.online_softmax_attention(*_masked_row()[:3], block=0),
                      ValueError, "block"))),

    # --- snippets/bpe.py --------------------------------------------------------------------------------
    pure("bpe.pretokenize", TEXT, Edge("empty", lambda i: bpe.pretokenize(""), check=lambda w: w == [bpe.SPACE])),
    pure("bpe.count_pairs", TEXT),
    pure("bpe.merge_word", TEXT),
    pure("bpe.bpe_train", TEXT,
         Edge("more-merges-than-pairs", lambda i: bpe.bpe_train("ab ab", 50), check=lambda m: len(m) < 50),
         Edge("negative-merges", lambda i: bpe.bpe_train("ab", -1), ValueError, "num_merges")),
    pure("bpe.bpe_encode", TEXT, Edge("empty", lambda i: bpe.bpe_decode(bpe.bpe_encode("", [])), check=lambda t: t == "")),
    pure("bpe.bpe_decode", TEXT, Edge("no-tokens", lambda i: bpe.bpe_decode([]), ValueError, "tokens")),
    pure("bpe.bpe_vocab", TEXT),

    # --- snippets/checks.py ------------------------------------------------------------------------------
    pure("checks.values_unchecked", "a context manager that switches the value-reading checks off",
         Edge("restores", lambda i: _values_unchecked_restores(), check=bool)),

    # --- snippets/decoding.py -----------------------------------------------------------------------------
    Entry("decoding.decode_step", lambda i: _decode_step(i)),
    Entry("decoding.greedy_decode",
          lambda i: decoding.greedy_decode(i.module(_tiny_transformer), _ids(i), 3, bos_id=0, return_logits=True),
          edges=(Edge("max_new_tokens=0", lambda i: decoding.greedy_decode(
              i.module(_tiny_transformer), _ids(i), 0, bos_id=0), ValueError, "max_new_tokens"),)),
    pure("decoding.length_penalty", NUMBERS),
    pure("decoding.greedy_search", "takes a step function; prefixes are LongTensors on the CPU by its contract",
         Edge("stops-at-max_len", lambda i: decoding.greedy_search(lambda p: torch.zeros(1, 3), 0, 2, max_len=4),
              check=lambda t: t == [0, 0, 0, 0])),
    pure("decoding.beam_search", "takes a step function; prefixes are LongTensors on the CPU by its contract",
         Edge("beam_size=0", lambda i: decoding.beam_search(lambda p: torch.zeros(1, 3), 0, 2, beam_size=0),
              ValueError, "beam_size"),
         Edge("max_len=1", lambda i: decoding.beam_search(lambda p: torch.zeros(p.shape[0], 3).log_softmax(-1),
                                                          0, 2, max_len=1), check=lambda t: len(t) == 1)),
    Entry("decoding.BeamStepper", _stepper, batch=False,
          why_batch="one source sentence (1, n) by contract; the beam is the batch",
          meta="compares the new prefixes with the old ones to find each beam's parent (reads values)"),
    pure("decoding.tokenize_13a", TEXT),
    pure("decoding.split_compounds", TEXT),
    pure("decoding.ngrams", TEXT, Edge("n>len", lambda i: decoding.ngrams(["a"], 2), check=lambda c: not c)),
    pure("decoding.bleu_statistics", TEXT),
    pure("decoding.corpus_bleu", TEXT,
         Edge("empty-hypothesis", lambda i: decoding.corpus_bleu([""], ["a b c d"]), check=lambda b: b == 0.0),
         Edge("unknown-smooth", lambda i: decoding.corpus_bleu(["a"], ["a"], smooth="add1"), ValueError, "smooth")),
    Entry("decoding.average_checkpoints",
          lambda i: decoding.average_checkpoints([{"w": i.batched(3)}, {"w": i.batched(3)}]),
          edges=(Edge("no-checkpoint", lambda i: decoding.average_checkpoints([]), ValueError, "at least one"),)),
    Entry("decoding.speculative_step",
          lambda i: decoding.speculative_step(i.uniform(3, 5).softmax(-1), i.uniform(2, 5).softmax(-1),
                                              torch.tensor([1, 2]), i.uniform(2)),
          meta="accepts or rejects each draft token by comparing probabilities (reads values)",
          batch=False, why_batch="one sequence: γ draft tokens of one request",
          edges=(Edge("u=1", lambda i: decoding.speculative_step(_cpu(2, 3).softmax(-1), _cpu(1, 3).softmax(-1),
                                                                  torch.tensor([1]), torch.ones(1)),
                      ValueError, "uniforms"),)),
    pure("decoding.expected_tokens_per_round", NUMBERS,
         Edge("alpha=1", lambda i: decoding.expected_tokens_per_round(1, 4), check=lambda x: x == 5)),
    pure("decoding.training_flops", NUMBERS,
         Edge("unknown-gpu", lambda i: decoding.training_flops(1, 1, "A100"), (ValueError, KeyError), "A100")),

    # --- snippets/embedding.py --------------------------------------------------------------------------------
    Entry("embedding.one_hot_lookup", lambda i: embedding.one_hot_lookup(_ids(i), i.randn(11, 4))),
    pure("embedding.shared_parameter_groups", "reads a module's parameter storage, makes no tensor",
         Edge("meta-untied", lambda i: _groups_on_meta(), check=lambda g: g == [])),
    pure("embedding.embedding_to_pe_ratio", "reduces two whole tables to one Python float (in float64)",
         Edge("bf16-tables", lambda i: embedding.embedding_to_pe_ratio(torch.ones(3, 4, dtype=torch.bfloat16), 2.0,
                                                                       torch.ones(5, 4, dtype=torch.bfloat16)),
              check=lambda r: r == 2.0)),

    # --- snippets/ffn.py -------------------------------------------------------------------------------------
    Entry("ffn.ffn_memory_terms",
          lambda i: ffn.ffn_memory_terms(i.randn(6, 4), i.randn(6), i.randn(4, 6), i.batched(3, 4))[0]),
    Entry("ffn.SwiGLUFFN", lambda i: i.module(lambda: ffn.SwiGLUFFN(4, 6))(i.batched(3, 4))),
    pure("ffn.swiglu_hidden_size", NUMBERS),
    pure("ffn.ffn_param_count", NUMBERS),
    pure("ffn.swiglu_param_count", NUMBERS),
    pure("ffn.mha_param_count", NUMBERS),
    pure("ffn.encoder_layer_flops", NUMBERS),
    pure("ffn.moe_ffn_counts", NUMBERS,
         Edge("top_k>experts", lambda i: ffn.moe_ffn_counts(4, 8, 2, 3), ValueError, "top_k")),

    # --- snippets/flash.py --------------------------------------------------------------------------------
    Entry("flash.flash_attention",
          lambda i: flash.flash_attention(*_qkv(i, 5, 7), causal=True, block_q=2, block_k=3),
          out_dtype=lambda dtype, k: dtype if k == 0 else torch.promote_types(dtype, F32), accurate=1e-2,
          edges=(Edge("length-1", lambda i: flash.flash_attention(*_one(), causal=True)),
                 Edge("n_q>n_k-causal", lambda i: flash.flash_attention(_cpu(1, 3, 2), _cpu(1, 2, 2), _cpu(1, 2, 2),
                                                                        causal=True), ValueError, "n_q <= n_k"))),
    pure("flash.flash_block_sizes", NUMBERS),
    pure("flash.hbm_accesses", NUMBERS,
         Edge("sram-too-small", lambda i: flash.hbm_accesses(8, 4, 8, "flash"), ValueError, "sram_bytes")),
    pure("flash.hbm_closed_form", NUMBERS,
         Edge("unknown-method", lambda i: flash.hbm_closed_form(8, 4, 4096, "tiled"), ValueError, "method"),
         Edge("sram-too-small", lambda i: flash.hbm_closed_form(8, 4, 8, "flash"), ValueError, "sram_bytes")),
    pure("flash.ridge_point", NUMBERS),
    pure("flash.attainable_flops", NUMBERS),
    pure("flash.linear_intensity", NUMBERS),
    pure("flash.decode_attention_intensity", NUMBERS),
    pure("flash.mla_decode_flops_per_position", NUMBERS,
         Edge("zero-heads", lambda i: flash.mla_decode_flops_per_position(0, 4, 8, 2), ValueError, "n_heads")),
    pure("flash.mla_decode_intensity", NUMBERS,
         Edge("zero-bytes", lambda i: flash.mla_decode_intensity(2, 4, 8, 2, bytes_per_value=0), ValueError,
              "bytes_per_value")),
    pure("flash.compute_bound_batch", NUMBERS,
         Edge("bandwidth-bound", lambda i: flash.compute_bound_batch(64, 1e15, 1e12), ValueError, "bandwidth")),

    # --- snippets/linear_attention.py ---------------------------------------------------------------------
    Entry("linear_attention.linear_attention_parallel",
          lambda i: linear_attention.linear_attention_parallel(*_qkv(i, 5))),
    Entry("linear_attention.linear_attention_recurrent",
          lambda i: linear_attention.linear_attention_recurrent(*_qkv(i, 5))),
    Entry("linear_attention.linear_attention_chunked",
          lambda i: linear_attention.linear_attention_chunked(*_qkv(i, 5), chunk=2),
          edges=(Edge("chunk>n", lambda i: linear_attention.linear_attention_chunked(*_masked_row(3)[:3], chunk=9)),
                 Edge("chunk=0", lambda i: linear_attention.linear_attention_chunked(*_masked_row(3)[:3], chunk=0),
                      ValueError, "chunk"))),
    Entry("linear_attention.elu_feature_map", lambda i: linear_attention.elu_feature_map(i.batched(3, 4))),
    Entry("linear_attention.normalized_linear_attention",
          lambda i: linear_attention.normalized_linear_attention(*_qkv(i, 5))),
    Entry("linear_attention.decay_linear_attention_recurrent",
          lambda i: linear_attention.decay_linear_attention_recurrent(*_qkv(i, 5), i.batched_uniform(5)),
          edges=(Edge("zero-gates", lambda i: linear_attention.decay_linear_attention_recurrent(
              *_masked_row(3)[:3], _cpu(1, 3))),)),
    Entry("linear_attention.semiseparable_mask", lambda i: linear_attention.semiseparable_mask(i.batched_uniform(5)),
          edges=(Edge("zero-gates", lambda i: linear_attention.semiseparable_mask(_cpu(1, 4)),
                      check=lambda m: torch.equal(m[0], torch.eye(4, dtype=m.dtype))),)),
    Entry("linear_attention.decay_linear_attention_parallel",
          lambda i: linear_attention.decay_linear_attention_parallel(*_qkv(i, 5), i.batched_uniform(5))),
    Entry("linear_attention.delta_rule_step",
          lambda i: linear_attention.delta_rule_step(i.batched(3, 4), i.batched(4, unit=True), i.batched(3),
                                                     i.batched_uniform(lo=0.1, hi=1.0))),
    Entry("linear_attention.delta_rule_recurrent",
          lambda i: linear_attention.delta_rule_recurrent(i.batched(5, 4), i.batched(5, 4, unit=True),
                                                          i.batched(5, 3), i.batched_uniform(5, lo=0.1, hi=1.0)),
          edges=(Edge("beta>2", lambda i: linear_attention.delta_rule_recurrent(
              *(_cpu(1, 2, 2, fill=0.5 ** 0.5),) * 3, _cpu(1, 2, fill=3.0)), ValueError, "beta"),)),
    Entry("linear_attention.delta_rule_chunked",
          lambda i: linear_attention.delta_rule_chunked(i.batched(5, 4), i.batched(5, 4, unit=True),
                                                        i.batched(5, 3), i.batched_uniform(5, lo=0.1, hi=1.0), 2),
          dtypes=FP64_ONLY, why_dtypes="torch.linalg.solve_triangular has no bfloat16 kernel"),

    # --- snippets/llama.py ----------------------------------------------------------------------------------
    Entry("llama.RotaryGroupedQueryAttention",
          lambda i: i.module(lambda: llama.RotaryGroupedQueryAttention(8, 4, 2))(i.batched(5, 8)), accurate=5e-2),
    Entry("llama.LlamaBlock", lambda i: i.module(lambda: llama.LlamaBlock(8, 4, 2, 16))(i.batched(5, 8))),
    Entry("llama.LlamaDecoder", lambda i: i.module(_tiny_llama)(_ids(i))),
    Entry("llama.greedy_generate", lambda i: llama.greedy_generate(i.module(_tiny_llama), _ids(i), 3),
          edges=(Edge("max_new_tokens=0", lambda i: llama.greedy_generate(i.module(_tiny_llama), _ids(i), 0),
                      ValueError, "max_new_tokens"),)),

    # --- snippets/lstm.py -------------------------------------------------------------------------------------
    Entry("lstm.LSTMCell", lambda i: i.module(lambda: lstm.LSTMCell(3, 4))(i.batched(3), (i.batched(4), i.batched(4)))),
    Entry("lstm.LSTMLayer", lambda i: i.module(lambda: lstm.LSTMLayer(3, 4))(i.batched(5, 3)),
          edges=(Edge("empty", lambda i: lstm.LSTMLayer(3, 4).double()(_cpu(1, 0, 3)), ValueError, "empty"),)),
    Entry("lstm.cell_state_jacobians",
          lambda i: lstm.cell_state_jacobians(i.module(lambda: lstm.LSTMCell(3, 4)), i.randn(5, 3), i.randn(4),
                                              i.randn(4), 2),
          meta="autograd.functional.jacobian runs backward passes, which meta tensors cannot", batch=False,
          why_batch="one sequence by contract: x (n, d_in)"),

    # --- snippets/mla.py ---------------------------------------------------------------------------------------
    Entry("mla.MultiHeadLatentAttention",
          lambda i: i.module(lambda: mla.MultiHeadLatentAttention(8, 2, 4, 6, 2))(i.batched(5, 8), absorbed=True),
          accurate=5e-2),

    # --- snippets/multihead.py --------------------------------------------------------------------------------
    Entry("multihead.multi_head_loop",
          lambda i: multihead.multi_head_loop(i.module(lambda: attention.MultiHeadAttention(8, 2)), i.batched(4, 8),
                                              i.batched(5, 8), i.batched(5, 8), i.batched_mask(4, 5))),
    Entry("multihead.head_contributions",
          lambda i: multihead.head_contributions(i.module(lambda: attention.MultiHeadAttention(8, 2)),
                                                 i.batched(4, 8))),
    Entry("multihead.GroupedQueryAttention",
          lambda i: i.module(lambda: multihead.GroupedQueryAttention(8, 4, 2))(i.batched(4, 8), i.batched(5, 8),
                                                                              i.batched(5, 8), i.batched_mask(4, 5))),
    pure("multihead.attention_params", NUMBERS,
         Edge("groups-not-dividing", lambda i: multihead.attention_params(8, 4, 3), ValueError, "n_kv_heads")),
    pure("multihead.kv_cache_bytes", NUMBERS),
    pure("multihead.mla_cache_bytes", NUMBERS),

    # --- snippets/norms.py ---------------------------------------------------------------------------------------
    Entry("norms.LayerNorm", lambda i: i.module(lambda: norms.LayerNorm(4))(i.batched(3, 4))),
    Entry("norms.RMSNorm", lambda i: i.module(lambda: norms.RMSNorm(4))(i.batched(3, 4)),
          edges=(Edge("zero-input", lambda i: norms.RMSNorm(4)(torch.zeros(1, 4))),)),
    Entry("norms.layernorm_jacobian", lambda i: norms.layernorm_jacobian(i.randn(4), i.randn(4)),
          batch=False, why_batch="one vector u (d,) by contract"),
    Entry("norms.rmsnorm_jacobian", lambda i: norms.rmsnorm_jacobian(i.randn(4), i.randn(4)),
          batch=False, why_batch="one vector x (d,) by contract"),
    Entry("norms.batchnorm_over_tokens", lambda i: norms.batchnorm_over_tokens(i.batched(3, 4), i.batched_mask(3)),
          batch=False, why_batch="BatchNorm's statistics mix the rows of a batch: that is what it shows"),
    Entry("norms.xavier_init_", lambda i: [p for p in norms.xavier_init_(i.module(_tiny_transformer)).parameters()],
          batch=False, why_batch="initialises a module's weights"),
    pure("norms.gradient_norms_per_layer", "returns Python floats: norms over the whole batch",
         Edge("finite", lambda i: _gradient_norms(i), check=lambda g: bool(torch.isfinite(g).all()))),

    # --- snippets/positional.py ------------------------------------------------------------------------------
    Entry("positional.sinusoidal_positional_encoding",
          lambda i: positional.sinusoidal_positional_encoding(300, 8, dtype=i.dtype).to(i.device),
          meta="a factory without a tensor input or a device argument (built on the CPU, as its callers expect)",
          batch=False, why_batch="a table of positions", accurate=2e-2),
    Entry("positional.pe_offset_matrix", lambda i: positional.pe_offset_matrix(300, 8, dtype=i.dtype),
          meta="a factory without a tensor input or a device argument", batch=False, why_batch=NOT_BATCHED,
          accurate=2e-2),
    Entry("positional.rope_frequencies", lambda i: positional.rope_frequencies(8, dtype=i.dtype, device=i.device),
          batch=False, why_batch=NOT_BATCHED),
    Entry("positional.apply_rope",
          lambda i: positional.apply_rope(i.batched(2, 5, 8), positions=torch.arange(5, device=i.device) + 290),
          accurate=2e-2),
    Entry("positional.rotate_half", lambda i: positional.rotate_half(i.batched(5, 8))),
    Entry("positional.apply_rope_half",
          lambda i: positional.apply_rope_half(i.batched(2, 5, 8), positions=torch.arange(5, device=i.device) + 290),
          accurate=2e-2),
    pure("positional.interleaved_to_half", "an index permutation (int64 on the CPU) from an int"),
    Entry("positional.alibi_slopes", lambda i: positional.alibi_slopes(6, device=i.device),
          dtypes=(F64,), why_dtypes="float64 by its docstring", batch=False, why_batch=NOT_BATCHED),
    Entry("positional.alibi_bias", lambda i: positional.alibi_bias(6, 5, device=i.device),
          dtypes=(F64,), why_dtypes="float64 by its docstring", batch=False, why_batch=NOT_BATCHED),
    Entry("positional.scaled_rope_frequencies",
          lambda i: positional.scaled_rope_frequencies(8, 1e4, "yarn", 4.0, 64, device=i.device),
          dtypes=(F64,), why_dtypes="float64 by its docstring", batch=False, why_batch=NOT_BATCHED,
          edges=(Edge("factor<1", lambda i: positional.scaled_rope_frequencies(8, 1e4, "pi", 0.5), ValueError,
                      "factor"),)),
    pure("positional.yarn_mscale", NUMBERS,
         Edge("factor=1", lambda i: positional.yarn_mscale(1.0), check=lambda x: x == 1.0)),
    Entry("positional.PositionalSelfAttention",
          lambda i: i.module(lambda: positional.PositionalSelfAttention(8, 2, "alibi"))(
              *(i.batched(5, 8),) * 3, mask=i.batched_mask(1, 5))),

    # --- snippets/residual_stream.py -------------------------------------------------------------------------
    Entry("residual_stream.depth_weights",
          lambda i: residual_stream.depth_weights(i.batched(3, 4, 6).transpose(0, 1), i.randn(6), i.randn(6)
                                                  ).transpose(0, 1)),
    Entry("residual_stream.depth_attention",
          lambda i: residual_stream.depth_attention(i.batched(3, 4, 6).transpose(0, 1), i.randn(6), i.randn(6))),
    Entry("residual_stream.rms_keys", lambda i: residual_stream.rms_keys(i.batched(4, 6))),
    Entry("residual_stream.depth_attention_cached",
          lambda i: _depth_cached(i)),
    Entry("residual_stream.inter_block_phase",
          lambda i: [t.transpose(0, 1) for t in residual_stream.inter_block_phase(
              i.batched(3, 4, 6).transpose(0, 1), i.randn(2, 6))]),
    Entry("residual_stream.merge_partial", lambda i: _merge_partial(i)),
    Entry("residual_stream.block_attnres_two_phase", lambda i: _two_phase(i)),
    Entry("residual_stream.AttnResDecoder",
          lambda i: i.module(lambda: residual_stream.AttnResDecoder(11, 2, 8, 2, 16, n_blocks=2, max_len=16))(_ids(i)),
          edges=(Edge("n_blocks-out-of-range", lambda i: residual_stream.AttnResDecoder(11, 1, 8, 2, 16, n_blocks=3),
                      ValueError, "n_blocks"),)),

    # --- snippets/ring.py -------------------------------------------------------------------------------------
    Entry("ring.ring_attention",
          lambda i: ring.ring_attention(i.batched(24, 4), i.batched(24, 4), i.batched_uniform(24, 2, lo=1, hi=2), 12),
          accurate=6e-3,
          edges=(Edge("n_devices>n", lambda i: ring.ring_attention(*_masked_row(2)[:3], 3), ValueError, "n_devices"),
                 Edge("length-1", lambda i: ring.ring_attention(*_one(), 1, causal=True)))),

    # --- snippets/rnn.py --------------------------------------------------------------------------------------
    Entry("rnn.RNNCell", lambda i: i.module(lambda: rnn.RNNCell(3, 4))(i.batched(3), i.batched(4))),
    Entry("rnn.RNNLayer", lambda i: i.module(lambda: rnn.RNNLayer(3, 4))(i.batched(5, 3)),
          edges=(Edge("empty", lambda i: rnn.RNNLayer(3, 4).double()(_cpu(1, 0, 3)), ValueError, "empty"),)),
    Entry("rnn.bptt_jacobian", lambda i: rnn.bptt_jacobian(i.randn(5, 4).tanh(), i.randn(4, 4), 1, 3),
          batch=False, why_batch="one sequence hs (n, d_h) by contract",
          edges=(Edge("k>t", lambda i: rnn.bptt_jacobian(_cpu(3, 2), _cpu(2, 2), 2, 1), ValueError, "k"),)),
    Entry("rnn.gradient_norms", lambda i: rnn.gradient_norms(i.randn(5, 4).tanh(), i.randn(4, 4), 3),
          meta="spectral norms by torch.linalg.matrix_norm(ord=2), an SVD, which has no meta kernel",
          dtypes=FP64_ONLY, why_dtypes="the SVD behind the spectral norm has no bfloat16 kernel",
          batch=False, why_batch="one sequence hs (n, d_h) by contract"),

    # --- snippets/serving.py -------------------------------------------------------------------------------
    Entry("serving.BlockPool", lambda i: serving.BlockPool(4, 2, 2, 3, dtype=i.dtype, device=i.device).k,
          batch=False, why_batch="a pool of blocks, shared by the sequences of a batch"),
    Entry("serving.PagedKVCache", _paged, meta="the block tables index the pool by block numbers (values)"),
    Entry("serving.quantize_int8", lambda i: serving.quantize_int8(i.batched(3, 4))),
    Entry("serving.dequantize_int8",
          lambda i: serving.dequantize_int8(i.batched_ints(127, 3, 4, low=-127).to(torch.int8), i.batched(3, 1))),
    pure("serving.make_trace", NUMBERS,
         Edge("no-requests", lambda i: serving.make_trace(0), check=lambda t: t == [])),
    pure("serving.kv_waste", NUMBERS,
         Edge("no-requests", lambda i: serving.kv_waste([], 8, 4), ValueError, "lengths"),
         Edge("block_size=0", lambda i: serving.kv_waste([3], 8, 0), ValueError, "block_size")),
    pure("serving.simulate_batching", NUMBERS,
         Edge("max_batch=0", lambda i: serving.simulate_batching([(0, 2, 2)], "static", max_batch=0),
              ValueError, "max_batch"),
         Edge("empty-trace", lambda i: serving.simulate_batching([], "continuous"), ValueError, "trace")),

    # --- snippets/softmax.py ---------------------------------------------------------------------------------
    Entry("softmax.naive_softmax", lambda i: softmax.naive_softmax(i.batched(3, 4))),
    Entry("softmax.stable_softmax", lambda i: softmax.stable_softmax(i.batched(3, 4, scale=20)), accurate=1e-2),
    Entry("softmax.stable_log_softmax", lambda i: softmax.stable_log_softmax(i.batched(3, 4, scale=20)),
          accurate=1e-2),
    pure("softmax.exp_overflow_threshold", "reads torch.finfo of a dtype"),
    Entry("softmax.softmax_jacobian", lambda i: softmax.softmax_jacobian(i.batched(3, 4))),
    Entry("softmax.softmax_vjp", lambda i: softmax.softmax_vjp(i.batched(3, 4).softmax(-1), i.batched(3, 4))),
    Entry("softmax.softmax_entropy", lambda i: softmax.softmax_entropy(i.batched(3, 4), beta=2.0),
          edges=(Edge("one-hot", lambda i: softmax.softmax_entropy(torch.tensor([[0.0, -1e4]]), beta=1.0)),)),
    Entry("softmax.softmax_max_weight", lambda i: softmax.softmax_max_weight(i.batched(3, 4), beta=2.0)),
    Entry("softmax.attention_logits", lambda i: softmax.attention_logits(i.batched(3, 4), i.batched(5, 4), "linear")),
    Entry("softmax.masked_softmax", lambda i: softmax.masked_softmax(i.batched(3, 4), i.batched_mask(3, 4)),
          accurate=1e-2,
          edges=(Edge("fully-masked-row", lambda i: softmax.masked_softmax(_cpu(1, 2, 3), torch.tensor(
              [[[True] * 3, [False] * 3]])), check=lambda w: bool((w[0, 1] == 0).all())),)),
    Entry("softmax.masked_cross_entropy",
          lambda i: softmax.masked_cross_entropy(i.batched(3, 5), i.batched_ints(5, 3)),
          batch=False, why_batch="one mean over every kept position of the batch",
          edges=(Edge("all-ignored", lambda i: softmax.masked_cross_entropy(_cpu(2, 3), torch.full((2,), -100)),
                      ValueError, "ignore_index"),)),
    Entry("softmax.qk_rmsnorm", lambda i: softmax.qk_rmsnorm(i.batched(3, 4)),
          edges=(Edge("zero-vector", lambda i: softmax.qk_rmsnorm(_cpu(1, 4))),)),
    Entry("softmax.soft_cap", lambda i: softmax.soft_cap(i.batched(3, 4), 5.0),
          edges=(Edge("cap=0", lambda i: softmax.soft_cap(_cpu(1, 2), 0), ValueError, "cap"),)),
    Entry("softmax.softmax_with_sink", lambda i: softmax.softmax_with_sink(i.batched(3, 4), 0.5)),
    Entry("softmax.fp8_round_trip", lambda i: softmax.fp8_round_trip(i.batched(3, 4)),
          meta="skips the scaling when max|x| = 0 (reads a value)",
          batch=False, why_batch="one scale for the whole tensor by contract (per-tensor fp8 scaling)",
          edges=(Edge("zeros", lambda i: softmax.fp8_round_trip(_cpu(2, 2)), check=lambda t: not bool(t.any())),)),

    # --- snippets/sparse_attention.py -----------------------------------------------------------------------
    Entry("sparse_attention.sliding_window_mask",
          lambda i: sparse_attention.sliding_window_mask(5, 2, 1, device=i.device),
          dtypes=(F64,), why_dtypes="a bool mask", batch=False, why_batch=NOT_BATCHED),
    pure("sparse_attention.receptive_field", NUMBERS),
    Entry("sparse_attention.sliding_window_attention",
          lambda i: sparse_attention.sliding_window_attention(*_qkv(i, 7), 3),
          edges=(Edge("empty", lambda i: sparse_attention.sliding_window_attention(*(_cpu(1, 0, 2),) * 3, 2),
                      ValueError, "q is empty"),
                 Edge("window>n", lambda i: sparse_attention.sliding_window_attention(*_masked_row(3)[:3], 9)))),
    Entry("sparse_attention.rolling_cache_decode",
          lambda i: sparse_attention.rolling_cache_decode(*_qkv(i, 7), 3, sinks=1),
          edges=(Edge("empty", lambda i: sparse_attention.rolling_cache_decode(*(_cpu(1, 0, 2),) * 3, 2),
                      ValueError, "q is empty"),)),
    Entry("sparse_attention.moba_mask", lambda i: sparse_attention.moba_mask(i.batched(7, 4), i.batched(7, 4), 2, 2),
          dtypes=FP64_ONLY, why_dtypes="a bool mask; bf16 gate scores can tie and pick another block"),
    Entry("sparse_attention.moba_attention",
          lambda i: sparse_attention.moba_attention(*_qkv(i, 7), 2, 2),
          edges=(Edge("block_size=0", lambda i: sparse_attention.moba_attention(*_masked_row(3)[:3], 0, 1),
                      ValueError, "block_size"),)),

    # --- snippets/stats.py -----------------------------------------------------------------------------------
    pure("stats.bootstrap_mean_interval", NUMBERS,
         Edge("no-values", lambda i: stats.bootstrap_mean_interval([]), ValueError, "values")),
    pure("stats.t_interval", NUMBERS,
         Edge("one-value", lambda i: stats.t_interval([1.0]), ValueError, "two values")),
    pure("stats.SeedSummary", "a dataclass of Python numbers"),
    pure("stats.summarize", NUMBERS,
         Edge("one-value", lambda i: stats.summarize([2.0]), check=lambda s: s.mean == 2.0)),
    pure("stats.SeedComparison", "a dataclass of Python numbers"),
    pure("stats.compare_seeds", NUMBERS,
         Edge("one-seed", lambda i: stats.compare_seeds([1.0], [2.0]),
              check=lambda c: c.verdict == stats.VERDICTS[2]),
         Edge("length-mismatch", lambda i: stats.compare_seeds([1.0, 2.0], [2.0]), ValueError, "one value per seed")),
    pure("stats.describe", TEXT),
    pure("stats.BleuComparison", "a dataclass of Python numbers"),
    pure("stats.bleu_paired_bootstrap", TEXT),

    # --- snippets/training.py -----------------------------------------------------------------------------
    pure("training.noam_lr", NUMBERS, Edge("step=0", lambda i: training.noam_lr(0), ValueError, "step")),
    Entry("training.label_smoothed_nll",
          lambda i: training.label_smoothed_nll(i.batched(5), i.batched_ints(5)),
          batch=False, why_batch="one mean over the kept positions",
          meta="drops the ignored positions by boolean indexing (a size known only from the values)",
          edges=(Edge("eps=1", lambda i: training.label_smoothed_nll(_cpu(2, 3), torch.zeros(2, dtype=torch.long),
                                                                     eps=1.0), ValueError, "eps"),
                 Edge("all-ignored", lambda i: training.label_smoothed_nll(_cpu(2, 3), torch.full((2,), -100)),
                      ValueError, "ignore_index"))),
    pure("training.token_batches", NUMBERS,
         Edge("longer-than-max_tokens", lambda i: training.token_batches([5, 2], 4), ValueError, "max_tokens"),
         Edge("no-lengths", lambda i: training.token_batches([], 4), check=lambda b: b == [])),
    pure("training.padding_waste", NUMBERS),
    Entry("training.adam_step", lambda i: _adam(i), batch=False, why_batch="updates a list of parameters",
          edges=(Edge("grads-shorter", lambda i: training.adam_step([_cpu(2), _cpu(2)], [_cpu(2)], {}, 0.1),
                      ValueError, "grads"),)),
    pure("training.training_flops", NUMBERS),

    # --- snippets/transformer.py ---------------------------------------------------------------------------
    Entry("transformer.PositionalEncoding",
          lambda i: i.module(lambda: transformer.PositionalEncoding(8, 16, dropout=0.0))(i.batched(5, 8))),
    Entry("transformer.TokenEmbedding", lambda i: i.module(lambda: transformer.TokenEmbedding(11, 8))(_ids(i))),
    Entry("transformer.check_token_ids", lambda i: [_ids(i), transformer.check_token_ids(_ids(i), 11, "tokens")][0],
          dtypes=(F64,), why_dtypes="integer ids; returns nothing",
          edges=(Edge("out-of-vocab", lambda i: transformer.check_token_ids(torch.tensor([[11]]), 11, "tokens"),
                      ValueError, "tokens"),)),
    Entry("transformer.PositionwiseFeedForward",
          lambda i: i.module(lambda: transformer.PositionwiseFeedForward(8, 16, dropout=0.0))(i.batched(5, 8))),
    Entry("transformer.add_and_norm",
          lambda i: transformer.add_and_norm(i.batched(5, 8), lambda x: 2 * x, i.module(lambda: torch.nn.LayerNorm(8)),
                                             torch.nn.Dropout(0.0), norm_first=True)),
    Entry("transformer.EncoderLayer",
          lambda i: i.module(lambda: transformer.EncoderLayer(8, 2, 16, dropout=0.0))(i.batched(5, 8),
                                                                                   i.batched_mask(1, 5))),
    Entry("transformer.check_d_model", lambda i: [transformer.check_d_model(i.batched(3, 8), 8, "x"), i.batched(3, 8)][1],
          edges=(Edge("wrong-d", lambda i: transformer.check_d_model(_cpu(1, 2, 4), 8, "x"), ValueError, "x"),)),
    Entry("transformer.DecoderLayer",
          lambda i: i.module(lambda: transformer.DecoderLayer(8, 2, 16, dropout=0.0))(
              i.batched(4, 8), i.batched(5, 8), attention.causal_mask(4, device=i.device), i.batched_mask(1, 5))),
    Entry("transformer.Transformer", lambda i: i.module(_tiny_transformer)(_ids(i), _ids(i, n=4))),
    Entry("transformer.DecoderCache", lambda i: _decode_step(i)),
    pure("transformer.encoder_layer_param_count", NUMBERS),
    pure("transformer.decoder_layer_param_count", NUMBERS),
    pure("transformer.transformer_param_count", NUMBERS),
    pure("transformer.count_parameters", "counts a module's parameters"),

    # --- snippets/variations.py ------------------------------------------------------------------------------
    pure("variations.table3", "the paper's table as Python data"),
    pure("variations.table3_param_count", NUMBERS,
         Edge("zero-layers", lambda i: variations.table3_param_count(0, 8, 16, 2, 4, 4, 11), ValueError, "n_layers")),
    pure("variations.linearize_tree", TEXT),
    pure("variations.row_param_count", NUMBERS),
    pure("variations.build_reader_model", "builds a model on the caller's default device (tests/ch10 use meta)"),
    pure("variations.rounds_to", NUMBERS),
]


# --- helpers the entries above call ------------------------------------------------------------------------
def _values_unchecked_restores():
    with checks.values_unchecked():
        off = attention.VALUE_CHECKS is False
    return off and attention.VALUE_CHECKS is True


def _groups_on_meta():
    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Linear(3, 2))
    return embedding.shared_parameter_groups(model)


def _decode_step(i):
    model = i.module(_tiny_transformer)
    src = _ids(i)
    cache = transformer.DecoderCache(model, model.encode(src), None)
    first = decoding.decode_step(model, torch.zeros(i.B, 1, dtype=torch.long, device=i.device), cache)
    second = decoding.decode_step(model, _ids(i, n=1), cache)
    return first, second


def _gradient_norms(i):
    layers = i.module(lambda: torch.nn.ModuleList([torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)]))
    out = norms.gradient_norms_per_layer(layers, i.module(lambda: norms.RMSNorm(4)),
                                         i.module(lambda: torch.nn.Linear(4, 5)), i.batched(3, 4),
                                         i.batched_ints(5, 3))
    return torch.tensor(out["param_grad"] + out["input_grad"])


def _depth_cached(i):
    """depth_attention_cached on 3 sources, each (batch, 4, 6), with their keys; α back to batch first."""
    values = [i.batched(4, 6) for _ in range(3)]
    h, alpha = residual_stream.depth_attention_cached(values, [residual_stream.rms_keys(v) for v in values],
                                                      i.randn(6), i.randn(6))
    return [h, alpha.transpose(0, 1)]


def _merge_partial(i):
    m, z, acc = residual_stream.inter_block_phase(i.batched(3, 4, 6).transpose(0, 1), i.randn(2, 6))
    return residual_stream.merge_partial(m[0], z[0], acc[0], i.batched(4, 6), i.randn(6), i.randn(6))


def _two_phase(i):
    layers = [i.module(lambda: torch.nn.Linear(6, 6)) for _ in range(2)]
    hs, summary = residual_stream.block_attnres_two_phase(i.batched(3, 4, 6).transpose(0, 1), layers, i.randn(2, 6))
    return hs, summary


def _adam(i):
    params, grads = [i.randn(3), i.randn(2, 2)], [i.randn(3), i.randn(2, 2)]
    state = {}
    training.adam_step(params, grads, state, 0.1, weight_decay=0.01, decoupled=True)
    return params + state["m"] + state["v"]
