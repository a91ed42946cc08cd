"""The processor a job runs on, as the artefacts (``host_cpu``), the run manifest and the
benchmarks' rows record it. XLA compiles for the processor at hand, so a float32 sum may round
differently on another processor, and a transformer's training carries such a difference on:
the same config and seed give the same numbers on the same processor, not across processors
(``docs/usage.md``)."""

from __future__ import annotations

import platform
from pathlib import Path

VECTOR_EXTENSIONS = ("avx512f", "avx2", "avx", "sse4_2", "sve", "asimd")
"""The vector instruction sets ``cpu()`` looks for, widest first (x86, then ARM): it names the
first the processor has."""


def cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The processor's model name, family and widest vector instruction set from ``cpuinfo``
    (its first processor), e.g. ``AMD EPYC (family 26, avx512f)``; ``platform.processor()`` (or
    ``unknown``) where the file is missing."""
    try:
        first = cpuinfo.read_text(encoding="utf-8", errors="replace").split("\n\n")[0]
    except OSError:
        return platform.processor() or "unknown"
    fields = {key.strip(): value.strip()
              for key, value in (line.split(":", 1) for line in first.splitlines() if ":" in line)}
    model = fields.get("model name") or platform.processor() or "unknown"
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    details = [f"family {fields['cpu family']}"] if fields.get("cpu family") else []
    details += [ext for ext in VECTOR_EXTENSIONS if ext in flags][:1]
    return model + (f" ({', '.join(details)})" if details else "")
