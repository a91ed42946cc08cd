"""The processor a job records (``workflow_lib.core.host``), read from ``/proc/cpuinfo``'s
format."""

import platform

from workflow_lib.core import host

X86 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model name\t: AMD EPYC 9654 96-Core Processor
flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512bw

processor\t: 1
model name\t: another processor
flags\t\t: fpu
"""
ARM = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes sha2 crc32
CPU implementer\t: 0x41
"""


def test_the_first_processor_its_family_and_widest_vector_set(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(X86)
    assert host.cpu(path) == "AMD EPYC 9654 96-Core Processor (family 25, avx512f)"
    path.write_text(X86.replace(" avx512f avx512bw", ""))
    assert host.cpu(path) == "AMD EPYC 9654 96-Core Processor (family 25, avx2)"
    path.write_text(ARM)  # no model name line: the platform's word for it
    assert host.cpu(path) == f"{platform.processor() or 'unknown'} (asimd)"
    assert host.cpu(tmp_path / "missing") == (platform.processor() or "unknown")
