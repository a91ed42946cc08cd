"""Runtime and memory of the protein study's jobs from the family's size and the model, for the
SLURM profile (``Rule.minutes`` and ``Rule.mem_mb`` of ``registry.py``).

The size is read while Snakemake plans the jobs, from the alignment file the config names
(``alignment.alignment_size``): ``M``, its records, and ``L``, its aligned columns, both upper
bounds of what the gap filter keeps. Each amount is a sum of power laws ``Law`` in ``L``, ``M``
and the heads ``H``:

- a job's fixed part, ``BASELINE``: ``seconds`` to start, import, read, gap-filter and weigh the
  alignment, and the ``mb`` this takes (the benchmark's ``baseline`` rows);
- per model kind (``COSTS``): ``unit``, the seconds of one L-BFGS iteration (plmDCA, factored
  attention) or one Adam step of batch 64 at width 64 (the transformers); ``rest``, the seconds
  of compilation and evaluation (held-out and training losses, contact scores); ``mb``, the peak
  memory above the baseline.

A fit takes ``BASELINE.seconds + units * unit + rest`` seconds, with ``units`` its budget:
``max_iter`` for plmDCA, ``restarts * max_iter`` for factored attention, ``transformer.steps``
scaled by the batch (linearly) and the width (squared) above the benchmark's for a transformer,
plus its validation evaluations (``steps / eval_every`` of them, each every site of the
validation sequences masked in turn: ``M_val L`` sequence passes, a benchmark step's
``3 * BENCH_BATCH`` forward and backward passes, with ``M_val`` the validation share of the
records); and ``BASELINE.mb + mb`` MB. The data stage takes ``BASELINE`` once per weighing (the
whole alignment's and each held-out split's).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from workflow_lib.core.registry import Config, Wildcards
from workflow_lib.proteins import factored_form
from workflow_lib.proteins.alignment import AlignmentError, alignment_size
from workflow_lib.studies.proteins import families

# Relative paths of a config are relative to the repository, the Snakefile's folder: this package's
# parent (Snakemake puts the Snakefile's folder first on sys.path).
REPOSITORY = Path(__file__).resolve().parents[3]
# The transformers' batch and width in benchmarks/bench_proteins.py (the schema's defaults).
BENCH_BATCH, BENCH_WIDTH = 64, 64


@dataclass(frozen=True)
class Law:
    """``coef * (L / 100) ** l * (M / 1000) ** m * H ** h``."""

    coef: float
    l: float = 0.0  # noqa: E741 (the exponent of L)
    m: float = 0.0
    h: float = 0.0

    def __call__(self, L: float, M: float, H: float = 1) -> float:
        return self.coef * (L / 100) ** self.l * (M / 1000) ** self.m * H ** self.h


# Conservative bounds fitted to benchmarks/results/bench_proteins.csv by
# benchmarks/fit_protein_resources.py, which prints these lines: each law's exponents by least
# squares on the logarithms of the CSV's rows (an exponent whose variable takes one value in the
# rows fixed, at 1 for M, at 0 otherwise; none below 0), then its coefficient raised until the law
# bounds every row, times a safety factor of 2 (other load, other machines). They bound the sizes
# the CSV covers; beyond them they extrapolate, and a job that runs out gets twice as much on its
# next attempt (``Rule.resources``).
BASELINE = {
    "seconds": Law(coef=5.03, l=0.11, m=0.06, h=0.0),
    "mb": Law(coef=575.0, l=0.0, m=0.06, h=0.0),
}
COSTS = {
    "plmdca": {
        "unit": Law(coef=0.971, l=2.28, m=0.67, h=0.0),
        "rest": Law(coef=20.2, l=0.97, m=0.22, h=0.0),
        "mb": Law(coef=2290.0, l=1.3, m=0.11, h=0.0),
    },
    "factored": {
        "unit": Law(coef=0.486, l=1.57, m=1.01, h=0.37),
        "rest": Law(coef=21.3, l=0.41, m=0.17, h=0.18),
        "mb": Law(coef=1720.0, l=0.73, m=0.14, h=0.13),
    },
    "vanilla1": {
        "unit": Law(coef=0.0529, l=0.72, m=0.0, h=0.0),
        "rest": Law(coef=43.7, l=0.76, m=0.0, h=0.0),
        "mb": Law(coef=1310.0, l=0.87, m=0.04, h=0.0),
    },
    "vanilla3": {
        "unit": Law(coef=0.182, l=1.08, m=0.0, h=0.0),
        "rest": Law(coef=189.0, l=1.84, m=0.0, h=0.0),
        "mb": Law(coef=1700.0, l=0.79, m=0.0, h=0.0),
    },
}


def model_kind(model: str) -> tuple[str, int]:
    """``(kind, H)`` of a fit's model name: ``factored[_softmax|_lowrank]-H<h>`` ->
    ``('factored', h)``, else ``(model, 1)`` (``plmdca``, ``vanilla1``, ``vanilla3``)."""
    form = factored_form(model)
    if form is not None:
        return "factored", form[1]
    if model not in COSTS:
        raise ValueError(f"unknown protein model {model!r}")
    return model, 1


def units(kind: str, proteins: dict, L: float, M: float) -> float:
    """A fit's budget in the benchmark's units (see the module docstring) for a ``proteins``
    config section and a family of ``M`` records of ``L`` columns."""
    if kind == "plmdca":
        return proteins["max_iter"]
    if kind == "factored":
        return proteins["restarts"] * proteins["max_iter"]
    t = proteins["transformer"]
    validation = M * (1 - proteins["held_out"]) * proteins["validation"]
    evaluations = t["steps"] // t["eval_every"] * validation * L / (3 * BENCH_BATCH)
    return ((t["steps"] * max(1.0, t["batch_size"] / BENCH_BATCH) + evaluations)
            * max(1.0, t["model_dim"] / BENCH_WIDTH) ** 2)


def fit_seconds(kind: str, L: float, M: float, H: int, budget: float) -> float:
    """Seconds of one fit of model kind ``kind`` with ``budget`` units."""
    cost = COSTS[kind]
    return BASELINE["seconds"](L, M) + budget * cost["unit"](L, M, H) + cost["rest"](L, M, H)


def fit_mb(kind: str, L: float, M: float, H: int) -> float:
    """Peak memory (MB) of one fit of model kind ``kind``."""
    return BASELINE["mb"](L, M) + COSTS[kind]["mb"](L, M, H)


@cache
def _size(path: str, stamp: tuple[int, int]) -> tuple[int, int]:
    return alignment_size(path)


def family_size(cfg: Config, family: str) -> tuple[int, int]:
    """``(M, L)`` of the alignment of ``proteins.families`` entry ``family`` (read once per
    file version); ``(1, 1)`` when it cannot be read: the family's ``protein_data`` job then
    gets the least and stops with the file's one-line problem in its log."""
    path = os.fspath(Path(REPOSITORY, families.entry(cfg, family)["alignment"]))
    try:
        info = os.stat(path)
        return _size(path, (info.st_mtime_ns, info.st_size))
    except (OSError, AlignmentError):
        return 1, 1


def data_minutes(cfg: Config, wildcards: Wildcards) -> float:
    """Runtime of the ``protein_data`` job of family ``wildcards['family']``."""
    M, L = family_size(cfg, wildcards["family"])
    return (1 + cfg["proteins"]["realisations"]) * BASELINE["seconds"](L, M) / 60


def data_mb(cfg: Config, wildcards: Wildcards) -> float:
    """Memory of the ``protein_data`` job of family ``wildcards['family']``."""
    M, L = family_size(cfg, wildcards["family"])
    return BASELINE["mb"](L, M)


def fit_kind(cfg: Config, family: str, model: str) -> tuple[str, int]:
    """``(kind, H)`` of a fit job's ``model`` on ``family``: a split fit's run name
    (``model_kind``), or a final fit's entry of ``proteins.models``, ``factored`` at the family's
    largest head count (``families.candidates``; the split fits choose its configuration after
    planning)."""
    if model == "factored":
        return "factored", max(families.candidates(cfg, family)[1])
    return model_kind(model)


def fit_minutes(cfg: Config, wildcards: Wildcards) -> float:
    """Runtime of the ``protein_fit`` or ``protein_final_fit`` job of ``wildcards['family']``
    and ``['model']``: its full budget on every record."""
    M, L = family_size(cfg, wildcards["family"])
    kind, H = fit_kind(cfg, wildcards["family"], wildcards["model"])
    return fit_seconds(kind, L, M, H, units(kind, cfg["proteins"], L, M)) / 60


def fit_memory(cfg: Config, wildcards: Wildcards) -> float:
    """Memory of the ``protein_fit`` or ``protein_final_fit`` job of ``wildcards['family']``
    and ``['model']``."""
    M, L = family_size(cfg, wildcards["family"])
    kind, H = fit_kind(cfg, wildcards["family"], wildcards["model"])
    return fit_mb(kind, L, M, H)
