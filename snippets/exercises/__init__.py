"""动手练习：读者自己写函数，check(...) 用参考答案（snippets/*.py 里的读者代码）检查它。

Notebook 里：``from snippets.exercises import check``，然后 ``check("ch03.masked_softmax", masked_softmax)``。
命令行：``python -m snippets.exercises list [ch03]``、
``python -m snippets.exercises check ch03.masked_softmax my_solution.py``。
"""

from snippets.exercises.core import Exercise, Result, check, get, load_all, run

__all__ = ["Exercise", "Result", "check", "exercises", "get", "load_all", "run", "stub"]


def exercises(chapter: str | None = None) -> list[Exercise]:
    """全部练习（或一章的，chapter = "ch03"），按编号排好。"""
    return [e for e in load_all().values() if chapter is None or e.chapter == chapter]


def stub(exercise_id: str) -> str:
    """一道练习的空函数（签名、形状、坏输入时怎样），复制下来填写。"""
    return get(exercise_id).stub
