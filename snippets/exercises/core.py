"""动手练习的核心：登记表、性质检查、把失败的输入缩到最小、中文报告。

一道练习（Exercise）有一个编号（"ch03.masked_softmax"）、读者要写的函数名与签名、题面，
和若干条性质（Property）。每条性质自己造输入：输入由几个「维度」（形状、dtype、边界情形……）
决定，每个维度是一串从小到大排好的取值。检查时先按固定种子抽若干组维度，从小到大逐个试；
第一组失败的输入再逐个维度往小处缩，直到哪个维度再缩就不失败为止，报告的就是这组最小输入。
参考答案是 snippets/*.py 里的读者代码（各章模块里包一层），报告只给期望的值，从不给它的代码。

各章的练习在 snippets/exercises/chNN.py 里用 register(...) 登记；新增一章只需新增一个文件。
"""

from __future__ import annotations

import copy
import importlib
import inspect
import math
import pkgutil
import random
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

SITE = "https://transformer-paper-reading.github.io/transformer-paper-reading/"
SEED = 0


# --------------------------------------------------------------------------- 输入与性质
@dataclass
class Case:
    """一组输入：args、kwargs，以及报告里怎么称呼它们（show：名字 → 要显示的对象或文字）。"""

    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    show: dict | None = None
    note: str = ""  # 这组输入特别在哪里（"含整行被遮住的行"）


class Text(str):
    """报告里原样显示的说明文字（不加引号），例如 "DecoderLayer(d_model=4, …)，随机权重"。"""


class Failure(Exception):
    """一条性质在某个输入上不成立：message 是中文说明（期望什么、得到什么）。"""


@dataclass
class Property:
    """一条性质。

    key：英文短名（测试据此判断失败的是哪一条）；text：中文，报告里逐条列出；hint：失败时的提示；
    page, anchor：提示指向的正文（"03-scaled-dot-product/derivation-softmax.md", "masks"）。
    dims：维度名 → 从小到大的取值；make(rng, **dims) → Case（rng 是 torch.Generator，种子固定）。
    check(fn, case, reference) 不成立时 raise Failure(中文说明)。
    tries：随机抽多少组维度；没有 dims 的性质只试 make 给出的那一组。
    """

    key: str
    text: str
    hint: str
    page: str
    anchor: str
    make: Callable[..., Case]
    check: Callable[[Callable, Case, Callable], None]
    dims: dict = field(default_factory=dict)
    tries: int = 12

    def url(self) -> str:
        return link(self.page, self.anchor)


def link(page: str, anchor: str = "") -> str:
    """正文页面在站点上的地址：'03-scaled-dot-product/derivation-softmax.md', 'masks' → https://…/derivation-softmax/#masks。"""
    path = page.removesuffix(".md")
    path = path.removesuffix("index")
    return f"{SITE}chapters/{path.rstrip('/')}/" + (f"#{anchor}" if anchor else "")


@dataclass
class Exercise:
    id: str                 # "ch03.masked_softmax"
    name: str               # 读者要写的函数名
    title: str              # 中文题名
    signature: str          # "masked_softmax(scores, mask=None)"
    statement: str          # 题面（中文）
    shapes: str             # 形状约定
    bad_input: str          # 坏输入时必须怎样
    reference: Callable     # 参考答案（读者代码），只用来算期望值
    properties: list
    solution: tuple         # (页面, 锚点)：读者代码的那一节
    stub: str               # 给读者的空函数
    questions: tuple = ()   # 这道题练的面试题编号（"3.7"：第 03 章 questions.md 的 3.7）

    @property
    def chapter(self) -> str:
        return self.id.split(".")[0]


REGISTRY: dict[str, Exercise] = {}


def register(exercise: Exercise) -> Exercise:
    if exercise.id in REGISTRY:
        raise ValueError(f"exercise {exercise.id!r} is registered twice")
    if not exercise.id.startswith("ch") or exercise.id.split(".")[-1] != exercise.name:
        raise ValueError(f"exercise id must be 'chNN.<function name>', got {exercise.id!r} for {exercise.name!r}")
    REGISTRY[exercise.id] = exercise
    return exercise


def load_all() -> dict[str, Exercise]:
    """导入 snippets/exercises/ 下的每个 chNN 模块（它们在导入时登记练习），返回登记表：按章排，章内按登记的先后（页面上的顺序）。"""
    import snippets.exercises as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("ch"):
            importlib.import_module(f"{package.__name__}.{info.name}")
    return dict(sorted(REGISTRY.items(), key=lambda item: item[1].chapter))


def get(exercise_id: str) -> Exercise:
    exercises = load_all()
    if exercise_id not in exercises:
        close = [e for e in exercises if e.split(".")[-1] == exercise_id.split(".")[-1]]
        hint = f"，你是不是想找 {close[0]}" if close else ""
        raise KeyError(f"没有编号为 {exercise_id!r} 的练习{hint}（python -m snippets.exercises list 列出全部）")
    return exercises[exercise_id]


# --------------------------------------------------------------------------- 运行与缩小
@dataclass
class Result:
    exercise: Exercise
    passed: bool
    failed: str | None       # 失败性质的 key；"not-implemented"、"not-callable" 是两种特殊情形
    report: str
    inputs: int = 0          # 一共试了多少组输入

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return self.report


def _sample(prop: Property, rng: random.Random) -> list[dict]:
    """按固定种子抽 tries 组维度（每组记取值的下标），去重后从小到大排。"""
    if not prop.dims:
        return [{}]
    names = list(prop.dims)
    seen, out = set(), []
    smallest = tuple(0 for _ in names)
    for idx in [smallest] + [tuple(rng.randrange(len(prop.dims[n])) for n in names) for _ in range(prop.tries - 1)]:
        if idx not in seen:
            seen.add(idx)
            out.append(dict(zip(names, idx)))
    return sorted(out, key=lambda d: (sum(d.values()), tuple(d.values())))


def _build(prop: Property, idx: dict, seed: int) -> Case:
    rng = torch.Generator().manual_seed(seed)
    return prop.make(rng, **{n: prop.dims[n][i] for n, i in idx.items()})


def _attempt(fn, prop: Property, case: Case, reference) -> str | None:
    """None：性质成立；否则是中文说明。fn 收到的是输入的副本（读者代码原地改了输入也不影响比较）。"""
    try:
        prop.check(fn, copy.deepcopy(case), reference)
    except Failure as failure:
        return str(failure)
    except NotImplementedError:
        raise
    except Exception as error:  # 读者代码抛出了意料之外的异常
        return f"你的函数抛出了 {type(error).__name__}: {error}"
    return None


def _shrink(fn, prop: Property, idx: dict, seed: int, reference) -> tuple[dict, str]:
    """把失败的那组维度逐个往小处缩：某个维度换成更小的取值后仍失败，就接受它；直到缩不动。"""
    message = _attempt(fn, prop, _build(prop, idx, seed), reference)
    changed = True
    while changed:
        changed = False
        for name in prop.dims:
            for smaller in range(idx[name]):
                trial = {**idx, name: smaller}
                found = _attempt(fn, prop, _build(prop, trial, seed), reference)
                if found is not None:
                    idx, message, changed = trial, found, True
                    break
    return idx, message


def run(exercise_id: str, fn: Callable) -> Result:
    """逐条性质检查 fn；不打印，返回 Result（report 是要给读者看的中文报告）。

    输入都很小：检查期间 PyTorch 只用一个线程（多线程在小张量上只有调度开销），结束后恢复原来的设置。
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _run(get(exercise_id), fn)
    finally:
        torch.set_num_threads(threads)


def _run(ex: Exercise, fn: Callable) -> Result:
    if not callable(fn):
        return Result(ex, False, "not-callable", f"✘ {ex.id}：要检查的是一个函数，你传进来的是 {type(fn).__name__}。")
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = None
    wanted = inspect.signature(ex.reference).parameters
    if params is not None and not any(p.kind == p.VAR_POSITIONAL for p in params.values()):
        missing = [n for n in wanted if n not in params]
        if missing:
            return Result(ex, False, "signature",
                          f"✘ {ex.id}：签名应该是 {ex.signature}，你的函数缺少参数 {', '.join(missing)}。")
    rng = random.Random(f"{SEED}:{ex.id}")
    total, passed_lines = 0, []
    for number, prop in enumerate(ex.properties):
        cases = _sample(prop, rng)
        for k, idx in enumerate(cases):
            seed = SEED * 1000 + number * 100 + k
            total += 1
            try:
                message = _attempt(fn, prop, _build(prop, idx, seed), ex.reference)
            except NotImplementedError:
                return Result(ex, False, "not-implemented",
                              f"… {ex.id}（{ex.title}）还没有实现：函数抛出了 NotImplementedError。\n"
                              f"  把 stub 里的 raise NotImplementedError 换成你的实现，再运行一次检查。", total)
            if message is None:
                continue
            try:
                idx, message = _shrink(fn, prop, idx, seed, ex.reference)
            except NotImplementedError:
                pass
            case = _build(prop, idx, seed)
            return Result(ex, False, prop.key, _failure_report(ex, prop, case, message, len(passed_lines)), total)
        passed_lines.append(f"  ✔ {prop.text}（{len(cases)} 组输入）")
    head = f"✔ {ex.id}（{ex.title}）通过：{len(ex.properties)} 条性质，共 {total} 组输入，全部成立。"
    return Result(ex, True, None, "\n".join([head, *passed_lines]), total)


def check(exercise_id: str, fn: Callable) -> None:
    """在 Notebook 里用：check("ch03.masked_softmax", masked_softmax) 打印中文报告。"""
    print(run(exercise_id, fn).report)


# --------------------------------------------------------------------------- 报告
def _failure_report(ex: Exercise, prop: Property, case: Case, message: str, n_passed: int) -> str:
    lines = [f"✘ {ex.id}（{ex.title}）：前 {n_passed} 条性质成立，这一条不成立——",
             f"  性质：{prop.text}"]
    shown = case.show if case.show is not None else _default_show(ex, case)
    lines.append("  最小的失败输入" + (f"（{case.note}）" if case.note else "") + "：")
    for name, value in shown.items():
        lines.append(textwrap.indent(f"{name} = {describe(value)}", "    "))
    lines.append(textwrap.indent(message, "  "))
    lines.append(f"  提示：{prop.hint}")
    lines.append(f"  正文：{prop.url()}")
    return "\n".join(lines)


def _default_show(ex: Exercise, case: Case) -> dict:
    names = list(inspect.signature(ex.reference).parameters)
    shown = dict(zip(names, case.args))
    shown.update(case.kwargs)
    return shown


def describe(value: Any, limit: int = 32) -> str:
    """报告里的一个值：张量写形状、dtype，小张量再写出数值。"""
    if isinstance(value, Text):
        return str(value)
    if isinstance(value, torch.Tensor):
        head = f"形状 {tuple(value.shape)} {str(value.dtype).removeprefix('torch.')}"
        if value.device.type == "meta":
            return head + "（meta 设备）"
        if value.numel() <= limit:
            with torch.no_grad():
                body = _fmt(value.detach())
            return f"{head}\n{textwrap.indent(body, '  ')}"
        return head
    if isinstance(value, torch.nn.Module):
        return repr(value).splitlines()[0].rstrip("(") if len(repr(value)) > 120 else repr(value)
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    text = repr(value)
    return text if len(text) <= 300 else text[:300] + " …"


def _fmt(t: torch.Tensor) -> str:
    if t.dtype == torch.bool:
        return str(t.int().tolist()).replace("1", "T").replace("0", "F")
    if not t.is_floating_point():
        return str(t.tolist())
    values = t.double()

    def one(x: float) -> str:
        if math.isnan(x) or math.isinf(x):
            return str(x)
        return f"{x:.5g}"

    def rec(v):
        if v.dim() == 0:
            return one(v.item())
        return "[" + ", ".join(rec(row) for row in v) + "]"

    return rec(values)


# --------------------------------------------------------------------------- 常用的比较
def compare(got, expected, atol: float = 1e-5, rtol: float = 1e-4, what: str = "输出") -> None:
    """got 与 expected（张量、数、或它们的元组）逐项比较：类型、形状、dtype、数值。"""
    if isinstance(expected, (tuple, list)) and not any(isinstance(e, torch.Tensor) for e in expected):
        if type(got) is not type(expected) or list(got) != list(expected):
            raise Failure(f"{what}不对：期望 {expected!r}，得到 {got!r}")
        return
    if isinstance(expected, (tuple, list)) and not isinstance(expected, torch.Size):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            raise Failure(f"{what}应该是 {len(expected)} 个值组成的元组，得到 {type(got).__name__}"
                          + (f"（{len(got)} 个）" if isinstance(got, (tuple, list)) else ""))
        for i, (g, e) in enumerate(zip(got, expected)):
            compare(g, e, atol, rtol, what=f"第 {i + 1} 个返回值")
        return
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            raise Failure(f"{what}应该是张量，得到 {type(got).__name__}")
        if tuple(got.shape) != tuple(expected.shape):
            raise Failure(f"{what}形状不对：期望 {tuple(expected.shape)}，得到 {tuple(got.shape)}")
        if got.dtype != expected.dtype:
            raise Failure(f"{what}的 dtype 不对：期望 {expected.dtype}，得到 {got.dtype}")
        if expected.device.type == "meta" or got.device.type == "meta":
            return
        g, e = got.detach(), expected.detach()
        if g.dtype == torch.bool or not g.is_floating_point():
            if not torch.equal(g, e):
                where = (g != e).nonzero()[0].tolist()
                raise Failure(f"{what}不对：在下标 {tuple(where)} 期望 {e[tuple(where)].item()}，"
                              f"得到 {g[tuple(where)].item()}\n期望 {describe(e)}\n得到 {describe(g)}")
            return
        bad_nan = torch.isnan(g) & ~torch.isnan(e)
        if bad_nan.any():
            where = tuple(bad_nan.nonzero()[0].tolist())
            raise Failure(f"{what}里出现了 NaN（下标 {where}），期望的值是 {e[where].item():.4g}\n"
                          f"期望 {describe(e)}\n得到 {describe(g)}")
        if not torch.allclose(g.double(), e.double(), atol=atol, rtol=rtol, equal_nan=True):
            diff = (g.double() - e.double()).abs().nan_to_num(float("inf"))
            where = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
            raise Failure(f"{what}的数值不对：最大误差 {diff.max().item():.3g} 在下标 {where}，"
                          f"期望 {e[where].item():.6g}，得到 {g[where].item():.6g}\n"
                          f"期望 {describe(e)}\n得到 {describe(g)}")
        return
    if isinstance(expected, bool) or isinstance(expected, int) and not isinstance(expected, float):
        if isinstance(got, torch.Tensor) and got.numel() == 1 and not got.is_floating_point():
            got = got.item()
        if type(got) is not type(expected) and not (isinstance(got, int) and not isinstance(got, bool)
                                                    and not isinstance(expected, bool)):
            raise Failure(f"{what}应该是 {type(expected).__name__}，得到 {type(got).__name__} {got!r}")
        if got != expected:
            raise Failure(f"{what}不对：期望 {expected!r}，得到 {got!r}")
        return
    if isinstance(expected, float):
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if not isinstance(got, (int, float)) or not math.isclose(got, expected, rel_tol=rtol, abs_tol=atol):
            raise Failure(f"{what}不对：期望 {expected:.6g}，得到 {got!r}")
        return
    if got != expected:
        raise Failure(f"{what}不对：期望 {expected!r}，得到 {got!r}")


def matches_reference(atol: float = 1e-5, rtol: float = 1e-4) -> Callable:
    """check：在同一组输入上，读者的输出与参考答案一致（float32 自动放宽到 1e-4 量级）。"""

    def run_both(fn, case, reference):
        expected = reference(*copy.deepcopy(case.args), **copy.deepcopy(case.kwargs))
        got = fn(*case.args, **case.kwargs)
        loose = any(isinstance(a, torch.Tensor) and a.dtype == torch.float32
                    for a in (*case.args, *case.kwargs.values()))
        compare(got, expected, atol=max(atol, 1e-4) if loose else atol, rtol=max(rtol, 1e-3) if loose else rtol)

    return run_both


def raises(argument: str, errors=(ValueError, TypeError)) -> Callable:
    """check：坏输入必须抛出 ValueError 或 TypeError，且报错信息提到参数名 argument。"""

    def run(fn, case, reference):
        try:
            out = fn(*case.args, **case.kwargs)
        except errors as error:
            if argument not in str(error):
                raise Failure(f"抛出了 {type(error).__name__}，但报错信息没有提到参数 {argument}："
                              f"「{error}」") from None
            return
        except NotImplementedError:
            raise
        except Exception as error:
            raise Failure(f"应该抛出 ValueError 或 TypeError，你的函数抛出了 {type(error).__name__}: {error}") from None
        raise Failure(f"应该抛出 ValueError 或 TypeError（报错信息提到 {argument}），你的函数却返回了 "
                      f"{describe(out).splitlines()[0]}")

    return run


# 检查器自己造输入：随机数发生器（torch.Generator）在 CPU 上，读者的函数也在 CPU 上跑，所以输入都建在这里
DEVICE = torch.device("cpu")


def randn(rng: torch.Generator, *shape, dtype=torch.float64, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, generator=rng, dtype=dtype, device=DEVICE) * scale


def signature_of(exercise: Exercise) -> str:
    return f"def {exercise.signature}:"
