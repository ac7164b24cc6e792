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
});
