// The controls of a question bank page (interview/chNN/, .qbank-controls): filter by difficulty,
// reveal or hide every answer. The questions carry data-chapter / data-stars (set at build time
// by sitebuild/questions.py). Without this script the controls stay hidden and every question is
// still there, collapsed, with its one-line core and a link to its answer.
//
// The bank does not repeat the answers (sitebuild/generate/render/page_questionbank.py): a question that is
// opened fetches its chapter's questions page once (same site, so no request leaves it) and
// shows the answer from there in place of the link, links and images resolved against that
// page. Where fetch fails (the offline edition over file://), the link stays.
(function () {
  "use strict";

  var chapterPages = {};

  function chapterPage(url) {
    if (!chapterPages[url]) {
      chapterPages[url] = fetch(url, {credentials: "same-origin"})
        .then(function (r) { if (!r.ok) throw new Error(url + ": " + r.status); return r.text(); })
        .then(function (text) { return new DOMParser().parseFromString(text, "text/html"); });
      chapterPages[url].catch(function () { delete chapterPages[url]; });
    }
    return chapterPages[url];
  }

  function loadAnswer(q) {
    var link = q.querySelector("a.qbank-answer");
    if (!link || q.dataset.answer || !window.fetch || location.protocol === "file:") return;
    q.dataset.answer = "loading";
    var url = link.href.split("#")[0];
    chapterPage(url).then(function (doc) {
      var source = doc.getElementById(q.id);
      if (!source) throw new Error(url + " has no #" + q.id);
      var answer = document.createDocumentFragment();
      Array.prototype.forEach.call(source.children, function (el) {
        if (el.tagName !== "SUMMARY") answer.appendChild(document.importNode(el, true));
      });
      Array.prototype.forEach.call(answer.querySelectorAll("[href], [src]"), function (el) {
        ["href", "src"].forEach(function (attr) {
          var value = el.getAttribute(attr);
          if (value !== null && value.charAt(0) !== "#") el.setAttribute(attr, new URL(value, url).href);
          else if (value !== null) el.setAttribute(attr, url + value);
        });
      });
      // the answer replaces the core and the link; a link back to the chapter ends it
      var back = link.closest("p");
      Array.prototype.slice.call(q.children).forEach(function (el) {
        if (el.tagName !== "SUMMARY" && el !== back) q.removeChild(el);
      });
      q.insertBefore(answer, back);
      link.textContent = link.textContent.replace("完整参考答案在", "这道题在");
      q.dataset.answer = "shown";
    }).catch(function () { delete q.dataset.answer; });
  }

  function setup() {
    var bar = document.querySelector(".qbank-controls");
    if (!bar || bar.dataset.ready) return;
    bar.dataset.ready = "1";
    var article = bar.closest("article") || document;
    var questions = Array.prototype.slice.call(article.querySelectorAll("details.question[data-chapter]"));
    var stars = bar.querySelector("#qbank-stars");
    var count = bar.querySelector(".qbank-count");

    function visible(q) {
      return !stars.value || q.dataset.stars === stars.value;
    }

    function apply() {
      var shown = 0;
      questions.forEach(function (q) {
        var on = visible(q);
        q.hidden = !on;
        if (on) shown += 1;
      });
      // a heading stays only if a visible question follows it before the next heading of its rank or above
      var headings = article.querySelectorAll("h2, h3");
      Array.prototype.forEach.call(headings, function (h) {
        var rank = Number(h.tagName[1]), el = h, any = false, inBank = false;
        while ((el = el.nextElementSibling)) {
          if (/^H[1-6]$/.test(el.tagName) && Number(el.tagName[1]) <= rank) break;
          if (el.matches("details.question[data-chapter]")) { inBank = true; if (!el.hidden) { any = true; break; } }
        }
        if (inBank || h.hidden) h.hidden = inBank && !any;
      });
      count.textContent = "显示 " + shown + " / " + questions.length + " 题";
    }

    function reveal(open) {
      questions.forEach(function (q) { if (!q.hidden) q.open = open; });
    }

    questions.forEach(function (q) {
      q.addEventListener("toggle", function () { if (q.open) loadAnswer(q); });
      if (q.open) loadAnswer(q);  // opened by its anchor (#q-3-1) before this ran
    });

    stars.addEventListener("change", apply);
    bar.querySelector("[data-qbank=open]").addEventListener("click", function () { reveal(true); });
    bar.querySelector("[data-qbank=close]").addEventListener("click", function () { reveal(false); });
    bar.hidden = false;
    apply();
  }

  // Material's instant navigation swaps pages without a reload: run on every page it shows.
  if (typeof document$ !== "undefined" && document$.subscribe) {
    document$.subscribe(setup);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setup);
  } else {
    setup();
  }
})();
