// The light/dark toggle in the header. Material's bundle ran it when the bundle started, at
// the end of the page: it wrote to <body> and read the header's computed style twice, and each
// read made the browser restyle the whole chapter (about 0.35 s of a phone's main thread, in
// the task that was already the longest), then restyled it once more a moment later. This runs
// while the header is parsed, before any content exists, so the same work costs next to nothing,
// and a first visit gets the system's palette before the first paint instead of after it.
// The palette entries in mkdocs.yml are media-specific (light, dark); there is no automatic one.
(() => {
  const form = document.querySelector("form[data-md-palette]");
  if (!form) return;
  const inputs = Array.from(form.querySelectorAll("input[name=__palette]"));
  const header = form.closest("header") || document.body;

  const colorOf = input => ({
    media: input.getAttribute("data-md-color-media"),
    scheme: input.getAttribute("data-md-color-scheme"),
    primary: input.getAttribute("data-md-color-primary"),
    accent: input.getAttribute("data-md-color-accent"),
  });

  // <meta name="theme-color"> (the phone's browser bar) and <meta name="color-scheme">, from the
  // header as styled; Material's bundle keeps both when it swaps <head> on instant navigation.
  const meta = name => document.head.querySelector(`meta[name="${name}"]`)
    || document.head.appendChild(Object.assign(document.createElement("meta"), { name }));
  const updateMeta = () => {
    const style = getComputedStyle(header);
    meta("color-scheme").content = style.colorScheme;
    const rgb = (style.backgroundColor.match(/\d+/g) || []).slice(0, 3);
    if (rgb.length === 3) meta("theme-color").content = "#" + rgb.map(c => (+c).toString(16).padStart(2, "0")).join("");
  };

  const apply = (index, switching) => {
    const color = colorOf(inputs[index]);
    // no transitions while the colours change (Material's CSS keys on this attribute)
    if (switching) document.body.setAttribute("data-md-color-switching", "");
    for (const [key, value] of Object.entries(color)) {
      if (document.body.getAttribute(`data-md-color-${key}`) !== value) document.body.setAttribute(`data-md-color-${key}`, value);
    }
    // show the one label that switches to the next palette
    inputs.forEach((input, i) => {
      input.checked = i === index;
      const label = input.nextElementSibling;
      if (label instanceof HTMLLabelElement) label.hidden = i !== index;
    });
    __md_set("__palette", { index, color });
    updateMeta();
    if (switching) setTimeout(() => document.body.removeAttribute("data-md-color-switching"));
  };

  // the reader's last choice, else the first entry whose media query the system matches
  const stored = __md_get("__palette");
  const chosen = stored && Number.isInteger(stored.index)
    ? stored.index
    : inputs.findIndex(input => matchMedia(input.getAttribute("data-md-color-media")).matches);
  apply(Math.max(0, Math.min(chosen, inputs.length - 1)), false);

  form.addEventListener("change", event => {
    const index = inputs.indexOf(event.target);
    if (index >= 0) apply(index, true);
  });
  // Enter on the focused option moves on to the next palette, as in Material
  form.addEventListener("keydown", event => {
    if (event.key !== "Enter") return;
    const index = inputs.findIndex(input => input.checked);
    const next = inputs[(index + 1) % inputs.length];
    next.click();
    next.focus();
  });
})();
