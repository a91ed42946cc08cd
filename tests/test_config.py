"""Config validation: defaults filled, bad values rejected with one line each naming key and
range, every problem of a config at once."""

import subprocess
import sys

import pytest
import yaml

from tests.conftest import ROOT
from workflow_lib.core.config import (
    check,
    digest,
    load_config,
    load_schema,
    read_config_file,
    read_config_files,
)
from workflow_lib.core.errors import ConfigError
from workflow_lib.pages.presets import preset_files
from workflow_lib.proteins.alignment import check_families


def test_defaults_are_filled():
    cfg = load_config({})
    assert cfg["potts"] == {"L": 20, "C": 20, "U": "gaussian", "beta": None}
    assert cfg["sampling"]["protocol"] == "single_chain"


@pytest.mark.parametrize("files", preset_files().values(), ids=preset_files().keys())
def test_presets_are_valid(files):
    """Every preset, merged as ``--configfile`` merges it over config.yaml, and every preset file
    alone."""
    cfg = read_config_files(files)
    assert check_families(cfg["proteins"]["families"], ROOT) == []  # every file opens and parses
    read_config_file(files[-1])


def test_the_families_preset_pairs_ten_families_or_more():
    """config/proteins_families.yaml: every claim has ten families or more as its units, two of
    them at L >= 150, each a shipped alignment (data/proteins/) with its distances."""
    families = read_config_file(ROOT / "config/proteins_families.yaml")["proteins"]["families"]
    assert len({family["name"] for family in families}) == len(families) >= 10
    for family in families:
        assert family["alignment"].startswith("data/proteins/") and "distances" in family
    long = {f["name"] for f in families} & {"PF13354", "PF01774_3000"}  # L = 202, 213
    assert len(long) == 2, long


def _leaf_keys(schema: dict, prefix: str = "") -> set[str]:
    """The dotted keys of a schema section down to its leaves (objects with properties opened)."""
    keys = set()
    for key, sub in schema.get("properties", {}).items():
        keys |= _leaf_keys(sub, f"{prefix}{key}.") if "properties" in sub else {prefix + key}
    return keys


@pytest.mark.parametrize("path", ["config/proteins.yaml", "config/proteins_families.yaml"])
def test_protein_presets_set_every_protein_key(path):
    """Nothing of the quick preset's protein section (config.yaml, read first) carries over: the
    preset sets every key of the schema's section, so a new key fails this test until it does."""
    raw = yaml.safe_load((ROOT / path).read_text())["proteins"]
    schema = load_schema()["properties"]["proteins"]
    for key in sorted(_leaf_keys(schema)):
        node = raw
        for part in key.split("."):
            assert part in node, f"{path} does not set proteins.{key}"
            node = node[part]
    merged = read_config_files([ROOT / "config.yaml", ROOT / path])["proteins"]
    assert merged == load_config({"proteins": raw})["proteins"]


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ({"potts": {"L": 1}}, "potts.L = 1: must be integer >= 2"),
        ({"potts": {"C": 1}}, "potts.C = 1: must be integer >= 2"),
        ({"potts": {"L": "twenty"}}, 'potts.L = "twenty": must be integer'),
        ({"potts": {"beta": -0.5}}, "potts.beta = -0.5: must be number or null >= 0"),
        ({"sampling": {"n_train": 0}}, "sampling.n_train = 0: must be integer >= 1"),
        ({"sampling": {"protocol": "parallel"}}, 'must be one of "single_chain"'),
        ({"compute": {"gpu_model": "a 100"}},
         'compute.gpu_model = "a 100": must be string or null matching ^[A-Za-z0-9_.]+$'),
        ({"training": {"architectures": ["gpt"]}}, 'training.architectures.0 = "gpt"'),
        ({"potts": {"Lx": 3}}, "unknown key potts.Lx; allowed keys here: C, L, U, beta"),
        ({"sead": 1}, "unknown key sead"),
        ({"beta_tuning": {"beta_min": 2.0, "beta_max": 1.0}}, "beta_tuning.beta_min = 2.0"),
        ({"training": {"architectures": ["vanilla1"]}},
         "training.interpolation_a has a = 0 but training.architectures lacks factored"),
        ({"proteins": {"families": [{"name": "A", "alignment": "a.fa"}] * 2}},
         "proteins.families: the name 'A' is used twice"),
        ({"proteins": {"families": [{"name": "my fam", "alignment": "a.fa"}]}},
         'proteins.families.0.name = "my fam": must be string'),
        ({"proteins": {"families": [{"name": "A"}]}},
         "proteins.families.0: missing key alignment (required: name, alignment)"),
        ({"checkpoints": "false"}, 'checkpoints = "false": must be boolean (on the command line: '
         "--config checkpoints=True or checkpoints=False)"),
        ({"checkpoint_every": -1}, "checkpoint_every = -1: must be number >= 0"),
    ],
)
def test_bad_values_give_one_line(bad, expected):
    with pytest.raises(ConfigError) as info:
        load_config(bad)
    message = str(info.value)
    assert expected in message
    assert "\n" not in message


THREE_ERRORS = {"potts": {"L": 1}, "sampling": {"n_train": 0}, "sead": 1}
THREE_LINES = [  # in key order, the unknown top-level key's error at the top level
    "unknown key sead; allowed keys here: ",
    "potts.L = 1: must be integer >= 2 and <= 1000",
    "sampling.n_train = 0: must be integer >= 1",
]


def test_every_error_is_listed_then_counted(tmp_path):
    path = tmp_path / "three.yaml"
    path.write_text(yaml.safe_dump(THREE_ERRORS))
    with pytest.raises(ConfigError) as info:
        read_config_files([ROOT / "config.yaml", path])
    lines = str(info.value).splitlines()
    assert len(lines) == 4 and info.value.problems == lines[:3]
    for line, expected in zip(lines, THREE_LINES, strict=False):
        assert line.startswith(expected), line
    assert lines[3] == f"3 errors in {ROOT / 'config.yaml'} + {path}"
    assert info.value.report("config error: ").splitlines() == [
        *(f"config error: {line}" for line in lines[:3]), lines[3]]


def test_check_config_prints_every_error_then_the_count(tmp_path):
    """Schema errors and protein-file problems in one list: the files of a valid
    ``proteins.families`` are opened even where other keys are invalid."""
    path = tmp_path / "bad.yaml"
    families = [{"name": "gone", "alignment": str(tmp_path / "gone.fasta")}]
    path.write_text(yaml.safe_dump({**THREE_ERRORS, "proteins": {"families": families}}))
    run = subprocess.run([sys.executable, "-m", "workflow_lib", "check-config", str(path)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 2 and run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 5, run.stderr
    for line, expected in zip(lines, THREE_LINES, strict=False):
        assert line.startswith(f"error: {expected}"), line
    assert lines[3].startswith("error: proteins.families 'gone': ") and "gone.fasta" in lines[3]
    assert lines[4] == f"4 errors in {path}"


def test_relations_are_listed_together():
    problems = check({"beta_tuning": {"beta_min": 2.0, "beta_max": 1.0},
                      "replica": {"alpha_min": 3.0, "alpha_max": 1.0}})[1]
    assert [p.split(" = ")[0] for p in problems] == ["beta_tuning.beta_min", "replica.alpha_min"]


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ({"sead": 1}, "did you mean seed?"),
        ({"potts": {"bta": 1.0}}, "allowed keys here: C, L, U, beta; did you mean potts.beta?"),
        ({"training": {"archtectures": ["factored"]}}, "did you mean training.architectures?"),
        ({"proteins": {"families": [{"name": "A", "alignmnt": "a.fa"}]}},
         "did you mean proteins.families.0.alignment?"),
        ({"potts": {"bta": 1.0, "Cc": 3}},
         "did you mean potts.C for potts.Cc, potts.beta for potts.bta?"),
    ],
)
def test_a_misspelt_key_gets_the_closest_allowed_key(bad, expected):
    problems = check(bad)[1]
    assert any(p.startswith("unknown key") and p.endswith(expected) for p in problems), problems


def test_a_key_like_no_allowed_one_gets_no_suggestion():
    assert check({"potts": {"zzzz": 1}})[1] == [
        "unknown key potts.zzzz; allowed keys here: C, L, U, beta"]


def test_unreadable_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("potts: [unclosed")
    with pytest.raises(ConfigError, match="cannot read config file"):
        read_config_file(path)
    path.write_text(yaml.safe_dump([1, 2]))
    with pytest.raises(ConfigError, match="must hold a mapping"):
        read_config_file(path)


def test_digest_is_order_independent():
    assert digest({"a": 1, "b": [1, 2]}) == digest({"b": [1, 2], "a": 1})
    assert digest({"a": 1}) != digest({"a": 2})


def test_schema_defaults_are_the_code_defaults():
    """Code defaults are read from the schema (``schema_default``), never a second copy."""
    from workflow_lib.attention.tasks import MarkovTask
    from workflow_lib.core.config import schema_default
    from workflow_lib.mlm.architectures import PLM_KINDS
    from workflow_lib.mlm.models import ArchSpec
    from workflow_lib.mlm.plm import family
    from workflow_lib.studies.potts_paper.stages_fits import plm_options

    filled = load_config({})
    assert ArchSpec("factored", 3, 3).init_scale == filled["training"]["init_scale"]
    for kind in PLM_KINDS:
        d = plm_options(kind, filled["plm"])
        assert (d.max_iter, d.restarts, d.l2) == (filled["plm"]["max_iter"],
            filled["plm"]["restarts"], filled["plm"][f"l2_{family(kind)}"])  # fmt: skip
    assert MarkovTask().tokens == filled["paths"]["tokens"] == schema_default("paths.tokens")
    # the sample-complexity sweep takes the factored fit's starts: the same names in both places
    props = load_schema()["properties"]
    assert (props["sample_complexity"]["properties"]["start"]["enum"]
            == props["plm"]["properties"]["factored_start"]["enum"])  # fmt: skip
    with pytest.raises(KeyError, match="no default"):
        schema_default("training.no_such_key")


def test_hyperparameter_defaults_are_the_schemas():
    """Each default of a science function's hyperparameter (a field of its options dataclass, a
    keyword of its signature) is the schema's default of the config key of the same name, so
    that the two cannot drift; ``a``, the interpolated layer's mixing, is the run's (its name),
    not the config's, and has none (``None``: not interpolated)."""
    import dataclasses
    import inspect

    from workflow_lib.core.config import schema_default
    from workflow_lib.mlm.models import ArchSpec, arch_spec
    from workflow_lib.mlm.options import TrainingOptions

    options = {f.name: f.default for f in dataclasses.fields(TrainingOptions)}
    assert options.pop("a") is None
    spec = {f.name: f.default for f in dataclasses.fields(ArchSpec)
            if f.name in ("model_dim", "mask_token", "init_scale")}  # fmt: skip
    signature = {name: p.default for name, p in inspect.signature(arch_spec).parameters.items()
                 if p.default is not inspect.Parameter.empty}  # fmt: skip
    assert signature.pop("a") is None
    assert len(options) == 19 and len(spec) == len(signature) == 3
    for defaults in (options, spec, signature):
        for name, default in defaults.items():
            assert default == schema_default(f"training.{name}"), name
