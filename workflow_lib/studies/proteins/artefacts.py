"""The schema tags of the protein study's artefacts (attribute ``schema``)."""

PROTEIN_DATA = "protein-data/1"
PROTEIN_FIT = "protein-fit/1"
