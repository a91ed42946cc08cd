"""The claims library: the pre-registered tests that give each claim its verdict, their
calibration, and a study's claims table made from its tables (the claims rule's stage). It
imports ``core`` alone; each study's claims module imports it."""
