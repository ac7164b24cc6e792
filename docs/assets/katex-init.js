// Render math with the self-hosted KaTeX. Material's document$ observable fires on
// the first load and after every instant-navigation page switch.
document$.subscribe(({ body }) => {
  renderMathInElement(body, {
    delimiters: [
      { left: "$$", right: "$$", display: true },
      { left: "$", right: "$", display: false },
      { left: "\\(", right: "\\)", display: false },
      { left: "\\[", right: "\\]", display: true },
    ],
    // Keep MathML next to the HTML rendering, for screen readers.
    output: "htmlAndMathml",
    throwOnError: false,
  });
  // Tests (and anyone curious) wait for this: every formula on this URL is typeset.
  document.body.dataset.mathDone = location.href;
});


// Accessibility (axe scrollable-region-focusable, aria-dialog-name): a formula, wide table or
// notebook cell that scrolls sideways gets a tab stop, as Material gives its code blocks;
// Material's search dialog gets a name.
function markScrollable() {
  for (const el of document.querySelectorAll(".katex-display, .md-typeset__scrollwrap, .jupyter-wrapper .highlight-ipynb")) {
    if (el.tabIndex !== 0 && (el.scrollWidth > el.clientWidth || el.scrollHeight > el.clientHeight)) {
      el.tabIndex = 0;
      el.setAttribute("role", "group");
      const what = el.matches(".katex-display") ? "公式" : el.matches(".md-typeset__scrollwrap") ? "表格" : "代码";
      el.setAttribute("aria-label", `${what}，可横向滚动`);
    }
  }
}
document$.subscribe(() => {
  document.querySelector(".md-search[role=dialog]")?.setAttribute("aria-label", "搜索");
  markScrollable();
  document.fonts.ready.then(markScrollable);  // KaTeX fonts widen formulas when they arrive
});
window.addEventListener("resize", markScrollable, { passive: true });
