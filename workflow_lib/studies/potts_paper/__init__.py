"""The Potts paper (Rende, Gerace, Laio & Goldt, Phys. Rev. Research 6, 023057 (2024))."""

ORDER = 10  # its place among the studies (workflow_lib.core.studies)
