"""The protein study's rules, tables and panels: each family's alignment prepared once (gap
filter, sequence weights, held-out splits), every model fitted per family and realisation, the
tables, the figures and the claims table of the protein claim that motivates the Potts paper
(Bhattacharya et al. 2020)."""

from __future__ import annotations

from workflow_lib.core.registry import Panel, Rule, Study, claims_rule, constant, figure_rule
from workflow_lib.proteins import factored_form
from workflow_lib.studies.proteins import families, resources

PACKAGE = "workflow_lib.studies.proteins"
DRAW = f"{PACKAGE}.figures"
DATA_KEYS = ("max_gap_column", "max_gap_sequence", "identity", "held_out", "validation",
             "realisations")
COUPLING_FIT_KEYS = ("fields", "lambdas", "restarts", "max_iter", "grad_tol")
DISTANCE_KIND = "distance"  # a family's distance_kind when its config entry gives none


def _data_params(cfg, wc) -> dict:
    """The data slice, and the family's ``focus`` when it names one."""
    p, focus = cfg["proteins"], families.entry(cfg, wc["family"]).get("focus")
    return {"seed": cfg["seed"], "family": wc["family"], **{k: p[k] for k in DATA_KEYS},
            **({"focus": focus} if focus else {})}


def _model_params(cfg, wc) -> dict:
    """The slice of one model's fit: the transformers' section for a transformer, the L-BFGS
    fit's keys for factored attention and plmDCA, and ``lowrank`` for a fit that may be of that
    form (a ``factored_lowrank`` split fit, the final fit of ``factored`` when the family's
    ``attention`` lists it)."""
    p, model = cfg["proteins"], wc["model"]
    keys = ("transformer",) if model.startswith("vanilla") else COUPLING_FIT_KEYS
    form = factored_form(model)
    if (form is not None and form[0] == "lowrank") or (
            model == "factored" and "lowrank" in families.candidates(cfg, wc["family"])[0]):
        keys = (*keys, "lowrank")
    return {"seed": cfg["seed"], "family": wc["family"], "model": model,
            "proteins": {k: p[k] for k in keys}}


def _fit_params(cfg, wc) -> dict:
    """The slice of one split's fit."""
    return {**_model_params(cfg, wc), "realisation": int(wc["r"])}


def _contact_list_params(cfg, wc) -> dict:
    """The contact definition and what the family's distance file holds."""
    return {"family": wc["family"], "contacts": cfg["proteins"]["contacts"],
            "distance_kind": families.entry(cfg, wc["family"]).get("distance_kind", DISTANCE_KIND)}


def _evaluation_params(cfg, wc) -> dict:
    """The contact definition and what each family's distance file holds."""
    return {"contacts": cfg["proteins"]["contacts"],
            "distance_kinds": {f["name"]: f.get("distance_kind", DISTANCE_KIND)
                               for f in cfg["proteins"]["families"]}}


STUDY = Study(
    name="proteins",
    title="Protein families",
    paper="Bhattacharya, Thomas, Rao, Dauparas, Koo, Baker, Song & Ovchinnikov, Single layers of "
          "attention suffice to predict protein contacts, bioRxiv 2020; Rende, Gerace, Laio & "
          "Goldt, Phys. Rev. Research 6, 023057 (2024)",
    rules=(
        # runtime and memory from the family's L and M and the model, fitted to the protein
        # benchmark (resources.py)
        Rule("protein_data", _data_params, resources.data_minutes, resources.data_mb),
        Rule("protein_fit", _fit_params, resources.fit_minutes, resources.fit_memory,
             threaded=True, gpu=True),
        # proteins.final_fit: per family and model, the configuration the splits chose fitted
        # on every sequence, and the family's contact lists and contact map from those fits
        Rule("protein_final_fit", _model_params, resources.fit_minutes, resources.fit_memory,
             threaded=True, gpu=True),
        Rule("protein_contact_lists", _contact_list_params, constant(10), constant(2000),
             local=True),
        Rule("protein_tables", _evaluation_params, constant(10), constant(2000), local=True),
        claims_rule("protein_claims", "proteins"),
        figure_rule("protein_figure"),
    ),
    tables=("models", "family_models", "factored_choice", "training_curves", "curves", "pairs",
            "families"),
    claims="proteins/tables/claims.csv",
    claims_of="workflow_lib.studies.proteins.claims:claims_table",
    page_tables=("family_models",),
    realisations="proteins.realisations",
    shared_tables=("families",),
    summaries={"family_models": f"{PACKAGE}.tables:family_models_table"},
    panels=(
        Panel("protein_precision", ("curves",), f"{DRAW}:precision_vs_rank",
              "Protein families: precision of the top-ranked residue pairs (|i - j| >= "
              "proteins.contacts.min_separation, distance below proteins.contacts.threshold) "
              "against their rank divided by L, per model (mean over held-out splits, band: "
              "s.e.m.)."),
        Panel("protein_contacts", ("pairs",), f"{DRAW}:contact_maps",
              "Protein families: true contacts (grey, lower triangle) and each model's top-L "
              "predicted pairs (upper triangle: true positives and false positives), first "
              "held-out split."),
    ),
)

CONTACT_MAP_CAPTION = (
    "Protein family: the contact map of each model's fit on every sequence (proteins.final_fit), "
    "numbered as the family's contact lists (its focus sequence's residues, else its alignment "
    "columns): true contacts (grey, lower triangle) and the model's top-L pairs (upper "
    "triangle: true positives blue, false positives red; a family without a structure has no "
    "true contacts and its precision is unknown).")
