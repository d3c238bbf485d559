"""An implementer's first mistakes, each on top of the reference."""

from contextlib import asynccontextmanager

from toolproof.reference import ReferenceImplementation


class StringProfiles(ReferenceImplementation):
    @property
    def profiles(self):
        return frozenset({"core"})


class AsyncOpen(ReferenceImplementation):
    async def open(self, config, tools, clock):
        return None


class DictResults(ReferenceImplementation):
    def open(self, config, tools, clock):
        inner = super().open(config, tools, clock)

        @asynccontextmanager
        async def opened():
            async with inner as instance:
                yield _Dicts(instance)

        return opened()


class _Dicts:
    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def submit(self, step):
        return [d.model_dump(mode="json") for d in await self._inner.submit(step)]


class RaisesOnSubmit(ReferenceImplementation):
    """Raises a plain exception from every submission: the scenarios can judge nothing, and say so as an error."""

    def open(self, config, tools, clock):
        inner = super().open(config, tools, clock)

        @asynccontextmanager
        async def opened():
            async with inner as instance:
                yield _Raises(instance)

        return opened()


class _Raises:
    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def submit(self, step):
        raise RuntimeError("this pipeline cannot submit yet")
