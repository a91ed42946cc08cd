"""Tables across runs and the figures of the papers."""
