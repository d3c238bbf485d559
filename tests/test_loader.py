"""``spec.load_object``: the one loader every ``module:attribute`` and entry-point name goes through."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from toolproof.reference import ReferenceImplementation
from toolproof.spec import (
    ENTRY_POINT_GROUP,
    ConfigurationError,
    Implementation,
    LoadError,
    LoadProblem,
    ToolSpec,
    load_implementation,
    load_object,
)


def test_a_module_attribute_resolves_to_the_object_itself() -> None:
    assert load_object("toolproof.spec:ToolSpec") is ToolSpec


def test_a_dotted_attribute_walks_the_path() -> None:
    assert load_object("toolproof.spec:ToolSpec.model_validate") == ToolSpec.model_validate


def test_an_entry_point_name_resolves_through_its_group() -> None:
    # The builtin reference is found exactly as a plugin is: by its entry point.
    assert load_object("reference", group=ENTRY_POINT_GROUP) is ReferenceImplementation


def test_a_class_expectation_checks_the_instance() -> None:
    assert load_object("toolproof.spec:ENTRY_POINT_GROUP", expect=str) == ENTRY_POINT_GROUP
    with pytest.raises(
        LoadError, match=r"^thing 'toolproof.spec:ENTRY_POINT_GROUP': expected an instance of int, "
    ) as info:
        load_object("toolproof.spec:ENTRY_POINT_GROUP", expect=int, what="thing")
    assert info.value.problem is LoadProblem.WRONG_TYPE
    assert str(info.value).endswith("found str 'toolproof.implementations'")


def test_a_predicate_expectation_names_what_was_expected_and_what_was_found() -> None:
    with pytest.raises(
        LoadError,
        match=r"^script 'toolproof.spec:ToolSpec': expected a function, found class 'ToolSpec'$",
    ):
        load_object("toolproof.spec:ToolSpec", expect=lambda found: False, expected="a function", what="script")
    with pytest.raises(LoadError, match=r": expected callable, found str 'toolproof.implementations'$"):
        load_object("toolproof.spec:ENTRY_POINT_GROUP", expect=callable)


@pytest.mark.parametrize("ref", ["toolproof.spec", "toolproof.spec:", ":ToolSpec", ""])
def test_a_malformed_reference_names_the_expected_form(ref: str) -> None:
    with pytest.raises(LoadError, match=rf"^tool {ref!r} is not package.module:factory$") as info:
        load_object(ref, what="tool", form="package.module:factory")
    assert info.value.problem is LoadProblem.MALFORMED
    assert isinstance(info.value, ConfigurationError)


def test_an_unknown_name_lists_the_registered_ones() -> None:
    with pytest.raises(
        LoadError,
        match=r"^unknown implementation 'nonesuch': registered names are .*reference.*; or give package.module:factory$",
    ) as info:
        load_object("nonesuch", group=ENTRY_POINT_GROUP, what="implementation", form="package.module:factory")
    assert info.value.problem is LoadProblem.UNKNOWN_NAME


def test_an_import_failure_keeps_its_cause_and_says_what_was_importable() -> None:
    with pytest.raises(LoadError) as info:
        load_object("no_such_module_xyz:make")
    assert str(info.value) == (
        "object 'no_such_module_xyz:make': module 'no_such_module_xyz' cannot be imported "
        "(ModuleNotFoundError: No module named 'no_such_module_xyz')"
    )
    assert info.value.problem is LoadProblem.IMPORT_FAILED
    assert isinstance(info.value.__cause__, ModuleNotFoundError)
    assert any("working directory" in note for note in info.value.__notes__)


def test_a_module_that_raises_on_import_is_bad_input_with_its_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "loader_raises_on_import.py").write_text("raise RuntimeError('no database\\nsecond line')\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LoadError) as info:
        load_object("loader_raises_on_import:make")
    assert str(info.value).endswith("cannot be imported (RuntimeError: no database)")
    assert isinstance(info.value.__cause__, RuntimeError)


def test_a_missing_attribute_names_where_the_path_stopped() -> None:
    # The one-line message is the exception's text; the note (where the module came from) is for tracebacks.
    with pytest.raises(LoadError) as info:
        load_object("toolproof.spec:Nope")
    assert str(info.value) == "object 'toolproof.spec:Nope': module 'toolproof.spec' has no attribute 'Nope'"
    with pytest.raises(LoadError) as info:
        load_object("toolproof.spec:ToolSpec.nope")
    assert str(info.value) == "object 'toolproof.spec:ToolSpec.nope': 'toolproof.spec:ToolSpec' has no attribute 'nope'"
    assert info.value.problem is LoadProblem.NO_ATTRIBUTE
    assert isinstance(info.value.__cause__, AttributeError)


def test_the_working_directory_is_importable_during_the_import_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "loader_beside_the_user.py").write_text("def make():\n    return 42\n")
    monkeypatch.chdir(tmp_path)
    # As under a console script: the working directory is not on sys.path.
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    before = list(sys.path)
    make = load_object("loader_beside_the_user:make", expect=callable)
    assert make() == 42  # type: ignore[operator]
    assert sys.path == before
    with pytest.raises(LoadError):
        load_object("loader_not_beside_the_user:make")
    assert sys.path == before


def test_the_users_module_wins_over_an_installed_namesake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "installed"
    elsewhere.mkdir()
    (elsewhere / "loader_namesake.py").write_text("WHO = 'installed'\n")
    (tmp_path / "loader_namesake.py").write_text("WHO = 'mine'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(elsewhere), *sys.path])
    monkeypatch.delitem(sys.modules, "loader_namesake", raising=False)
    assert load_object("loader_namesake:WHO") == "mine"
    sys.modules.pop("loader_namesake", None)


def test_an_implementation_factory_that_raises_is_bad_input_with_its_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "loader_broken_impl.py").write_text("def make():\n    raise KeyError('missing setting')\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        ConfigurationError, match=r"^implementation 'loader_broken_impl:make': its factory raised KeyError: "
    ) as info:
        load_implementation("loader_broken_impl:make")
    assert isinstance(info.value.__cause__, KeyError)


def test_an_implementation_is_an_instance_or_a_factory() -> None:
    assert isinstance(load_implementation("reference"), Implementation)
    assert isinstance(load_implementation("toolproof.reference:ReferenceImplementation"), Implementation)
    with pytest.raises(
        LoadError,
        match=r"^implementation 'toolproof.spec:ENTRY_POINT_GROUP': expected an Implementation or a factory "
        r"that makes one, found str 'toolproof.implementations'$",
    ):
        load_implementation("toolproof.spec:ENTRY_POINT_GROUP")
    with pytest.raises(ConfigurationError, match=r"produced ToolSpec, which lacks name, profiles or open\(\)$"):
        load_implementation("toolproof.spec:ToolSpec.model_construct")
