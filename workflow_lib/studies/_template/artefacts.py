"""The schema tag of the template study's artefact."""

TEMPLATE_SQUARES = "template-squares/1"
