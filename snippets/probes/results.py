"""结果文件（results file）的模式、出处（provenance）与校验。

一个设备一个文件：``results/<device-tag>.json``，例如 ``results/cpu-intel-xeon-processor.json``、
``results/cuda-nvidia-h200.json``。由 ``python -m snippets.probes`` 写出，
``python -m snippets.figures`` 读取。**没有出处的文件会被拒绝。**

顶层字段（top-level fields）
--------------------------
``kind``            固定为 ``"complexity-probes"``（``results/`` 里还可能有别的结果文件，如
                    ``copy-task.json``；画图时按它区分）。
``schema_version``  模式版本，当前为 1。
``preset``          ``"quick"`` / ``"full"`` / ``"tiny"``（tiny 只给测试用）。
``provenance``      出处，见下。
``probes``          六个探针的结果：``flops``、``paths``、``sequential``、``memory``、
                    ``walltime``、``gradients``（各自的字段见对应模块的说明）。

出处（``provenance``）
---------------------
``device``          ``type``（``cpu``/``cuda``）、``name``（CPU 型号取自 /proc/cpuinfo 的
                    ``model name``；GPU 名字）、``threads``（torch 线程数，计时固定为 1）、
                    ``logical_cpus``、``affinity_cpus``；CUDA 另有 ``driver``、``cuda_version``、
                    ``capability``、``total_memory_bytes``。
``tag``             设备标签（文件名的主干）。
``torch_version``   ``torch.__version__``；``python_version``、``platform`` 同理。
``dtypes``          用到的数据类型（例如 ``["float32", "float64"]``，CUDA 还有 ``bfloat16``）。
``git``             ``commit``（``git rev-parse HEAD``，40 位十六进制）与 ``dirty``
                    （已跟踪文件是否有未提交的改动；``results/`` 与 ``docs/generated/`` 之外），
                    ``dirty_paths`` 列出这些文件（共享工作区里别人的改动也会出现在这里）。
``date_utc``        运行开始的 UTC 时间，``YYYY-MM-DDTHH:MM:SSZ``。
``command``         完整命令行，例如 ``python -m snippets.probes --device cpu --preset full
                    --out results/cpu-….json``。
``runtime_s``       总耗时（秒）；``probe_runtime_s`` 是每个探针的耗时。
``load_average``    开始与结束时的系统负载（共享机器上的噪声说明）。
``seed``            随机种子。

探针字段（``probes``）
---------------------
``flops``       ``rows[]``：``layer``、``n``、``d``、``mode``（``fwd``/``fwd+bwd``）、``counted``
                （FlopCounterMode 的整数）、``closed_form``、``equal``；``all_equal``；``closed_forms``
                （公式文字）；``crossovers[]``：``a``、``b``、``d``、``n_star``（二分法）、``theory``、
                ``agrees`` 与交叉点两侧的计数；``counter_blind_spots``（信息性）。
``paths``       ``rows[]``：``layer``、``config``、``n``、``depth``（测得的最小深度）、``theory``、
                ``grad_norm_at_depth``（> 0）、``grad_norm_below``（= 0）、``agrees``；``definition``。
``sequential``  ``rows[]``：``layer``、``n``、``critical_path``、``critical_path_compute``、``nodes``；
                ``summary[layer]``：每步增量与截距；``fused_lstm``（融合 nn.LSTM 的反例）。
``memory``      ``rows[]``：``method``（``naive``/``sdpa``/``online``）、``n``、``d``、``peak_bytes``、
                ``net_bytes``、``one_nxn_bytes``，朴素注意力另有 ``closed_form`` 与 ``equal``；``method``
                （测量方法）；``c14``（n²·b 的算术）。
``walltime``    ``series[]``：``sweep``（``n``/``d``）、``dtype``、``layer``、``mode``、``batch``、``fixed``、
                ``points[]``（``size``、``inner``、``samples_s``——**每一轮的原始样本**、``median_s``、
                ``flops``、``gflops``、``overhead_dominated``）、``floor``（尺寸 1 的开销地板）、``fit``
                （``slope``、``intercept``、``residual``）、``flop_slope``、``per_repeat_slopes``、``spread``、
                ``paper_exponent``；``sequential_dependency[dtype][]``；``timer``、``threads``、``env``、
                ``plan``（预设的完整计划）、负载；CUDA 另有 ``matmul_ceiling[]`` 与 ``sdpa_backends[]``。
``gradients``   ``rows[]``：``label``、``model``、``slope``（数量级/步）、``theory_slope``、
                ``per_seed[]``（第一个种子带整条 ``norms`` 曲线）；``T``、``d``、``k_fit``。

:func:`validate` 先按 :data:`SCHEMA`（JSON Schema 的一个子集，本模块自带一个小校验器，
不依赖第三方包）检查结构，再做语义检查（例如每个计时点的样本数等于重复次数）。
返回错误列表；空列表表示通过。
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import subprocess
from pathlib import Path

KIND = "complexity-probes"
SCHEMA_VERSION = 1
PROBE_NAMES = ("flops", "paths", "sequential", "memory", "walltime", "gradients")

_STR = {"type": "string", "minLength": 1}
_INT = {"type": "integer", "minimum": 0}

SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Complexity probe results (one device)",
    "type": "object",
    "required": ["kind", "schema_version", "preset", "provenance", "probes"],
    "properties": {
        "kind": {"const": KIND},
        "schema_version": {"const": SCHEMA_VERSION},
        "preset": {"enum": ["quick", "full", "tiny"]},
        "provenance": {
            "type": "object",
            "required": ["device", "tag", "torch_version", "python_version", "dtypes", "git",
                         "date_utc", "command", "runtime_s", "seed"],
            "properties": {
                "device": {
                    "type": "object",
                    "required": ["type", "name", "threads"],
                    "properties": {
                        "type": {"enum": ["cpu", "cuda"]},
                        "name": _STR,
                        "threads": {"type": "integer", "minimum": 1},
                        "logical_cpus": {"type": ["integer", "null"]},
                        "affinity_cpus": {"type": ["integer", "null"]},
                        "driver": {"type": ["string", "null"]},
                        "cuda_version": {"type": ["string", "null"]},
                        "capability": {"type": ["string", "null"]},
                        "total_memory_bytes": {"type": ["integer", "null"]},
                    },
                },
                "tag": {"type": "string", "pattern": r"^(cpu|cuda)-[a-z0-9-]+$"},
                "torch_version": _STR,
                "python_version": _STR,
                "platform": {"type": "string"},
                "dtypes": {"type": "array", "minItems": 1, "items": _STR},
                "git": {
                    "type": "object",
                    "required": ["commit", "dirty"],
                    "properties": {
                        "commit": {"type": "string", "pattern": r"^[0-9a-f]{40}$"},
                        "dirty": {"type": "boolean"},
                    },
                },
                "date_utc": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"},
                "command": {"type": "string", "pattern": r"^python3? -m snippets\.probes( .*)?$"},
                "runtime_s": {"type": "number", "minimum": 0},
                "probe_runtime_s": {"type": "object"},
                "load_average": {"type": "object"},
                "seed": _INT,
            },
        },
        "probes": {
            "type": "object",
            "required": list(PROBE_NAMES),
            "properties": {
                "flops": {"type": "object", "required": ["rows", "crossovers", "all_equal"],
                          "properties": {"rows": {"type": "array", "minItems": 1, "items": {
                              "type": "object",
                              "required": ["layer", "n", "d", "mode", "counted", "closed_form", "equal"],
                              "properties": {"counted": _INT, "closed_form": _INT,
                                             "mode": {"enum": ["fwd", "fwd+bwd"]}}}}}},
                "paths": {"type": "object", "required": ["rows", "definition"],
                          "properties": {"rows": {"type": "array", "minItems": 1, "items": {
                              "type": "object", "required": ["layer", "n", "depth", "theory"]}}}},
                "sequential": {"type": "object", "required": ["rows", "summary", "fused_lstm"]},
                "memory": {"type": "object", "required": ["rows", "method"],
                           "properties": {"rows": {"type": "array", "minItems": 1, "items": {
                               "type": "object", "required": ["method", "n", "d", "peak_bytes"],
                               "properties": {"peak_bytes": _INT}}}}},
                "walltime": {"type": "object", "required": ["series", "timer", "threads", "sequential_dependency"],
                             "properties": {"series": {"type": "array", "minItems": 1, "items": {
                                 "type": "object",
                                 "required": ["sweep", "dtype", "layer", "mode", "batch", "points", "fit", "spread"],
                                 "properties": {"sweep": {"enum": ["n", "d"]}, "points": {
                                     "type": "array", "minItems": 1, "items": {
                                         "type": "object", "required": ["size", "samples_s"],
                                         "properties": {"samples_s": {"type": "array",
                                                                      "items": {"type": "number"}}}}}}}}}},
                "gradients": {"type": "object", "required": ["rows", "T", "d"]},
            },
        },
    },
}


# ----------------------------------------------------------------------------- 小校验器
_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _type_ok(value, t: str) -> bool:
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[t])


def schema_errors(value, schema: dict, path: str = "$") -> list[str]:
    """JSON Schema 子集：type、const、enum、required、properties、items、minItems、
    minimum、minLength、pattern。"""
    errs: list[str] = []
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_type_ok(value, t) for t in types):
            return [f"{path}: expected {'/'.join(types)}, got {type(value).__name__}"]
    if "const" in schema and value != schema["const"]:
        errs.append(f"{path}: expected {schema['const']!r}, got {value!r}")
    if "enum" in schema and value not in schema["enum"]:
        errs.append(f"{path}: {value!r} not in {schema['enum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errs.append(f"{path}: empty string")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errs.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if _type_ok(value, "number") and "minimum" in schema and value < schema["minimum"]:
        errs.append(f"{path}: {value} < {schema['minimum']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errs.append(f"{path}: missing required field {key!r}")
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                errs.extend(schema_errors(value[key], sub, f"{path}.{key}"))
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errs.append(f"{path}: fewer than {schema['minItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                errs.extend(schema_errors(item, schema["items"], f"{path}[{i}]"))
    return errs


def validate(data) -> list[str]:
    """结构（:data:`SCHEMA`）加语义检查；返回错误列表，空表示通过。"""
    if not isinstance(data, dict):
        return ["$: results file must be a JSON object"]
    if "provenance" not in data:
        return ["$: missing required field 'provenance' (a results file without provenance is rejected)"]
    errs = schema_errors(data, SCHEMA)
    if errs:
        return errs
    prov = data["provenance"]
    wt = data["probes"]["walltime"]
    repeats = wt.get("plan", {}).get("repeats")
    for i, s in enumerate(wt["series"]):
        for j, p in enumerate(s["points"]):
            if "error" in p:
                continue
            if repeats is not None and len(p["samples_s"]) != repeats:
                errs.append(f"$.probes.walltime.series[{i}].points[{j}]: {len(p['samples_s'])} samples, "
                            f"plan says {repeats} repeats")
    if prov["device"]["type"] == "cuda" and "cuda.Event" not in wt["timer"]:
        errs.append("$.probes.walltime.timer: CUDA results must be timed with torch.cuda.Event")
    if prov["device"]["type"] == "cpu" and wt["threads"] != 1:
        errs.append("$.probes.walltime.threads: CPU timing must use exactly 1 thread")
    tag_type = prov["tag"].split("-", 1)[0]
    if tag_type != prov["device"]["type"]:
        errs.append(f"$.provenance.tag: {prov['tag']!r} does not match device type {prov['device']['type']!r}")
    return errs


def load(path) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def dump(data: dict, path) -> Path:
    """写 JSON（UTF-8、缩进 1、键按插入顺序），返回路径。"""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False, indent=1, allow_nan=False)
        fh.write("\n")
    return path


# ----------------------------------------------------------------------------- 出处
REPO_ROOT = Path(__file__).resolve().parents[2]


def cpu_model_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def device_info(device: str) -> dict:
    import torch

    if str(device).startswith("cuda"):
        idx = torch.device(device).index or 0
        props = torch.cuda.get_device_properties(idx)
        driver = None
        try:
            driver = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", f"--id={idx}"],
                capture_output=True, text=True, timeout=30, check=True).stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            driver = None
        return {"type": "cuda", "name": torch.cuda.get_device_name(idx), "threads": torch.get_num_threads(),
                "driver": driver, "cuda_version": torch.version.cuda,
                "capability": "%d.%d" % torch.cuda.get_device_capability(idx),
                "total_memory_bytes": int(props.total_memory),
                "logical_cpus": os.cpu_count(), "affinity_cpus": _affinity()}
    return {"type": "cpu", "name": cpu_model_name(), "threads": torch.get_num_threads(),
            "logical_cpus": os.cpu_count(), "affinity_cpus": _affinity()}


def _affinity():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def device_tag(info: dict) -> str:
    """``cpu-intel-xeon-processor``、``cuda-nvidia-h200`` 这样的标签。"""
    name = info["name"].lower()
    name = re.sub(r"\((r|tm|c)\)", " ", name)
    name = re.sub(r"\b(cpu|@.*)$", " ", name)
    slug = re.sub(r"[^a-z0-9]+", "-", name).strip("-")
    slug = re.sub(r"-+", "-", slug)[:40].strip("-") or "unknown"
    return f"{info['type']}-{slug}"


def git_state(root: Path = REPO_ROOT) -> dict:
    """``git rev-parse HEAD`` 与 dirty 标志（忽略 results/ 与 docs/generated/ 下的改动）。"""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                            check=True).stdout.strip()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                            capture_output=True, text=True, check=True).stdout
    paths = []
    for line in status.splitlines():
        if not line.strip():
            continue
        path = line[3:].split(" -> ")[-1].strip('"')
        if not path.startswith(("results/", "docs/generated/")):
            paths.append(path)
    return {"commit": commit, "dirty": bool(paths), "dirty_paths": sorted(paths)[:50]}


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_probe_results(data) -> bool:
    return isinstance(data, dict) and data.get("kind") == KIND
