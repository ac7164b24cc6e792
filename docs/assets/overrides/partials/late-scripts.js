// Material's bundle and the site's scripts start once the page has loaded, not when the parser
// reaches the end of <body>. Run there, the bundle's first read of the scroll position made the
// browser style and lay out every block parsed since the last frame, inside its own start-up
// task (about 0.3 s of a phone's main thread, the longest task of the load); after the load
// event those frames are already drawn and the same read costs next to nothing. The scripts
// wait, unexecuted, in <template id="__scripts"> (main.html), and run in their order.
// The bundle sets the page up when DOMContentLoaded fires (its document$), which by then has
// fired already: it is sent again, to the document only, once the bundle has run, in a task
// of its own (the bundle's start-up and the page's set-up were one task of 0.3 s on a phone).
// Nothing a reader needs first waits for them: math is typeset in the HTML, the palette toggle
// runs inline, and the nav drawer and the page's links work without script.
(() => {
  const start = () => {
    const held = [...document.getElementById("__scripts").content.querySelectorAll("script")];
    held.forEach(original => {
      const script = document.createElement("script");
      for (const { name, value } of original.attributes) script.setAttribute(name, value);
      script.textContent = original.textContent;
      script.async = false;  // in document order: the bundle first, then the scripts that use it
      if (/\/bundle\.\w+\.min\.js$/.test(script.src)) {
        script.addEventListener("load", () => setTimeout(() => document.dispatchEvent(new Event("DOMContentLoaded"))));
      }
      document.head.append(script);
    });
  };
  if (document.readyState === "complete") setTimeout(start);
  else addEventListener("load", () => setTimeout(start), { once: true });
})();
