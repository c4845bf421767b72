"""Routes ``/bench/`` requests to the floors' own URLconf (``bench.floor_urls``); every other
request resolves through the product's, as in production. Both sides pay the same check."""
from __future__ import annotations

from typing import Callable

from django.http import HttpRequest, HttpResponseBase

FLOORS = "bench.floor_urls"


def floors(get_response: Callable[[HttpRequest], HttpResponseBase]) -> Callable[[HttpRequest], HttpResponseBase]:
    def middleware(request: HttpRequest) -> HttpResponseBase:
        if request.path_info.startswith("/bench/"):
            request.urlconf = FLOORS
        return get_response(request)

    return middleware
