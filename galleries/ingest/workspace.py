"""Reading a file beneath an Agent workspace, and nothing outside it.

Paths are checked as text first (relative, no empty, ``.`` or ``..`` components, no NUL or
backslash), then opened with ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` so the
kernel refuses any symlink or escape; where openat2 is missing, a walk of ``O_NOFOLLOW``
opens relative to each directory does the same. The file must be a regular file with one
link, and it is measured and hashed from the same descriptor while it is read.
"""
from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from arkme.kernel.errors import ArkmeError, ErrorCode, InvalidArguments, NotFound, PayloadTooLarge
from arkme.kernel.text import size_text

from .limits import MAX_SOURCE_BYTES
from .rejection import ImageRejected

SYS_OPENAT2 = 437  # the same number on x86_64 and aarch64
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO must not block
MAX_PATH = 1024


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_openat2_available: bool | None = None


@dataclass(frozen=True)
class FileRead:
    data: bytes
    sha256: str


def check_relative_path(path: object, field: str) -> tuple[str, ...]:
    """The path's components, or ``400`` naming the argument (never echoing the path)."""
    if not isinstance(path, str) or not path or len(path) > MAX_PATH:
        raise InvalidArguments("A workspace path must be a non-empty relative path.", fields=[field], code=ErrorCode.INVALID_WORKSPACE_PATH)
    if "\x00" in path or "\\" in path or path.startswith("/"):
        raise InvalidArguments("A workspace path must be relative, without NUL bytes or backslashes.", fields=[field], code=ErrorCode.INVALID_WORKSPACE_PATH)
    parts = tuple(path.split("/"))
    if any(part in ("", ".", "..") for part in parts) or any(len(p.encode()) > 255 for p in parts):
        raise InvalidArguments("A workspace path may not have empty, '.' or '..' components.", fields=[field], code=ErrorCode.INVALID_WORKSPACE_PATH)
    return parts


def source_too_large(field: str) -> PayloadTooLarge:
    return PayloadTooLarge(f"A source image may have at most {size_text(MAX_SOURCE_BYTES)}.",
                           code=ErrorCode.SOURCE_TOO_LARGE, details={"fields": [field]})


def _refused(field: str, why: str) -> ArkmeError:
    return ImageRejected(ErrorCode.WORKSPACE_FILE_REFUSED, f"The workspace file is not accepted: {why}.", field)


def _openat2(dir_fd: int, path: str) -> int:
    how = _OpenHow(flags=FILE_FLAGS, mode=0, resolve=RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(SYS_OPENAT2, dir_fd, path.encode(), ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return int(fd)


def _walk_open(dir_fd: int, parts: tuple[str, ...]) -> int:
    current = os.dup(dir_fd)
    try:
        for part in parts[:-1]:
            following = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=current)
            os.close(current)
            current = following
        return os.open(parts[-1], FILE_FLAGS, dir_fd=current)
    finally:
        os.close(current)


def _open_beneath(dir_fd: int, parts: tuple[str, ...]) -> int:
    global _openat2_available
    if _openat2_available is not False:
        try:
            fd = _openat2(dir_fd, "/".join(parts))
            _openat2_available = True
            return fd
        except OSError as exc:
            if exc.errno not in (errno.ENOSYS, errno.EPERM) or _openat2_available:
                raise
            _openat2_available = False  # an old kernel or a seccomp filter: walk instead
    return _walk_open(dir_fd, parts)


def read_workspace_file(workspace_dir: Path, path: str, field: str) -> FileRead:
    parts = check_relative_path(path, field)
    try:
        dir_fd = os.open(workspace_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise NotFound("The session's workspace does not exist.", code=ErrorCode.WORKSPACE_NOT_FOUND) from exc
    try:
        try:
            fd = _open_beneath(dir_fd, parts)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise NotFound("No such file in the workspace.", code=ErrorCode.WORKSPACE_FILE_NOT_FOUND,
                               details={"fields": [field]}) from exc
            if exc.errno in (errno.ELOOP, errno.EXDEV, errno.ENOTDIR):
                raise _refused(field, "links and paths leaving the workspace are not followed") from exc
            raise _refused(field, "it cannot be opened") from exc
    finally:
        os.close(dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refused(field, "it is not a regular file")
        if info.st_nlink != 1:
            raise _refused(field, "hard-linked files are not read")
        if info.st_size > MAX_SOURCE_BYTES:
            raise source_too_large(field)
        os.set_blocking(fd, True)
        # The size it has now, plus one byte to see it grow, in one read into one allocation:
        # chunks joined afterwards would hold the file twice for a moment. Reading on is needed
        # only if it grew (the read filled) or a read came back short of the size (a network
        # file system may return less than asked).
        wanted = info.st_size + 1
        chunks = [os.read(fd, wanted)]
        size = len(chunks[0])
        while size <= MAX_SOURCE_BYTES and chunks[-1] and (len(chunks[-1]) == wanted or size < info.st_size):
            wanted = 1 << 20
            chunks.append(os.read(fd, wanted))
            size += len(chunks[-1])
        if size > MAX_SOURCE_BYTES:  # the file grew while it was read
            raise source_too_large(field)
    finally:
        os.close(fd)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    return FileRead(data=data, sha256=hashlib.sha256(data).hexdigest())
