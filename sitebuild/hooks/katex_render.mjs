// Build-time KaTeX for sitebuild/hooks/mathrender.py: one process per build, JSON lines.
// argv[2]: the site's node_modules/katex (the same KaTeX whose CSS and fonts the site serves).
// Request:  {"id": n, "items": [{"tex": "...", "display": false}, ...]}
// Response: {"id": n, "html": ["...", ...]}  or  {"id": n, "error": {"index": i, "message": "..."}}
import { createRequire } from "node:module";
import readline from "node:readline";

const katex = createRequire(import.meta.url)(process.argv[2]);
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });

rl.on("line", (line) => {
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    process.stdout.write(JSON.stringify({ id: null, error: { index: -1, message: `bad request: ${e.message}` } }) + "\n");
    return;
  }
  const html = [];
  for (const [index, item] of req.items.entries()) {
    try {
      html.push(katex.renderToString(item.tex, {
        displayMode: !!item.display,
        output: "htmlAndMathml", // MathML next to the HTML, for screen readers
        throwOnError: true,       // a bad formula fails the build
        strict: "ignore",
      }));
    } catch (e) {
      process.stdout.write(JSON.stringify({ id: req.id, error: { index, message: String(e.message || e) } }) + "\n");
      return;
    }
  }
  process.stdout.write(JSON.stringify({ id: req.id, html }) + "\n");
});
