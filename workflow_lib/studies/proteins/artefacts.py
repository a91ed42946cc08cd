"""The schema tags of the protein study's artefacts (attribute ``schema``)."""

PROTEIN_DATA = "protein-data/2"
PROTEIN_FIT = "protein-fit/2"
PROTEIN_FINAL_FIT = "protein-final-fit/1"
