"""Long native work leaves the serving thread under gevent, and stays where it is otherwise."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from arkme.kernel import offload as offload_module
from arkme.kernel.offload import offload

ROOT = Path(__file__).resolve().parents[3]


def test_without_gevent_the_work_runs_in_the_calling_thread():
    assert offload(threading.get_ident) == threading.get_ident()


def test_without_gevent_an_error_reaches_the_caller():
    def fail() -> None:
        raise ValueError("bad image")

    with pytest.raises(ValueError, match="bad image"):
        offload(fail)


# Run in a fresh interpreter: patching is for the whole process and cannot be undone.
UNDER_GEVENT = """
from gevent import monkey
monkey.patch_all()
import gevent
from arkme.kernel.offload import offload

native_ident = monkey.get_original("threading", "get_ident")
serving = native_ident()

# The work waits on a real lock that only another request (a greenlet) releases: run in the
# serving thread it would hold that thread, the greenlet would never run, and it would time out.
released = monkey.get_original("_thread", "allocate_lock")()
released.acquire()
other = gevent.spawn(released.release)
assert offload(lambda: released.acquire(timeout=30)) is True, "the work held the serving thread"
assert other.dead
assert offload(native_ident) != serving

def fail():
    raise ValueError("bad image")
try:
    offload(fail)
except ValueError as error:
    assert str(error) == "bad image"
else:
    raise AssertionError("the error was lost")

print(True)
"""


def test_under_gevent_the_work_runs_on_real_threads_and_the_process_serves_meanwhile():
    done = subprocess.run([sys.executable, "-c", UNDER_GEVENT], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "True", done.stdout + done.stderr[-2000:]


def test_a_forked_child_starts_without_its_parents_pools(monkeypatch):
    """Through the fork hook itself: a child's pools would hold threads it does not have."""
    monkeypatch.setitem(offload_module._pools, "work", object())
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit status only
        os._exit(0 if offload_module._pools == {} else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert "work" in offload_module._pools  # the parent keeps its own
