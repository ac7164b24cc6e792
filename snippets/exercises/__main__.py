"""python -m snippets.exercises list [chNN] | show ID | check ID FILE.py [--name FUNC]"""

from __future__ import annotations

import argparse
import runpy
import sys

from snippets.exercises import core


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m snippets.exercises", description="动手练习：列出、查看、检查。")
    sub = ap.add_subparsers(dest="command", required=True)
    p_list = sub.add_parser("list", help="列出练习（可只列一章：list ch03）")
    p_list.add_argument("chapter", nargs="?")
    p_show = sub.add_parser("show", help="显示一道练习的题面与空函数")
    p_show.add_argument("id")
    p_check = sub.add_parser("check", help="检查你写在 FILE.py 里的函数")
    p_check.add_argument("id")
    p_check.add_argument("file")
    p_check.add_argument("--name", help="函数名（默认与练习的函数名相同）")
    args = ap.parse_args(argv)

    exercises = core.load_all()
    if args.command == "list":
        chosen = [e for e in exercises.values() if args.chapter in (None, e.chapter)]
        if not chosen:
            print(f"没有 {args.chapter} 的练习。", file=sys.stderr)
            return 2
        for e in chosen:
            print(f"{e.id:<32} {e.title}　{e.signature}")
        print(f"共 {len(chosen)} 道。检查：python -m snippets.exercises check <编号> <你的文件.py>")
        return 0
    try:
        ex = core.get(args.id)
    except KeyError as error:
        print(error.args[0], file=sys.stderr)
        return 2
    if args.command == "show":
        print(f"{ex.id}　{ex.title}\n\n{ex.statement}\n\n形状：{ex.shapes}\n坏输入：{ex.bad_input}\n\n{ex.stub}")
        return 0
    name = args.name or ex.name
    namespace = runpy.run_path(args.file, run_name="__exercise__")
    if name not in namespace:
        print(f"{args.file} 里没有名为 {name} 的函数（用 --name 指定）。", file=sys.stderr)
        return 2
    result = core.run(ex.id, namespace[name])
    print(result.report)
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
