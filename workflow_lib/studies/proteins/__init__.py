"""The protein study: factored attention, plmDCA and vanilla transformers on protein families."""

ORDER = 40  # its place among the studies (workflow_lib.core.studies)
