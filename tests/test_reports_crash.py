"""toolproof.reports: the crash matrix, from CrashCell through crash_matrix in results.duckdb to both reports."""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import pytest
from pydantic import ValidationError

from toolproof.reports import RunInfo, load_crash_cells, load_run, render_html, render_markdown, rerender, write_run
from toolproof.spec import (
    ConfigurationError,
    CrashCell,
    CrashPoint,
    HarnessError,
    IdempotencyClass,
    ResultRow,
    Verdict,
    member_doc,
)


def info(run_id: str = "run-1", started_at: str = "2025-03-01T10:00:00+00:00") -> RunInfo:
    return RunInfo(
        run_id=run_id,
        implementations=["ref", "other"],
        selected_rules=["D4.6"],
        started_at=started_at,
        toolproof_version="0.1.0",
        profiles={"ref": ["core", "recovery"], "other": ["core", "recovery"]},
    )


def cell(
    crash_point: str = "after_effect",
    idempotency: str = "NON_IDEMPOTENT",
    *,
    implementation: str = "ref",
    mode: str = "simulated",
    position: str = "single",
    path: str = "allow",
    recovery: str = "sweep",
    observed: str = "UNCERTAIN effect_unknown",
    effects: int = 1,
    duplicates: int = 0,
    verdict: Verdict = Verdict.PASS,
    evidence: str = "",
    run_id: str = "run-1",
) -> CrashCell:
    return CrashCell(
        run_id=run_id,
        implementation=implementation,
        mode=mode,
        crash_point=crash_point,
        idempotency=idempotency,
        position=position,
        path=path,
        recovery=recovery,
        expected="UNCERTAIN effect_unknown",
        observed=observed,
        effects=effects,
        duplicates=duplicates,
        verdict=verdict,
        evidence=evidence,
    )


DUPLICATED = cell(
    implementation="other",
    observed="SUCCEEDED",
    effects=3,
    duplicates=2,
    verdict=Verdict.FAIL,
    evidence="D4.6: retried after the watermark\nreproduction:\n  crash at after_effect\n  sweep",
)
ROW = ResultRow(
    run_id="run-1", implementation="ref", rule_id="D4.6", scenario="t.py::t", verdict=Verdict.PASS, duration_s=0.1
)


def stored(db: Path, sql: str) -> list[tuple[object, ...]]:
    with duckdb.connect(str(db), read_only=True) as connection:
        return connection.execute(sql).fetchall()


def old_database(folder: Path) -> None:
    """A results.duckdb as toolproof wrote it before the crash matrix: no crash_matrix table."""
    with duckdb.connect(str(folder / "results.duckdb")) as connection:
        connection.execute(
            "CREATE TABLE results (run_id VARCHAR, implementation VARCHAR, rule_id VARCHAR, scenario VARCHAR,"
            " verdict VARCHAR, duration_s DOUBLE, evidence VARCHAR)"
        )
        connection.execute(
            "CREATE TABLE runs (run_id VARCHAR, implementations VARCHAR, selected_rules VARCHAR, started_at VARCHAR,"
            " toolproof_version VARCHAR, profiles VARCHAR, PRIMARY KEY (run_id))"
        )
        connection.execute(
            "INSERT INTO runs VALUES ('old', '[\"ref\"]', '[\"D4.6\"]', '2024-01-01T00:00:00+00:00', '0.0.9', '{}')"
        )
        connection.execute("INSERT INTO results VALUES ('old', 'ref', 'D4.6', 't.py::t', 'pass', 0.5, '')")


# --- the model -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("verdict", [Verdict.XFAIL, Verdict.NOT_CLAIMED, Verdict.NOT_COVERED])
def test_a_crash_cell_is_always_judged(verdict: Verdict) -> None:
    with pytest.raises(ValidationError, match=rf"verdict='{verdict.value}' is not allowed for a crash cell"):
        cell(verdict=verdict)


def test_duplicates_are_effects_beyond_the_first() -> None:
    assert cell(effects=3, duplicates=2).duplicates == 2
    with pytest.raises(ValidationError, match=r"duplicates=1 exceeds effects=1 minus the first"):
        cell(effects=1, duplicates=1)
    with pytest.raises(ValidationError, match=r"effects\n.*greater than or equal to 0"):
        cell(effects=-1)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("crash_point", "after_lunch"),
        ("idempotency", "ONCE"),
        ("mode", "gently"),
        ("position", "second"),
        ("path", "maybe"),
        ("recovery", "reboot"),
    ],
)
def test_a_crash_cell_names_its_point_class_mode_position_path_and_recovery_from_the_spec_enums(
    field: str, value: str
) -> None:
    with pytest.raises(ValidationError, match=rf"{field}\n  Input should be "):
        cell(**{field: value})


def test_a_crash_cell_is_frozen() -> None:
    with pytest.raises(ValidationError, match="frozen"):
        cell().effects = 2  # type: ignore[misc]


# --- the store -----------------------------------------------------------------------------------------------


def test_crash_cells_are_stored_in_the_crash_matrix_table_and_loaded_in_spec_order(tmp_path: Path) -> None:
    cells = [
        DUPLICATED,
        cell("after_claim", "IDEMPOTENT", position="last", observed="SUCCEEDED"),
        cell("after_claim", "IDEMPOTENT", position="first", observed="SUCCEEDED"),
        cell("after_claim", "IDEMPOTENT", position="first", path="control", observed="SUCCEEDED"),
        cell("after_claim", "IDEMPOTENT", position="first", path="approval", recovery="replay", observed="SUCCEEDED"),
        cell("after_claim", "IDEMPOTENT", position="first", path="approval", observed="SUCCEEDED"),
        cell("after_resolve", "NON_IDEMPOTENT", mode="sigkill-sqlite"),
        cell("after_resolve", "CONDITIONALLY_IDEMPOTENT"),
    ]
    shuffled = list(cells)
    random.Random(2).shuffle(shuffled)
    write_run(tmp_path, info(), [ROW], shuffled)
    columns = stored(
        tmp_path / "results.duckdb",
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'crash_matrix'"
        " ORDER BY ordinal_position",
    )
    assert columns == [
        ("run_id", "VARCHAR"),
        ("implementation", "VARCHAR"),
        ("mode", "VARCHAR"),
        ("crash_point", "VARCHAR"),
        ("idempotency", "VARCHAR"),
        ("position", "VARCHAR"),
        ("path", "VARCHAR"),
        ("recovery", "VARCHAR"),
        ("expected", "VARCHAR"),
        ("observed", "VARCHAR"),
        ("effects", "INTEGER"),
        ("duplicates", "INTEGER"),
        ("verdict", "VARCHAR"),
        ("evidence", "VARCHAR"),
    ]
    loaded = load_crash_cells(tmp_path)
    assert loaded == [cells[6], cells[7], cells[2], cells[5], cells[4], cells[3], cells[1], DUPLICATED]
    assert [(c.implementation, c.mode, c.crash_point, c.position, c.path, c.recovery) for c in loaded] == [
        ("ref", "sigkill-sqlite", "after_resolve", "single", "allow", "sweep"),
        ("ref", "simulated", "after_resolve", "single", "allow", "sweep"),
        ("ref", "simulated", "after_claim", "first", "allow", "sweep"),
        ("ref", "simulated", "after_claim", "first", "approval", "sweep"),
        ("ref", "simulated", "after_claim", "first", "approval", "replay"),
        ("ref", "simulated", "after_claim", "first", "control", "sweep"),
        ("ref", "simulated", "after_claim", "last", "allow", "sweep"),
        ("other", "simulated", "after_effect", "single", "allow", "sweep"),
    ]


def test_load_crash_cells_reads_the_latest_run_or_the_one_named(tmp_path: Path) -> None:
    write_run(tmp_path, info("a"), [], [cell(run_id="a")])
    write_run(tmp_path, info("b", "2025-03-02T00:00:00+00:00"), [])
    assert load_crash_cells(tmp_path) == []
    assert load_crash_cells(tmp_path, "a") == [cell(run_id="a")]
    with pytest.raises(ConfigurationError, match=r"^no run 'c' in '.*results\.duckdb'; the runs it holds: a, b$"):
        load_crash_cells(tmp_path, "c")


def test_a_database_from_before_the_crash_matrix_loads_rerenders_and_takes_new_runs(tmp_path: Path) -> None:
    old_database(tmp_path)
    assert load_run(tmp_path)[0].run_id == "old"
    assert load_crash_cells(tmp_path) == []
    rerender(tmp_path)
    assert "## Crash matrix\n\nNo crash scenarios ran.\n" in (tmp_path / "report.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "junit.xml",
        "report.html",
        "report.md",
        "results.duckdb",
        "summary.json",
    ]
    write_run(tmp_path, info(started_at="2025-01-01T00:00:00+00:00"), [ROW], [DUPLICATED])
    assert load_crash_cells(tmp_path) == [DUPLICATED]
    assert load_crash_cells(tmp_path, "old") == []
    assert load_run(tmp_path, "old")[1][0].duration_s == 0.5


def test_a_foreign_crash_matrix_table_is_refused(tmp_path: Path) -> None:
    write_run(tmp_path, info(), [ROW])
    with duckdb.connect(str(tmp_path / "results.duckdb")) as connection:
        connection.execute("DROP TABLE crash_matrix")
        connection.execute("CREATE TABLE crash_matrix (id INTEGER)")
    with pytest.raises(
        ConfigurationError, match=r"is not a toolproof results database: table 'crash_matrix' has columns \['id'\];"
    ):
        load_crash_cells(tmp_path)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (cell(run_id="run-2"), r"crash cell ref/simulated/after_effect/NON_IDEMPOTENT/single/allow/sweep does not belong to run_id='run-1': run_id='run-2'"),
        (cell(implementation="x"), r"crash cell x/.* names implementation='x', not one of \['ref', 'other'\]"),
        (cell(effects=2), r"crash cell ref/simulated/after_effect/NON_IDEMPOTENT/single/allow/sweep is given twice: record each crash once per run"),
    ],
)  # fmt: skip
def test_write_run_refuses_a_crash_cell_the_run_cannot_hold(tmp_path: Path, bad: CrashCell, message: str) -> None:
    with pytest.raises(HarnessError, match=f"^{message}$"):
        write_run(tmp_path, info(), [ROW], [cell(), bad])
    assert list(tmp_path.iterdir()) == []


def test_a_crash_cell_that_cannot_be_stored_leaves_no_half_written_run(tmp_path: Path) -> None:
    write_run(tmp_path, info("good"), [], [cell(run_id="good")])
    with pytest.raises(duckdb.Error):
        write_run(tmp_path, info(started_at="2026-01-01T00:00:00+00:00"), [ROW], [cell(evidence="\ud800")])
    assert stored(tmp_path / "results.duckdb", "SELECT DISTINCT run_id FROM crash_matrix") == [("good",)]
    assert stored(tmp_path / "results.duckdb", "SELECT run_id FROM runs") == [("good",)]


# --- rendering -----------------------------------------------------------------------------------------------


def test_without_crash_cells_both_reports_say_no_crash_scenario_ran() -> None:
    report = render_markdown(info(), [ROW])
    assert "\n## Crash matrix\n\nNo crash scenarios ran.\n\n## Failures\n" in report
    assert '<p class="note">No crash scenarios ran.</p>' in render_html(info(), [ROW])


def test_markdown_crash_table_has_crash_points_as_rows_and_classes_as_columns_in_spec_order() -> None:
    cells = [cell("after_claim", "IDEMPOTENT", observed="SUCCEEDED"), DUPLICATED]
    report = render_markdown(info(), [ROW], cells)
    section = report[report.index("## Crash matrix") : report.index("## Failures")]
    first_table = section[section.index("### ref") : section.index("### other")]
    assert [line.split(" (")[0].removeprefix("| ") for line in first_table.splitlines()[4:] if line] == [
        p.value for p in CrashPoint
    ]
    header = "| Crash point | " + " | ".join(k.value for k in IdempotencyClass) + " |"
    assert section.count(header) == 2
    assert "### ref, simulated\n" in section
    assert "### other, simulated\n" in section
    assert "| after_claim (between steps 8 and 9) | SUCCEEDED, 1 effect | — | — |" in section
    assert (
        "| after_effect (inside step 10, after the effect and before the tool returns) | — | — | **✗ fail: SUCCEEDED** (expected UNCERTAIN effect_unknown), 3 effects, 2 duplicates |"
        in section
    )
    failures = report[report.index("## Failures") :]
    assert (
        "### other: crash at after_effect, NON_IDEMPOTENT, single, allow, sweep (simulated, fail)\n\n"
        "Crash point: `after_effect` · Expected: `UNCERTAIN effect_unknown` · Observed: `SUCCEEDED`"
        " · Effects: `3 effects, 2 duplicates`\n\n"
        f"```text\n{DUPLICATED.evidence}\n```\n"
    ) in failures


def test_several_positions_share_one_cell_in_position_order() -> None:
    cells = [
        cell("after_claim", "IDEMPOTENT", position="last", observed="SUCCEEDED", effects=1),
        cell("after_claim", "IDEMPOTENT", position="first", observed="SUCCEEDED", effects=2),
    ]
    report = render_markdown(info(), [ROW], cells)
    assert (
        "| after_claim (between steps 8 and 9) | first: SUCCEEDED, 2 effects (rerun: harmless for IDEMPOTENT);"
        " last: SUCCEEDED, 1 effect | — | — |"
    ) in report


def test_a_stored_crash_point_the_spec_does_not_have_is_refused_with_the_field_at_fault(tmp_path: Path) -> None:
    write_run(tmp_path, info(), [ROW], [cell()])
    with duckdb.connect(str(tmp_path / "results.duckdb")) as connection:
        connection.execute("UPDATE crash_matrix SET crash_point = 'after_teardown'")
    with pytest.raises(
        ConfigurationError,
        match=r"^'.*results\.duckdb' is not a toolproof results database: a crash cell of run run-1 is invalid"
        r" \(crash_point: Input should be 'after_resolve', .*\); point at a folder a run was written to$",
    ):
        rerender(tmp_path)


def test_rendering_is_independent_of_cell_order() -> None:
    cells = [cell(p.value, k.value) for p in CrashPoint for k in IdempotencyClass]
    shuffled = list(cells)
    random.Random(7).shuffle(shuffled)
    assert render_markdown(info(), [ROW], cells) == render_markdown(info(), [ROW], shuffled)
    assert render_html(info(), [ROW], cells) == render_html(info(), [ROW], shuffled)


# --- what the matrix explains where it shows it -------------------------------------------------------------


def test_every_crash_point_row_says_where_it_is_from_the_spec() -> None:
    cells = [cell("after_resolve", "IDEMPOTENT", observed="SUCCEEDED"), cell()]
    report = render_markdown(info(), [ROW], cells)
    assert "| after_resolve (between steps 1 and 2) | SUCCEEDED, 1 effect | — | — |" in report
    page = render_html(info(), [ROW], cells)
    assert (
        '<th scope="row">after_effect<br><small>inside step 10, after the effect and before the tool returns</small></th>'
        in page
    )
    for point in CrashPoint:
        assert member_doc(point), f"{point} has no docstring in spec to explain its row"


def test_the_legend_explains_the_unlabelled_position_and_the_colours_in_both_reports() -> None:
    report = render_markdown(info(), [ROW], [cell()])
    legend = report[report.index("## Crash matrix") : report.index("### ref, simulated")]
    assert "An entry without a prefix is a call alone in its step (single)" in legend
    assert "so two effects are green" in legend
    page = render_html(info(), [ROW], [cell()])
    section = page[page.index('<section id="crash-matrix">') : page.index('<table class="crash">')]
    assert "<dt>Entries</dt><dd>the disposition recovery reached" in section
    assert "<dt>Colours</dt><dd>green (✓)" in section


def test_an_idempotent_rerun_says_why_its_second_effect_is_green() -> None:
    rerun = cell("after_effect", "IDEMPOTENT", observed="SUCCEEDED", effects=2)
    duplicated = cell("after_effect", "NON_IDEMPOTENT", effects=2, duplicates=1, verdict=Verdict.FAIL, evidence="x")
    report = render_markdown(info(), [ROW], [rerun, duplicated])
    assert "| SUCCEEDED, 2 effects (rerun: harmless for IDEMPOTENT) |" in report
    # A NON_IDEMPOTENT second effect is a duplicate, never called harmless.
    assert "| **✗ fail: UNCERTAIN effect_unknown**, 2 effects, 1 duplicate |" in report
    page = render_html(info(), [ROW], [rerun])
    assert '<span class="effects">2 effects (rerun: harmless for IDEMPOTENT)</span>' in page


def test_a_crash_matrix_from_before_decision_paths_reads_allow_sweep_and_takes_new_cells(tmp_path: Path) -> None:
    # A folder written before crash cells carried their decision path and recovery: `toolproof diff` against it
    # must still work, and the next run into it adds the two columns (at the table's end).
    held = cell("after_hold", path="approval", recovery="replay", run_id="run-2")
    write_run(tmp_path, info(), [ROW], [cell()])
    with duckdb.connect(str(tmp_path / "results.duckdb")) as connection:
        connection.execute("ALTER TABLE crash_matrix DROP COLUMN path")
        connection.execute("ALTER TABLE crash_matrix DROP COLUMN recovery")
    (old,) = load_crash_cells(tmp_path)
    assert (old.path.value, old.recovery.value) == ("allow", "sweep")
    write_run(
        tmp_path,
        info(run_id="run-2", started_at="2025-03-02T10:00:00+00:00"),
        [ROW.model_copy(update={"run_id": "run-2"})],
        [held],
    )
    assert load_crash_cells(tmp_path, "run-2") == [held]
    assert load_crash_cells(tmp_path, "run-1") == [cell()]
