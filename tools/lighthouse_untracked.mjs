// Lighthouse's own CLI, with one trace category removed: `node tools/lighthouse_untracked.mjs
// <url> [lighthouse flags]`. Lighthouse 12 records `disabled-by-default-devtools.timeline.
// invalidationTracking` (used only to attribute layout shifts); on a page of ~40,000 elements
// it makes Chromium's style invalidation many times slower than untraced, so stock Lighthouse
// reports main-thread time the page does not have. `make audit` prints both numbers, labelled.
import Trace from "lighthouse/core/gather/gatherers/trace.js";

const DROPPED = "disabled-by-default-devtools.timeline.invalidationTracking";
const stock = Trace.getDefaultTraceCategories;
Trace.getDefaultTraceCategories = () => stock().filter(category => category !== DROPPED);

await import("lighthouse/cli/index.js");
