"""Exact peak of CPU bytes allocated while a function runs.

Method (see shared/reference/probe-notes.md, "Memory"): run the function once under
torch.profiler with profile_memory=True, collect every allocation event (size > 0 for
an allocation, < 0 for a free), sort them by time and keep a running sum. The peak of
that sum is the largest number of bytes the function held at once, counting only what
it allocated itself: tensors that existed before the call (inputs) are not counted, and
frees of such tensors can push the running sum below 0 (the peak is then taken from 0).

Usage:
    from tests._memory import peak_allocated_bytes
    peak = peak_allocated_bytes(lambda: attention(q, k, v))
"""

import torch
from torch._C._profiler import _EventType
from torch.profiler import ProfilerActivity, profile


def _walk(nodes):
    for node in nodes:
        yield node
        yield from _walk(node.children)


def allocation_events(fn):
    """Run fn() once; return its CPU allocation events as (time_ns, bytes) in time order."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
        del result  # freeing the result is recorded too, after the peak
    tree = prof.profiler.kineto_results.experimental_event_tree()
    events = [
        (node.start_time_ns, node.extra_fields.alloc_size)
        for node in _walk(tree)
        if node.tag == _EventType.Allocation and node.extra_fields.device.type == "cpu"
    ]
    events.sort(key=lambda e: e[0])  # stable: ties keep tree order
    return events


def peak_allocated_bytes(fn) -> int:
    """Run fn() once; return the peak of the running sum of its CPU allocation events (bytes)."""
    running = peak = 0
    for _, size in allocation_events(fn):
        running += size
        peak = max(peak, running)
    return peak
