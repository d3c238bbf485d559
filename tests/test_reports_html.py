"""toolproof.reports: report.html, read with the stdlib's HTML parser (the browser test reads it in Chromium)."""

from __future__ import annotations

import html
import random
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from toolproof.reports import RunInfo, render_html, render_markdown, write_run
from toolproof.spec import CrashCell, ResultRow, Verdict, load_catalog

EVIDENCE = (
    "D13.4: the remote error text reached message: '</pre><script>alert(1)</script> & \x1b[31m'\n"
    "reproduction:\n  register crm.update\n  submit step=1 calls=[crm.update#call-1 {}]\n    -> call-1: FAILED remote_rejected"
)
SYMBOLS = {"pass": "✓", "fail": "✗", "error": "⚠", "xfail": "⊘", "not-claimed": "–", "not-covered": "○"}


class Page(HTMLParser):
    """Every start tag with its attributes, and the text of each <pre> and <tr>."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.pres: list[str] = []
        self.rows: list[tuple[dict[str, str | None], list[str]]] = []
        self._pre: list[str] | None = None
        self._cell: list[str] | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "pre":
            self._pre = []
        elif tag == "tr":
            self.rows.append((dict(attrs), []))
        elif tag in {"td", "th"}:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre" and self._pre is not None:
            self.pres.append("".join(self._pre))
            self._pre = None
        elif tag in {"td", "th"} and self._cell is not None:
            self.rows[-1][1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        for sink in (self._pre, self._cell):
            if sink is not None:
                sink.append(data)


def info(*rules: str) -> RunInfo:
    return RunInfo(
        run_id="run-1",
        implementations=["ref", "witness"],
        selected_rules=list(rules or ("D13.1", "D13.4", "D7.1", "D1.1")),
        started_at="2025-03-01T10:00:00+00:00",
        toolproof_version="0.1.0",
        profiles={"ref": ["core", "mcp"], "witness": ["core"]},
    )


def row(name: str, rule: str, verdict: Verdict, evidence: str = "", scenario: str = "") -> ResultRow:
    return ResultRow(
        run_id="run-1",
        implementation=name,
        rule_id=rule,
        scenario=scenario or f"test_{rule.lower().replace('.', '_')}.py::test_it",
        verdict=verdict,
        duration_s=0.5,
        evidence=evidence,
    )


ROWS = [
    row("ref", "D13.1", Verdict.PASS),
    row("ref", "D13.4", Verdict.PASS),
    row("witness", "D13.1", Verdict.XFAIL, "known"),
    row("witness", "D13.4", Verdict.FAIL, EVIDENCE),
    row("witness", "D1.1", Verdict.ERROR, "harness: boom"),
]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("html")
    write_run(out, info(), ROWS)
    return (out / "report.html").read_text(encoding="utf-8")


def test_the_page_is_self_contained(page: str) -> None:
    parsed = Page(page)
    tags = [tag for tag, _ in parsed.tags]
    assert not {"link", "img", "iframe", "object", "embed", "base"} & set(tags)
    assert [attrs for tag, attrs in parsed.tags if tag == "script"] == [{}]  # One inline script, no src.
    references = [value for _, attrs in parsed.tags for key, value in attrs.items() if key in {"href", "src"}]
    assert references
    assert all(value is not None and value.startswith("#") for value in references)
    assert not re.search(r"url\(|@import|https?://", page)


def test_the_matrix_has_a_row_per_rule_with_a_word_and_a_symbol_per_verdict(page: str) -> None:
    matrix = [(attrs, cells) for attrs, cells in Page(page).rows if "data-verdicts" in attrs]
    # Rule rows appear twice on the page with filter attributes: in the matrix, and none elsewhere as <tr>.
    assert [cells[0] for _, cells in matrix] == ["D1.1", "D7.1", "D13.1", "D13.4"]
    by_rule = {cells[0]: (attrs, cells[3:]) for attrs, cells in matrix}
    assert by_rule["D13.4"][1] == ["✓ pass", "✗ fail"]
    assert by_rule["D13.1"][1] == ["✓ pass", "⊘ xfail"]
    assert by_rule["D7.1"][1] == ["○ not-covered", "– not-claimed"]
    assert by_rule["D1.1"][1] == ["○ not-covered", "⚠ error"]
    assert by_rule["D13.4"][0] == {"data-decision": "D13", "data-profile": "core", "data-verdicts": "pass fail"}
    for _, cells in matrix:
        for text in cells[3:]:
            symbol, word = text.split(" ")
            assert SYMBOLS[word] == symbol


def test_every_failure_shows_its_evidence_verbatim_under_its_rule_and_scenario(page: str) -> None:
    parsed = Page(page)
    assert parsed.pres == [
        "harness: boom",
        EVIDENCE.replace("\x1b", "\\x1b"),
    ]
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; \\x1b[31m" in page
    assert '<h3><span class="v v-fail">✗ fail</span> D13.4: <code>test_d13_4.py::test_it</code> (witness)</h3>' in page
    assert '<td class="v v-fail"><a href="#failure-2">✗ fail</a></td>' in page


def test_every_rule_shows_its_text_interpretation_scenarios_and_verdicts(page: str) -> None:
    rule = load_catalog().rule("D1.1")
    assert rule.interpretation is not None
    article = page[page.index('<article class="rule" id="rule-D1.1"') :]
    article = article[: article.index("</article>")]
    assert f'<p class="text">{html.escape(rule.text)}</p>' in article
    assert f"<strong>Interpretation:</strong> {html.escape(rule.interpretation)}" in article
    assert (
        '<p class="judged"><strong>How it is judged:</strong> the docstrings of <code>scenarios/test_d1_1.py</code></p>'
        in article
    )
    assert '<th scope="row"><code>test_d1_1.py::test_it</code></th><td class="none">—</td>' in article
    assert '<td class="v v-error">⚠ error</td>' in article


def test_summary_counts_each_decision_per_implementation(page: str) -> None:
    rows = [cells for attrs, cells in Page(page).rows if cells and cells[0] in {"D13", "witness"}]
    assert [
        "D13",
        "One six-field shape for every non-success outcome",
        "ref",
        "2",
        "0",
        "0",
        "0",
        "0",
        "0",
        "0",
    ] in rows
    assert ["witness", "0", "1", "0", "1", "0", "0", "0"] in rows


def test_the_filters_are_hidden_until_the_script_shows_them(page: str) -> None:
    forms = [attrs for tag, attrs in Page(page).tags if tag == "form"]
    assert forms == [{"id": "filters", "hidden": None}]
    options = re.findall(r'<select name="(\w+)">(.*?)</select>', page)
    assert [name for name, _ in options] == ["decision", "profile", "verdict"]
    assert re.findall(r'value="([^"]*)"', options[1][1]) == ["", "core", "mcp"]


def test_a_run_without_failures_says_so() -> None:
    assert "<h2>Failures</h2>\n<p>No failures.</p>" in render_html(info(), [row("ref", "D13.1", Verdict.PASS)])


def test_the_page_is_independent_of_row_order() -> None:
    shuffled = list(ROWS)
    random.Random(4).shuffle(shuffled)
    assert render_html(info(), ROWS) == render_html(info(), shuffled)


def test_raw_control_characters_are_shown_as_escapes_in_every_report(tmp_path: Path) -> None:
    rows = [row("witness", "D13.4", Verdict.FAIL, "D13.4: \x1b[2J\x00\x7f\ud800 cleared\tthe screen")]
    cell = CrashCell(
        run_id="run-1",
        implementation="witness",
        mode="simulated",
        crash_point="after_effect",
        idempotency="NON_IDEMPOTENT",
        position="single",
        expected="UNCERTAIN effect_unknown",
        observed="SUCCEEDED \x1b",
        effects=1,
        duplicates=0,
        verdict=Verdict.FAIL,
        evidence="\x1b",
    )
    for text in (render_html(info(), rows, [cell]), render_markdown(info(), rows, [cell])):
        assert "\\x1b[2J\\x00\\x7f\\ud800 cleared\tthe screen" in text
        assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]", text)


@pytest.mark.parametrize(
    ("evidence", "facts"),
    [
        ("D4.6: bad\nreproduction:\n  crash at after_watermark\n  sweep", ["Crash point: `after_watermark`"]),
        ("D4.6: the worker crashed\ncrash_point=before_watermark seed=42", ["Crash point: `before_watermark`", "Seed: `42`"]),
        ("D10.1: x\nFalsifying example: f(a=1)\n@reproduce_failure('6.1', b'AAE=')", ["Seed: `@reproduce_failure('6.1', b'AAE=')`"]),
        ("D10.1: x\nrun with --hypothesis-seed=77", ["Seed: `77`"]),
        # A crash point named outside a line about a crash is only a word.
        ("D4.6: after_watermark was unset", []),
    ],
)  # fmt: skip
def test_the_crash_point_and_seed_are_picked_out_of_the_evidence(evidence: str, facts: list[str]) -> None:
    rows = [row("witness", "D13.4", Verdict.FAIL, evidence)]
    report = render_markdown(info(), rows)
    rerun, failure = report[report.index("### witness: D13.4") :].split("\n\n")[1:3]
    assert rerun.startswith("Rerun: `toolproof run --impl witness --rules D13.4 --cell ")
    if facts:
        assert failure == " · ".join(facts)
    else:
        assert failure.startswith("```text\n")  # No facts line: the evidence follows the heading.
    page = render_html(info(), rows)
    for fact in facts:
        label, value = fact.split(": ", 1)
        assert f"<dt>{label}</dt><dd><code>{html.escape(value.strip('`'))}</code></dd>" in page
