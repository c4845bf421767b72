"""Workspace reads stay beneath the workspace, read regular files only, and bound their size."""
from __future__ import annotations

import hashlib
import os

import pytest

from arkme.kernel.errors import ArkmeError
from galleries.ingest import workspace as ws
from galleries.ingest.workspace import read_workspace_file


@pytest.fixture(params=["openat2", "walk"])
def resolver(request, monkeypatch):
    monkeypatch.setattr(ws, "_openat2_available", None if request.param == "openat2" else False)
    return request.param


@pytest.fixture
def root(tmp_path):
    folder = tmp_path / "ws"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "ok.png").write_bytes(b"image-bytes")
    (folder / "top.png").write_bytes(b"top")
    (tmp_path / "outside.png").write_bytes(b"secret")
    return folder


def refused(root, path, field="workspace_paths[3]"):
    with pytest.raises(ArkmeError) as caught:
        read_workspace_file(root, path, field)
    error = caught.value
    assert error.details.get("fields") == [field]
    assert not isinstance(path, str) or path == "" or path not in error.message
    return error


def test_reads_a_nested_file_and_hashes_it(root, resolver):
    read = read_workspace_file(root, "sub/ok.png", "workspace_paths[0]")
    assert read.data == b"image-bytes"
    assert read.sha256 == hashlib.sha256(b"image-bytes").hexdigest()


@pytest.mark.parametrize("path", ["", "/etc/passwd", "../outside.png", "sub/../../outside.png", "sub/./ok.png",
                                  "sub//ok.png", "sub\\ok.png", "a\x00b", "sub/", "x" * 2000, 5, None])
def test_ill_formed_paths_are_400(root, path, resolver):
    error = refused(root, path)
    assert error.http_status == 400 and error.code == "invalid_workspace_path"


def test_symlinked_file_is_refused(root, resolver):
    os.symlink(root.parent / "outside.png", root / "link.png")
    error = refused(root, "link.png")
    assert error.code == "workspace_file_refused"


def test_symlink_inside_the_workspace_is_refused_too(root, resolver):
    os.symlink(root / "top.png", root / "alias.png")
    assert refused(root, "alias.png").code == "workspace_file_refused"


def test_symlinked_directory_component_is_refused(root, resolver):
    os.symlink(root.parent, root / "up")
    assert refused(root, "up/outside.png").code == "workspace_file_refused"


def test_directory_is_refused(root, resolver):
    assert refused(root, "sub").code == "workspace_file_refused"


def test_fifo_is_refused_without_blocking(root, resolver):
    os.mkfifo(root / "pipe.png")
    assert refused(root, "pipe.png").code == "workspace_file_refused"


def test_device_is_refused(root, resolver):
    if os.geteuid() != 0:
        pytest.skip("creating a device node needs root")
    os.mknod(root / "null.png", 0o600 | 0o020000, os.makedev(1, 3))
    assert refused(root, "null.png").code == "workspace_file_refused"


def test_hard_link_is_refused(root, resolver):
    os.link(root / "top.png", root / "hard.png")
    assert refused(root, "hard.png").code == "workspace_file_refused"


def test_missing_file_is_404(root, resolver):
    error = refused(root, "nope.png")
    assert error.http_status == 404 and error.code == "workspace_file_not_found"


def test_file_over_5_mib_is_413(root, resolver):
    (root / "big.png").write_bytes(b"x" * (5 * 1024 * 1024 + 1))
    error = refused(root, "big.png")
    assert error.http_status == 413 and error.code == "source_too_large"


def test_file_of_exactly_5_mib_is_read(root, resolver):
    (root / "edge.png").write_bytes(b"x" * (5 * 1024 * 1024))
    assert len(read_workspace_file(root, "edge.png", "f").data) == 5 * 1024 * 1024


def test_workspace_that_is_a_symlink_is_refused(root, tmp_path):
    os.symlink(root, tmp_path / "linked-ws")
    with pytest.raises(ArkmeError) as caught:
        read_workspace_file(tmp_path / "linked-ws", "top.png", "f")
    assert caught.value.code == "workspace_not_found"


def _stat_a_size(monkeypatch, size):
    """fstat as it was a moment before the file changed size."""
    real = os.fstat

    def fstat(fd):
        info = real(fd)
        return os.stat_result((*info[:6], size, *info[7:]))

    monkeypatch.setattr(ws.os, "fstat", fstat)


def test_a_file_that_grew_after_its_size_was_read_is_read_whole(root, monkeypatch):
    content = bytes(range(256)) * 5000
    (root / "growing.png").write_bytes(content)
    _stat_a_size(monkeypatch, 1000)
    read = read_workspace_file(root, "growing.png", "f")
    assert read.data == content and read.sha256 == hashlib.sha256(content).hexdigest()


def test_a_file_that_grew_past_the_limit_while_read_is_413(root, monkeypatch):
    (root / "growing.png").write_bytes(b"x" * (5 * 1024 * 1024 + 10))
    _stat_a_size(monkeypatch, 1000)
    assert refused(root, "growing.png").code == "source_too_large"


def test_a_file_is_held_once_while_read(root):
    import tracemalloc

    content = os.urandom(4 * 1024 * 1024)
    (root / "big.png").write_bytes(content)
    tracemalloc.start()
    try:
        read = read_workspace_file(root, "big.png", "f")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert read.data == content
    assert peak < 1.25 * len(content)  # chunks joined afterwards held it twice


def test_a_read_that_comes_back_short_is_read_on(root, monkeypatch):
    content = bytes(range(256)) * 5000
    (root / "slow.png").write_bytes(content)
    real = os.read
    monkeypatch.setattr(ws.os, "read", lambda fd, n: real(fd, min(n, 4000)))  # as a network file system may
    assert read_workspace_file(root, "slow.png", "f").data == content
