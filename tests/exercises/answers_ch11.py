"""第 11 章练习的答案（见 answers_ch01.py 的说明）。"""

import math

import torch


def _check_q(values, query):
    if query.shape != (values.shape[-1],):
        raise ValueError(f"query {tuple(query.shape)} must be (d,) = ({values.shape[-1]},)")


def _depth(values, query, gain=None, eps=1e-6, norm_keys=True, norm_values=False, scale=False, dim=0):
    _check_q(values, query)
    keys = values / torch.sqrt(values.pow(2).mean(-1, keepdim=True) + eps) if norm_keys else values
    if gain is not None:
        keys = keys * gain
    logits = keys @ query
    if scale:
        logits = logits / math.sqrt(values.shape[-1])
    alpha = torch.softmax(logits, dim=dim)
    vals = keys if norm_values else values
    return (alpha.unsqueeze(-1) * vals).sum(0)


def depth_normalized_values(values, query, gain=None, eps=1e-6):
    return _depth(values, query, gain, eps, norm_values=True)


def depth_no_key_norm(values, query, gain=None, eps=1e-6):
    return _depth(values, query, gain, eps, norm_keys=False)


def depth_scaled(values, query, gain=None, eps=1e-6):
    return _depth(values, query, gain, eps, scale=True)


def depth_softmax_over_tokens(values, query, gain=None, eps=1e-6):
    return _depth(values, query, gain, eps, dim=-1)


def depth_no_check(values, query, gain=None, eps=1e-6):
    keys = values / torch.sqrt(values.pow(2).mean(-1, keepdim=True) + eps)
    if gain is not None:
        keys = keys * gain
    logits = (keys[..., : query.shape[0]] * query[: keys.shape[-1]]).sum(-1)
    return (torch.softmax(logits, 0).unsqueeze(-1) * values).sum(0)


def depth_functional(values, query, gain=None, eps=1e-6):
    """写法不同：用 F.rms_norm 与 einsum。"""
    if query.dim() != 1 or query.shape[0] != values.shape[-1]:
        raise ValueError(f"query must be ({values.shape[-1]},), got query {tuple(query.shape)}")
    keys = torch.nn.functional.rms_norm(values, (values.shape[-1],), weight=gain, eps=eps)
    alpha = torch.einsum("s...d,d->s...", keys, query).softmax(0)
    return torch.einsum("s...,s...d->...d", alpha, values)


def _phase(blocks, queries, gains=None, eps=1e-6, global_max=False, norm_acc=False, check=True):
    if check and queries.shape[-1] != blocks.shape[-1]:
        raise ValueError(f"queries {tuple(queries.shape)} do not match d = {blocks.shape[-1]}")
    keys = blocks / torch.sqrt(blocks.pow(2).mean(-1, keepdim=True) + eps)
    q = queries if gains is None else queries * gains
    logits = torch.einsum("sd,n...d->sn...", q, keys)
    m = logits.amax(dim=tuple(range(1, logits.dim())), keepdim=False) if global_max else logits.max(1).values
    if global_max:
        m = m.view(-1, *([1] * (logits.dim() - 2))).expand(logits.shape[:1] + logits.shape[2:]).clone()
    p = torch.exp(logits - m.unsqueeze(1))
    return m, p.sum(1), torch.einsum("sn...,n...d->s...d", p, keys if norm_acc else blocks)


def phase_global_max(blocks, queries, gains=None, eps=1e-6):
    return _phase(blocks, queries, gains, eps, global_max=True)


def phase_normalized_acc(blocks, queries, gains=None, eps=1e-6):
    return _phase(blocks, queries, gains, eps, norm_acc=True)


def phase_normalized_output(blocks, queries, gains=None, eps=1e-6):
    m, z, acc = _phase(blocks, queries, gains, eps)
    return m, z, acc / z.unsqueeze(-1)  # 提前归一化了：第二阶段就没法再并进新来源


def phase_no_check(blocks, queries, gains=None, eps=1e-6):
    return _phase(blocks, queries[..., : blocks.shape[-1]], gains, eps, check=False)


def phase_loop(blocks, queries, gains=None, eps=1e-6):
    """写法不同：每个查询单独调一次 logsumexp。"""
    if queries.dim() != 2 or queries.shape[1] != blocks.shape[-1]:
        raise ValueError(f"queries must be (S, {blocks.shape[-1]}), got queries {tuple(queries.shape)}")
    keys = blocks * torch.rsqrt(blocks.pow(2).mean(-1, keepdim=True) + eps)
    ms, zs, accs = [], [], []
    for i in range(queries.shape[0]):
        q = queries[i] if gains is None else queries[i] * gains[i]
        logit = keys @ q  # (N, ...)
        m = logit.max(0).values
        w = torch.exp(logit - m)
        ms.append(m)
        zs.append(w.sum(0))
        accs.append((w.unsqueeze(-1) * blocks).sum(0))
    return torch.stack(ms), torch.stack(zs), torch.stack(accs)


def _merge(m, z, acc, partial, query, gain=None, eps=1e-6, rescale=True, norm_key=True, norm_value=False, check=True):
    if check and partial is not None and partial.shape != acc.shape:
        raise ValueError(f"partial {tuple(partial.shape)} != acc {tuple(acc.shape)}")
    if partial is None:
        return acc / z.unsqueeze(-1)
    key = partial / torch.sqrt(partial.pow(2).mean(-1, keepdim=True) + eps) if norm_key else partial
    logit = key @ (query if gain is None else query * gain)
    m_new = torch.maximum(m, logit)
    old = torch.exp(m - m_new) if rescale else torch.ones_like(m)
    new = torch.exp(logit - m_new)
    value = key if norm_value else partial
    return (acc * old.unsqueeze(-1) + new.unsqueeze(-1) * value) / (z * old + new).unsqueeze(-1)


def merge_no_rescale(m, z, acc, partial, query, gain=None, eps=1e-6):
    return _merge(m, z, acc, partial, query, gain, eps, rescale=False)


def merge_raw_key(m, z, acc, partial, query, gain=None, eps=1e-6):
    return _merge(m, z, acc, partial, query, gain, eps, norm_key=False)


def merge_normalized_value(m, z, acc, partial, query, gain=None, eps=1e-6):
    return _merge(m, z, acc, partial, query, gain, eps, norm_value=True)


def merge_none_returns_acc(m, z, acc, partial, query, gain=None, eps=1e-6):
    return acc if partial is None else _merge(m, z, acc, partial, query, gain, eps)


def merge_no_check(m, z, acc, partial, query, gain=None, eps=1e-6):
    return _merge(m, z, acc, partial, query, gain, eps, check=False)


def merge_log_space(m, z, acc, partial, query, gain=None, eps=1e-6):
    """写法不同：在 log 空间里合并：log z' = logaddexp(m + log z, logit)。"""
    if partial is None:
        return acc / z[..., None]
    if partial.shape != acc.shape:
        raise ValueError(f"partial has shape {tuple(partial.shape)}, acc has {tuple(acc.shape)}")
    key = partial * torch.rsqrt(partial.pow(2).mean(-1, keepdim=True) + eps)
    logit = key @ (query if gain is None else query * gain)
    log_total = torch.logaddexp(m + torch.log(z), logit)
    return acc * torch.exp(m - log_total)[..., None] + partial * torch.exp(logit - log_total)[..., None]


WRONG = {
    "ch11.depth_attention": [("zero-query", depth_normalized_values), ("matches", depth_no_key_norm),
                             ("matches", depth_scaled), ("zero-query", depth_softmax_over_tokens),
                             ("bad-query", depth_no_check)],
    "ch11.inter_block_phase": [("matches", phase_global_max), ("matches", phase_normalized_acc),
                               ("matches", phase_normalized_output), ("bad-queries", phase_no_check)],
    "ch11.merge_partial": [("matches", merge_no_rescale), ("matches", merge_raw_key),
                           ("matches", merge_normalized_value), ("first-layer", merge_none_returns_acc),
                           ("bad-partial", merge_no_check)],
}
RIGHT = {"ch11.depth_attention": [depth_functional], "ch11.inter_block_phase": [phase_loop],
         "ch11.merge_partial": [merge_log_space]}
