// Material's instant navigation makes every relative href and src on the page absolute when its
// bundle starts (so that the <head>s of pages at different depths compare equal). It does that
// by re-assigning them, at the end of the page, and re-assigning a stylesheet's href makes the
// browser apply the stylesheet again and restyle and lay out the whole chapter: about 0.3 s of a
// phone's main thread inside the bundle's start-up task. Done here, at the end of <head>, before
// the body exists, it costs nothing, and the bundle skips these links: their href is absolute.
// Over file:// (the offline edition) there is no instant navigation.
if (location.protocol !== "file:") {
  for (const link of document.head.querySelectorAll("link[href]")) {
    if (!/^(?:[a-z]+:)?\/\//i.test(link.getAttribute("href"))) link.href = link.href;
  }
}
