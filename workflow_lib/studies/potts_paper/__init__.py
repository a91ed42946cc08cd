"""The Potts paper (Rende, Gerace, Laio & Goldt, Phys. Rev. Research 6, 023057 (2024))."""
