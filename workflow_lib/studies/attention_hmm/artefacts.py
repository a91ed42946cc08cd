"""The schema tags of the attention-paths study's artefacts (attribute ``schema``)."""

PATHS_FEATURES = "paths-features/1"
PATHS_THEORY = "paths-theory/1"
PATHS_SAMPLES = "paths-samples/1"
