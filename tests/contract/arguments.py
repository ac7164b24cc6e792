"""The argument table of the reader code: one row per (public callable, parameter), grouped by module in the
order of the registry (tests/contract/registry.py). How a row reads: tests/contract/spec.py (To, Refuses, Holds,
Elsewhere, Data). The tests: tests/contract/test_arguments.py.

``args(target, kwargs, obj=..., use=..., **rows)``: ``kwargs(i)`` gives the baseline call's arguments by name
(``i`` is the inputs maker of tests/contract/inputs.py, float64 on the CPU); a ``To``/``Refuses`` row replaces
one of them. Sizes are tiny: the table runs in ``make test-fast``.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from snippets import (additive, attention, bpe, decoding, embedding, ffn, flash, linear_attention, llama, lstm, mla,
                      multihead, norms, positional, residual_stream, ring, rnn, serving, softmax, sparse_attention,
                      stats, training, transformer, variations)
from tests.contract.inputs import Inputs
from tests.contract.spec import Elsewhere, Holds, Refuses, To, args, data

F64 = torch.float64
QKV = "the attended queries, keys and values: every value enters the output"
X = "the input tensor: every value enters the output"
IDS = "token ids: each id selects an embedding row"
MODEL = "the model: its weights compute the output"
TEXT = "the text itself: every character is kept or counted"
FIELD = "a dataclass field, stored as given"
NUMS = "the values themselves: every one enters the result"
DROPOUT = "dropout p > 0 changes the output in training mode and not in eval mode"

CH02 = "tests/ch02/test_ch02_transformer.py"
CH09 = "tests/ch09/test_ch09_decoding_and_bleu.py"
CH07 = "tests/ch07/test_ch07_positional_encoding.py"
CH13 = "tests/ch13/test_ch13_long_context.py"


# --- helpers ------------------------------------------------------------------------------------------------
def _raises(fn, exc, word):
    """fn() raises exc and the message names ``word``."""
    try:
        fn()
    except exc as e:
        return word in str(e)
    return False


def _unchecked(fn):
    """fn(True) refuses a bad input; fn(False) skips the check and returns."""
    try:
        fn(True)
    except (ValueError, TypeError):
        fn(False)
        return True
    return False


def _dropout_honoured(build, run):
    """Dropout 0.5 in training mode changes the output; in eval mode (or with p = 0) it does not."""
    torch.manual_seed(0)
    m, m0 = build(0.5).double(), build(0.0).double()
    m0.load_state_dict(m.state_dict())
    m.eval()
    same_eval = torch.equal(run(m), run(m0.eval()))
    m.train()
    torch.manual_seed(1)
    return same_eval and not torch.equal(run(m), run(m0))


def _calls(module, name, fn):
    """How many times fn() calls ``module.name``."""
    original, count = getattr(module, name), [0]

    def counting(*a, **k):
        count[0] += 1
        return original(*a, **k)
    setattr(module, name, counting)
    try:
        fn()
    finally:
        setattr(module, name, original)
    return count[0]


def _flops(fn):
    with FlopCounterMode(display=False) as fc:
        fn()
    return fc.get_total_flops()


def _filled(i, batch=2, heads=2, t=3, d=4, static=False):
    """A KVCache already holding t positions."""
    cache = attention.KVCache(static=static)
    cache.update(i.batched(heads, t, d)[:batch], i.batched(heads, t, d)[:batch])
    return cache


def _mask_key0(i, n):
    """A padding mask (batch, 1, n) that hides key 0 from every query."""
    mask = torch.ones(i.B, 1, n, dtype=torch.bool)
    mask[..., 0] = False
    return mask


def _qkv(i, n=5, n_k=None, d=4, d_v=3):
    n_k = n if n_k is None else n_k
    return dict(q=i.batched(n, d), k=i.batched(n_k, d), v=i.batched(n_k, d_v))


def _tiny_transformer(dropout=0.0):
    return transformer.Transformer(vocab_size=11, d_model=8, num_heads=2, num_layers=1, d_ff=16, dropout=dropout,
                                   max_len=16)


def _tiny_llama():
    return llama.LlamaDecoder(vocab_size=11, d_model=8, n_layers=1, n_heads=2, n_kv_heads=1, d_ff=16)


def _counter_step(vocab=5):
    """A step function whose favourite next token is (last token + 1) mod vocab."""
    def step(prefixes):
        favourite = (prefixes[:, -1] + 1) % vocab
        return torch.nn.functional.one_hot(favourite, vocab).double().mul(3).log_softmax(-1)
    return step


def _greedy_first_token():
    """The first token greedy_decode's baseline generates in row 0."""
    i = Inputs()
    kw = GREEDY(i)
    return int(decoding.greedy_decode(**kw)[0][0, 0])


def _greedy_pads_finished_rows(i):
    """A row that has produced eos_id holds eos_id from there on, whatever the other rows still generate.
    (Seed 10, untied: rows [6, 8, 6, 8, …] and [6, 0, 7, 9, 6, 5, 6, 8]; eos 8 ends row 0 at step 2, row 1 at 8.)"""
    torch.manual_seed(10)
    model = transformer.Transformer(vocab_size=11, d_model=8, num_heads=2, num_layers=1, d_ff=16, dropout=0.0,
                                    max_len=16, tie_weights=False, scale_embedding=False).double().eval()
    src = i.batched_ints(11, 5)
    full = decoding.greedy_decode(model, src, 8, bos_id=0)
    eos = int(full[0, 1])
    if torch.equal(full[0], full[1]) or int((full[1] == eos).nonzero()[0]) <= 1:
        return False  # the rows must finish at different steps
    out = decoding.greedy_decode(model, src, 8, bos_id=0, eos_id=eos)
    for row in range(out.shape[0]):
        hits = (full[row] == eos).nonzero()
        if len(hits) == 0:
            continue
        first = int(hits[0])
        if not (torch.equal(out[row, :first + 1], full[row, :first + 1]) and bool((out[row, first:] == eos).all())):
            return False
    return True


def GREEDY(i):
    return dict(model=i.module(_tiny_transformer), src=i.batched_ints(11, 5), max_new_tokens=3, bos_id=0,
                src_mask=None, eos_id=None, return_logits=True)


def _llama_caches(i):
    model = i.module(_tiny_llama)
    caches = model.new_caches()
    model(i.batched_ints(11, 3), caches)
    return caches


def _decoder_cache_kwargs(i):
    model = i.module(_tiny_transformer)
    i.model = model
    return dict(model=model, memory=model.encode(i.batched_ints(11, 5)), src_mask=None)


def _decoder_cache_use(i, cache):
    return decoding.decode_step(i.model, torch.zeros(i.B, 1, dtype=torch.long), cache)


def _adam(i):
    params = [i.randn(3), i.randn(2, 2)]
    grads = [i.randn(3), i.randn(2, 2)]
    state = {"t": 1, "m": [i.randn(3), i.randn(2, 2)], "v": [i.uniform(3), i.uniform(2, 2)]}  # after one step
    return dict(params=params, grads=grads, state=state, lr=0.1, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.01,
                decoupled=False)


def _first_target(key):
    def make(i):
        return int(ARG_KWARGS[key](Inputs())[{"softmax": "targets", "training": "target"}[key]].flatten()[0])
    return make


SMALL_ROW = {"N": 1, "d_model": 8, "d_ff": 16, "h": 2, "d_k": 4, "d_v": 4, "p_drop": 0.1}

ARG_KWARGS = {
    "softmax": lambda i: dict(logits=i.batched(3, 5), targets=i.batched_ints(5, 3), ignore_index=-100),
    "training": lambda i: dict(logits=i.randn(6, 5), target=i.ints(5, 6), eps=0.1, ignore_index=-100),
}


def _merge_kwargs(i):
    m, z, acc = (t[0] for t in residual_stream.inter_block_phase(i.batched(3, 4, 6).transpose(0, 1), i.randn(2, 6)))
    return dict(m=m, z=z, acc=acc, partial=i.batched(4, 6), query=i.randn(6), gain=None, eps=1e-6)


def _module_shapes(m):
    return [(n, tuple(p.shape)) for n, p in m.named_parameters()]


ARGUMENTS = [
    # --- snippets/additive.py -------------------------------------------------------------------------------
    args("additive.additive_scores",
         lambda i: dict(query=i.batched(4, 5), key=i.batched(6, 3), w_q=i.randn(5, 7), w_k=i.randn(3, 7),
                        v_a=i.randn(7), b_h=i.randn(7)),
         **data("query key w_q w_k v_a", "the queries, keys and the hidden layer's weights: every value enters"),
         b_h=To(None)),
    args("additive.additive_attention",
         lambda i: dict(query=i.batched(4, 5), key=i.batched(6, 3), value=i.batched(6, 2), w_q=i.randn(5, 7),
                        w_k=i.randn(3, 7), v_a=i.randn(7), mask=i.batched_mask(4, 6), b_h=i.randn(7)),
         **data("query key value w_q w_k v_a", "the attended tensors and the hidden layer's weights: every value enters"),
         mask=To(None), b_h=To(None)),
    args("additive.AdditiveAttention.__init__", lambda i: dict(d_q=5, d_key=3, d_h=7, bias=True),
         use=lambda i, m: m(i.batched(4, m.w_q.shape[0]), i.batched(6, m.w_k.shape[0]), i.batched(6, 2)),
         d_q=(To(6), Refuses(0)), d_key=(To(4), Refuses(0)), d_h=(To(8), Refuses(0)),
         bias=Holds(lambda i: additive.AdditiveAttention(5, 3, 7, bias=False).b_h is None
                    and additive.AdditiveAttention(5, 3, 7).b_h.shape == (7,),
                    "bias=False has no b_h (it starts at 0, so only the parameter shows it)")),
    args("additive.AdditiveAttention.forward",
         lambda i: dict(query=i.batched(4, 5), key=i.batched(6, 3), value=i.batched(6, 2), mask=i.batched_mask(4, 6)),
         obj=lambda i: i.module(lambda: additive.AdditiveAttention(5, 3, 7)),
         **data("query key value", QKV), mask=To(None)),
    args("additive.attention_cost",
         lambda i: dict(kind="additive", batch=1, n_q=2, n_k=3, d_q=4, d_key=4, d_h=4, d_v=7, bias=False),
         kind=(To("dot"), Refuses("mul")), batch=(To(2), Refuses(0)), n_q=(To(3), Refuses(0)),
         n_k=(To(4), Refuses(0)), d_q=(To(5), Refuses(0)), d_key=(To(5), Refuses(0)), d_h=(To(5), Refuses(0)),
         d_v=(To(5), Refuses(0)),
         bias=(To(True), Holds(lambda i: _raises(lambda: additive.attention_cost("dot", 1, 2, 3, 4, 4, 4, 7, bias=True),
                                                  ValueError, "bias"),
                                "kind='dot' has no hidden-layer bias: bias=True is refused, not ignored"))),

    # --- snippets/attention.py ------------------------------------------------------------------------------
    args("attention.scaled_dot_product_attention",
         lambda i: dict(**_qkv(i, 4, 6), mask=i.batched_mask(4, 6), check_inputs=True),
         **data("q k v", QKV), mask=To(None),
         check_inputs=Holds(lambda i: _unchecked(lambda c: attention.scaled_dot_product_attention(
             torch.zeros(2, 2, 3, dtype=F64), *(torch.zeros(1, 2, 3, dtype=F64),) * 2, check_inputs=c)),
             "check_inputs=False lets q with other batch dims than k through, broadcast (probes time it)")),
    args("attention.causal_mask", lambda i: dict(n=5, device=None),
         n=(To(4), Refuses(0)), device=To("meta")),
    args("attention.padding_mask", lambda i: dict(lengths=i.lengths(6), n=6),
         **data("lengths", "each row's length sets that row's mask"), n=(To(7), Refuses(0))),
    args("attention.MultiHeadAttention.__init__", lambda i: dict(d_model=8, num_heads=2, bias=True, d_k=None),
         use=lambda i, m: m(*(i.batched(5, m.d_model),) * 3),
         d_model=(To(12), Refuses(0)), num_heads=(To(4), Refuses(3)), bias=To(False), d_k=(To(2), Refuses(0))),
    args("attention.MultiHeadAttention.forward",
         lambda i: dict(query=i.batched(4, 8), key=i.batched(5, 8), value=i.batched(5, 8), mask=None, cache=None),
         obj=lambda i: i.module(lambda: attention.MultiHeadAttention(8, 2)),
         **data("query key value", QKV), mask=To(make=lambda i: i.batched_mask(4, 5)),
         cache=To(make=lambda i: _filled(i))),
    args("attention.KVCache.__init__", lambda i: dict(static=False), use=lambda i, c: c,
         static=Elsewhere(f"{CH02}::test_attention_cache_is_an_argument_of_forward")),
    args("attention.KVCache.update", lambda i: dict(k=i.batched(2, 3, 4), v=i.batched(2, 3, 4)),
         obj=lambda i: attention.KVCache(), **data("k v", "the new positions' keys and values, stored as given")),
    args("attention.restricted_attention",
         lambda i: dict(**_qkv(i, 6, 6), r=1, mask=i.batched_mask(1, 6), check_inputs=True),
         **data("q k v", QKV), r=(To(2), Refuses(-1)), mask=To(None),
         check_inputs=Holds(lambda i: _unchecked(lambda c: attention.restricted_attention(
             torch.zeros(2, 3, 2, dtype=F64), *(torch.zeros(1, 3, 2, dtype=F64),) * 2, 1, check_inputs=c)),
             "check_inputs=False lets q with other batch dims than k through, broadcast (probes time it)")),
    args("attention.online_softmax_update",
         lambda i: dict(m=i.batched(3, 1), l=i.batched_uniform(3, 1, lo=0.5, hi=2), acc=i.batched(3, 2),
                        s=i.batched(3, 4), v_blk=i.batched(4, 2)),
         **data("m l acc s v_blk", "the running statistics and the new block: every value enters the update")),
    args("attention.online_softmax_attention",
         lambda i: dict(**_qkv(i, 4, 6), block=2, mask=i.batched_mask(4, 6)),
         **data("q k v", QKV), mask=To(None),
         block=(Holds(lambda i: _calls(attention, "online_softmax_update", lambda: attention.online_softmax_attention(
             *_qkv(i, 4, 6).values(), block=2)) == 2 * 3, "block=2 on n_q=4, n_k=6: 2 × 3 block updates"),
             Refuses(0))),

    # --- snippets/bpe.py --------------------------------------------------------------------------------------
    args("bpe.pretokenize", lambda i: dict(text="a b"), **data("text", TEXT)),
    args("bpe.count_pairs", lambda i: dict(words={("a", "b"): 2}), **data("words", "each word's symbols and count")),
    args("bpe.merge_word", lambda i: dict(symbols=("a", "b", "c"), pair=("a", "b")),
         **data("symbols", "the word's symbols, each kept or merged"), pair=To(("b", "c"))),
    args("bpe.bpe_train", lambda i: dict(corpus="ab ab abc", num_merges=3),
         **data("corpus", TEXT), num_merges=(To(1), Refuses(0))),
    args("bpe.bpe_encode", lambda i: dict(text="ab abc", merges=[("a", "b")]),
         **data("text", TEXT), merges=To([])),
    args("bpe.bpe_decode", lambda i: dict(tokens=["▁ab", "▁c"]), **data("tokens", "every token is joined")),
    args("bpe.bpe_vocab", lambda i: dict(corpus="ab c", merges=[("a", "b")]),
         **data("corpus", TEXT), merges=To([])),

    # --- snippets/decoding.py ---------------------------------------------------------------------------------
    args("decoding.decode_step",
         lambda i: dict(model=(m := i.module(_tiny_transformer)), token=i.batched_ints(11, 1),
                        cache=transformer.DecoderCache(m, m.encode(i.batched_ints(11, 5)))),
         **data("model", MODEL), **data("token", IDS),
         **data("cache", "the decoding state: the source memory and the past keys and values are attended")),
    args("decoding.greedy_decode", GREEDY,
         **data("model", MODEL), **data("src", IDS), max_new_tokens=(To(2), Refuses(0)), bos_id=To(1),
         src_mask=To(make=lambda i: i.batched_mask(1, 5)), return_logits=To(False),
         eos_id=(To(make=lambda i: _greedy_first_token()),
                 Holds(_greedy_pads_finished_rows, "a row that produced eos_id is padded with eos_id"), Refuses(11))),
    args("decoding.length_penalty", lambda i: dict(length=5, alpha=0.6), length=To(3), alpha=To(1.0)),
    args("decoding.greedy_search", lambda i: dict(step_log_probs=_counter_step(), bos=0, eos=3, max_len=6),
         **data("step_log_probs", "the model: its log-probabilities pick each token"), bos=To(1), eos=To(2),
         max_len=(To(2), Refuses(0))),
    args("decoding.beam_search",
         lambda i: dict(step_log_probs=_counter_step(), bos=0, eos=3, beam_size=2, max_len=6, alpha=0.6),
         **data("step_log_probs", "the model: its log-probabilities rank the hypotheses"), bos=To(1), eos=To(2),
         beam_size=(Elsewhere(f"{CH09}::test_greedy_loses_to_a_beam_of_two"), Refuses(0)),
         max_len=(To(2), Refuses(0)),
         alpha=Elsewhere(f"{CH09}::test_without_length_penalty_beam_search_prefers_the_empty_output")),
    args("decoding.BeamStepper.__init__", lambda i: dict(model=i.module(_tiny_transformer), src=i.batched_ints(11, 4)[:1]),
         use=lambda i, s: s(torch.zeros(1, 1, dtype=torch.long)),
         **data("model", MODEL), **data("src", IDS)),
    args("decoding.BeamStepper.__call__", lambda i: dict(prefixes=torch.zeros(1, 1, dtype=torch.long)),
         obj=lambda i: decoding.BeamStepper(i.module(_tiny_transformer), i.batched_ints(11, 4)[:1]),
         **data("prefixes", "the prefixes' last tokens are decoded")),
    args("decoding.tokenize_13a", lambda i: dict(line="a, b."), **data("line", TEXT)),
    args("decoding.split_compounds", lambda i: dict(line="a-b"), **data("line", TEXT)),
    args("decoding.ngrams", lambda i: dict(tokens=["a", "b", "a"], n=2),
         **data("tokens", "every token is counted"), n=(To(1), Refuses(0))),
    args("decoding.bleu_statistics",
         lambda i: dict(hypothesis="a, b c.", reference="a b c d", max_order=4, tokenize=decoding.tokenize_13a),
         **data("hypothesis reference", TEXT), max_order=(To(2), Refuses(0)), tokenize=To(str.split)),
    args("decoding.corpus_bleu",
         lambda i: dict(hypotheses=["a b x c d."], references=["a b y c d ."], max_order=4,
                        tokenize=decoding.tokenize_13a, smooth="exp"),
         **data("hypotheses references", TEXT), max_order=(To(2), Refuses(0)), tokenize=To(str.split),
         smooth=(To("none"), Refuses("add1"))),
    args("decoding.average_checkpoints", lambda i: dict(state_dicts=[{"w": i.randn(3)}, {"w": i.randn(3)}]),
         **data("state_dicts", "every checkpoint enters the average")),
    args("decoding.speculative_step",
         lambda i: dict(target_probs=i.uniform(3, 5).softmax(-1), draft_probs=i.uniform(2, 5).softmax(-1),
                        draft_tokens=torch.tensor([1, 2]), uniforms=i.uniform(2)),
         **data("target_probs draft_probs draft_tokens uniforms",
                "the two models' distributions, the draft and the coins: each decides acceptance")),
    args("decoding.expected_tokens_per_round", lambda i: dict(accept=0.7, gamma=4), accept=To(0.5), gamma=To(3)),
    args("decoding.training_flops", lambda i: dict(hours=12, gpus=8, gpu_type="P100"),
         hours=To(3), gpus=To(1), gpu_type=To("K80")),

    # --- snippets/embedding.py --------------------------------------------------------------------------------
    args("embedding.one_hot_lookup", lambda i: dict(tokens=i.batched_ints(11, 5), weight=i.randn(11, 4)),
         **data("tokens", IDS), **data("weight", "the embedding table: its rows are the output")),
    args("embedding.shared_parameter_groups", lambda i: dict(model=nn.Linear(2, 2)),
         **data("model", "every parameter of the model is grouped")),
    args("embedding.embedding_to_pe_ratio", lambda i: dict(weight=i.randn(5, 4), scale=1.0, pe=i.randn(3, 4)),
         **data("weight pe", "the two tables: their norms are the ratio"), scale=To(2.0)),

    # --- snippets/ffn.py ----------------------------------------------------------------------------------------
    args("ffn.ffn_memory_terms", lambda i: dict(w1=i.randn(6, 4), b1=i.randn(6), w2=i.randn(4, 6), x=i.batched(3, 4)),
         **data("w1 b1 w2 x", "the FFN's weights and input: every value enters the slots")),
    args("ffn.SwiGLUFFN.__init__", lambda i: dict(d_model=4, d_ff=6),
         use=lambda i, m: m(i.batched(3, m.w_gate.in_features)), d_model=To(5), d_ff=To(8)),
    args("ffn.SwiGLUFFN.forward", lambda i: dict(x=i.batched(3, 4)), obj=lambda i: i.module(lambda: ffn.SwiGLUFFN(4, 6)),
         **data("x", X)),
    args("ffn.swiglu_hidden_size", lambda i: dict(d_model=512, multiple_of=256, ffn_dim_multiplier=None),
         d_model=To(4096), multiple_of=To(1), ffn_dim_multiplier=To(1.5)),
    args("ffn.ffn_param_count", lambda i: dict(d=8, d_ff=32), d=To(4), d_ff=To(16)),
    args("ffn.swiglu_param_count", lambda i: dict(d=8, d_ff=32), d=To(4), d_ff=To(16)),
    args("ffn.mha_param_count", lambda i: dict(d=8), d=To(4)),
    args("ffn.encoder_layer_flops", lambda i: dict(n=10, d=8, d_ff=32), n=To(5), d=To(4), d_ff=To(16)),
    args("ffn.moe_ffn_counts", lambda i: dict(d=8, d_ff=32, num_experts=4, top_k=2),
         d=To(4), d_ff=To(16), num_experts=To(8), top_k=(To(1), Refuses(0))),

    # --- snippets/flash.py ----------------------------------------------------------------------------------------
    args("flash.flash_attention", lambda i: dict(**_qkv(i, 5, 7), causal=False, block_q=2, block_k=3),
         **data("q k v", QKV), causal=(To(True), Refuses(1)),
         block_q=(Holds(lambda i: _calls(flash, "online_softmax_update", lambda: flash.flash_attention(
             *_qkv(i, 5, 7).values(), block_q=2, block_k=3)) == 3 * 3, "block_q=2 on n_q=5: 3 query blocks"),
             Refuses(0)),
         block_k=(Holds(lambda i: _calls(flash, "online_softmax_update", lambda: flash.flash_attention(
             *_qkv(i, 5, 7).values(), block_q=5, block_k=2)) == 4, "block_k=2 on n_k=7: 4 key blocks"),
             Refuses(0))),
    args("flash.flash_block_sizes", lambda i: dict(d=64, sram_elems=65536, order="flash"),
         d=To(128), sram_elems=To(32768), order=(To("flash2"), Refuses("flash3"))),
    args("flash.hbm_accesses", lambda i: dict(n=64, d=8, sram_bytes=512, method="flash", bytes_per_value=2),
         n=(To(32), Refuses(0)), d=(To(16), Refuses(0)), sram_bytes=(To(1024), Refuses(8)),
         method=(To("flash2"), Refuses("tiled")), bytes_per_value=(To(4), Refuses(0))),
    args("flash.hbm_closed_form", lambda i: dict(n=64, d=8, sram_bytes=512, method="flash", bytes_per_value=2),
         n=(To(32), Refuses(0)), d=(To(16), Refuses(0)), sram_bytes=(To(1024), Refuses(8)),
         method=(To("flash2"), Refuses("tiled")), bytes_per_value=(To(4), Refuses(0))),
    args("flash.ridge_point", lambda i: dict(peak_flops=1e15, bytes_per_s=3e12), peak_flops=To(2e15),
         bytes_per_s=To(1e12)),
    args("flash.attainable_flops", lambda i: dict(intensity=10.0, peak_flops=1e15, bytes_per_s=3e12),
         intensity=To(20.0), peak_flops=To(1e13), bytes_per_s=To(1e12)),
    args("flash.linear_intensity", lambda i: dict(tokens=16, d_in=64, d_out=64, bytes_per_value=2),
         tokens=To(8), d_in=To(32), d_out=To(32), bytes_per_value=To(4)),
    args("flash.decode_attention_intensity", lambda i: dict(n_heads=8, n_kv_heads=2, bytes_per_value=2),
         n_heads=To(4), n_kv_heads=To(1), bytes_per_value=To(4)),
    args("flash.mla_decode_flops_per_position", lambda i: dict(n_heads=4, d_head=8, d_latent=16, d_rope=4, absorbed=False),
         n_heads=(To(2), Refuses(0)), d_head=(To(4), Refuses(0)), d_latent=(To(8), Refuses(0)),
         d_rope=(To(2), Refuses(0)), absorbed=(To(True), Refuses(1))),
    args("flash.mla_decode_intensity",
         lambda i: dict(n_heads=4, d_head=8, d_latent=16, d_rope=4, absorbed=False, bytes_per_value=2),
         n_heads=To(2), d_head=To(4), d_latent=To(8), d_rope=To(2), absorbed=To(True),
         bytes_per_value=(To(4), Refuses(0))),
    args("flash.compute_bound_batch",
         lambda i: dict(d_model=4096, peak_flops=989.5e12, bytes_per_s=3.35e12, bytes_per_value=2),
         d_model=(To(8192), Refuses(64)), peak_flops=(To(500e12), Refuses(0)), bytes_per_s=(To(2e12), Refuses(0)),
         bytes_per_value=(To(1), Refuses(0))),

    # --- snippets/linear_attention.py -----------------------------------------------------------------------
    args("linear_attention.linear_attention_parallel", lambda i: _qkv(i), **data("q k v", QKV)),
    args("linear_attention.linear_attention_recurrent", lambda i: _qkv(i), **data("q k v", QKV)),
    args("linear_attention.linear_attention_chunked", lambda i: dict(**_qkv(i), chunk=2),
         **data("q k v", QKV),
         chunk=(Holds(lambda i: _calls(linear_attention, "linear_attention_parallel",
                                       lambda: linear_attention.linear_attention_chunked(*_qkv(i).values(), 2)) == 3,
                      "chunk=2 on n=5: 3 chunks"), Refuses(0))),
    args("linear_attention.elu_feature_map", lambda i: dict(x=i.batched(3, 4)), **data("x", X)),
    args("linear_attention.normalized_linear_attention", lambda i: dict(**_qkv(i), feature_map=linear_attention.elu_feature_map),
         **data("q k v", QKV), feature_map=To(torch.exp)),
    args("linear_attention.decay_linear_attention_recurrent", lambda i: dict(**_qkv(i), a=i.batched_uniform(5)),
         **data("q k v", QKV), **data("a", "the decay gates: each scales the state")),
    args("linear_attention.semiseparable_mask", lambda i: dict(a=i.batched_uniform(5)),
         **data("a", "the decay gates: each enters the products")),
    args("linear_attention.decay_linear_attention_parallel", lambda i: dict(**_qkv(i), a=i.batched_uniform(5)),
         **data("q k v", QKV), **data("a", "the decay gates: each scales the state")),
    args("linear_attention.delta_rule_step",
         lambda i: dict(s=i.batched(3, 4), k_t=i.batched(4, unit=True), v_t=i.batched(3),
                        beta_t=i.batched_uniform(lo=0.1, hi=1.0)),
         **data("s k_t v_t beta_t", "the state, the key, the value and the step size all enter the update")),
    args("linear_attention.delta_rule_recurrent",
         lambda i: dict(q=i.batched(5, 4), k=i.batched(5, 4, unit=True), v=i.batched(5, 3),
                        beta=i.batched_uniform(5, lo=0.1, hi=1.0)),
         **data("q k v beta", "the queries, keys, values and step sizes all enter the recurrence")),
    args("linear_attention.delta_rule_chunked",
         lambda i: dict(q=i.batched(5, 4), k=i.batched(5, 4, unit=True), v=i.batched(5, 3),
                        beta=i.batched_uniform(5, lo=0.1, hi=1.0), chunk=2),
         **data("q k v beta", "the queries, keys, values and step sizes all enter the recurrence"),
         chunk=(Elsewhere(f"{CH13}::test_delta_chunked"), Refuses(0))),

    # --- snippets/llama.py ----------------------------------------------------------------------------------
    args("llama.RotaryGroupedQueryAttention.__init__",
         lambda i: dict(d_model=16, n_heads=4, n_kv_heads=2, base=10000.0, rope="half", bias=False),
         use=lambda i, m: m(i.batched(5, m.d_model)),
         d_model=(To(24), Refuses(0)), n_heads=(To(2), Refuses(3)), n_kv_heads=(To(1), Refuses(3)), base=To(100.0),
         rope=(To("interleaved"), Refuses("full")), bias=To(True)),
    args("llama.RotaryGroupedQueryAttention.forward", lambda i: dict(x=i.batched(5, 16), cache=None),
         obj=lambda i: i.module(lambda: llama.RotaryGroupedQueryAttention(16, 4, 2)),
         **data("x", X), cache=To(make=lambda i: _filled(i, heads=2, d=4))),
    args("llama.LlamaBlock.__init__",
         lambda i: dict(d_model=16, n_heads=4, n_kv_heads=2, d_ff=16, eps=1e-6, base=10000.0, rope="half"),
         use=lambda i, m: m(i.batched(5, m.attn.d_model)),
         d_model=To(24), n_heads=To(2), n_kv_heads=To(1), d_ff=To(8), eps=To(10.0), base=To(100.0),
         rope=To("interleaved")),
    args("llama.LlamaBlock.forward", lambda i: dict(x=i.batched(5, 16), cache=None),
         obj=lambda i: i.module(lambda: llama.LlamaBlock(16, 4, 2, 16)),
         **data("x", X), cache=To(make=lambda i: _filled(i, heads=2, d=4))),
    args("llama.LlamaDecoder.__init__",
         lambda i: dict(vocab_size=11, d_model=8, n_layers=1, n_heads=2, n_kv_heads=1, d_ff=16, eps=1e-6, base=10000.0,
                        rope="half", tie_weights=False),
         use=lambda i, m: m(i.batched_ints(11, 5)),
         vocab_size=To(13), d_model=To(12), n_layers=To(2), n_heads=To(4), n_kv_heads=To(2), d_ff=To(8),
         eps=To(10.0), base=To(100.0), rope=To("interleaved"), tie_weights=To(True)),
    args("llama.LlamaDecoder.forward", lambda i: dict(tokens=i.batched_ints(11, 5), caches=None),
         obj=lambda i: i.module(_tiny_llama), **data("tokens", IDS),
         caches=(To(make=_llama_caches), Refuses(make=lambda i: []))),
    args("llama.greedy_generate",
         lambda i: dict(model=i.module(_tiny_llama), prompt=i.batched_ints(11, 5), max_new_tokens=3, eos_id=None),
         **data("model", MODEL), **data("prompt", IDS), max_new_tokens=(To(2), Refuses(0)),
         eos_id=(To(make=lambda i: int(llama.greedy_generate(i.module(_tiny_llama), Inputs().batched_ints(11, 5), 1)[0, -1])),
                 Refuses(11))),

    # --- snippets/lstm.py -------------------------------------------------------------------------------------
    args("lstm.LSTMCell.__init__", lambda i: dict(input_size=3, hidden_size=4, forget_bias=None),
         use=lambda i, m: m(i.batched(m.input_size), (i.batched(m.hidden_size), i.batched(m.hidden_size))),
         input_size=(To(2), Refuses(0)), hidden_size=(To(5), Refuses(0)), forget_bias=To(5.0)),
    args("lstm.LSTMCell.gates", lambda i: dict(x_t=i.batched(3), h_prev=i.batched(4)),
         obj=lambda i: i.module(lambda: lstm.LSTMCell(3, 4)), **data("x_t h_prev", X)),
    args("lstm.LSTMCell.forward", lambda i: dict(x_t=i.batched(3), state=(i.batched(4), i.batched(4))),
         obj=lambda i: i.module(lambda: lstm.LSTMCell(3, 4)), **data("x_t state", X)),
    args("lstm.LSTMLayer.__init__", lambda i: dict(input_size=3, hidden_size=4, forget_bias=None),
         use=lambda i, m: m(i.batched(5, m.cell.input_size)),
         input_size=(To(2), Refuses(0)), hidden_size=(To(5), Refuses(0)), forget_bias=To(5.0)),
    args("lstm.LSTMLayer.forward", lambda i: dict(x=i.batched(5, 3), state=None),
         obj=lambda i: i.module(lambda: lstm.LSTMLayer(3, 4)),
         **data("x", X), state=To(make=lambda i: (i.batched(4), i.batched(4)))),
    args("lstm.cell_state_jacobians",
         lambda i: dict(cell=i.module(lambda: lstm.LSTMCell(3, 4)), x=i.randn(5, 3), h0=i.randn(4), c0=i.randn(4), k=2),
         **data("cell x h0 c0", "the cell's weights, the sequence and the start state all enter the chain"),
         k=(To(1), Refuses(0))),

    # --- snippets/mla.py ------------------------------------------------------------------------------------------
    args("mla.MultiHeadLatentAttention.__init__", lambda i: dict(d_model=8, n_heads=2, d_head=4, d_latent=6, d_rope=2),
         use=lambda i, m: m(i.batched(5, m.d_model)),
         d_model=(To(12), Refuses(0)), n_heads=(To(3), Refuses(0)), d_head=(To(2), Refuses(0)),
         d_latent=(To(5), Refuses(16)), d_rope=(To(4), Refuses(3))),
    args("mla.MultiHeadLatentAttention.latent_cache", lambda i: dict(x=i.batched(5, 8)),
         obj=lambda i: i.module(lambda: mla.MultiHeadLatentAttention(8, 2, 4, 6, 2)), **data("x", X)),
    args("mla.MultiHeadLatentAttention.forward", lambda i: dict(x=i.batched(5, 8), absorbed=False),
         obj=lambda i: i.module(lambda: mla.MultiHeadLatentAttention(8, 2, 4, 6, 2)), **data("x", X),
         absorbed=Holds(lambda i: (lambda m, x: _flops(lambda: m(x, absorbed=True)) != _flops(lambda: m(x))
                                   and torch.allclose(m(x, absorbed=True), m(x)))(
             i.module(lambda: mla.MultiHeadLatentAttention(8, 2, 4, 6, 2)), i.batched(5, 8)),
             "absorbed=True takes the other path (another FLOP count) to the same output")),

    # --- snippets/multihead.py -----------------------------------------------------------------------------------
    args("multihead.multi_head_loop",
         lambda i: dict(mha=i.module(lambda: attention.MultiHeadAttention(8, 2)), query=i.batched(4, 8),
                        key=i.batched(5, 8), value=i.batched(5, 8), mask=i.batched_mask(4, 5)),
         **data("mha", "the attention module: its weights are used"), **data("query key value", QKV), mask=To(None)),
    args("multihead.head_contributions",
         lambda i: dict(mha=i.module(lambda: attention.MultiHeadAttention(8, 2)), concat=i.batched(4, 8)),
         **data("mha", "the attention module: its W^O is split"), **data("concat", X)),
    args("multihead.GroupedQueryAttention.__init__", lambda i: dict(d_model=8, n_heads=4, n_kv_heads=2, bias=True),
         use=lambda i, m: m(*(i.batched(5, m.d_model),) * 3),
         d_model=(To(16), Refuses(0)), n_heads=(To(2), Refuses(3)), n_kv_heads=(To(1), Refuses(3)), bias=To(False)),
    args("multihead.GroupedQueryAttention.forward",
         lambda i: dict(query=i.batched(4, 8), key=i.batched(5, 8), value=i.batched(5, 8), mask=None, cache=None),
         obj=lambda i: i.module(lambda: multihead.GroupedQueryAttention(8, 4, 2)),
         **data("query key value", QKV), mask=To(make=lambda i: i.batched_mask(4, 5)),
         cache=To(make=lambda i: _filled(i, heads=2, d=2))),
    args("multihead.attention_params", lambda i: dict(d_model=8, n_heads=4, n_kv_heads=2, bias=True),
         d_model=To(16), n_heads=To(2), n_kv_heads=(To(1), Refuses(3)), bias=To(False)),
    args("multihead.kv_cache_bytes",
         lambda i: dict(n_layers=2, seq_len=16, n_kv_heads=2, d_head=8, bytes_per_value=2, batch=1),
         n_layers=(To(1), Refuses(-1)), seq_len=(To(8), Refuses(-1)), n_kv_heads=(To(1), Refuses(-1)),
         d_head=(To(4), Refuses(-1)), bytes_per_value=(To(4), Refuses(-1)), batch=(To(2), Refuses(-1))),
    args("multihead.mla_cache_bytes",
         lambda i: dict(n_layers=2, seq_len=16, d_latent=8, d_rope=2, bytes_per_value=2, batch=1),
         n_layers=(To(1), Refuses(-1)), seq_len=(To(8), Refuses(-1)), d_latent=(To(4), Refuses(-1)),
         d_rope=(To(4), Refuses(-1)), bytes_per_value=(To(4), Refuses(-1)), batch=(To(2), Refuses(-1))),

    # --- snippets/norms.py -------------------------------------------------------------------------------------
    args("norms.LayerNorm.__init__", lambda i: dict(d=4, eps=1e-5), use=lambda i, m: m(i.batched(3, m.d)),
         d=To(5), eps=To(10.0)),
    args("norms.LayerNorm.forward", lambda i: dict(u=i.batched(3, 4)), obj=lambda i: i.module(lambda: norms.LayerNorm(4)),
         **data("u", X)),
    args("norms.RMSNorm.__init__", lambda i: dict(d=4, eps=1e-6), use=lambda i, m: m(i.batched(3, m.d)),
         d=To(5), eps=To(10.0)),
    args("norms.RMSNorm.forward", lambda i: dict(x=i.batched(3, 4)), obj=lambda i: i.module(lambda: norms.RMSNorm(4)),
         **data("x", X)),
    args("norms.layernorm_jacobian", lambda i: dict(u=i.randn(4), gain=None, eps=1e-5),
         **data("u", X), gain=To(make=lambda i: i.randn(4)), eps=To(10.0)),
    args("norms.rmsnorm_jacobian", lambda i: dict(x=i.randn(4), gain=None, eps=1e-6),
         **data("x", X), gain=To(make=lambda i: i.randn(4)), eps=To(10.0)),
    args("norms.batchnorm_over_tokens", lambda i: dict(x=i.batched(3, 4), keep=None, eps=1e-5),
         **data("x", X), keep=To(make=lambda i: i.batched_mask(3)), eps=To(10.0)),
    args("norms.xavier_init_", lambda i: dict(module=nn.Linear(2, 2)), **data("module", "every linear layer in it is set")),
    args("norms.gradient_norms_per_layer", lambda i: dict(
        layers=i.module(lambda: nn.ModuleList([nn.Linear(4, 4)])), final_norm=i.module(lambda: norms.RMSNorm(4)),
        head=i.module(lambda: nn.Linear(4, 5)), x=i.batched(3, 4), targets=i.batched_ints(5, 3)),
         **data("layers final_norm head x targets", "the network, its input and targets all enter the loss")),

    # --- snippets/positional.py ----------------------------------------------------------------------------------
    args("positional.sinusoidal_positional_encoding", lambda i: dict(max_len=6, d_model=8, dtype=F64, base=10000.0),
         max_len=(To(5), Refuses(0)), d_model=(To(6), Refuses(5)), dtype=To(torch.float32), base=(To(100.0), Refuses(1.0))),
    args("positional.pe_offset_matrix", lambda i: dict(k=1, d_model=8, dtype=F64, base=10000.0),
         k=To(2), d_model=(To(6), Refuses(5)), dtype=To(torch.float32), base=To(100.0)),
    args("positional.rope_frequencies", lambda i: dict(d=8, base=10000.0, dtype=F64, device=None),
         d=(To(6), Refuses(5)), base=To(100.0), dtype=To(torch.float32), device=To("meta")),
    args("positional.apply_rope", lambda i: dict(x=i.batched(5, 8), positions=None, base=10000.0, theta=None),
         **data("x", X), positions=To(make=lambda i: torch.arange(5) + 3), base=To(100.0),
         theta=(To(make=lambda i: positional.rope_frequencies(8, 100.0, F64)),
                Holds(lambda i: _raises(lambda: positional.apply_rope(i.batched(5, 8), base=100.0,
                                                                      theta=positional.rope_frequencies(8, dtype=F64)),
                                        ValueError, "base"),
                      "with theta given, a base other than the default is refused (theta already holds it)"))),
    args("positional.rotate_half", lambda i: dict(x=i.batched(5, 8)), **data("x", X)),
    args("positional.apply_rope_half", lambda i: dict(x=i.batched(5, 8), positions=None, base=10000.0, theta=None),
         **data("x", X), positions=To(make=lambda i: torch.arange(5) + 3), base=To(100.0),
         theta=(To(make=lambda i: positional.rope_frequencies(8, 100.0, F64)),
                Holds(lambda i: _raises(lambda: positional.apply_rope_half(
                    i.batched(5, 8), base=100.0, theta=positional.rope_frequencies(8, dtype=F64)), ValueError, "base"),
                      "with theta given, a base other than the default is refused (theta already holds it)"))),
    args("positional.interleaved_to_half", lambda i: dict(d=8), d=To(4)),
    args("positional.alibi_slopes", lambda i: dict(n_heads=6, device=None),
         n_heads=(To(4), Refuses(0)), device=To("meta")),
    args("positional.alibi_bias", lambda i: dict(n_heads=6, n=5, device=None),
         n_heads=(To(4), Refuses(0)), n=(To(4), Refuses(0)), device=To("meta")),
    args("positional.scaled_rope_frequencies",
         lambda i: dict(d=8, base=1e4, method="yarn", factor=4.0, original_len=None, alpha=None, beta=None, ramp=None,
                        low_freq_factor=None, high_freq_factor=None, device=None),
         d=(To(6), Refuses(5)), base=To(100.0), method=(To("pi"), Refuses("linear")), factor=(To(2.0), Refuses(0.5)),
         original_len=(To(64), Refuses(0)), alpha=(To(2.0), Refuses(40.0)), beta=(To(16.0), Refuses(0.5)),
         ramp=(To("index"), Refuses("linear")),
         low_freq_factor=(Refuses(1.0), Elsewhere(f"{CH07}::test_scaled_frequencies_honour_their_own_arguments")),
         high_freq_factor=(Refuses(4.0), Elsewhere(f"{CH07}::test_scaled_frequencies_honour_their_own_arguments")),
         device=To("meta")),
    args("positional.yarn_mscale", lambda i: dict(factor=4.0), factor=To(2.0)),
    args("positional.PositionalSelfAttention.__init__",
         lambda i: dict(d_model=8, num_heads=2, position="rope", base=10000.0),
         use=lambda i, m: m(*(i.batched(5, m.d_model),) * 3),
         d_model=(To(12), Refuses(0)), num_heads=(To(4), Refuses(3)), position=(To("none"), Refuses("learned")),
         base=(To(100.0), Holds(lambda i: _raises(lambda: positional.PositionalSelfAttention(8, 2, "alibi", base=100.0),
                                                  ValueError, "base"),
                                "position='alibi' or 'none' does not rotate: a base other than the default is refused"))),
    args("positional.PositionalSelfAttention.forward",
         lambda i: dict(query=(x := i.batched(5, 8)), key=x, value=x, mask=None, cache=None),
         obj=lambda i: i.module(lambda: positional.PositionalSelfAttention(8, 2, "alibi")),
         **data("query key value", QKV), mask=To(make=lambda i: _mask_key0(i, 5)),
         cache=(To(make=lambda i: _filled(i)), Refuses(make=lambda i: attention.KVCache(static=True),
                                                      raises=NotImplementedError))),

    # --- snippets/residual_stream.py ----------------------------------------------------------------------------
    args("residual_stream.depth_weights",
         lambda i: dict(values=i.batched(3, 4, 6).transpose(0, 1), query=i.randn(6), gain=None, eps=1e-6),
         **data("values query", "the sources (keys = values) and the pseudo-query set each logit"),
         gain=To(make=lambda i: i.randn(6)), eps=To(10.0)),
    args("residual_stream.depth_attention",
         lambda i: dict(values=i.batched(3, 4, 6).transpose(0, 1), query=i.randn(6), gain=None, eps=1e-6),
         **data("values query", "the sources (keys = values) and the pseudo-query set each logit"),
         gain=To(make=lambda i: i.randn(6)), eps=To(10.0)),
    args("residual_stream.rms_keys", lambda i: dict(value=i.batched(4, 6), eps=1e-6), **data("value", X), eps=To(10.0)),
    args("residual_stream.depth_attention_cached",
         lambda i: dict(values=(v := [i.batched(4, 6) for _ in range(3)]),
                        keys=[residual_stream.rms_keys(t) for t in v], query=i.randn(6), gain=None),
         **data("values keys query", "the sources, their keys and the pseudo-query set each logit and the sum"),
         gain=To(make=lambda i: i.randn(6))),
    args("residual_stream.inter_block_phase",
         lambda i: dict(blocks=i.batched(3, 4, 6).transpose(0, 1), queries=i.randn(2, 6), gains=None, eps=1e-6),
         **data("blocks queries", "the block summaries and the pseudo-queries set each logit"),
         gains=To(make=lambda i: i.randn(2, 6)), eps=To(10.0)),
    args("residual_stream.merge_partial", _merge_kwargs,
         **data("m z acc", "phase one's row: every value enters the merge"), partial=To(None),
         query=To(make=lambda i: i.randn(6)), gain=To(make=lambda i: i.randn(6)), eps=To(10.0)),
    args("residual_stream.block_attnres_two_phase",
         lambda i: dict(blocks=i.batched(3, 4, 6).transpose(0, 1),
                        sublayers=[i.module(lambda: nn.Linear(6, 6)) for _ in range(2)], queries=i.randn(2, 6),
                        gains=None, eps=1e-6),
         **data("blocks sublayers queries", "the summaries, the layers and their pseudo-queries all enter"),
         gains=To(make=lambda i: i.randn(2, 6)), eps=To(10.0)),
    args("residual_stream.AttnResDecoder.__init__",
         lambda i: dict(vocab_size=11, n_layers=2, d_model=8, n_heads=2, d_ff=16, n_blocks=None, residual="attnres",
                        max_len=16),
         use=lambda i, m: m(i.batched_ints(11, 5)),
         vocab_size=To(13), n_layers=To(1), d_model=To(12), n_heads=To(4), d_ff=To(8),
         n_blocks=(To(2), Refuses(5)), residual=(To("standard"), Refuses("none")), max_len=Refuses(4)),
    args("residual_stream.AttnResDecoder.forward", lambda i: dict(tokens=i.batched_ints(11, 5), record=False, mask=None),
         obj=lambda i: i.module(lambda: residual_stream.AttnResDecoder(11, 2, 8, 2, 16, n_blocks=2, max_len=16)),
         **data("tokens", IDS),
         record=Holds(lambda i: (lambda m, t: m(t) is not None and m.trace is None and m(t, record=True) is not None
                                 and len(m.trace["outputs"]) == 4)(
             i.module(lambda: residual_stream.AttnResDecoder(11, 2, 8, 2, 16, max_len=16)), i.batched_ints(11, 5)),
             "record=True keeps the trace (4 sublayer outputs); False keeps none"),
         mask=(To(make=lambda i: sparse_attention.sliding_window_mask(5, 2)),
               Refuses(make=lambda i: torch.ones(5, 5, dtype=torch.bool)))),

    # --- snippets/ring.py -------------------------------------------------------------------------------------
    args("ring.ring_attention", lambda i: dict(**_qkv(i, 6, 6), n_devices=3, causal=False),
         **data("q k v", QKV), causal=To(True),
         n_devices=(Holds(lambda i: _calls(ring, "online_softmax_update", lambda: ring.ring_attention(
             *_qkv(i, 6, 6).values(), 3)) == 9, "n_devices=3: 3 devices × 3 ring steps"), Refuses(0))),

    # --- snippets/rnn.py ----------------------------------------------------------------------------------------
    args("rnn.RNNCell.__init__", lambda i: dict(input_size=3, hidden_size=4),
         use=lambda i, m: m(i.batched(m.input_size), i.batched(m.hidden_size)),
         input_size=(To(2), Refuses(0)), hidden_size=(To(5), Refuses(0))),
    args("rnn.RNNCell.forward", lambda i: dict(x_t=i.batched(3), h_prev=i.batched(4)),
         obj=lambda i: i.module(lambda: rnn.RNNCell(3, 4)), **data("x_t h_prev", X)),
    args("rnn.RNNLayer.__init__", lambda i: dict(input_size=3, hidden_size=4),
         use=lambda i, m: m(i.batched(5, m.cell.input_size)),
         input_size=(To(2), Refuses(0)), hidden_size=(To(5), Refuses(0))),
    args("rnn.RNNLayer.forward", lambda i: dict(x=i.batched(5, 3), h0=None),
         obj=lambda i: i.module(lambda: rnn.RNNLayer(3, 4)), **data("x", X), h0=To(make=lambda i: i.batched(4))),
    args("rnn.bptt_jacobian", lambda i: dict(hs=i.randn(5, 4).tanh(), w_hh=i.randn(4, 4), k=1, t=3),
         **data("hs w_hh", "the hidden states and W_hh are the chain's factors"),
         k=(To(2), Refuses(-1)), t=(To(2), Refuses(5))),
    args("rnn.gradient_norms", lambda i: dict(hs=i.randn(5, 4).tanh(), w_hh=i.randn(4, 4), max_k=3),
         **data("hs w_hh", "the hidden states and W_hh are the chain's factors"), max_k=(To(2), Refuses(0))),

    # --- snippets/serving.py --------------------------------------------------------------------------------------
    args("serving.BlockPool.__init__",
         lambda i: dict(n_blocks=4, block_size=2, n_heads=2, d_head=3, dtype=torch.float32, device=None),
         use=lambda i, p: p.k,
         n_blocks=(To(5), Refuses(0)), block_size=(To(3), Refuses(0)), n_heads=(To(1), Refuses(0)),
         d_head=(To(4), Refuses(0)), dtype=To(F64), device=To("meta")),
    args("serving.PagedKVCache.__init__", lambda i: dict(pool=serving.BlockPool(8, 2, 2, 3, dtype=F64)),
         use=lambda i, c: c.update(i.batched(2, 3, 3), i.batched(2, 3, 3)),
         **data("pool", "the physical blocks the cache writes into")),
    args("serving.PagedKVCache.update", lambda i: dict(k=i.batched(2, 3, 3), v=i.batched(2, 3, 3)),
         obj=lambda i: serving.PagedKVCache(serving.BlockPool(8, 2, 2, 3, dtype=F64)),
         **data("k v", "the new positions' keys and values, stored as given")),
    args("serving.quantize_int8", lambda i: dict(x=i.batched(3, 4), dim=-1), **data("x", X), dim=To(0)),
    args("serving.dequantize_int8",
         lambda i: dict(q=i.batched_ints(127, 3, 4, low=-127).to(torch.int8), scale=i.batched(3, 1)),
         **data("q scale", "the codes and their scales: every value is multiplied")),
    args("serving.make_trace", lambda i: dict(n_requests=4, seed=0, prompt=(16, 512), output=(16, 512), mean_gap=2.0),
         n_requests=(To(3), Holds(lambda i: serving.make_trace(0) == [], "n_requests=0 terminates with no request")),
         seed=To(1), prompt=To((4, 8)), output=To((4, 8)), mean_gap=To(10.0)),
    args("serving.kv_waste", lambda i: dict(lengths=[3, 5], max_len=8, block_size=2),
         **data("lengths", "each request's length is counted"), max_len=(To(10), Refuses(0)),
         block_size=(To(4), Refuses(0))),
    args("serving.simulate_batching",
         lambda i: dict(trace=[(0, 4, 3), (0, 2, 5), (1, 3, 2)], policy="continuous", max_batch=2, record_lengths=False),
         **data("trace", "every request is scheduled"), policy=(To("static"), Refuses("fifo")),
         max_batch=(To(1), Refuses(0)), record_lengths=To(True)),

    # --- snippets/softmax.py -------------------------------------------------------------------------------------
    args("softmax.naive_softmax", lambda i: dict(z=i.batched(3, 4)), **data("z", X)),
    args("softmax.stable_softmax", lambda i: dict(z=i.batched(3, 4)), **data("z", X)),
    args("softmax.stable_log_softmax", lambda i: dict(z=i.batched(3, 4)), **data("z", X)),
    args("softmax.exp_overflow_threshold", lambda i: dict(dtype=torch.float32),
         dtype=(To(torch.float16), Refuses(torch.int64, raises=TypeError))),
    args("softmax.softmax_jacobian", lambda i: dict(z=i.batched(3, 4)), **data("z", X)),
    args("softmax.softmax_vjp", lambda i: dict(p=i.batched(3, 4).softmax(-1), grad_p=i.batched(3, 4)),
         **data("p grad_p", "the probabilities and the upstream gradient: every value enters")),
    args("softmax.softmax_entropy", lambda i: dict(z=i.batched(3, 4), beta=1.0), **data("z", X), beta=To(0.5)),
    args("softmax.softmax_max_weight", lambda i: dict(z=i.batched(3, 4), beta=1.0), **data("z", X), beta=To(0.5)),
    args("softmax.attention_logits", lambda i: dict(q=i.batched(3, 4), k=i.batched(5, 4), scale="linear"),
         **data("q k", QKV), scale=(To("sqrt"), Refuses("cube"))),
    args("softmax.masked_softmax", lambda i: dict(scores=i.batched(3, 4), mask=i.batched_mask(3, 4)),
         **data("scores", X), mask=To(None)),
    args("softmax.masked_cross_entropy", ARG_KWARGS["softmax"],
         **data("logits targets", "the logits and the targets: every kept position is averaged"),
         ignore_index=To(make=_first_target("softmax"))),
    args("softmax.qk_rmsnorm", lambda i: dict(x=i.batched(3, 4), eps=1e-6), **data("x", X), eps=To(10.0)),
    args("softmax.soft_cap", lambda i: dict(scores=i.batched(3, 4), cap=5.0), **data("scores", X),
         cap=(To(1.0), Refuses(0))),
    args("softmax.softmax_with_sink", lambda i: dict(scores=i.batched(3, 4), sink_logit=0.5), **data("scores", X),
         sink_logit=To(2.0)),
    args("softmax.fp8_round_trip", lambda i: dict(x=i.batched(3, 4), dtype=torch.float8_e4m3fn), **data("x", X),
         dtype=To(torch.float8_e5m2)),

    # --- snippets/sparse_attention.py -------------------------------------------------------------------------
    args("sparse_attention.sliding_window_mask", lambda i: dict(n=5, window=2, sinks=0, device=None),
         n=To(6), window=(To(3), Refuses(0)), sinks=(To(1), Refuses(-1)), device=To("meta")),
    args("sparse_attention.receptive_field", lambda i: dict(layers=4, window=3), layers=To(2), window=To(5)),
    args("sparse_attention.sliding_window_attention", lambda i: dict(**_qkv(i, 7), window=3),
         **data("q k v", QKV), window=(To(2), Refuses(0))),
    args("sparse_attention.rolling_cache_decode", lambda i: dict(**_qkv(i, 7), window=3, sinks=1),
         **data("q k v", QKV), window=(To(2), Refuses(0)), sinks=(To(0), Refuses(-1))),
    args("sparse_attention.moba_mask", lambda i: dict(q=i.batched(7, 4), k=i.batched(7, 4), block_size=2, top_k=2),
         **data("q k", "the queries and keys score every block"), block_size=(To(3), Refuses(0)),
         top_k=(To(1), Refuses(0))),
    args("sparse_attention.moba_attention", lambda i: dict(**_qkv(i, 7), block_size=2, top_k=2),
         **data("q k v", QKV), block_size=(To(3), Refuses(0)), top_k=(To(1), Refuses(0))),

    # --- snippets/stats.py ----------------------------------------------------------------------------------------
    args("stats.bootstrap_mean_interval",
         lambda i: dict(values=[float(x) for x in range(10)], confidence=0.95, n_resamples=200, seed=0),
         **data("values", NUMS), confidence=(To(0.5), Refuses(1.5)), n_resamples=(To(50), Refuses(0)), seed=To(1)),
    args("stats.t_interval", lambda i: dict(values=[1.0, 2.0, 4.0], confidence=0.95),
         **data("values", NUMS), confidence=(To(0.5), Refuses(1.5))),
    args("stats.SeedSummary.__init__", lambda i: {}, use=lambda i, s: s, **data(
        "values mean min max interval", FIELD)),
    args("stats.summarize", lambda i: dict(values=[1.0, 2.0, 4.0], confidence=0.95),
         **data("values", NUMS), confidence=To(0.5)),
    args("stats.SeedComparison.__init__", lambda i: {}, use=lambda i, s: s, **data(
        "seeds a b differences mean_difference n_agree bootstrap_interval t_interval interval verdict", FIELD)),
    args("stats.compare_seeds",
         lambda i: dict(a=[1.0, 2.0, 3.0], b=[1.5, 2.2, 3.9], seeds=None, confidence=0.95, resolution=0.0),
         **data("a b", NUMS), seeds=To([7, 8, 9]), confidence=To(0.5), resolution=(To(0.45), Refuses(-1.0))),
    args("stats.describe",
         lambda i: dict(c=stats.compare_seeds([1.0, 2.0, 3.0], [1.5, 2.2, 3.9]), unit="", digits=1, scale=1.0),
         **data("c", "the comparison: every field is written out"), unit=To(" BLEU"), digits=To(3), scale=To(100.0)),
    args("stats.BleuComparison.__init__", lambda i: {}, use=lambda i, s: s, **data(
        "bleu_a bleu_b difference interval p_value n_samples verdict", FIELD)),
    args("stats.bleu_paired_bootstrap",
         lambda i: dict(hyps_a=["a b c d", "e f g h", "i j k"], hyps_b=["a b c x", "e f g h", "i j y"],
                        references=["a b c d", "e f g h", "i j k"], n_samples=20, confidence=0.95),
         **data("hyps_a hyps_b references", TEXT), n_samples=(To(10), Refuses(0)), confidence=To(0.5)),

    # --- snippets/training.py ----------------------------------------------------------------------------------
    args("training.noam_lr", lambda i: dict(step=10, d_model=512, warmup=4000),
         step=(To(20), Refuses(0)), d_model=(To(256), Refuses(0)), warmup=(To(8), Refuses(0))),
    args("training.label_smoothed_nll", ARG_KWARGS["training"],
         **data("logits target", "the logits and the targets: every kept position is averaged"),
         eps=(To(0.0), Refuses(1.0)), ignore_index=To(make=_first_target("training"))),
    args("training.token_batches", lambda i: dict(lengths=[3, 1, 3, 1], max_tokens=6, sort=True),
         **data("lengths", "every example is placed"), max_tokens=(To(3), Refuses(2)), sort=To(False)),
    args("training.padding_waste", lambda i: dict(lengths=[3, 1, 2], batches=[[0, 1], [2]]),
         **data("lengths batches", "every example's length and place are counted")),
    args("training.adam_step", _adam, out=lambda kw, result: kw["params"],
         lr=To(0.5), betas=To((0.5, 0.9)), eps=To(1.0), weight_decay=To(0.5), decoupled=To(True),
         **data("params grads state", "the parameters, their gradients and the moments "
                                                                   "are read and updated in place")),
    args("training.training_flops",
         lambda i: dict(params_per_source_token=10, params_per_target_token=20, source_tokens=1e3, target_tokens=2e3),
         params_per_source_token=To(5), params_per_target_token=To(5), source_tokens=To(1.0), target_tokens=To(1.0)),

    # --- snippets/transformer.py -----------------------------------------------------------------------------
    args("transformer.PositionalEncoding.__init__", lambda i: dict(d_model=8, max_len=16, dropout=0.0),
         use=lambda i, m: m(i.batched(5, m.pe.shape[1])),
         d_model=To(6), max_len=Refuses(4),
         dropout=Holds(lambda i: _dropout_honoured(lambda p: transformer.PositionalEncoding(8, 16, p),
                                                   lambda m: m(torch.ones(1, 5, 8, dtype=F64))), DROPOUT)),
    args("transformer.PositionalEncoding.forward", lambda i: dict(x=i.batched(5, 8), offset=0),
         obj=lambda i: i.module(lambda: transformer.PositionalEncoding(8, 16, 0.0)),
         **data("x", X), offset=(To(2), Refuses(-1), Refuses(12))),
    args("transformer.TokenEmbedding.__init__", lambda i: dict(vocab_size=11, d_model=8, scale_embedding=True),
         use=lambda i, m: m(i.batched_ints(11, 5)), vocab_size=To(13), d_model=To(6), scale_embedding=To(False)),
    args("transformer.TokenEmbedding.forward", lambda i: dict(tokens=i.batched_ints(11, 5)),
         obj=lambda i: i.module(lambda: transformer.TokenEmbedding(11, 8)), **data("tokens", IDS)),
    args("transformer.check_token_ids", lambda i: dict(tokens=i.batched_ints(11, 5), vocab_size=11, name="tokens"),
         **data("tokens", "every id is checked"),
         vocab_size=Holds(lambda i: transformer.check_token_ids(torch.tensor([[10]]), 11, "t") is None
                          and _raises(lambda: transformer.check_token_ids(torch.tensor([[10]]), 10, "t"),
                                      ValueError, "[0, 10)"), "an id >= vocab_size is refused, one below is not"),
         name=Holds(lambda i: _raises(lambda: transformer.check_token_ids(torch.tensor([[11]]), 11, "prompt"),
                                      ValueError, "prompt"), "the message names the argument by name")),
    args("transformer.PositionwiseFeedForward.__init__", lambda i: dict(d_model=8, d_ff=16, dropout=0.0),
         use=lambda i, m: m(i.batched(5, m.linear1.in_features)), d_model=To(6), d_ff=To(8),
         dropout=Holds(lambda i: _dropout_honoured(lambda p: transformer.PositionwiseFeedForward(8, 16, p),
                                                   lambda m: m(torch.ones(1, 5, 8, dtype=F64))), DROPOUT)),
    args("transformer.PositionwiseFeedForward.forward", lambda i: dict(x=i.batched(5, 8)),
         obj=lambda i: i.module(lambda: transformer.PositionwiseFeedForward(8, 16, 0.0)), **data("x", X)),
    args("transformer.add_and_norm",
         lambda i: dict(x=i.batched(5, 8), sublayer=lambda x: 2 * x, norm=i.module(lambda: nn.LayerNorm(8)),
                        dropout=nn.Dropout(0.0), norm_first=True),
         **data("x sublayer norm", "the input, the sublayer and the norm each enter the output"), norm_first=To(False),
         dropout=Holds(lambda i: (lambda x, norm: not torch.equal(
             transformer.add_and_norm(x, lambda h: h, norm, nn.Dropout(0.5).train(), True),
             transformer.add_and_norm(x, lambda h: h, norm, nn.Dropout(0.0), True)))(
             torch.randn(1, 5, 8, dtype=F64), nn.LayerNorm(8).double()), "the dropout module is applied")),
    args("transformer.EncoderLayer.__init__",
         lambda i: dict(d_model=8, num_heads=2, d_ff=16, dropout=0.0, norm_first=False, eps=1e-5, d_k=None),
         use=lambda i, m: m(i.batched(5, m.d_model)),
         d_model=To(12), num_heads=To(4), d_ff=To(8), norm_first=To(True), eps=To(10.0), d_k=To(2),
         dropout=Holds(lambda i: _dropout_honoured(lambda p: transformer.EncoderLayer(8, 2, 16, p),
                                                   lambda m: m(torch.ones(1, 5, 8, dtype=F64))), DROPOUT)),
    args("transformer.EncoderLayer.forward", lambda i: dict(x=i.batched(5, 8), src_mask=None),
         obj=lambda i: i.module(lambda: transformer.EncoderLayer(8, 2, 16, dropout=0.0)),
         **data("x", X), src_mask=To(make=lambda i: _mask_key0(i, 5))),
    args("transformer.check_d_model", lambda i: dict(x=i.batched(3, 8), d_model=8, name="x"),
         **data("x", "its shape is checked"), d_model=Refuses(4),
         name=Holds(lambda i: _raises(lambda: transformer.check_d_model(torch.zeros(1, 2, 4), 8, "memory"),
                                      ValueError, "memory"), "the message names the argument by name")),
    args("transformer.DecoderLayer.__init__",
         lambda i: dict(d_model=8, num_heads=2, d_ff=16, dropout=0.0, norm_first=False, eps=1e-5, d_k=None),
         use=lambda i, m: m(i.batched(4, m.d_model), i.batched(5, m.d_model)),
         d_model=To(12), num_heads=To(4), d_ff=To(8), norm_first=To(True), eps=To(10.0), d_k=To(2),
         dropout=Holds(lambda i: _dropout_honoured(lambda p: transformer.DecoderLayer(8, 2, 16, p),
                                                   lambda m: m(torch.ones(1, 4, 8, dtype=F64),
                                                               torch.ones(1, 5, 8, dtype=F64))), DROPOUT)),
    args("transformer.DecoderLayer.forward",
         lambda i: dict(y=i.batched(4, 8), memory=i.batched(5, 8), tgt_mask=None, memory_mask=i.batched_mask(1, 5),
                        cache=None),
         obj=lambda i: i.module(lambda: transformer.DecoderLayer(8, 2, 16, dropout=0.0)),
         **data("y memory", "the target stream and the encoder output are attended"),
         tgt_mask=To(make=lambda i: attention.causal_mask(4)), memory_mask=To(None),
         cache=To(make=lambda i: (_filled(i), attention.KVCache(static=True)))),
    args("transformer.Transformer.__init__",
         lambda i: dict(vocab_size=11, d_model=8, num_heads=2, num_layers=1, d_ff=16, dropout=0.0, max_len=16,
                        tie_weights=True, norm_first=False, scale_embedding=True, d_k=None),
         use=lambda i, m: m(i.batched_ints(11, 5), i.batched_ints(11, 4)),
         vocab_size=To(13), d_model=(To(12), Refuses(9)), num_heads=(To(4), Refuses(3)), num_layers=To(2), d_ff=To(8),
         max_len=Refuses(4), tie_weights=To(False), norm_first=To(True), scale_embedding=To(False), d_k=To(2),
         dropout=Holds(lambda i: _dropout_honoured(_tiny_transformer, lambda m: m(torch.ones(1, 5, dtype=torch.long),
                                                                                  torch.ones(1, 4, dtype=torch.long))),
                       DROPOUT)),
    args("transformer.Transformer.encode", lambda i: dict(src=i.batched_ints(11, 5), src_mask=None),
         obj=lambda i: i.module(_tiny_transformer), **data("src", IDS),
         src_mask=To(make=lambda i: i.batched_mask(1, 5))),
    args("transformer.Transformer.decode",
         lambda i: dict(tgt=i.batched_ints(11, 4), memory=i.batched(5, 8), src_mask=None, tgt_mask=None, cache=None),
         obj=lambda i: i.module(_tiny_transformer), **data("tgt", IDS), **data("memory", "the encoder output is attended"),
         src_mask=To(make=lambda i: i.batched_mask(1, 5)),
         tgt_mask=(To(make=lambda i: torch.ones(4, 4, dtype=torch.bool)), Refuses(make=lambda i: attention.causal_mask(3))),
         cache=Elsewhere("tests/ch02/test_ch02_claims.py::test_kv_cache_decoding_equals_parallel_pass")),
    args("transformer.Transformer.forward",
         lambda i: dict(src=i.batched_ints(11, 5), tgt=i.batched_ints(11, 4), src_mask=None, tgt_mask=None),
         obj=lambda i: i.module(_tiny_transformer), **data("src tgt", IDS),
         src_mask=To(make=lambda i: i.batched_mask(1, 5)), tgt_mask=To(make=lambda i: torch.ones(4, 4, dtype=torch.bool))),
    args("transformer.DecoderCache.__init__", _decoder_cache_kwargs, use=_decoder_cache_use,
         **data("model", MODEL), **data("memory", "the encoder output is attended"),
         src_mask=To(make=lambda i: i.batched_mask(1, 5))),
    args("transformer.encoder_layer_param_count", lambda i: dict(d=8, d_ff=32), d=To(4), d_ff=To(16)),
    args("transformer.decoder_layer_param_count", lambda i: dict(d=8, d_ff=32), d=To(4), d_ff=To(16)),
    args("transformer.transformer_param_count",
         lambda i: dict(vocab_size=100, d_model=8, num_layers=2, d_ff=32, tie_weights=True, norm_first=False),
         vocab_size=To(50), d_model=To(4), num_layers=To(1), d_ff=To(16), tie_weights=To(False), norm_first=To(True)),
    args("transformer.count_parameters", lambda i: dict(module=nn.Linear(2, 2)),
         **data("module", "every parameter of the module is counted")),

    # --- snippets/variations.py ---------------------------------------------------------------------------------
    args("variations.table3_param_count",
         lambda i: dict(n_layers=2, d_model=8, d_ff=16, n_heads=2, d_k=4, d_v=4, vocab=11, tied=True,
                        learned_positions=0),
         n_layers=(To(1), Refuses(0)), d_model=(To(4), Refuses(0)), d_ff=(To(8), Refuses(0)),
         n_heads=(To(1), Refuses(0)), d_k=(To(2), Refuses(0)), d_v=(To(2), Refuses(0)), vocab=(To(5), Refuses(0)),
         tied=To(False), learned_positions=(To(5), Refuses(-1))),
    args("variations.linearize_tree", lambda i: dict(tree=("S", [("NP", ["a"]), "b"])),
         **data("tree", "every label and word is written out")),
    args("variations.row_param_count", lambda i: dict(row=SMALL_ROW, vocab=11, learned_positions=0),
         **data("row", "the row's sizes are counted"), vocab=To(5), learned_positions=To(5)),
    args("variations.build_reader_model", lambda i: dict(row=SMALL_ROW, vocab=11, learned_positions=0),
         **data("row", "the row's sizes build the model"),
         vocab=Holds(lambda i: _module_shapes(variations.build_reader_model(SMALL_ROW, 5))
                     != _module_shapes(variations.build_reader_model(SMALL_ROW, 11)), "vocab sets the tables' rows"),
         learned_positions=Holds(lambda i: "positional.pe" in dict(_module_shapes(
             variations.build_reader_model(SMALL_ROW, 11, learned_positions=5))), "a learned position table")),
    args("variations.rounds_to", lambda i: dict(count=65_400_000, reported_millions=65), count=To(64_000_000),
         reported_millions=To(64)),
]
