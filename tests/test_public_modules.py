"""Every public object reports the public package a user imports it from, not the private module defining it.

A class or function in a public module's ``__all__`` has ``__module__`` equal to that module, or
to another public module that exports it under the same name (a re-export of a re-export, as
``toolproof.reference.hooks`` re-exports ``toolproof.reference.Pipeline``). ``spec.publish_exports``
sets it; this test walks every public module of the distribution.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import tomllib
import types
from pathlib import Path

import pytest

from toolproof.spec import InstanceConfig, Verdict, publish_exports

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _private(name: str) -> bool:
    return any(part.startswith("_") for part in name.split("."))


def _public_modules() -> list[types.ModuleType]:
    """The installed packages (pyproject's list) and their public modules that declare ``__all__``.

    Scenario files (``test_*``) and ``__main__`` aside; the editable install maps folders to
    packages, so the list comes from pyproject rather than from walking ``toolproof.__path__``.
    """
    packages = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]
    names: list[str] = []
    for package in packages:
        names.append(package)
        for info in pkgutil.iter_modules(importlib.import_module(package).__path__, package + "."):
            if not info.ispkg and not _private(info.name) and not info.name.rpartition(".")[2].startswith("test_"):
                names.append(info.name)
    modules = [importlib.import_module(name) for name in names if not _private(name)]
    return [module for module in modules if hasattr(module, "__all__")]


def misplaced(module: types.ModuleType) -> list[str]:
    """The classes and functions of ``module.__all__`` whose ``__module__`` is not a public home of theirs."""
    wrong: list[str] = []
    for name in module.__all__:
        found = getattr(module, name)
        if not (inspect.isclass(found) or inspect.isfunction(found)):
            continue
        home = found.__module__
        if home == module.__name__:
            continue
        if not _private(home):
            other = importlib.import_module(home)
            if name in getattr(other, "__all__", ()) and getattr(other, name) is found:
                continue
        wrong.append(f"{module.__name__}.{name} reports __module__ {home!r}")
    return wrong


PUBLIC = _public_modules()


def test_the_walk_finds_the_public_packages() -> None:
    names = {module.__name__ for module in PUBLIC}
    assert {
        "toolproof.spec",
        "toolproof.driver",
        "toolproof.reference",
        "toolproof.reference.hooks",
        "toolproof.reference.witnesses",
        "toolproof.scenarios",
        "toolproof.fakes",
        "toolproof.fakes.mcp",
        "toolproof.contracts",
        "toolproof.reports",
        "toolproof.expectations",
        "toolproof.bench",
    } <= names


@pytest.mark.parametrize("module", PUBLIC, ids=lambda module: module.__name__)
def test_every_exported_class_and_function_reports_its_public_module(module: types.ModuleType) -> None:
    assert misplaced(module) == []


def _planted() -> types.ModuleType:
    private = types.ModuleType("toolproof.planted._impl")

    def helper() -> None:
        """Defined in a private module."""

    class Thing:
        pass

    helper.__module__ = Thing.__module__ = private.__name__
    package = types.ModuleType("toolproof.planted")
    package.__dict__.update(helper=helper, Thing=Thing, ANSWER=42, __all__=["ANSWER", "Thing", "helper"])
    return package


def test_a_planted_object_with_a_private_module_fails_the_check() -> None:
    planted = _planted()
    assert misplaced(planted) == [
        "toolproof.planted.Thing reports __module__ 'toolproof.planted._impl'",
        "toolproof.planted.helper reports __module__ 'toolproof.planted._impl'",
    ]
    publish_exports(planted.__dict__)
    assert misplaced(planted) == []
    assert planted.Thing.__module__ == planted.helper.__module__ == "toolproof.planted"


def test_publishing_leaves_another_package_and_a_renamed_export_alone() -> None:
    planted = _planted()
    outsider = types.ModuleType("elsewhere._impl")

    def foreign() -> None:
        """Defined outside the package's tree."""

    foreign.__module__ = outsider.__name__
    planted.__dict__.update(foreign=foreign, alias=planted.helper, __all__=["alias", "foreign"])
    publish_exports(planted.__dict__)
    assert foreign.__module__ == "elsewhere._impl"
    assert planted.helper.__module__ == "toolproof.planted._impl"


def test_a_published_object_still_pickles_by_its_public_name() -> None:
    config = InstanceConfig(store_dir="/tmp/s", workspace="/tmp/w")
    assert pickle.loads(pickle.dumps(config)) == config
    assert pickle.loads(pickle.dumps(Verdict.PASS)) is Verdict.PASS
    assert pickle.loads(pickle.dumps(publish_exports)) is publish_exports
