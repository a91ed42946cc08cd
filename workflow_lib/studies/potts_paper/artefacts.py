"""The schema tags of the Potts paper's artefacts (attribute ``schema``; the samples' tag is
``workflow_lib.potts.artefact.POTTS_SAMPLES``, read beyond this study)."""

POTTS_COUPLINGS = "potts-couplings/1"
MLM_TRAIN = "mlm-train/3"
PLM_FIT = "plm-fit/2"
SAMPLE_COMPLEXITY = "sample-complexity/3"
REPLICA_THEORY = "replica-theory/1"
REPLICA_SIMULATIONS = "replica-simulations/2"
