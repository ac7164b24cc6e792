"""A tracing-free phone measurement of one page load: the field half of ``make audit``.

Lighthouse records a trace while it loads a page, and on pages of ~40,000 elements its
``invalidationTracking`` category makes Chromium's style work many times slower than it is
(see the README). This harness loads the page the way a phone would, with nothing recording
but the page's own ``PerformanceObserver``:

- a 412 × 823 px phone at device scale 1.75 (Lighthouse's Moto G Power), touch, mobile UA;
- the CPU slowed 4× (CDP ``Emulation.setCPUThrottlingRate``);
- Lighthouse's slow-4G constants applied to the network (150 ms RTT × 3.75 request latency,
  1.6 Mbit/s × 0.9 down, 750 kbit/s × 0.9 up), cache disabled;
- metrics from the page itself: first contentful paint, layout shifts (CLS), largest contentful paint (until the
  page is quiet), and every long task (> 50 ms). Total blocking time is Lighthouse's
  definition, the sum of (duration − 50 ms) over long tasks after FCP, up to the moment the
  main thread has been quiet for 5 s (at most 40 s after navigation).
- "math at first paint": no formula on the page waits for a script, i.e. at DOMContentLoaded
  every ``.arithmatex`` already holds typeset KaTeX and no KaTeX script is on the page.
"""

from __future__ import annotations

import time

# Lighthouse 12's mobileSlow4G, as DevTools applies it (lighthouse/core/config/constants.js).
RTT_MS = 150
REQUEST_LATENCY_MS = RTT_MS * 3.75
DOWNLOAD_KBPS = 1.6 * 1024 * 0.9
UPLOAD_KBPS = 750 * 0.9
CPU_SLOWDOWN = 4
PHONE = {"width": 412, "height": 823}
PHONE_UA = ("Mozilla/5.0 (Linux; Android 11; moto g power (2022)) AppleWebKit/537.36 "
            "(KHTML, like Gecko) Chrome/119.0.0.0 Mobile Safari/537.36")
QUIET_MS = 5000
MAX_WAIT_MS = 40000

# Installed before any page script: buffers paint, LCP and long-task entries in window.__perf.
OBSERVER_JS = """
(() => {
  const perf = window.__perf = {fcp: null, lcp: null, tasks: [], shifts: [], mathAtDcl: null};
  const watch = (type, fn) => {
    try { new PerformanceObserver(list => list.getEntries().forEach(fn)).observe({type, buffered: true}); }
    catch (e) { perf[type + 'Error'] = String(e); }
  };
  watch('paint', e => { if (e.name === 'first-contentful-paint') perf.fcp = e.startTime; });
  watch('largest-contentful-paint', e => { perf.lcp = e.startTime; perf.lcpTag = e.element ? e.element.tagName : null; });
  watch('longtask', e => perf.tasks.push([e.startTime, e.duration]));
  const describe = n => !n ? '' : n.nodeType !== 1 ? n.nodeName
    : n.tagName.toLowerCase() + (n.id ? '#' + n.id : '') + (n.className && typeof n.className === 'string' ? '.' + n.className.trim().split(/\\s+/).join('.') : '');
  watch('layout-shift', e => { if (!e.hadRecentInput) perf.shifts.push([e.startTime, e.value, (e.sources || []).map(x => describe(x.node)).slice(0, 3)]); });
  document.addEventListener('DOMContentLoaded', () => {  // once: the late scripts send it again
    const blocks = [...document.querySelectorAll('.arithmatex')];
    perf.mathAtDcl = {
      formulas: blocks.length,
      untypeset: blocks.filter(b => !b.querySelector('.katex')).length,
      katex_scripts: [...document.scripts].filter(s => /katex(\\.min)?\\.js|auto-render/i.test(s.src)).length,
    };
  }, { once: true });
})();
"""


def cumulative_layout_shift(shifts: list) -> float:
    """CLS as Chrome defines it: the largest session window of shifts (gaps < 1 s, window < 5 s)."""
    best = current = 0.0
    window_start = last = None
    for start, value, _ in sorted(shifts):
        if last is None or start - last >= 1000 or start - window_start >= 5000:
            current, window_start = 0.0, start
        current += value
        last = start
        best = max(best, current)
    return best


def throttle(cdp) -> None:
    """A cold cache, slow 4G and a 4× slower CPU on the page behind this CDP session."""
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    cdp.send("Network.emulateNetworkConditions", {
        "offline": False, "latency": REQUEST_LATENCY_MS,
        "downloadThroughput": DOWNLOAD_KBPS * 1024 / 8, "uploadThroughput": UPLOAD_KBPS * 1024 / 8,
    })
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": CPU_SLOWDOWN})


def measure(browser, url: str) -> dict:
    """One cold phone load of ``url``: fcp, lcp, tbt, longest task after FCP (ms) and the math check."""
    ctx = browser.new_context(viewport=PHONE, device_scale_factor=1.75, is_mobile=True, has_touch=True,
                              user_agent=PHONE_UA, locale="zh-CN")
    try:
        page = ctx.new_page()
        cdp = ctx.new_cdp_session(page)
        throttle(cdp)
        page.add_init_script(OBSERVER_JS)
        page.goto(url, wait_until="load", timeout=120_000)
        # Wait until the main thread has had no long task for QUIET_MS (Lighthouse's TTI window).
        started = time.monotonic()
        while True:
            perf = page.evaluate("window.__perf")
            now = page.evaluate("performance.now()")
            last_end = max([s + d for s, d in perf["tasks"]], default=0)
            if now - max(last_end, perf["fcp"] or 0) >= QUIET_MS or now >= MAX_WAIT_MS:
                break
            page.wait_for_timeout(500)
            if time.monotonic() - started > 120:
                break
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
    finally:
        ctx.close()
    fcp = perf["fcp"] or 0
    after_fcp = [(s, d) for s, d in perf["tasks"] if s + d > fcp]
    return {
        "cls": cumulative_layout_shift(perf["shifts"]),
        "shift_sources": sorted(perf["shifts"], key=lambda x: -x[1])[:3],
        "fcp": fcp,
        "lcp": perf["lcp"],
        "lcp_element": perf.get("lcpTag"),
        "tbt": sum(max(0.0, d - 50) for _, d in after_fcp),
        "longest_task": max((d for _, d in after_fcp), default=0.0),
        "long_tasks": len(after_fcp),
        "tasks": [(round(s), round(d)) for s, d in after_fcp],  # (start, duration) ms, for results.json
        "math": perf["mathAtDcl"],
    }
