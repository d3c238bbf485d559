"""``toolproof run --shard K/N`` and ``toolproof merge``: shards cover every cell once, and merged they give the
verdicts of one unsharded run."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolproof._cli import app
from toolproof._run import RunOutcome, merge_runs, run_suite
from toolproof.reports import RunInfo, diff_runs, load_run, write_run
from toolproof.scenarios import CELL_SECONDS, Shard, assign, weights, write_shipped
from toolproof.scenarios._shard import shipped_durations, shipped_seconds
from toolproof.spec import ConfigurationError, catalog_digest

RULES = "D13,D18"
"""Quick decisions, with cells enough to spread over three shards."""
WITNESS = "toolproof.reference.witnesses:chatty_messages"
"""Fails D13.3 (the table's message with the tool name appended), a rule the harness checks on every cell."""
SNAPSHOT_WITNESS = "toolproof.reference.witnesses:registry_snapshots"
"""Fails D13.5, which only some cells judge."""


@pytest.mark.parametrize(
    ("text", "shard"), [("1/1", Shard(1, 1)), ("2/3", Shard(2, 3)), (" 3/3 ", Shard(3, 3)), ("10/12", Shard(10, 12))]
)
def test_a_shard_is_read_as_k_of_n(text: str, shard: Shard) -> None:
    assert Shard.parse(text) == shard
    assert str(shard) == f"{shard.index}/{shard.count}"


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "3", "a/b", "1/2/3", "-1/2", ""])
def test_a_malformed_shard_is_refused(text: str) -> None:
    with pytest.raises(ConfigurationError, match="--shard"):
        Shard.parse(text)


@pytest.mark.parametrize("count", [1, 2, 3, 5, 40])
def test_every_cell_goes_to_exactly_one_shard(count: int) -> None:
    names = [f"cell{i:02}" for i in range(23)]
    assigned = assign(names, [float(i % 7) + 0.5 for i in range(23)], count)
    assert len(assigned) == len(names)
    assert all(0 <= shard < count for shard in assigned)
    assert assign(names, [float(i % 7) + 0.5 for i in range(23)], count) == assigned  # Deterministic.
    assert assign(list(reversed(names)), [float(i % 7) + 0.5 for i in reversed(range(23))], count) == list(
        reversed(assigned)
    )  # The order cells are collected in does not matter.


def test_shards_are_balanced_by_weight_heaviest_first() -> None:
    # One heavy cell and six light ones over two shards: the heavy one alone on one shard.
    names = ["heavy", *(f"light{i}" for i in range(6))]
    assigned = assign(names, [6.0, *(1.0,) * 6], 2)
    assert assigned[0] == 0
    assert assigned[1:] == [1] * 6
    # Equal weights: equal counts.
    assert sorted(assign([f"c{i}" for i in range(9)], [1.0] * 9, 3)).count(0) == 3


def test_a_cell_without_a_recorded_duration_weighs_the_median() -> None:
    assert weights(["a", "b", "c", "new"], {"a": 1.0, "b": 2.0, "c": 9.0}) == [1.0, 2.0, 9.0, 2.0]
    assert weights(["x", "y"], {}) == [1.0, 1.0]


def test_without_an_earlier_run_cells_weigh_their_scenarios_shipped_mean(tmp_path: Path) -> None:
    # The shipped file knows the long stateful scenario and the quick ones: a first run is balanced by time.
    shipped = shipped_seconds()
    stateful = "test_d04_stateful.py::test_random_crash_and_recovery_sequences_keep_the_invariants"
    assert CELL_SECONDS.is_file()
    assert len(shipped) > 200
    assert shipped[stateful] > 20 * statistics.median(shipped.values())
    keys = [f"reference::{stateful}", "reference::test_d13_outcomes.py::test_unknown[x]"]
    assert shipped_durations(keys) == {keys[0]: shipped[stateful]}
    # Written from a run's cells: each scenario's mean over its parameters.
    target = tmp_path / "cell_seconds.json"
    assert write_shipped({"m.py::t[a]": 1.0, "m.py::t[b]": 3.0, "m.py::u": 0.5}, target) == 2
    assert json.loads(target.read_text()) == {"m.py::t": 2.0, "m.py::u": 0.5}


def _sharded(impl: str, tmp: Path, count: int, durations: Path | None = None, **options: object) -> list[RunOutcome]:
    return [
        run_suite([impl], RULES, tmp / f"shard{k}", shard=Shard(k, count), shard_durations=durations, **options)  # type: ignore[arg-type]
        for k in range(1, count + 1)
    ]


@pytest.mark.parametrize("impl", ["reference", WITNESS])
def test_merged_shards_give_the_verdicts_of_one_unsharded_run(impl: str, tmp_path: Path) -> None:
    whole = run_suite([impl], RULES, tmp_path / "whole")
    shards = _sharded(impl, tmp_path, 3, durations=tmp_path / "whole")
    cells = [sum(outcome.cells.get(name, {}).values()) for outcome in shards for name in outcome.cells]
    assert sum(cells) == sum(sum(c.values()) for c in whole.cells.values())  # Each cell ran once, in one shard.
    assert all(n > 0 for n in cells)
    merged = merge_runs([outcome.out_dir for outcome in shards], tmp_path / "merged")
    assert merged.verdicts == whole.verdicts
    assert merged.exit_code == whole.exit_code == (0 if impl == "reference" else 1)
    assert not diff_runs(load_run(tmp_path / "whole"), load_run(tmp_path / "merged")).changed
    info, rows = load_run(tmp_path / "merged")
    assert info.shard is None
    assert info.selected_rules == load_run(tmp_path / "whole")[0].selected_rules
    assert len([r for r in rows if r.scenario]) == len([r for r in load_run(tmp_path / "whole")[1] if r.scenario])


def test_a_shard_reports_and_exits_on_its_own_cells_only(tmp_path: Path) -> None:
    shards = _sharded(WITNESS, tmp_path, 3)
    failing = [outcome for outcome in shards if outcome.exit_code == 1]
    assert failing, "some shard ran a cell that fails D13.3"
    for outcome in shards:
        info, _ = load_run(outcome.out_dir)
        assert info.shard is not None
        assert info.catalog_sha256 == catalog_digest()
        assert set(info.selected_rules) <= set(info.whole_selection)
        assert all(verdict.value != "not-covered" for v in outcome.verdicts.values() for verdict in v.values())
        assert (outcome.exit_code == 1) == any(
            verdict.value == "fail" for v in outcome.verdicts.values() for verdict in v.values()
        )


def test_an_expectation_met_in_one_shard_is_not_stale_in_the_others(tmp_path: Path) -> None:
    # A rule of few cells (D18.1's), so that some of five shards runs none of them. The entry names the scenario the
    # witness fails: D18.1's other scenario (no copy of the registry under any name) passes against it, so an entry
    # for the whole rule would be stale everywhere, as an unexpected pass.
    expectations = tmp_path / "registry_snapshots.toml"
    expectations.write_text(
        'implementation = "witness:registry_snapshots"\n[[expect]]\nrule = "D18.1"\n'
        'scenario = "test_d18_storage.py::test_the_store_has_no_registry_snapshot_table"\nverdict = "fail"\n'
        'reason = "known"\n'
    )
    whole = run_suite([SNAPSHOT_WITNESS], RULES, tmp_path / "whole", expectations=[expectations])
    shards = _sharded(SNAPSHOT_WITNESS, tmp_path, 5, expectations=[expectations])
    # Some shard ran no cell of D18.1: the entry is not stale there, for its rows ran elsewhere.
    assert any("D18.1" not in load_run(outcome.out_dir)[0].selected_rules for outcome in shards)
    assert all(not outcome.stale for outcome in shards)
    merged = merge_runs([outcome.out_dir for outcome in shards], tmp_path / "merged")
    assert [s.problem for s in merged.stale] == [s.problem for s in whole.stale]
    assert merged.exit_code == whole.exit_code
    assert merged.verdicts == whole.verdicts


def _shard_folders(tmp_path: Path, impl: str = "reference", count: int = 2) -> list[Path]:
    return [outcome.out_dir for outcome in _sharded(impl, tmp_path / impl.rsplit(":", 1)[-1], count)]


def test_merge_refuses_what_is_not_every_shard_of_one_run(tmp_path: Path) -> None:
    folders = _shard_folders(tmp_path)
    whole = run_suite(["reference"], RULES, tmp_path / "whole").out_dir
    witness = _shard_folders(tmp_path, WITNESS)
    three = _shard_folders(tmp_path / "three", count=3)
    refusals = {
        "holds a whole run": [folders[0], whole],
        "shard 2/2 of the run is missing": [folders[0]],
        "shard 1/2 is given twice": [folders[0], folders[0], folders[1]],
        "their implementations differ": [folders[0], witness[1]],
        "their shard count differ": [folders[0], three[1]],
    }
    for message, given in refusals.items():
        with pytest.raises(ConfigurationError, match=message):
            merge_runs(given, tmp_path / "out")
    with pytest.raises(ConfigurationError, match="is one of the shards' folders"):
        merge_runs(folders, folders[0])
    assert not (tmp_path / "out").exists()  # Nothing is written for a refused merge.


@pytest.mark.parametrize(
    ("field", "value", "what"),
    [("catalog_sha256", "0" * 64, "rule catalog"), ("toolproof_version", "0.0.0", "toolproof version")],
)
def test_merge_refuses_shards_of_another_catalog_or_toolproof(
    field: str, value: str, what: str, tmp_path: Path
) -> None:
    folders = _shard_folders(tmp_path)
    info, rows = load_run(folders[1])
    forged = tmp_path / "forged"
    other = RunInfo.model_validate(info.model_dump() | {field: value, "run_id": info.run_id + "x"})
    write_run(forged, other, [row.model_copy(update={"run_id": other.run_id}) for row in rows if row.scenario])
    with pytest.raises(ConfigurationError, match=f"their {what} differ"):
        merge_runs([folders[0], forged], tmp_path / "out")


def test_the_cli_merges_and_refuses_in_one_line(tmp_path: Path) -> None:
    folders = _shard_folders(tmp_path)
    runner = CliRunner()
    merged = runner.invoke(app, ["merge", *map(str, folders), "--out", str(tmp_path / "merged")])
    assert merged.exit_code == 0, merged.output
    assert "reference: rules:" in merged.output
    refused = runner.invoke(app, ["merge", str(folders[0]), "--out", str(tmp_path / "m2")])
    assert refused.exit_code == 2
    assert "shard 2/2 of the run is missing" in refused.output
    assert "Traceback" not in refused.output
    for argv, message in (
        (["--shard", "4/3"], "K must be between 1 and N"),
        (["--shard", "1/2", "--cell", "test_d13_outcomes.py::x"], "run --cell without --shard"),
        (["--shard-durations", str(folders[0])], "give --shard K/N with it"),
    ):
        result = runner.invoke(app, ["run", "--rules", RULES, "--out", str(tmp_path / "never"), *argv])
        assert result.exit_code == 2, result.output
        assert message in result.output
        assert "Traceback" not in result.output
