"""The replica stages end to end on a small config: read, call ``replica.curves``, write."""

from __future__ import annotations

import numpy as np

from workflow_lib.core.artefacts import read_artefact
from workflow_lib.core.config import load_config
from workflow_lib.core.registry import Job
from workflow_lib.studies.potts_paper import stages_theory
from workflow_lib.studies.potts_paper.artefacts import REPLICA_SIMULATIONS, REPLICA_THEORY


def test_replica_stages_write_theory_and_simulations(tmp_path):
    cfg = load_config({"replica": {"L": 20, "theory_alphas": 12, "sim_alphas": [0.5, 2.0],
                                   "realisations": 6, "lambdas": [0.0, 0.01]}})
    params = {"seed": 3, "replica": cfg["replica"]}
    files = {"theory": str(tmp_path / "theory.h5"), "simulations": str(tmp_path / "sims.h5")}
    stages_theory.replica_theory(Job(output={"theory": files["theory"]}, params=params))
    stages_theory.replica_sims(Job(output={"simulations": files["simulations"]}, params=params))
    th = read_artefact(files["theory"], REPLICA_THEORY, required=("eps_saddle", "alpha"))
    assert th["eps_saddle"].shape == th["eps_closed_form"].shape == (2, 12)
    assert th.attrs["max_relative_gap"] < 1e-6  # saddle point = closed form
    sim = read_artefact(files["simulations"], REPLICA_SIMULATIONS, required=("z", "errors"))
    assert sim["errors"].shape == (2, 2, 6) and np.all(np.isfinite(sim["z"]))
    np.testing.assert_array_equal(sim["M"], [10, 40])
    # deterministic: same config and seed -> same numbers
    again = str(tmp_path / "again.h5")
    stages_theory.replica_sims(Job(output={"simulations": again}, params=params))
    np.testing.assert_array_equal(read_artefact(again)["errors"], sim["errors"])
