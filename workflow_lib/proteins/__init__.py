"""Protein study: multiple sequence alignments of real protein families (read from FASTA or A3M,
filtered by gap fraction, split into training and held-out rows), their sequence weights and
effective number of sequences, the models fitted to them and the contact scores compared with the
families' structural distances."""

# the run-name prefix of factored attention's fits per attention form (``factored-H4``, ...)
FACTORED_PREFIXES = {"signed": "factored", "softmax": "factored_softmax",
                     "lowrank": "factored_lowrank"}


def factored_form(name: str) -> tuple[str, int] | None:
    """``(attention, H)`` of a factored fit's run name ``<prefix>-H<h>`` (``FACTORED_PREFIXES``),
    None for any other name."""
    prefix, _, heads = name.partition("-H")
    forms = {p: form for form, p in FACTORED_PREFIXES.items()}
    return (forms[prefix], int(heads)) if prefix in forms and heads.isdigit() else None
