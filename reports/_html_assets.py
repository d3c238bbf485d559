"""The style sheet and the filter script ``report.html`` carries inline: the page loads nothing else."""

from __future__ import annotations

from toolproof.spec import Verdict

SYMBOLS: dict[Verdict, str] = {
    Verdict.PASS: "✓",
    Verdict.FAIL: "✗",
    Verdict.ERROR: "⚠",
    Verdict.XFAIL: "⊘",
    Verdict.NOT_CLAIMED: "–",
    Verdict.NOT_COVERED: "○",
    Verdict.REVIEW_ONLY: "◇",
}
"""A symbol beside every verdict word, so no verdict is told by colour alone."""

MEANINGS: dict[Verdict, str] = {
    Verdict.PASS: "every scenario of the rule passed",
    Verdict.FAIL: "a scenario saw the implementation break the rule",
    Verdict.ERROR: "a scenario could not judge (a raise, or a skip other than an unclaimed profile)",
    Verdict.XFAIL: "a failure the implementation declared as expected",
    Verdict.NOT_CLAIMED: "the implementation does not claim the rule's profile",
    Verdict.NOT_COVERED: "no scenario judges the rule yet: never a pass",
    Verdict.REVIEW_ONLY: "no run can judge the rule, only a reviewer reading the implementation: never a pass",
}
"""The legend's line per verdict."""

STYLE = """
:root { color-scheme: light; --line: #cbd5e1; --muted: #475569; }
* { box-sizing: border-box; }
body { font: 15px/1.45 "DejaVu Sans", "Liberation Sans", system-ui, sans-serif; color: #0f172a;
  margin: 0 auto; padding: 1rem 1.5rem 4rem; max-width: 84rem; }
h1 { font-size: 1.6rem; margin: .5rem 0; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 .6rem; border-bottom: 2px solid var(--line); padding-bottom: .2rem; }
h3 { font-size: 1.1rem; margin: 1.4rem 0 .4rem; }
h4 { font-size: 1rem; margin: 1.2rem 0 .3rem; }
nav a { margin-right: 1rem; }
p.verdict { font-size: 1.1rem; padding: .5rem .8rem; margin: .6rem 0; border-left: 6px solid currentColor; }
.meta, .note, .legend, .status { color: var(--muted); }
table { border-collapse: collapse; margin: .4rem 0 1rem; }
th, td { border: 1px solid var(--line); padding: .25rem .5rem; text-align: left; vertical-align: top; }
thead th { background: #f1f5f9; white-space: nowrap; }
caption { text-align: left; color: var(--muted); padding: .2rem 0; }
:target { scroll-margin-top: 1rem; outline: 2px solid #2563eb; outline-offset: 2px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody.group > tr.group-head > th { background: #e2e8f0; }
td.text { font-size: .85rem; max-width: 44rem; }
code, pre { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: .85rem; }
pre.evidence { background: #f8fafc; border: 1px solid var(--line); border-left: 4px solid #b91c1c;
  padding: .6rem .8rem; white-space: pre-wrap; overflow-wrap: anywhere; margin: .4rem 0 1rem; }
.v { white-space: nowrap; }
.v-pass { background: #dcfce7; color: #14532d; }
.v-fail { background: #fee2e2; color: #7f1d1d; font-weight: bold; }
.v-error { background: #ffedd5; color: #7c2d12; font-weight: bold; }
.v-xfail { background: #ede9fe; color: #4c1d95; }
.v-not-claimed { background: #f1f5f9; color: #475569; }
.v-not-covered { background: #fefce8; color: #713f12; font-style: italic; }
.v-review-only { background: #ecfeff; color: #155e75; font-style: italic; }
span.v { padding: 0 .35rem; border-radius: .25rem; }
td.v a, span.v a, .crash .entry a { color: inherit; }
td.none { color: #94a3b8; text-align: center; }
.crash td { min-width: 12rem; }
.crash .entry + .entry { border-top: 1px dashed var(--line); margin-top: .2rem; padding-top: .2rem; }
.crash .effects { font-size: .85rem; }
.crash .expected { font-weight: normal; font-size: .85rem; }
article.rule, article.failure { border-top: 1px solid var(--line); padding-top: .2rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; margin: .3rem 0; }
dl.facts dt { font-weight: bold; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
form#filters { display: flex; flex-wrap: wrap; gap: .4rem 1.2rem; align-items: center; padding: .4rem .8rem;
  margin: 1.5rem 0 0; background: #f1f5f9; border: 1px solid var(--line); font-size: .9rem; }
form#filters select { margin-left: .3rem; max-width: 22rem; }
form#filters p { margin: 0; }
[hidden] { display: none !important; }
@media print { form#filters { display: none; } }
"""
"""The page's only style sheet."""

SCRIPT = """
"use strict";
(() => {
  const form = document.getElementById("filters");
  if (!form) return;
  const items = Array.from(document.querySelectorAll("[data-decision]"));
  const groups = Array.from(document.querySelectorAll("[data-group]"));
  const rows = items.filter((el) => el.matches("tr"));
  const status = document.getElementById("filter-status");
  const apply = () => {
    const decision = form.elements.decision.value;
    const profile = form.elements.profile.value;
    const verdict = form.elements.verdict.value;
    for (const el of items) {
      el.hidden = !((!decision || el.dataset.decision === decision)
        && (!profile || el.dataset.profile === profile)
        && (!verdict || el.dataset.verdicts.split(" ").includes(verdict)));
    }
    for (const group of groups) {
      group.hidden = !group.querySelector("[data-decision]:not([hidden])");
    }
    const shown = rows.filter((el) => !el.hidden).length;
    status.textContent = `Showing ${shown} of ${rows.length} rules.`;
  };
  form.addEventListener("change", apply);
  form.addEventListener("reset", () => setTimeout(apply, 0));
  form.hidden = false;
  apply();
})();
"""
"""The filters: by decision, profile and verdict, over the matrix, the rules and the failures."""
