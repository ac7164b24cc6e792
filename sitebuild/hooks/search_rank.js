// The order of search results, prepended to Material's search worker by searchindex.py.
//
// Material's worker scores an entry with lunr (no length normalisation, every repeat of a word
// counts) and lists a page first when its title names the query. Here each entry is scored
// again, BM25 over its title and text, before the results leave the worker:
//   * a query word counts by its rarity (idf); a single character (表, 3, A) and a question word
//     (为什么, 区别 …) count less, since they match nearly everywhere;
//   * a title word counts TITLE times a text word, and a long entry's repeats count less (B);
//   * an entry that holds only some of the query's words is scaled by the share it holds;
//   * `boost`, written by searchindex.py, ranks pages that restate (claims, errata, the cheat
//     sheet, question pages) below the chapter that explains.
// A result group is a page with its sections; groups are ordered by their best entry, a group
// lists its sections best first, then the page's own entry. Material shows a group's first entry
// as its link (with the bundle fix in searchindex.py), the entries that tie its score, and folds
// the rest: so each result links to the section that explains, named with its page.
// Measured: tools/history.md, 2026-12-04 (search ranking, eighth to tenth passes).
(() => {
  const TITLE = 5, B = 0.3, K1 = 6, COVERAGE = 0.5, SINGLE_CHARACTER = 0.5, QUESTION_WORD = 0.1;
  const QUESTION_WORDS = new Set(["为什么", "什么", "的", "和", "区别", "作用", "是", "吗", "怎么", "如何", "有", "与"]);
  let size = 1; // entries in the index, for idf

  // A query in the index's spelling, read as text, not as lunr's query syntax: an exponent the
  // index writes raised (n^2, QK^T → n², qkᵀ; searchindex.py: SUPERSCRIPT; lunr reads ^ as a boost
  // and loses an escaped one, so any other ^ is a space), β2 as β₂, -inf with the minus sign the
  // index has, a leading - or + as part of the value (lunr reads them as "without" and "with"),
  // : and ~ as spaces (lunr's field and fuzziness).
  const RAISED = "0123456789+-=()nTti", RAISED_AS = "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿᵀᵀⁱ";
  const raise = (s) => [...s].map((c) => RAISED_AS[RAISED.indexOf(c)]).join("");
  const spelled = (query) => query
    .replace(/\^(?:\{([0-9+\-=()nTti]+)\}|([0-9]+|[ni](?![A-Za-z])|[Tt](?![a-z])))/g, (_, a, b) => raise(a ?? b))
    .replace(/\^/g, " ")
    .replace(/([α-ω])([0-9])(?![0-9])/g, (_, g, d) => g + String.fromCharCode(0x2080 + Number(d)))
    .replace(/-(?=(?:inf|∞)(?![A-Za-z]))/g, "−")
    .replace(/(^|\s)[-+]+(?=\S)/g, "$1")
    .replace(/[:~]/g, " ");

  self.addEventListener("message", (event) => {
    if (event.data && event.data.type === 0) size = event.data.data.docs.length;
    if (event.data && event.data.type === 2 && typeof event.data.data === "string") event.data.data = spelled(event.data.data);
  });

  // {query word: [times in the title, times in the text]} from lunr's match data, counting each
  // index token that starts with the word (the worker searches a word as a prefix; a word's own
  // "*" is not part of it).
  self.__searchTermCounts = (clauses, metadata) => {
    const counts = {};
    for (const clause of clauses) {
      const term = clause.term.replace(/^\*+|\*+$/g, "");
      if (!term || term in counts) continue;
      const c = (counts[term] = [0, 0]);
      for (const [token, fields] of Object.entries(metadata)) {
        if (!token.startsWith(term)) continue;
        if (fields.title) c[0] += fields.title.position.length;
        if (fields.text) c[1] += fields.text.position.length;
      }
    }
    return counts;
  };

  function rank(groups) {
    const entries = groups.flat();
    const weight = {};
    for (const item of entries) for (const term of Object.keys(item.counts || {})) weight[term] = 0;
    for (const term of Object.keys(weight)) {
      const n = entries.filter((item) => item.counts && item.counts[term].some(Boolean)).length;
      let w = Math.log(1 + (size - n + 0.5) / (n + 0.5));
      if ([...term].length === 1) w *= SINGLE_CHARACTER;
      if (QUESTION_WORDS.has(term)) w *= QUESTION_WORD;
      weight[term] = w;
    }
    const total = Object.values(weight).reduce((a, b) => a + b, 0) || 1;
    for (const item of entries) {
      const [title, text] = item.tokens || [1, 1]; // token counts over the index's means
      let score = 0, held = 0;
      for (const [term, [inTitle, inText]] of Object.entries(item.counts || {})) {
        if (!inTitle && !inText) continue;
        const tf = (TITLE * inTitle) / (1 - B + B * title) + inText / (1 - B + B * text);
        score += (weight[term] * tf * (K1 + 1)) / (tf + K1);
        held += weight[term];
      }
      item.score = score * (held / total) ** COVERAGE * (item.boost ?? 1);
      delete item.counts;
    }
    const isSection = (item) => item.location.includes("#");
    return groups
      .map((g) => [...g.filter(isSection).sort((a, b) => b.score - a.score), ...g.filter((x) => !isSection(x))])
      .map(labelled)
      .map((g) => ({ g, best: Math.max(...g.map((item) => item.score)) }))
      .sort((a, b) => b.best - a.best)
      .map(({ g }) => g);
  }

  // The group's first entry is its link (searchindex.py: BUNDLE_FIXES); a section there carries
  // its page's name, with the chapter's number, above its own title.
  function labelled(group) {
    const [first] = group;
    const page = group.find((item) => !item.location.includes("#"));
    if (!first.location.includes("#") || !page) return group;
    const title = page.title.replace(/<span hidden>.*?<\/span>/g, "");
    const chapter = /^chapters\/(\d+)-/.exec(page.location);
    const name = chapter && !title.startsWith("第") ? `第 ${chapter[1]} 章 · ${title}` : title;
    return [{ ...first, title: `<span class="md-search-result__page">${name}</span>${first.title}` }, ...group.slice(1)];
  }

  const post = self.postMessage.bind(self);
  self.postMessage = (message, ...rest) => {
    if (message && message.type === 3 && message.data && message.data.items) message.data.items = rank(message.data.items);
    return post(message, ...rest);
  };
})();
