"""HDF5 artefacts: provenance, atomic writes, clear errors for truncated or foreign files."""

import h5py
import numpy as np
import pytest

from workflow_lib.core.artefacts import ArtefactError, describe, read_artefact, write_artefact


def write_example(path):
    return write_artefact(
        path, "test-thing/1", {"x": np.arange(10_000).reshape(100, 100), "g/y": np.ones(3)},
        params={"a": 1}, seeds={"seed": 3}, attrs={"score": 0.5},
    )


def test_roundtrip_with_provenance(tmp_path):
    path = write_example(tmp_path / "a.h5")
    art = read_artefact(path, "test-thing/1", required=("x", "g/y"))
    np.testing.assert_array_equal(art["x"], np.arange(10_000).reshape(100, 100))
    for key in ("created", "workflow_lib_version", "git_commit", "config_digest", "seeds",
                "jax_version", "numpy_version", "h5py_version", "config", "xla_flags",
                "host_cpus", "host_cpu", "jax_backend", "jax_device"):
        assert key in art.attrs
    assert art.attrs["score"] == 0.5
    with h5py.File(path) as f:
        assert f["x"].compression == "gzip" and f["x"].shuffle
    text = describe(path)
    assert "test-thing/1" in text and "x: (100, 100)" in text


def test_interrupted_write_leaves_no_file(tmp_path):
    target = tmp_path / "b.h5"
    with pytest.raises(TypeError):
        write_artefact(target, "t/1", {"ok": np.ones(3), "bad": np.array([object()])}, {}, {})
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_truncated_file_is_reported(tmp_path):
    path = write_example(tmp_path / "c.h5")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ArtefactError, match=str(path)):
        read_artefact(path, "test-thing/1")


def test_foreign_files_are_reported(tmp_path):
    text = tmp_path / "d.h5"
    text.write_text("hello")
    with pytest.raises(ArtefactError, match="not an HDF5 file"):
        read_artefact(text)
    foreign = tmp_path / "e.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = 1
    with pytest.raises(ArtefactError, match="no 'schema' attribute"):
        read_artefact(foreign)
    path = write_example(tmp_path / "f.h5")
    with pytest.raises(ArtefactError, match="expected 'potts-samples/1'"):
        read_artefact(path, "potts-samples/1")
    with pytest.raises(ArtefactError, match="missing dataset"):
        read_artefact(path, "test-thing/1", required=("z",))
    with pytest.raises(ArtefactError, match="no such file"):
        read_artefact(tmp_path / "nope.h5")
