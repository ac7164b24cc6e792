// The classes Material's bundle puts on <html> when it starts ("js", and "js-focus-visible" from
// its focus-visible polyfill) are set here, before the body exists. Added by the bundle, after
// the page has been drawn, the new class on the root made the browser restyle the whole page
// (about 0.12 s of a phone's main thread); the bundle's own add is then a no-op.
document.documentElement.classList.replace("no-js", "js");
document.documentElement.classList.add("js-focus-visible");
document.documentElement.setAttribute("data-js-focus-visible", "");
