"""A real single-node SLURM cluster on localhost for tests (no tests in this module).

Follows the tested recipe in ``shared/ops/local_slurm_cluster.md`` with one difference: nothing
outside a temporary directory is written or used. ``munged`` runs with its own key, socket, pid,
log and seed files; ``slurmctld``/``slurmd`` read ``slurm.conf`` from that directory (``-f``) and
listen on free ports; clients find it through ``SLURM_CONF`` (see ``Cluster.env``). A system's own
``/etc/slurm/slurm.conf``, ``/etc/munge`` or running SLURM/MUNGE daemons are never touched.

One wrinkle: inside a job, snakemake-executor-plugin-slurm-jobstep (0.6.1) removes every
``SLURM_*`` variable, ``SLURM_CONF`` included, before its nested ``srun``; without a config at the
default path srun then fails with "Could not establish a configuration source". ``Cluster.env``
therefore puts ``<tmp>/bin`` first on ``PATH``, holding an ``srun`` wrapper that sets
``SLURM_CONF`` and execs the real one (jobs are submitted with ``--export=ALL``, so PATH reaches
them).

The daemons run in the foreground (``-F``/``-D``) as children of this process, so their PIDs are
known without pid files; ``Cluster.stop`` cancels the cluster's jobs and ends exactly those PIDs.
Every wait is bounded: a misconfiguration raises ``ClusterError`` with the daemon logs' tail.

    reason = slurm_unavailable()          # None, or why SLURM cannot be had (skip with it)
    cluster = start_cluster(tmp_path)     # Cluster(partition="debug", gpu_partition="gpu", ...)
    ...
    cluster.stop()
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
BINARIES = [
    "sinfo", "squeue", "sbatch", "srun", "scancel", "scontrol", "slurmctld", "slurmd", "munged",
]
SBIN = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
PARTITION = "debug"  # the default partition
GPU_PARTITION = "gpu"  # a second one on the same node (without GPUs), to submit GPU jobs to
MARKER = "# written by tests/slurm_cluster.py (throwaway test cluster)"


class ClusterError(RuntimeError):
    """The local cluster could not be started; the message says why."""


def _which(name: str) -> str | None:
    path = os.environ.get("PATH", "") + os.pathsep + os.pathsep.join(SBIN)
    return shutil.which(name, path=path)


def _missing() -> list[str]:
    return [b for b in BINARIES if _which(b) is None]


def slurm_unavailable(install: bool = True, timeout: float = 300) -> str | None:
    """``None`` when SLURM and MUNGE binaries are usable, else the reason to skip.

    When binaries are missing, we are root and ``apt-get`` exists, the Debian packages are
    installed (``--no-install-recommends``). Starting daemons needs root too.
    """
    if os.name != "posix" or not hasattr(os, "geteuid"):
        return "a local SLURM cluster needs a POSIX host"
    if os.geteuid() != 0:
        return "starting slurmctld/slurmd/munged needs root (run the slurm tests as root)"
    missing = _missing()
    if not missing:
        return None
    if not install:
        return f"SLURM/MUNGE binaries missing: {', '.join(missing)}"
    apt = _which("apt-get")
    if apt is None:
        return (f"SLURM/MUNGE binaries missing ({', '.join(missing)}) and no apt-get to install "
                f"{' '.join(PACKAGES)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        for cmd in ([apt, "update", "-qq"],
                    [apt, "install", "-y", "-qq", "--no-install-recommends", *PACKAGES]):
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
            if out.returncode != 0:
                tail = (out.stderr or out.stdout).strip().splitlines()[-3:]
                return f"`{' '.join(cmd)}` failed (rc {out.returncode}): {' | '.join(tail)}"
    except subprocess.TimeoutExpired:
        return f"installing {' '.join(PACKAGES)} took more than {timeout:.0f} s"
    except OSError as exc:
        return f"installing {' '.join(PACKAGES)} failed: {exc}"
    missing = _missing()
    if missing:
        return f"after apt-get install, still missing: {', '.join(missing)}"
    return None


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return f"({path} unreadable)"
    return "\n".join(f"    {line}" for line in text[-lines:]) or "    (empty)"


@dataclass
class Cluster:
    """A running local cluster: ``pids`` of the daemons this module started (name -> pid),
    ``partition`` (the default) and ``gpu_partition`` to submit to, and ``env`` (os.environ plus
    ``SLURM_CONF``) for clients."""

    root: Path
    conf: Path
    partition: str
    gpu_partition: str
    node: str
    cpus: int
    mem_mb: int
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self.procs.items()}

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ, SLURM_CONF=str(self.conf))
        path = env.get("PATH", "").split(os.pathsep)
        extra = [d for d in SBIN if d not in path]
        env["PATH"] = os.pathsep.join([str(self.root / "bin"), *path, *extra]).strip(os.pathsep)
        return env

    def run(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
        """Run a SLURM client command (``sinfo``, ``squeue``...) against this cluster."""
        cmd = [_which(args[0]) or args[0], *args[1:]]
        return subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)

    def logs(self) -> str:
        return "\n".join(
            f"  {p.name}:\n{_tail(p)}" for p in sorted((self.root / "log").glob("*.log"))
        )

    def stop(self, timeout: float = 20) -> None:
        """Cancel this cluster's jobs, then end the daemons this module started, by PID
        (SIGTERM, then SIGKILL after ``timeout`` s). Idempotent."""
        if self.procs.get("slurmctld") and self.procs["slurmctld"].poll() is None:
            try:
                for partition in (self.partition, self.gpu_partition):
                    self.run("scancel", "--full", "--quiet", f"--partition={partition}",
                             timeout=10)
                time.sleep(0.5)
            except (OSError, subprocess.SubprocessError):
                pass
        # slurmd first (it owns the job steps), then slurmctld, munged last (the others use it)
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def _conf_text(root: Path, node: str, cpus: int, mem_mb: int, ports: list[int],
               socket_path: Path) -> str:
    return f"""{MARKER}
ClusterName=localtest
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmdPort={ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket_path}
MpiDefault=none
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=500
SchedulerType=sched/backfill
ReturnToService=2
StateSaveLocation={root}/spool/ctld
SlurmdSpoolDir={root}/spool/d
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/log/jobcomp.txt
# squeue --states=all keeps finished jobs this long; the Snakemake slurm plugin with
# slurm-status-command=squeue needs MinJobAge >= 3 x slurm-init-seconds-before-status-checks
MinJobAge=300
InactiveLimit=0
KillWait=5
Waittime=0
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem_mb} State=UNKNOWN
PartitionName={PARTITION} Nodes={node} Default=YES MaxTime=INFINITE State=UP
PartitionName={GPU_PARTITION} Nodes={node} Default=NO MaxTime=INFINITE State=UP
"""


def _wait(predicate, timeout: float, what: str, cluster: Cluster) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, proc in cluster.procs.items():
            if proc.poll() is not None:
                raise ClusterError(
                    f"{name} exited with rc {proc.returncode} while waiting for {what}\n"
                    f"{cluster.logs()}"
                )
        if predicate():
            return
        time.sleep(0.2)
    raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}\n{cluster.logs()}")


def start_cluster(tmpdir: str | Path, timeout: float = 60) -> Cluster:
    """Start munged, slurmctld and slurmd under ``tmpdir``; return when the node is idle.

    Raises ``ClusterError`` (after stopping whatever it started) when a daemon dies or the node
    does not become idle within ``timeout`` seconds.
    """
    root = Path(tmpdir).resolve()
    for sub in ("spool/ctld", "spool/d", "log", "munge"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(root / "munge", 0o700)
    node = socket.gethostname().split(".")[0]
    cpus = os.cpu_count() or 1
    with open("/proc/meminfo") as f:
        total_mb = next(int(line.split()[1]) // 1024 for line in f if line.startswith("MemTotal"))
    mem_mb = max(total_mb * 85 // 100, 256)  # RealMemory must not exceed the real RAM

    srun = _which("srun")
    if srun is None:
        raise ClusterError("srun not found (package slurm-client)")
    (root / "bin").mkdir(exist_ok=True)
    wrapper = root / "bin" / "srun"
    wrapper.write_text(
        f"#!/bin/sh\n# {MARKER[2:]}: the slurm-jobstep plugin drops SLURM_CONF before srun\n"
        f"SLURM_CONF='{root / 'slurm.conf'}'\nexport SLURM_CONF\nexec '{srun}' \"$@\"\n"
    )
    wrapper.chmod(0o755)

    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(128))
    os.chmod(key, 0o600)
    sock = root / "munge" / "munge.socket"
    conf = root / "slurm.conf"
    conf.write_text(_conf_text(root, node, cpus, mem_mb, _free_ports(2), sock))

    cluster = Cluster(root, conf, PARTITION, GPU_PARTITION, node, cpus, mem_mb)
    log = root / "log"

    def launch(name: str, cmd: list[str]) -> None:
        out = open(log / f"{name}.out.log", "wb")  # noqa: SIM115 (kept open for the daemon)
        cluster.procs[name] = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            env=cluster.env, start_new_session=True,
        )
        out.close()

    try:
        launch("munged", [
            _which("munged"), "--foreground", "--force", f"--socket={sock}", f"--key-file={key}",
            f"--pid-file={root / 'munge' / 'munged.pid'}", f"--log-file={log / 'munged.log'}",
            f"--seed-file={root / 'munge' / 'munged.seed'}",
        ])
        _wait(sock.exists, timeout, "the munged socket", cluster)
        launch("slurmctld", [_which("slurmctld"), "-D", "-i", "-f", str(conf)])
        launch("slurmd", [_which("slurmd"), "-D", "-f", str(conf), "-N", node])

        def idle() -> bool:
            try:
                out = cluster.run("sinfo", "-h", "-o", "%t", "-p", PARTITION, timeout=10)
            except subprocess.TimeoutExpired:
                return False
            return out.returncode == 0 and out.stdout.strip() == "idle"

        _wait(idle, timeout, f"node {node} to be idle in partition {PARTITION}", cluster)
    except BaseException:
        cluster.stop()
        raise
    atexit.register(cluster.stop)  # also when the caller forgets or dies of an exception
    return cluster
