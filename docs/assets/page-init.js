// Math is typeset when the site is built (sitebuild/hooks/mathrender.py): no KaTeX script runs here.
// What is left: tab stops for content that scrolls sideways, a name for the search dialog, search
// results that follow an input method, and the loader of the widgets.

// Accessibility (axe scrollable-region-focusable, aria-dialog-name): a formula, wide table or
// notebook cell that scrolls sideways gets a tab stop, as Material gives its code blocks.
// Widths are read only for blocks near the viewport (an IntersectionObserver, so that the
// content-visibility: auto blocks far away stay unrendered), all reads before all writes.
// Code blocks too: Material gives them a tab stop only once they scroll into view (content.lazy),
// which a reader moving by keyboard could outrun.
const SCROLLERS = ".katex-display, .md-typeset__scrollwrap, .jupyter-wrapper .highlight-ipynb, .md-content pre > code";

function markScrollable(elements) {
  const wide = [...elements].map(el => el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1);
  [...elements].forEach((el, i) => {
    if (wide[i] && el.tabIndex !== 0) {
      el.tabIndex = 0;
      el.setAttribute("role", "group");
      const what = el.matches(".katex-display") ? "公式" : el.matches(".md-typeset__scrollwrap") ? "表格" : "代码";
      el.setAttribute("aria-label", `${what}，可横向滚动`);
    } else if (!wide[i] && el.getAttribute("role") === "group" && el.tabIndex === 0) {
      el.removeAttribute("tabindex");
      el.removeAttribute("role");
      el.removeAttribute("aria-label");
    }
  });
}

let observer = null;
const near = new Set();  // the blocks near the viewport, as the observer last reported them
let checkedAll = false;  // since the last width change, which checks every block
document$.subscribe(() => {
  document.querySelector(".md-search[role=dialog]")?.setAttribute("aria-label", "搜索");
  observer?.disconnect();
  near.clear();
  checkedAll = false;
  observer = new IntersectionObserver(entries => {
    entries.forEach(e => e.isIntersecting ? near.add(e.target) : near.delete(e.target));
    markScrollable(entries.filter(e => e.isIntersecting).map(e => e.target));
  }, { rootMargin: "100% 0px" });
  document.querySelectorAll(SCROLLERS).forEach(el => observer.observe(el));
  startWidgets();
  // Tests (and anyone curious) wait for this: Material has set up the page at this URL.
  document.body.dataset.pageReady = location.href;
});

// Widgets (figures a reader can play with, docs/assets/widgets/): the page already shows each one's
// default state, built with the site; its scripts (data-widget-src, paths from this script's
// folder, read while it runs: instant navigation changes the page's URL, not this one) load when it
// comes near the viewport or is first touched, once per visit, as classic scripts so that the
// offline edition runs them over file://. Each script registers siteWidgets[name](figure).
const ASSETS = new URL(".", document.currentScript.src);
const loadedScripts = new Map();

function loadScript(path) {
  if (!loadedScripts.has(path)) {
    loadedScripts.set(path, new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = new URL(path, ASSETS).href;
      script.onload = resolve;
      script.onerror = () => reject(new Error(`widget script ${path} did not load`));
      document.head.append(script);
    }));
  }
  return loadedScripts.get(path);
}

async function startWidget(figure) {
  if (figure.dataset.started) return;
  figure.dataset.started = "true";
  for (const path of figure.dataset.widgetSrc.split(" ")) await loadScript(path);  // in order
  window.siteWidgets[figure.dataset.widget](figure);
}

function startWidgets() {
  const figures = document.querySelectorAll("[data-widget]");
  if (!figures.length) return;
  const near = new IntersectionObserver(entries => entries.forEach(e => {
    if (e.isIntersecting) { near.unobserve(e.target); startWidget(e.target); }
  }), { rootMargin: "50% 0px" });
  figures.forEach(figure => {
    near.observe(figure);
    for (const type of ["focusin", "pointerdown"]) figure.addEventListener(type, () => startWidget(figure), { once: true });
  });
}

// Material runs a search query when a key is released in the search box. Text that an input
// method commits (拼音: the whole word at once), a paste or dictation changes the box without a
// key release, and the results of the previous query stayed on screen: pass Material the key
// release it waits for. During a composition the box holds pinyin, so wait for its end; Material
// itself drops a value it has already searched for.
for (const type of ["input", "compositionend"]) {
  document.addEventListener(type, event => {
    const box = event.target;
    if (event.isComposing || !box.matches?.("[data-md-component=search-query]")) return;
    box.dispatchEvent(new KeyboardEvent("keyup"));
  });
}

// A KaTeX font arrives when a block that uses it is first rendered, often after the block was
// checked, and widens its formulas (chapter 08's \mathcal L by 2 px at 390 px): check again.
document.fonts.addEventListener("loadingdone", () => {
  markScrollable(checkedAll ? document.querySelectorAll(SCROLLERS) : near);
});

// A new width (a phone turned sideways) changes which blocks overflow: check them all, once.
// The width is first read in an animation frame: reading it while the page loads would force
// a style and layout pass of the whole page inside this script.
let lastWidth = null;
requestAnimationFrame(() => { lastWidth ??= window.innerWidth; });
window.addEventListener("resize", () => {
  if (window.innerWidth === lastWidth) return;  // a phone's toolbar showing or hiding
  lastWidth = window.innerWidth;
  checkedAll = true;
  markScrollable(document.querySelectorAll(SCROLLERS));
}, { passive: true });
