"""Compiled training programs kept across ``train.train_mlm`` calls, with the progress reporter
they log through."""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable

import jax.numpy as jnp

from workflow_lib.mlm.loop import Run
from workflow_lib.mlm.progress import Progress


class CompiledRuns:
    """The last ``size`` compiled training programs, each under its signature: the static
    configuration the caller names plus the shape and dtype of every argument, so repeated runs
    with equal shapes (seeds, realisations) compile once.

    The reporter belongs to the cache: runs compiled here log through ``progress``.
    """

    def __init__(self, progress: Progress | None = None, size: int = 8) -> None:
        self.progress = progress or Progress(logging.getLogger("workflow_lib.mlm"))
        self.size = size
        self._programs: dict[Hashable, Run] = {}

    def get(self, static: Hashable, args: tuple,
            compile: Callable[[], Run]) -> Run:  # fmt: skip
        """The program for ``static`` and the shapes of ``args``, from ``compile()`` on a miss
        (the oldest program is dropped when ``size`` are held)."""
        signature = (static, *((jnp.shape(x), jnp.result_type(x)) for x in args))
        if signature not in self._programs:
            while len(self._programs) >= self.size:
                self._programs.pop(next(iter(self._programs)))
            self._programs[signature] = compile()
        return self._programs[signature]
