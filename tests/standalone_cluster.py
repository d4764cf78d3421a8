"""A Spark standalone cluster on this machine, for tests that need real executors to kill.

pyspark's own distribution runs one: a master and N workers, each a JVM started by
``spark-class`` in a process group of its own (``start_new_session``), bound to 127.0.0.1 on
free ports. The executors of an application are JVMs the worker starts as its children
(``CoarseGrainedExecutorBackend``); ``executor_pids`` finds them.

    with standalone_cluster(tmp_path, workers=1) as cluster:
        subprocess.run([spark_submit, "--master", cluster.master_url, ...])

Every wait is bounded: the cluster is up when the master's JSON page
(``http://127.0.0.1:WEBUI/json/``) lists N ALIVE workers, else ``ClusterError`` after
``timeout`` seconds with the logs' tails; on exit every process group started here gets
SIGTERM, then SIGKILL, and is waited for. The logs are ``master.log`` and ``worker-N.log``
under the given directory.

PYTEST_DONT_REWRITE: a helper module, no assertions to rewrite.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspark

from parity.recovery import processes

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


class ClusterError(Exception):
    """The cluster did not come up in time, or one of its processes died while starting."""


@dataclass(frozen=True, slots=True)
class Cluster:
    """A running cluster: where to submit, its web UI, its processes."""

    master_url: str
    webui_url: str
    master_pid: int
    worker_pids: tuple[int, ...]
    log_dir: Path


def cluster_env() -> dict[str, str]:
    """The environment of the cluster's processes and of ``spark-submit`` against it."""
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def master_command(port: int, webui_port: int) -> list[str]:
    return [
        str(SPARK_CLASS), MASTER_CLASS,
        "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(webui_port),
    ]  # fmt: skip


def worker_command(
    master_url: str, webui_port: int, work_dir: Path, cores: int = 1, memory: str = "1g"
) -> list[str]:
    return [
        str(SPARK_CLASS), WORKER_CLASS, master_url,
        "--host", "127.0.0.1", "--webui-port", str(webui_port),
        "--cores", str(cores), "--memory", memory, "--work-dir", str(work_dir),
    ]  # fmt: skip


def master_state(webui_url: str, timeout: float = 5.0) -> dict[str, Any]:
    """The master's JSON page: its workers, applications, state."""
    with urllib.request.urlopen(f"{webui_url}/json/", timeout=timeout) as response:
        state: dict[str, Any] = json.load(response)
        return state


def alive_workers(webui_url: str) -> int:
    try:
        state = master_state(webui_url)
    except OSError:  # not listening yet
        return 0
    return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")


@contextmanager
def standalone_cluster(
    log_dir: Path, workers: int = 1, cores: int = 1, memory: str = "1g", timeout: float = 90.0
) -> Iterator[Cluster]:
    """A master and ``workers`` workers, up until the block ends (see the module docstring)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    env = cluster_env()
    port, webui = free_port(), free_port()
    master_url, webui_url = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{webui}"
    started: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []

    def start(command: list[str], log: Path) -> subprocess.Popen[bytes]:
        with log.open("wb") as out:
            process = subprocess.Popen(
                command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        started.append(process)
        logs.append(log)
        return process

    try:
        master = start(master_command(port, webui), log_dir / "master.log")
        for n in range(workers):
            work_dir = log_dir / f"worker-{n}"
            work_dir.mkdir(exist_ok=True)
            command = worker_command(master_url, free_port(), work_dir, cores, memory)
            start(command, log_dir / f"worker-{n}.log")
        deadline = time.monotonic() + timeout
        while alive_workers(webui_url) < workers:
            dead = [p for p in started if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                why = f"pid {dead[0].pid} exited" if dead else f"not up in {timeout:.0f} s"
                raise ClusterError(f"standalone cluster: {why}\n{_tails(logs)}")
            time.sleep(0.5)
        yield Cluster(master_url, webui_url, master.pid, tuple(p.pid for p in started[1:]), log_dir)
    finally:
        stop(started)


def stop(processes: list[subprocess.Popen[bytes]], grace: float = 10.0) -> None:
    """SIGTERM every process group (workers first, with their executors), SIGKILL the groups
    that still have members after ``grace``, and wait until they are empty (bounded)."""
    groups = [process.pid for process in reversed(processes)]  # each leads its own group
    for pgid in groups:
        _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for process in reversed(processes):
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
    while any(group_members(pgid) for pgid in groups) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pgid in groups:
        if group_members(pgid):  # members left: the group id is still ours to signal
            _signal_group(pgid, signal.SIGKILL)
    for process in processes:
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
    deadline = time.monotonic() + 10
    while any(group_members(pgid) for pgid in groups) and time.monotonic() < deadline:
        time.sleep(0.2)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_members(pgid: int) -> list[int]:
    """The live processes of process group ``pgid`` (zombies are not counted)."""
    members = []
    for pid, fields in processes.stats():
        if fields[2] == str(pgid) and fields[0] != "Z":  # state, ppid, pgrp, ...
            members.append(pid)
    return members


def executor_pids(cluster: Cluster) -> list[int]:
    """The executor JVMs running now under the cluster's workers, by scanning ``/proc``."""
    workers = set(cluster.worker_pids)
    return [pid for pid in processes.executor_pids() if workers & set(processes.ancestors(pid))]


def _tails(logs: list[Path], lines: int = 15) -> str:
    parts = []
    for log in logs:
        text = log.read_text(errors="replace").splitlines() if log.exists() else []
        parts.append(f"--- {log.name}\n" + "\n".join(text[-lines:]))
    return "\n".join(parts)
