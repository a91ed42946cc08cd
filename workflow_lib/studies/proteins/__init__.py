"""The protein study: factored attention, plmDCA and vanilla transformers on protein families."""
