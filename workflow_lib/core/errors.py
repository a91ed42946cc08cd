"""The errors a user can fix: each says in one line what is wrong and what to do, and the command
line prints it without a traceback (``workflow_lib.__main__``)."""

from __future__ import annotations

from collections.abc import Sequence


class ConfigError(ValueError):
    """Config values are invalid: ``problems`` holds one line per problem; the message is those
    lines, then their count in ``source`` (the files, or "the config") when there are several."""

    def __init__(self, problems: str | Sequence[str], source: str = "the config") -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        if not self.problems:
            raise ValueError("ConfigError needs at least one problem")
        self.source = source
        super().__init__("\n".join([*self.problems, *self._count()]))

    def _count(self) -> list[str]:
        n = len(self.problems)
        return [f"{n} errors in {self.source}"] if n > 1 else []

    def report(self, prefix: str) -> str:
        """The message for a terminal: each problem after ``prefix`` (e.g. ``"error: "``), one
        line each, then their count when there are several."""
        return "\n".join([*(prefix + problem for problem in self.problems), *self._count()])


class StageError(RuntimeError):
    """A stage's output fails a property it promises; the message is one line for the user and
    no artefact is written."""


class ShardError(ValueError):
    """Shards cannot be snapshotted or merged as asked; the message is one line for the user."""
