"""第 05 章练习的答案（见 answers_ch01.py 的说明）。"""

import torch


def _check(x, gain, name="gain"):
    if gain.shape != (x.shape[-1],):
        raise ValueError(f"{name} {tuple(gain.shape)} must be (d,) with d={x.shape[-1]}")


def ln_unbiased(x, gain, bias, eps=1e-5):
    _check(x, gain)
    mu, var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True)  # 无偏方差（除以 d − 1）
    return gain * (x - mu) / torch.sqrt(var + eps) + bias


def ln_eps_outside(x, gain, bias, eps=1e-5):
    _check(x, gain)
    mu = x.mean(-1, keepdim=True)
    std = (x - mu).pow(2).mean(-1, keepdim=True).sqrt()
    return gain * (x - mu) / (std + eps) + bias


def ln_no_gain(x, gain, bias, eps=1e-5):
    _check(x, gain)
    return torch.nn.functional.layer_norm(x, x.shape[-1:], None, bias, eps)


def ln_no_check(x, gain, bias, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return gain * (x - mu) / torch.sqrt(var + eps) + bias


def ln_functional(x, gain, bias, eps=1e-5):
    if gain.shape != (x.shape[-1],) or bias.shape != (x.shape[-1],):
        raise ValueError(f"gain {tuple(gain.shape)} and bias {tuple(bias.shape)} must be ({x.shape[-1]},)")
    var, mu = torch.var_mean(x, dim=-1, keepdim=True, unbiased=False)
    return (x - mu) * torch.rsqrt(var + eps) * gain + bias


def rms_minus_mean(x, gain, eps=1e-6):
    _check(x, gain)
    x = x - x.mean(-1, keepdim=True)
    return gain * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rms_eps_outside(x, gain, eps=1e-6):
    _check(x, gain)
    return gain * x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps)


def rms_l2_norm(x, gain, eps=1e-6):
    _check(x, gain)
    return gain * x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps)  # 用了 Σ 而不是平均


def rms_no_check(x, gain, eps=1e-6):
    return gain * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rms_rsqrt(x, gain, eps=1e-6):
    if gain.dim() != 1 or gain.numel() != x.shape[-1]:
        raise ValueError(f"gain {tuple(gain.shape)} must be ({x.shape[-1]},)")
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * gain


def _check_flag(norm_first):
    if not isinstance(norm_first, bool):
        raise TypeError(f"norm_first must be a bool, got {norm_first!r}")


def res_swapped(x, sublayer, norm, norm_first):
    _check_flag(norm_first)
    with torch.no_grad():
        return x + sublayer(norm(x)) if not norm_first else norm(x + sublayer(x))


def res_always_pre(x, sublayer, norm, norm_first):
    _check_flag(norm_first)
    with torch.no_grad():
        return x + sublayer(norm(x))


def res_pre_normed_residual(x, sublayer, norm, norm_first):
    _check_flag(norm_first)
    with torch.no_grad():
        if norm_first:
            h = norm(x)
            return h + sublayer(h)  # 残差路上加回的是 norm(x)，不是 x
        return norm(x + sublayer(x))


def res_no_check(x, sublayer, norm, norm_first):
    with torch.no_grad():
        return x + sublayer(norm(x)) if norm_first else norm(x + sublayer(x))


def res_explicit(x, sublayer, norm, norm_first):
    if norm_first not in (True, False) or not isinstance(norm_first, bool):
        raise TypeError(f"norm_first must be True or False, got {type(norm_first).__name__}")
    with torch.no_grad():
        if norm_first:
            update = sublayer(norm(x))
            return x + update
        total = x + sublayer(x)
        return norm(total)


WRONG = {
    "ch05.layer_norm": [("matches", ln_unbiased), ("small-variance", ln_eps_outside), ("matches", ln_no_gain),
                        ("bad-gain", ln_no_check)],
    "ch05.rms_norm": [("matches", rms_minus_mean), ("small-scale", rms_eps_outside), ("matches", rms_l2_norm),
                      ("bad-gain", rms_no_check)],
    "ch05.residual_block": [("post-ln", res_swapped), ("post-ln", res_always_pre), ("pre-ln", res_pre_normed_residual),
                            ("bad-norm_first", res_no_check)],
}
RIGHT = {"ch05.layer_norm": [ln_functional], "ch05.rms_norm": [rms_rsqrt], "ch05.residual_block": [res_explicit]}
