"""Running callables at the same moment, each on its own database connection."""
from __future__ import annotations

import threading
from typing import Any, Callable

from django.db import connection

from arkme.kernel.errors import ArkmeError


def race(workers: list[Callable[[], Any]], *, timeout: float = 120) -> list[tuple[str, Any]]:
    """Run callables at once behind a barrier; ('ok', value), ('error', code) or ('crash', repr) each."""
    barrier = threading.Barrier(len(workers))
    outcomes: list[tuple[str, Any]] = [("crash", "did not finish")] * len(workers)

    def run(index: int, work: Callable[[], Any]) -> None:
        try:
            barrier.wait()
            outcomes[index] = ("ok", work())
        except ArkmeError as error:
            outcomes[index] = ("error", error.code)
        except Exception as exc:  # a deadlock or an integrity error lands here
            outcomes[index] = ("crash", repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, w)) for i, w in enumerate(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    return outcomes
