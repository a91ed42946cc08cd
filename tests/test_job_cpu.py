"""A job's own CPU measure (``workflow_lib.runtime.job_cpu``): what its threads and its finished
children used, which a sampler of the process tree misses once a child has exited between two
looks."""

import subprocess
import sys
import threading

from workflow_lib.runtime import job_cpu

BURN = "import time\nt = time.{clock}()\nwhile time.{clock}() - t < {s}: pass\n"


def test_job_cpu_time_counts_threads_and_children():
    """A thread's and a finished child's CPU seconds (0.4 s each, on the thread's and the
    child's own CPU clocks) are both in the count."""
    before = job_cpu.seconds_so_far()
    thread = threading.Thread(target=exec, args=(BURN.format(clock="thread_time", s=0.4),))
    thread.start()
    thread.join()
    after_thread = job_cpu.seconds_so_far()
    subprocess.run([sys.executable, "-c", BURN.format(clock="process_time", s=0.4)], check=True)
    after_child = job_cpu.seconds_so_far()
    assert after_thread - before >= 0.4
    assert after_child - after_thread >= 0.4


def test_only_a_last_line_is_read_back(tmp_path):
    """The log's last line is the job's measure; the same words earlier in a log, or a log
    without them, read as unmeasured."""
    log = tmp_path / "job.log"
    assert job_cpu.from_log(log) is None
    log.write_text("fit\n" + job_cpu.LINE.format(3.456) + "\n\n")
    assert job_cpu.from_log(log) == 3.46
    log.write_text(job_cpu.LINE.format(3.456) + "\nthen failed\n")
    assert job_cpu.from_log(log) is None
