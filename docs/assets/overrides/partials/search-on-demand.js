// The search index (~210 KB gzip for six chapters, growing with every chapter) is requested
// when the reader first reaches for search, not by every page load: on a phone's slow
// network it would share the bandwidth with the chapter being opened. Material's bundle asks
// for search/search_index.json with an XMLHttpRequest as soon as it starts; that one request
// waits here until the search field gets the pointer or focus (a click, a tap on the search
// button, the / or s shortcut), or the page was opened from a search result (?h=…, ?q=…).
// Over file:// (the offline edition) Material loads search_index.js instead: not affected.
(() => {
  const INDEX = /\/search\/search_index\.json$/;
  const held = [];
  let wanted = /[?&](h|q)=/.test(location.search);
  const want = () => {
    if (wanted) return;
    wanted = true;
    held.splice(0).forEach(send => send());
  };
  const isSearch = target => target instanceof Element
    && target.closest("form[name=search], label[for=__search]") !== null;
  document.addEventListener("focusin", e => { if (isSearch(e.target)) want(); });
  document.addEventListener("pointerover", e => { if (isSearch(e.target)) want(); }, { passive: true });
  document.addEventListener("change", e => { if (e.target.id === "__search") want(); });

  const { open, send } = XMLHttpRequest.prototype;
  const held_requests = new WeakSet();
  XMLHttpRequest.prototype.open = function (method, url, ...rest) {
    if (INDEX.test(new URL(url, location.href).pathname)) held_requests.add(this);
    return open.call(this, method, url, ...rest);
  };
  XMLHttpRequest.prototype.send = function (...args) {
    if (!wanted && held_requests.has(this)) {
      held.push(() => send.apply(this, args));
      return;
    }
    return send.apply(this, args);
  };
})();
