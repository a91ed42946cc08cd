"""How a job's JAX is set up: its options take effect whether JAX is imported before or after
``configure_jax``, and the jobs that never compute with JAX (figures, claims, the report, the
manifest) import neither JAX nor ``scipy.stats``, each a second of every such job. Fresh
interpreters, since this test process has imported both."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

OPTIONS = ("jax_enable_x64", "jax_platforms", "jax_num_cpu_devices", "jax_compilation_cache_dir",
           "jax_persistent_cache_min_compile_time_secs")


def _python(code: str, tmp_path) -> str:
    """The standard output of ``code`` run by a fresh interpreter in the repository root, with
    none of this process's environment but a JAX cache in ``tmp_path``."""
    env = {"JAX_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


@pytest.mark.parametrize("jax_first", [False, True])
def test_configure_jax_sets_every_option_whether_jax_is_imported_before_or_after(jax_first,
                                                                                 tmp_path):
    code = "\n".join([
        "import json, sys",
        "import jax" if jax_first else "",
        "from workflow_lib.runtime.jax_setup import configure_jax",
        "configure_jax(2, 'cpu', 'rule test')",
        "imported = 'jax' in sys.modules",
        "import jax, jax.numpy as jnp",
        f"print(json.dumps([imported, jax.device_count(), jnp.zeros(1).dtype.name,"
        f" *(getattr(jax.config, name) for name in {OPTIONS!r})]))",
    ])
    imported, devices, dtype, *options = json.loads(_python(code, tmp_path))
    assert imported == jax_first  # configure_jax itself imports no JAX
    assert (devices, dtype) == (2, "float64")
    assert options == [True, "cpu", 2, str(tmp_path / "cache"), 0.0]


def test_jobs_that_do_not_compute_with_jax_import_neither_jax_nor_scipy_stats(tmp_path):
    """The modules of the figure, claims, report and manifest stages, every study's panels'
    draw functions and claims functions, as a job of those stages imports them."""
    code = "\n".join([
        "import importlib, json, sys",
        "import workflow_lib.__main__",
        "from workflow_lib.core.registry import resolve",
        "from workflow_lib.core.studies import studies",
        "from workflow_lib.core.workflow import stage_functions",
        "for name in ('potts_figure', 'potts_claims', 'report_page', 'manifest'):",
        "    importlib.import_module(stage_functions()[name].split(':')[0])",
        "for study in studies():",
        "    resolve(study.claims_of)",
        "    for panel in study.panels:",
        "        resolve(panel.draw)",
        "print(json.dumps(sorted({'jax', 'scipy.stats'} & set(sys.modules))))",
    ])
    assert json.loads(_python(code, tmp_path)) == []
