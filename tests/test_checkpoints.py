"""Checkpoints of long loops (``workflow_lib.runtime.checkpoints``): a loop stopped by a real
SIGTERM at any boundary resumes to the numbers of a run never stopped; a checkpoint of another
config, code or processor is not used, nor an unreadable one, each said in one line; ``checkpoints:
false`` discards a job's checkpoint. The workflow-level tests (a job killed by SIGTERM and SIGKILL,
resumed by Snakemake) are in ``tests/test_resume.py``."""

from __future__ import annotations

import json
import logging
import os
import signal
import zipfile
from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.test_lbfgs import rosenbrock
from tests.test_proteins_models import TRANSFORMER, _copied_site
from workflow_lib.attention import icl
from workflow_lib.core.registry import Job
from workflow_lib.mlm import lbfgs
from workflow_lib.potts import gibbs, protocols
from workflow_lib.proteins.transformer import train_transformer
from workflow_lib.runtime import checkpoints
from workflow_lib.studies.omniglot import data, training

SWEEP = "workflow_lib.studies.potts_paper.stages_fits:sample_complexity"
OMNIGLOT = "workflow_lib.studies.omniglot.stages:omniglot_train"
PROTEINS = "workflow_lib.studies.proteins.stages:protein_fit"
SAMPLE = "workflow_lib.studies.potts_paper.stages_data:sample"
LOGGER = "workflow_lib.runtime.checkpoints"


def job(tmp_path: Path, params: dict | None = None, enabled: bool = True) -> Job:
    """A job whose checkpoint is ``tmp_path/ck.npz``, written at every boundary."""
    return Job(params=params or {"seed": 0},
               checkpoint={"file": str(tmp_path / "ck.npz"), "every": 0.0, "enabled": enabled})


@pytest.fixture
def sigterms():
    """The SIGTERMs that reach this process's own handler (the one a session restores when it
    ends), counted while the test runs."""
    seen = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    yield seen
    signal.signal(signal.SIGTERM, previous)


def stopped_at_every_boundary(run, the_job: Job, target: str, limit: int = 1000):
    """``run()`` in ``the_job``'s session, a real SIGTERM sent before each try, so that each
    stops at its first boundary (the checkpoint written, ``SystemExit(143)``) and the next
    resumes from it; the first value a try returns, and the number of tries."""
    for tries in range(1, limit):
        try:
            with checkpoints.session(the_job, target):
                os.kill(os.getpid(), signal.SIGTERM)
                return run(), tries
        except SystemExit as exc:
            assert exc.code == checkpoints.EXIT_STATUS
            assert Path(the_job.checkpoint["file"]).exists()
    raise AssertionError(f"not finished after {limit} tries")


def test_job_spec_puts_the_checkpoint_beside_the_results():
    cfg = {"checkpoints": True, "checkpoint_every": 300}
    spec = checkpoints.job_spec(cfg, "results", {"curve": "results/sample_complexity/r3.h5"})
    assert spec == {"file": "results/.checkpoints/sample_complexity/r3.npz", "every": 300.0,
                    "enabled": True}


def test_chunk_steps_aim_at_the_target_time():
    assert checkpoints.chunk_steps(10, 2.0, 5.0) == 25
    assert checkpoints.chunk_steps(10, 100.0, 5.0) == 1
    assert checkpoints.chunk_steps(10, 1e-6, 5.0, cap=1000) == 1000


def test_lbfgs_stopped_at_every_boundary_gives_the_same_fits(tmp_path, monkeypatch, caplog,
                                                             sigterms):
    """Rosenbrock from two starts, one iteration per compiled call: stopped by SIGTERM at each
    boundary in turn and resumed, every start ends where it ends in a run never stopped, to the
    bit; the checkpoint is gone at the end; progress lines say where each try resumed. The
    SIGTERM of the last try, which meets no boundary, is delivered when the session ends."""
    monkeypatch.setattr(lbfgs, "FIRST_CHUNK", 1)
    monkeypatch.setattr(lbfgs, "CHUNK_SECONDS", 0.0)
    x0s = jnp.stack([jnp.full(6, -1.2), jnp.zeros(6)])

    def fit():
        return lbfgs.minimize(rosenbrock, x0s, jnp.float64(100.0), 2000, 1e-8)

    whole = fit()
    the_job = job(tmp_path)
    with caplog.at_level(logging.INFO):
        parts, tries = stopped_at_every_boundary(fit, the_job, SWEEP)
    assert tries > sum(r.nit for r in whole)  # a boundary per iteration and per finished start
    for a, b in zip(whole, parts, strict=True):
        assert (a.fun, a.grad_norm, a.nit, a.nfev, a.message) == (b.fun, b.grad_norm, b.nit,
                                                                  b.nfev, b.message)
        np.testing.assert_array_equal(np.asarray(a.x), np.asarray(b.x))
    assert not Path(the_job.checkpoint["file"]).exists()
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.endswith("): resumed at step 3 of 2000 of L-BFGS 0 start 1; 1 finished parts "
                             "kept") for line in lines)
    assert any(line.endswith("written after L-BFGS 0 start 0; exiting with status 143 (run the "
                             "job again to resume)") for line in lines)
    assert "L-BFGS 0: 2 of 2 starts finished before the job was stopped, taken from its " \
        "checkpoint" in lines
    assert sum("SIGTERM: checkpoint" in line for line in lines) == tries - 1
    assert sigterms == [signal.SIGTERM]


@pytest.mark.slow
def test_omniglot_training_stopped_at_every_boundary_gives_the_same_model(tmp_path, monkeypatch,
                                                                          sigterms):
    """Omniglot training a few steps per compiled call, stopped by SIGTERM at each boundary in
    turn (within blocks and at their ends) and resumed: the same parameters, losses and held-out
    accuracies as a run never stopped, to the bit."""
    monkeypatch.setattr(training, "CHUNK_SECONDS", 0.0)  # one step per call after the first
    bank = data.load_bank(Path(__file__).parents[1] / "data/omniglot/images_background_small1"
                          ".zip", 32, 8)[0].subset(np.arange(10))
    emb = data.embeddings(jax.random.key(1), 16, 192, 1.0, 1.0)
    net = icl.Net(width=8, head_dim=4, layers=2, heads=2, n0=192)
    recipe = training.Recipe(steps=12, batch=4, learning_rate=3e-3, weight_decay=1e-4,
                             log_every=5, init="lecun", identical_start=1.0, identical_end=0.0)
    held = data.draw_episodes(jax.random.key(3), bank, 16)
    held_out = (data.sequences(bank.tokens, emb, held.images, held.context_labels), held.y)

    def fit():
        return training.train(jax.random.key(2), net, recipe, bank.tokens, bank.starts, emb,
                              held_out)

    whole = fit()
    parts, tries = stopped_at_every_boundary(fit, job(tmp_path), OMNIGLOT)
    assert tries == 15 + 1  # 3 blocks of 5 steps, one per call
    for name in ("steps", "loss", "validation"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(parts, name))
    for name in whole.params:
        np.testing.assert_array_equal(np.asarray(whole.params[name]),
                                      np.asarray(parts.params[name]))


@pytest.mark.slow
def test_a_protein_transformer_stopped_at_every_evaluation_gives_the_same_run(tmp_path,
                                                                              sigterms):
    """The protein transformer, stopped by SIGTERM after each evaluation in turn and resumed:
    the same parameters (those of its lowest validation loss), curve and stop as a run never
    stopped, to the bit (its random keys typed keys, restored as such)."""
    seqs, test, validation = _copied_site()
    train = ~(test | validation)

    def fit():
        return train_transformer("vanilla1", replace(TRANSFORMER, steps=160),
                                 (seqs[train], np.ones(train.sum())),
                                 (seqs[validation], np.ones(80)), jax.random.key(0))

    whole = fit()
    parts, tries = stopped_at_every_boundary(fit, job(tmp_path), PROTEINS)
    assert tries == 4 + 1
    for name in ("step", "train_loss", "validation_loss", "best_step", "stopped", "budget"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(parts, name))
    for a, b in zip(jax.tree.leaves(whole.params), jax.tree.leaves(parts.params), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def written(tmp_path: Path, params: dict | None = None, target: str = SWEEP) -> Path:
    """A checkpoint of loop ``loop`` at step 3 of 10 written by a job of ``params``."""
    the_job = job(tmp_path, params)
    with pytest.raises(SystemExit), checkpoints.session(the_job, target) as ck:
        os.kill(os.getpid(), signal.SIGTERM)
        ck.boundary("loop", 3, 10, {"x": jnp.arange(4.0), "step": 3})
    return Path(the_job.checkpoint["file"])


def resumed(tmp_path: Path, caplog, params: dict | None = None, target: str = SWEEP):
    """What loop ``loop`` resumes from in a new session of a job of ``params``, and the
    checkpoint module's log lines."""
    caplog.clear()
    with caplog.at_level(logging.INFO, LOGGER), \
            checkpoints.session(job(tmp_path, params), target) as ck:
        found = ck.resume("loop", {"x": jnp.zeros(4), "step": 0})
    return found, [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_a_matching_checkpoint_is_resumed(tmp_path, caplog):
    path = written(tmp_path)
    (step, state), lines = resumed(tmp_path, caplog)
    assert step == 3 and state["step"] == 3 and isinstance(state["step"], int)
    np.testing.assert_array_equal(state["x"], np.arange(4.0))
    assert lines[0].startswith(f"checkpoint {path} (written ")
    assert lines[0].endswith("): resumed at step 3 of 10 of loop; 0 finished parts kept")
    assert len(lines) == 1
    assert not path.exists()  # the session ended without error: its job's artefact is written


@pytest.mark.parametrize("change, says", [
    ("config", "was written with another config slice"),
    ("code", "was written with another stage code"),
    ("processor", "was written with another processor"),
])
def test_a_checkpoint_of_another_config_code_or_processor_is_not_used(tmp_path, caplog,
                                                                      change, says):
    path = written(tmp_path)
    params, target = {"seed": 0}, SWEEP
    if change == "config":
        params = {"seed": 1}
    elif change == "code":
        target = OMNIGLOT
    else:  # rewrite the file as if another processor had written it
        with np.load(path) as f:
            arrays = {k: f[k] for k in f.files}
        meta = json.loads(str(arrays["meta"]))
        meta["identity"]["processor"] = "another processor"
        arrays["meta"] = np.asarray(json.dumps(meta))
        with open(path, "wb") as f:
            np.savez(f, **arrays)
    found, lines = resumed(tmp_path, caplog, params, target)
    assert found is None
    assert len(lines) == 1 and lines[0].startswith(f"checkpoint {path} {says} (")
    assert lines[0].endswith("); starting over")


@pytest.mark.parametrize("damage", ["truncated", "corrupt", "empty"])
def test_an_unreadable_checkpoint_is_named_and_the_job_starts_over(tmp_path, caplog, damage):
    path = written(tmp_path)
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:  # a byte inside the array's data
        info = z.getinfo("e0_0.npy")
    if damage == "truncated":
        raw = raw[: len(raw) // 2]
    elif damage == "corrupt":
        raw[info.header_offset + len(info.FileHeader()) + info.file_size - 3] ^= 0xFF
    else:
        raw = b""
    path.write_bytes(bytes(raw))
    found, lines = resumed(tmp_path, caplog)
    assert found is None
    assert len(lines) == 1
    assert lines[0].startswith(f"checkpoint {path} is unreadable (truncated or corrupt: ")
    assert lines[0].endswith("); starting over")
    if damage == "corrupt":
        assert "CRC" in lines[0]


def test_checkpoints_false_discards_the_checkpoint_and_writes_none(tmp_path, caplog):
    path = written(tmp_path)
    caplog.clear()
    with caplog.at_level(logging.INFO, LOGGER), \
            checkpoints.session(job(tmp_path, enabled=False), SWEEP) as ck:
        assert ck.resume("loop", {"x": jnp.zeros(4), "step": 0}) is None
        ck.boundary("loop", 4, 10, {"x": jnp.zeros(4), "step": 4})
        assert not path.exists()
    assert [r.getMessage() for r in caplog.records] == [
        f"checkpoint {path} discarded (checkpoints: false)"]


def test_a_checkpoint_that_does_not_fit_the_loop_is_named(tmp_path):
    written(tmp_path)
    with pytest.raises(checkpoints.CheckpointMismatch, match="float64\\[4\\] where the loop has "
                       "float64\\[5\\]"), checkpoints.session(job(tmp_path), SWEEP) as ck:
        ck.resume("loop", {"x": jnp.zeros(5), "step": 0})


def test_random_keys_and_scalars_round_trip(tmp_path):
    key = jax.random.fold_in(jax.random.key(7), 3)
    state = {"key": key, "loss": np.array([0.5, np.nan]), "name": "start", "done": True,
             "n": 12, "t": 1.25}
    the_job = job(tmp_path)
    with pytest.raises(SystemExit), checkpoints.session(the_job, SWEEP) as ck:
        os.kill(os.getpid(), signal.SIGTERM)
        ck.boundary("loop", 1, 2, state)
    with checkpoints.session(the_job, SWEEP) as ck:
        _, back = ck.resume("loop", {"key": jax.random.key(0), "loss": np.zeros(2),
                                     "name": "", "done": False, "n": 0, "t": 0.0})
    assert jnp.array_equal(jax.random.key_data(back["key"]), jax.random.key_data(key))
    np.testing.assert_array_equal(back["loss"], state["loss"])
    assert {k: back[k] for k in ("name", "done", "n", "t")} == {
        "name": "start", "done": True, "n": 12, "t": 1.25}


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["factored", "vanilla1"])
def test_mlm_training_stopped_at_every_chunk_gives_the_same_run(tmp_path, sigterms, arch):
    """MLM training (``mlm.loop.Run``), stopped by SIGTERM at the end of each compiled chunk of
    epochs in turn and resumed: the same parameters, history, map and stop as a run never
    stopped, to the bit; a transformer with a stop window, which keeps its stop state and its
    lowest held-out loss's parameters across the cuts."""
    from tests.test_mlm import BETA, fast
    from tests.test_mlm import potts as potts_fixture
    from workflow_lib.mlm import train

    train_seqs, test_seqs, J, U = potts_fixture.__wrapped__()
    train_seqs, test_seqs = train_seqs[:300], test_seqs[:200]
    cfg = fast(epochs=24, eval_every=2, restarts=2, model_dim=8,
               **({"stop_window": 8, "stop_tol": 0.05} if arch == "vanilla1" else {}))

    def fit():
        return train.train_mlm(arch, cfg, train_seqs, test_seqs, J, U, BETA, jax.random.key(4))

    whole = fit()
    parts, tries = stopped_at_every_boundary(fit, job(tmp_path), "workflow_lib.studies."
                                             "potts_paper.stages_fits:train")
    assert tries > 2
    for name in whole.params:
        np.testing.assert_array_equal(whole.params[name], parts.params[name])
    for name in whole.history:
        np.testing.assert_array_equal(whole.history[name], parts.history[name])
    np.testing.assert_array_equal(whole.attention, parts.attention)
    for name in ("test_loss_heldout", "train_loss", "pearson_r", "converged"):
        assert whole.metrics[name] == parts.metrics[name]
    if arch == "vanilla1":
        assert whole.metrics["stop_epoch"] == parts.metrics["stop_epoch"]


@pytest.mark.slow
def test_single_chains_stopped_at_every_block_give_the_same_samples(tmp_path, caplog, sigterms,
                                                                    tiny_model):
    """Two calls of the paper's protocol (two production rounds of a sample job; the shapes of
    ``test_gibbs``' block-invariance test), 4 blocks each, stopped by SIGTERM at every block in
    turn and resumed: the saved configurations and burn-in traces of chains never stopped, to the
    bit; a finished call is taken from the checkpoint, not run again."""
    J, U = tiny_model
    keys = jax.random.split(jax.random.key(5), 2)
    args = (keys, jnp.stack([J, 2 * J]), jnp.stack([U, U]))

    def rounds():
        return [gibbs.single_chain(*args, jnp.array([0.7, 0.7]) + d, n_save=30, burn_in=10,
                                   sweeps_between=4, blocks=4) for d in (0.0, 0.1)]

    whole = rounds()
    with caplog.at_level(logging.INFO):
        parts, tries = stopped_at_every_boundary(rounds, job(tmp_path), SAMPLE)
    assert tries == 2 * (4 + 1) + 1  # 4 blocks and the finished call, per call
    for (saved, trace), (saved_p, trace_p) in zip(whole, parts, strict=True):
        assert saved.shape == (2, 30, 4) and trace.shape == (2, 10)
        np.testing.assert_array_equal(saved, saved_p)
        np.testing.assert_array_equal(trace, trace_p)
    assert not np.array_equal(whole[0][0], whole[1][0])  # the two calls differ
    lines = [r.getMessage() for r in caplog.records]
    assert "single chain: resumed at block 2 of 4" in lines
    assert any("resumed at step 3 of 4 of single chain 1" in line for line in lines)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["independent_chains", "parallel_tempering"])
def test_the_other_protocols_stopped_at_every_block_give_the_same_samples(
        tmp_path, caplog, sigterms, tiny_model, name):
    """Independent chains (one call per run) and parallel tempering (one call for both runs), 3
    blocks each, stopped by SIGTERM at every block in turn and resumed: the saved
    configurations, burn-in traces and tempering statistics of runs never stopped, to the bit."""
    J, U = tiny_model
    options = protocols.ProtocolOptions(name, burn_in=12, sweeps_between=3, replicas=3,
                                        ladder_min=0.5)

    def run():
        return protocols.run_protocol(jax.random.split(jax.random.key(8), 2), J, U,
                                      np.array([0.7, 0.9]), options, n_save=12, blocks=3)

    whole = run()
    with caplog.at_level(logging.INFO):
        parts, tries = stopped_at_every_boundary(run, job(tmp_path), SAMPLE)
    calls = 2 if name == "independent_chains" else 1
    assert tries == calls * (3 + 1) + 1  # 3 blocks and the finished call, per call
    np.testing.assert_array_equal(whole.saved, parts.saved)
    np.testing.assert_array_equal(whole.burn_in_energy, parts.burn_in_energy)
    assert whole.extra.keys() == parts.extra.keys()
    for key, value in whole.extra.items():
        np.testing.assert_array_equal(value, parts.extra[key])
    kind = name.replace("_", " ")
    assert f"{kind}: resumed at block 2 of 3" in [r.getMessage() for r in caplog.records]
