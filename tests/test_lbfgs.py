"""The L-BFGS of every full-batch fit (``workflow_lib.mlm.lbfgs``): closed-form minima, the
gradient criterion as the only regular stop, every other stop named, starts independent of
each other, its programs compiled once per shape."""

import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from workflow_lib.mlm import lbfgs

TOL = 1e-8


def quadratic(x: jax.Array, data: tuple[jax.Array, jax.Array]) -> jax.Array:
    """``x^T H x / 2 - b^T x``: minimum at ``H^{-1} b``."""
    H, b = data
    return 0.5 * x @ H @ x - b @ x


def rosenbrock(x: jax.Array, data: jax.Array) -> jax.Array:
    """The Rosenbrock function, minimum 0 at ``x = 1``; ``data`` scales its valley."""
    return jnp.sum(data * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def pytree_objective(params: dict[str, jax.Array], data: jax.Array) -> jax.Array:
    """``||a - data||^2 + ||B - 2||^2`` over a two-leaf pytree: minimum at ``a = data, B = 2``."""
    return jnp.sum((params["a"] - data) ** 2) + jnp.sum((params["B"] - 2.0) ** 2)


def spd(n: int, seed: int) -> tuple[jax.Array, jax.Array]:
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(n, n))
    return jnp.asarray(Q @ Q.T + n * np.eye(n)), jnp.asarray(rng.normal(size=n))


def test_quadratic_reaches_its_closed_form_minimum_from_every_start():
    H, b = spd(12, 0)
    x0s = jnp.asarray(np.random.default_rng(1).normal(size=(3, 12)))
    for res in lbfgs.minimize(quadratic, x0s, (H, b), 200, TOL):
        assert res.message == lbfgs.STOPS[lbfgs.CONVERGED] and res.converged(TOL)
        np.testing.assert_allclose(res.x, np.linalg.solve(H, b), atol=1e-7)
        assert res.fun == pytest.approx(-0.5 * b @ np.linalg.solve(H, b), rel=1e-12)
        assert 0 < res.nit <= 60 and res.nfev >= res.nit
        assert_reported_at_its_point(quadratic, res, (H, b))


def test_rosenbrock_and_pytree_parameters():
    x0s = jnp.stack([jnp.full(8, -1.2), jnp.zeros(8)])
    for res in lbfgs.minimize(rosenbrock, x0s, jnp.float64(100.0), 2000, TOL):
        assert res.converged(TOL)
        np.testing.assert_allclose(res.x, np.ones(8), atol=1e-6)
    target = jnp.arange(3.0)
    x0s = [{"a": jnp.zeros(3), "B": jnp.ones((2, 2))}, {"a": jnp.ones(3), "B": jnp.zeros((2, 2))}]
    for res in lbfgs.minimize(pytree_objective, x0s, target, 100, TOL):
        assert res.converged(TOL) and set(res.x) == {"a", "B"}
        np.testing.assert_allclose(res.x["a"], target, atol=1e-9)
        np.testing.assert_allclose(res.x["B"], np.full((2, 2), 2.0), atol=1e-9)


def test_each_start_ends_where_it_ends_alone_in_calls_of_any_length(monkeypatch):
    """The starts run one after another: a start takes the iterations it takes alone and ends at
    its point to the last bit, whatever the other starts do (here: other iteration counts) and
    however its iterations are cut into compiled calls (here: one iteration per call)."""
    x0s = jnp.stack([jnp.full(8, -1.2), jnp.full(8, 0.9), jnp.zeros(8)])
    together = lbfgs.minimize(rosenbrock, x0s, jnp.float64(100.0), 2000, TOL)
    assert len({r.nit for r in together}) > 1
    monkeypatch.setattr(lbfgs, "FIRST_CHUNK", 1)
    monkeypatch.setattr(lbfgs, "CHUNK_SECONDS", 0.0)
    for k, res in enumerate(together):
        (alone,) = lbfgs.minimize(rosenbrock, x0s[k:k + 1], jnp.float64(100.0), 2000, TOL)
        assert (alone.nit, alone.nfev, alone.fun) == (res.nit, res.nfev, res.fun)
        np.testing.assert_array_equal(alone.x, res.x)


def assert_reported_at_its_point(objective, res: lbfgs.Result, data) -> None:
    """``fun`` and ``grad_norm`` (read from the optimiser's state) are those of ``x``."""
    value, grad = jax.value_and_grad(objective)(res.x, data)
    assert res.fun == pytest.approx(float(value), rel=1e-12, abs=1e-300)
    assert res.grad_norm == pytest.approx(float(lbfgs.max_abs(grad)), rel=1e-9, abs=1e-300)


def barrier(x: jax.Array, data: jax.Array) -> jax.Array:
    """``||x - 3||^2 - data * sum log(2.5 - x)``: finite only below 2.5, minimum just below."""
    return jnp.sum((x - 3.0) ** 2) - data * jnp.sum(jnp.log(2.5 - x))


def test_a_trial_outside_the_domain_is_stepped_back_from():
    """Unit steps from 0 overshoot the barrier at 2.5 into NaN; the fit stays finite and ends
    at the interior minimum ``x = (5.5 - sqrt(0.25 + 2 mu)) / 2``, where its report is."""
    mu = 1e-2
    (res,) = lbfgs.minimize(barrier, jnp.zeros((1, 4)), jnp.float64(mu), 200, TOL)
    assert res.converged(TOL) and np.all(np.isfinite(res.x))
    np.testing.assert_allclose(res.x, (5.5 - np.sqrt(0.25 + 2 * mu)) / 2, atol=1e-9)
    assert_reported_at_its_point(barrier, res, jnp.float64(mu))


def test_every_other_stop_is_named_and_leaves_the_criterion_unmet():
    x0s = jnp.full((1, 8), -1.2)
    (cut,) = lbfgs.minimize(rosenbrock, x0s, jnp.float64(100.0), 5, TOL)
    assert (cut.nit, cut.message) == (5, lbfgs.STOPS[lbfgs.MAX_ITER]) and not cut.converged(TOL)
    assert_reported_at_its_point(rosenbrock, cut, jnp.float64(100.0))
    # a criterion below float64's resolution of the gradient: the line search runs out of
    # decrease, and the last point that decreased is kept
    H, b = spd(12, 0)
    (stuck,) = lbfgs.minimize(quadratic, jnp.zeros((1, 12)), (H, b), 10_000, 0.0)
    assert stuck.message == lbfgs.STOPS[lbfgs.NO_DECREASE] and stuck.nit < 10_000
    np.testing.assert_allclose(stuck.x, np.linalg.solve(H, b), atol=1e-12)
    assert_reported_at_its_point(quadratic, stuck, (H, b))
    (nan,) = lbfgs.minimize(lambda x, data: jnp.sum(jnp.log(x) * data), jnp.full((1, 2), -1.0),
                            jnp.float64(1.0), 100, TOL)  # fmt: skip
    assert nan.message == lbfgs.STOPS[lbfgs.NOT_FINITE] and nan.nit == 0
    (done,) = lbfgs.minimize(quadratic, jnp.asarray(np.linalg.solve(H, b))[None], (H, b), 100,
                             1e-6)  # fmt: skip
    assert (done.nit, done.message) == (0, lbfgs.STOPS[lbfgs.CONVERGED])


def well_and_tail(x: jax.Array, data: jax.Array) -> jax.Array:
    """``data + exp(-x) - 2 exp(-x^2)`` summed: a minimum near ``x = 0.3`` (value ``data - 1.09``
    per entry), and towards ``x -> inf`` a flat valley levelling off at ``data`` whose gradient
    shrinks by a constant factor per Newton step."""
    return jnp.sum(data + jnp.exp(-x) - 2.0 * jnp.exp(-(x**2)))


def test_a_flat_start_above_a_converged_one_stops_and_stays_unconverged():
    """With ``ftol > 0`` a start whose objective fell by less than ``ftol`` (relative) over the
    last ``ftol_window`` iterations, and that at that rate would still end above an earlier
    converged start, stops there, named, above the gradient criterion; the stop only cuts its
    path short (the point ``max_iter`` gives at that iteration). Before any start has
    converged no start stops so, and ``ftol = 0`` runs every start to the criterion."""
    data, window, ftol, tol = jnp.float64(3.0), 4, 1e-4, 1e-12
    well, tail = jnp.zeros((1, 1)), jnp.full((1, 1), 4.0)
    converged, flat = lbfgs.minimize(well_and_tail, jnp.concatenate([well, tail]), data, 1000,
                                     tol, ftol, window)  # fmt: skip
    assert converged.converged(tol) and converged.fun < 2.0
    assert flat.message == lbfgs.STOPS[lbfgs.FLAT] and not flat.converged(tol)
    assert flat.nit % window == 0 and flat.nit >= 2 * window and flat.fun > 2.9
    assert_reported_at_its_point(well_and_tail, flat, data)
    (cut,) = lbfgs.minimize(well_and_tail, tail, data, flat.nit, tol)
    np.testing.assert_array_equal(cut.x, flat.x)
    # the last window fell by at most ftol, the one before by more
    before = [lbfgs.minimize(well_and_tail, tail, data, flat.nit - k * window, tol)[0].fun
              for k in (1, 2)]  # fmt: skip
    assert before[0] - flat.fun <= ftol * abs(flat.fun)
    assert before[1] - before[0] > ftol * abs(before[0])
    first, _ = lbfgs.minimize(well_and_tail, jnp.concatenate([tail, well]), data, 1000, tol, ftol,
                              window)  # fmt: skip
    (alone,) = lbfgs.minimize(well_and_tail, tail, data, 1000, tol)
    for res in (first, alone):
        assert res.message == lbfgs.STOPS[lbfgs.CONVERGED] and res.nit == alone.nit > flat.nit


def test_ftol_leaves_a_fit_that_keeps_falling_as_it_is():
    """A fit whose objective falls by more than ``ftol`` in every window reaches the gradient
    criterion exactly as without the stop: the same iterations and point."""
    x0s = jnp.stack([jnp.full(8, -1.2), jnp.zeros(8)])
    plain = lbfgs.minimize(rosenbrock, x0s, jnp.float64(100.0), 2000, TOL)
    with_ftol = lbfgs.minimize(rosenbrock, x0s, jnp.float64(100.0), 2000, TOL, 1e-12, 5)
    for a, b in zip(plain, with_ftol, strict=True):
        assert b.message == lbfgs.STOPS[lbfgs.CONVERGED] and (a.nit, a.nfev) == (b.nit, b.nfev)
        np.testing.assert_array_equal(a.x, b.x)


def test_one_program_per_shape(monkeypatch):
    """``max_iter``, ``grad_tol``, ``ftol``, ``ftol_window`` and the data's values are traced:
    only a new shape (or a new objective) compiles again, once, however many calls a start
    takes (here one iteration per call)."""
    monkeypatch.setattr(lbfgs, "FIRST_CHUNK", 1)
    monkeypatch.setattr(lbfgs, "CHUNK_SECONDS", 0.0)
    H, b = spd(12, 0)
    x0s = jnp.zeros((2, 12))
    lbfgs.minimize(quadratic, x0s, (H, b), 200, TOL)
    compiled = [lbfgs._start._cache_size(), lbfgs._advance._cache_size()]
    lbfgs.minimize(quadratic, x0s, spd(12, 1), 7, 1e-3, 1e-6, 3)
    assert [lbfgs._start._cache_size(), lbfgs._advance._cache_size()] == compiled
    lbfgs.minimize(quadratic, jnp.zeros((2, 6)), spd(6, 0), 200, TOL)
    assert [lbfgs._start._cache_size(), lbfgs._advance._cache_size()] == [n + 1 for n in compiled]


def test_progress_lines_name_the_start_its_rate_and_time_left(monkeypatch, caplog):
    """The host writes a line between two compiled calls of a start that runs on: here a first
    call of 3 iterations, then one iteration per call (``CHUNK_SECONDS = 0``), a line after
    each."""
    monkeypatch.setattr(lbfgs, "FIRST_CHUNK", 3)
    monkeypatch.setattr(lbfgs, "CHUNK_SECONDS", 0.0)
    monkeypatch.setattr(lbfgs, "REPORT_SECONDS", 0.0)
    x0s = jnp.stack([jnp.full(8, -1.2), jnp.zeros(8)])
    with caplog.at_level(logging.INFO, logger="workflow_lib.mlm"):
        results = lbfgs.minimize(rosenbrock, x0s, jnp.float64(100.0), 2000, TOL)
    lines = [r.getMessage() for r in caplog.records if r.name == "workflow_lib.mlm"]
    for k, res in enumerate(results):
        mine = [line for line in lines if line.startswith(f"L-BFGS 0 start {k}: iteration ")]
        assert [int(line.split()[5].rstrip(',')) for line in mine] == list(range(3, res.nit))
        assert all("iterations/s, at most " in line and " s to max_iter" in line for line in mine)
