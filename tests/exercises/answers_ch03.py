"""第 03 章练习的答案（见 answers_ch01.py 的说明）。"""

import math

import torch


def _check_z(z):
    if not z.is_floating_point():
        raise TypeError(f"z must be floating point, got {z.dtype}")
    if z.shape[-1] == 0:
        raise ValueError(f"z is empty: z {tuple(z.shape)}")


def softmax_naive(z):
    _check_z(z)
    e = torch.exp(z)
    return e / e.sum(-1, keepdim=True)


def softmax_global_max(z):
    _check_z(z)
    e = torch.exp(z - z.max())  # 整个张量的最大值
    return e / e.sum(-1, keepdim=True)


def softmax_dim0(z):
    _check_z(z)
    e = torch.exp(z - z.amax(0, keepdim=True))
    return e / e.sum(0, keepdim=True)


def softmax_no_check(z):
    e = torch.exp(z - z.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def softmax_logsumexp(z):
    _check_z(z)
    return torch.exp(z - torch.logsumexp(z, dim=-1, keepdim=True))


def _check_mask(scores, mask):
    if mask is None:
        return
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be bool, got {mask.dtype}")
    try:
        torch.broadcast_shapes(mask.shape, scores.shape)
    except RuntimeError:
        raise ValueError(f"mask {tuple(mask.shape)} cannot broadcast to scores {tuple(scores.shape)}") from None
    if torch.broadcast_shapes(mask.shape, scores.shape) != scores.shape:
        raise ValueError(f"mask {tuple(mask.shape)} cannot broadcast to scores {tuple(scores.shape)}")


def ms_forgot_mask(scores, mask=None):
    _check_mask(scores, mask)
    return torch.softmax(scores, -1)


def ms_multiply_after(scores, mask=None):
    _check_mask(scores, mask)
    p = torch.softmax(scores, -1)
    return p if mask is None else p * mask  # 只在输出上乘 mask：行和不再是 1


def ms_neg_inf(scores, mask=None):
    _check_mask(scores, mask)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, -1)


def ms_minus_1e9(scores, mask=None):
    _check_mask(scores, mask)
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e9)
    return torch.softmax(scores, -1)


def ms_no_max(scores, mask=None):
    _check_mask(scores, mask)
    e = torch.exp(scores)
    if mask is not None:
        e = e.masked_fill(~mask, 0.0)
    total = e.sum(-1, keepdim=True)
    return e / torch.where(total > 0, total, torch.ones_like(total))


def ms_where_rows(scores, mask=None):
    _check_mask(scores, mask)
    if mask is None:
        return torch.softmax(scores, -1)
    bias = torch.zeros_like(scores).masked_fill(~mask, float("-inf"))  # 加性掩码：0 或 −∞
    p = torch.softmax(scores + bias, -1)
    # 前向对了：整行被遮住的行选 0；反向时没被选中的 NaN 那一支仍然把 NaN 传回 scores
    return torch.where(mask.any(-1, keepdim=True), p, torch.zeros_like(p))


def ms_no_check(scores, mask=None):
    if mask is None:
        return torch.softmax(scores, -1)
    mask = mask.bool()
    s = scores.masked_fill(~mask, float("-inf"))
    m = s.amax(-1, keepdim=True).detach()
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(torch.where(mask, scores, m) - m).masked_fill(~mask, 0.0)
    total = e.sum(-1, keepdim=True)
    return e / torch.where(total > 0, total, torch.ones_like(total))


def ms_fill_then_zero_rows(scores, mask=None):
    """写法不同：可以看的位置填原分数、其余填一个很小的有限数，softmax 后把整行被遮住的行置 0。"""
    _check_mask(scores, mask)
    if mask is None:
        return torch.softmax(scores, -1)
    mask = mask.expand(scores.shape)
    low = torch.finfo(scores.dtype).min
    p = torch.softmax(scores.masked_fill(~mask, low), -1).masked_fill(~mask, 0.0)
    return p * mask.any(-1, keepdim=True)


def _check_qkv(q, k, v):
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(f"k has d_k={k.shape[-1]} but q has {q.shape[-1]}: k {tuple(k.shape)}")
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(f"v has {v.shape[-2]} positions, k has {k.shape[-2]}: v {tuple(v.shape)}")


def _sdpa(q, k, v, mask, scale, use_mask=True, zero_rows=True):
    _check_qkv(q, k, v)
    s = q @ k.transpose(-2, -1) / scale
    if mask is not None and use_mask:
        s = s.masked_fill(~mask, float("-inf"))
    w = torch.softmax(s, -1)
    if mask is not None and use_mask and zero_rows:
        w = w.masked_fill(~mask, 0.0)
    return w @ v, w


def sdpa_scale_dk(q, k, v, mask=None):
    return _sdpa(q, k, v, mask, q.shape[-1])


def sdpa_scale_dv(q, k, v, mask=None):
    return _sdpa(q, k, v, mask, math.sqrt(v.shape[-1]))


def sdpa_forgot_mask(q, k, v, mask=None):
    return _sdpa(q, k, v, mask, math.sqrt(q.shape[-1]), use_mask=False)


def sdpa_nan_rows(q, k, v, mask=None):
    return _sdpa(q, k, v, mask, math.sqrt(q.shape[-1]), zero_rows=False)


def sdpa_no_check(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = torch.softmax(s, -1)
    if mask is not None:
        w = w.masked_fill(~mask, 0.0)
    return w @ v, w


def sdpa_checks_only_k(q, k, v, mask=None):
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(f"k {tuple(k.shape)} does not match q {tuple(q.shape)}")
    return sdpa_no_check(q, k, v, mask)


def sdpa_einsum(q, k, v, mask=None):
    """写法不同：先把 q 缩放、用 einsum，再用上面另一种写法的 masked softmax。"""
    _check_qkv(q, k, v)
    s = torch.einsum("...id,...jd->...ij", q / math.sqrt(q.shape[-1]), k)
    w = ms_fill_then_zero_rows(s, mask)
    return torch.einsum("...ij,...jd->...id", w, v), w


WRONG = {
    "ch03.stable_softmax": [("large-logits", softmax_naive), ("rows-apart", softmax_global_max),
                            ("matches", softmax_dim0), ("bad-input", softmax_no_check)],
    "ch03.masked_softmax": [("masked-zero", ms_forgot_mask), ("masked-zero", ms_multiply_after),
                            ("fully-masked-row", ms_neg_inf), ("fully-masked-row", ms_minus_1e9),
                            ("large-logits", ms_no_max), ("grad-finite", ms_where_rows), ("bad-mask", ms_no_check)],
    "ch03.scaled_dot_product_attention": [("matches", sdpa_scale_dk), ("matches", sdpa_scale_dv),
                                          ("masked", sdpa_forgot_mask), ("fully-masked-row", sdpa_nan_rows),
                                          ("bad-k", sdpa_no_check), ("bad-v", sdpa_checks_only_k)],
}
RIGHT = {"ch03.stable_softmax": [softmax_logsumexp], "ch03.masked_softmax": [ms_fill_then_zero_rows],
         "ch03.scaled_dot_product_attention": [sdpa_einsum]}


def _check_targets(logits, targets, ignore_index):
    if targets.is_floating_point():
        raise TypeError(f"targets must be integers, got {targets.dtype}")
    keep = targets != ignore_index
    if ((targets[keep] < 0) | (targets[keep] >= logits.shape[-1])).any():
        raise ValueError(f"targets out of range [0, {logits.shape[-1]})")


def ce_divides_by_all(logits, targets, ignore_index=-100):
    _check_targets(logits, targets, ignore_index)
    keep = targets != ignore_index
    nll = -torch.log_softmax(logits, -1).gather(-1, targets.clamp_min(0)[..., None]).squeeze(-1)
    return (nll * keep).sum() / targets.numel()


def ce_log_of_softmax(logits, targets, ignore_index=-100):
    _check_targets(logits, targets, ignore_index)
    keep = targets != ignore_index
    nll = -torch.log(torch.softmax(logits, -1)).gather(-1, targets.clamp_min(0)[..., None]).squeeze(-1)
    return (nll * keep).sum() / keep.sum()


def ce_pads_as_class_zero(logits, targets, ignore_index=-100):
    _check_targets(logits, targets, ignore_index)
    nll = -torch.log_softmax(logits, -1).gather(-1, targets.clamp_min(0)[..., None]).squeeze(-1)
    return nll.mean()  # 补齐位置被当成了第 0 类


def ce_no_check(logits, targets, ignore_index=-100):
    keep = targets != ignore_index
    safe = torch.where(keep, targets, torch.zeros_like(targets)).long().clamp(0, logits.shape[-1] - 1)
    nll = -torch.log_softmax(logits, -1).gather(-1, safe[..., None]).squeeze(-1)
    return (nll * keep).sum() / keep.sum()


def ce_torch(logits, targets, ignore_index=-100):
    _check_targets(logits, targets, ignore_index)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                             ignore_index=ignore_index)


WRONG["ch03.masked_cross_entropy"] = [("padding", ce_divides_by_all), ("large-logits", ce_log_of_softmax),
                                      ("padding", ce_pads_as_class_zero), ("bad-targets", ce_no_check)]
RIGHT["ch03.masked_cross_entropy"] = [ce_torch]
