"""第 08 章练习的答案（见 answers_ch01.py 的说明）。"""

import torch
import torch.nn.functional as F


def _check_step(step):
    if step < 1:
        raise ValueError(f"step must be >= 1, got step={step}")


def lr_max(step, d_model=512, warmup=4000):
    _check_step(step)
    return d_model ** -0.5 * max(step ** -0.5, step * warmup ** -1.5)


def lr_no_d_model(step, d_model=512, warmup=4000):
    _check_step(step)
    return min(step ** -0.5, step * warmup ** -1.5)


def lr_warmup_exponent(step, d_model=512, warmup=4000):
    _check_step(step)
    return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -0.5)


def lr_no_check(step, d_model=512, warmup=4000):
    return d_model ** -0.5 * min((step + 1e-12) ** -0.5, step * warmup ** -1.5)


def lr_piecewise(step, d_model=512, warmup=4000):
    if not isinstance(step, int) or step <= 0:
        raise ValueError(f"step counts from 1, got step={step}")
    peak = (d_model * warmup) ** -0.5
    return peak * step / warmup if step <= warmup else peak * (warmup / step) ** 0.5


def _check_ls(target, eps):
    if target.is_floating_point():
        raise TypeError(f"target must be integer, got {target.dtype}")
    if not 0 <= eps < 1:
        raise ValueError(f"eps must be in [0, 1), got eps={eps}")


def ls_k_minus_1(logits, target, eps=0.1, ignore_index=-100):
    _check_ls(target, eps)
    keep = target != ignore_index
    logp = F.log_softmax(logits[keep], -1)
    k = logits.shape[-1]
    q = torch.full_like(logp, eps / (k - 1) if k > 1 else 0.0)
    q.scatter_(-1, target[keep][:, None], 1 - eps)  # ε 只分给另外 K − 1 个类
    return -(q * logp).sum(-1).mean()


def ls_smooths_padding(logits, target, eps=0.1, ignore_index=-100):
    _check_ls(target, eps)
    keep = target != ignore_index
    logp = F.log_softmax(logits, -1)
    nll = -logp.gather(-1, target.clamp_min(0)[:, None]).squeeze(-1)
    smooth = -logp.mean(-1)  # 平滑项也算上了填充位置
    return ((1 - eps) * (nll * keep).sum() + eps * smooth.sum()) / keep.sum()


def ls_divides_by_all(logits, target, eps=0.1, ignore_index=-100):
    _check_ls(target, eps)
    keep = target != ignore_index
    logp = F.log_softmax(logits, -1)
    nll = -logp.gather(-1, target.clamp_min(0)[:, None]).squeeze(-1)
    loss = ((1 - eps) * nll + eps * (-logp.mean(-1))) * keep
    return loss.sum() / target.numel()  # 分母把填充也算进去了


def ls_no_one_minus_eps(logits, target, eps=0.1, ignore_index=-100):
    _check_ls(target, eps)
    keep = target != ignore_index
    logp = F.log_softmax(logits[keep], -1)
    nll = -logp.gather(-1, target[keep][:, None]).squeeze(-1)
    return (nll + eps * (-logp.mean(-1))).mean()


def ls_no_check(logits, target, eps=0.1, ignore_index=-100):
    keep = target != ignore_index
    logp = F.log_softmax(logits[keep], -1)
    nll = -logp.gather(-1, target[keep].long()[:, None]).squeeze(-1)
    return ((1 - eps) * nll + eps * (-logp.mean(-1))).mean()


def ls_checks_target_only(logits, target, eps=0.1, ignore_index=-100):
    if target.is_floating_point():
        raise TypeError(f"target must be integer, got {target.dtype}")
    return ls_no_check(logits, target, eps, ignore_index)


def ls_torch(logits, target, eps=0.1, ignore_index=-100):
    _check_ls(target, eps)
    return F.cross_entropy(logits, target, ignore_index=ignore_index, label_smoothing=eps)


def _adam(param, grad, m, v, t, lr, betas=(0.9, 0.98), eps=1e-9, correct=True, eps_inside=False, square=True,
          check=True):
    if check and t < 1:
        raise ValueError(f"t must be >= 1, got t={t}")
    b1, b2 = betas
    m = b1 * m + (1 - b1) * grad
    v = b2 * v + (1 - b2) * (grad * grad if square else grad.abs())
    m_hat = m / (1 - b1 ** t) if correct else m
    v_hat = v / (1 - b2 ** t) if correct else v
    denom = (v_hat + eps).sqrt() if eps_inside else v_hat.sqrt() + eps
    return param - lr * m_hat / denom, m, v


def adam_no_bias_correction(param, grad, m, v, t, lr, betas=(0.9, 0.98), eps=1e-9):
    return _adam(param, grad, m, v, t, lr, betas, eps, correct=False)


def adam_eps_inside(param, grad, m, v, t, lr, betas=(0.9, 0.98), eps=1e-9):
    return _adam(param, grad, m, v, t, lr, betas, eps, eps_inside=True)


def adam_abs_not_square(param, grad, m, v, t, lr, betas=(0.9, 0.98), eps=1e-9):
    return _adam(param, grad, m, v, t, lr, betas, eps, square=False)


def adam_no_check(param, grad, m, v, t, lr, betas=(0.9, 0.98), eps=1e-9):
    return _adam(param, grad, m, v, max(t, 1), lr, betas, eps, check=False)


def adam_torch(param, grad, m, v, t, lr, betas=(0.9, 0.98), eps=1e-9):
    """写法不同：交给 torch.optim.Adam，把它的状态设成 (t − 1, m, v) 再走一步。"""
    if not isinstance(t, int) or t < 1:
        raise ValueError(f"t counts from 1, got t={t}")
    p = torch.nn.Parameter(param.clone())
    opt = torch.optim.Adam([p], lr=lr, betas=betas, eps=eps)
    opt.state[p] = {"step": torch.tensor(float(t - 1)), "exp_avg": m.clone(), "exp_avg_sq": v.clone()}
    p.grad = grad.clone()
    opt.step()
    state = opt.state[p]
    return p.detach(), state["exp_avg"], state["exp_avg_sq"]


WRONG = {
    "ch08.noam_lr": [("warmup", lr_max), ("warmup", lr_no_d_model), ("warmup", lr_warmup_exponent),
                     ("bad-step", lr_no_check)],
    "ch08.label_smoothed_nll": [("no-padding", ls_k_minus_1), ("padding", ls_smooths_padding),
                                ("padding", ls_divides_by_all), ("no-padding", ls_no_one_minus_eps),
                                ("bad-target", ls_no_check), ("bad-eps", ls_checks_target_only)],
    "ch08.adam_update": [("first-step", adam_no_bias_correction), ("small-v", adam_eps_inside),
                         ("first-step", adam_abs_not_square), ("bad-t", adam_no_check)],
}
RIGHT = {"ch08.noam_lr": [lr_piecewise], "ch08.label_smoothed_nll": [ls_torch], "ch08.adam_update": [adam_torch]}
