"""README's shell sessions, run as written (twice) against a live server on a free port, the
way `make run` serves: a file database, debug on, the demo world."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.live import free_port, wait_until_listening

ROOT = Path(__file__).resolve().parents[1]


def sessions() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    api = readme[readme.index("## The API"):readme.index("## The MCP surface")]
    return re.findall(r"```sh\n(.*?)```", api, flags=re.S)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("readme")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "ARKME_", "CELERY_", "DATABASE_"))}
    env.update({"DJANGO_DEBUG": "1", "DATABASE_URL": f"sqlite:///{folder / 'arkme.sqlite3'}",
                "ARKME_MEDIA_ROOT": str(folder / "media"), "ARKME_WORKSPACE_ROOT": str(folder / "workspaces"),
                "ARKME_LOG_FORMAT": "plain", "B": f"http://127.0.0.1:{port}",
                "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"})
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True,
                   timeout=300)
    log = (folder / "server.log").open("wb")
    server = subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
                              cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    wait_until_listening(port, server, lambda: (folder / "server.log").read_text())
    yield env
    server.terminate()
    server.wait(timeout=20)


def run(env: dict[str, str], script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_readme_has_the_three_sessions():
    assert len(sessions()) == 3


EXPECTED = [
    # The basic session: the catalog, the session view, the context, the ID change, a message.
    (r'"default_profile"', r'"prompt"', r'"arkme_id":"alice_2026"', r'"attachments":1'),
    # The gallery: three added, reordered, one deleted.
    (r'"added":3', r'"decision":"ask"', r'"revision":2'),
    # Groups: carol added, dave invited, asks to join, an admin approves.
    (r'"outcome":"added"', r'"outcome":"invited"', r"is waiting for an admin", r"(?i)approved"),
]
AGAIN = [
    (r"alice's Arkme ID was changed already", r'"attachments":1'),
    (r'"already_present":\d', r'"decision":"ask"'),
    (r"carol is a member already", r"dave is a member already"),
]


@pytest.mark.parametrize("index", range(3))
def test_a_readme_session_runs_as_written_and_again(served, index):
    script = sessions()[index]
    first = run(served, script)
    output = first.stdout + first.stderr
    assert first.returncode == 0, output[-3000:]
    for pattern in EXPECTED[index]:
        assert re.search(pattern, output), (pattern, output[-3000:])
    assert "Traceback" not in output and '"error":{' not in first.stdout, output[-3000:]
    second = run(served, script)
    output = second.stdout + second.stderr
    assert second.returncode == 0, output[-3000:]
    for pattern in AGAIN[index]:
        assert re.search(pattern, output), (pattern, output[-3000:])
    assert "Traceback" not in output, output[-3000:]
