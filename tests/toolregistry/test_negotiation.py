"""The API's content negotiation answers exactly what DRF's does, for every Accept header."""
from __future__ import annotations

import pytest
from django.http import Http404
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer, StaticHTMLRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from tests.support.errors import assert_error
from toolregistry.api.negotiation import ContentNegotiation
from toolregistry.api.renderers import JSONRenderer

ACCEPTS = [None, "", "*/*", "application/json", "application/json; indent=2", "application/*", "text/html",
           "text/html, application/json;q=0.5", "image/png", "application/json, */*"]
RENDERER_SETS = [[JSONRenderer], [JSONRenderer, BrowsableAPIRenderer], [StaticHTMLRenderer, JSONRenderer]]


def _choice(negotiation, request, renderers):
    try:
        renderer, media_type = negotiation.select_renderer(request, [r() for r in renderers])
    except NotAcceptable:
        return "406"
    except Http404:  # a ?format= that no renderer has
        return "404"
    return type(renderer), media_type


@pytest.mark.parametrize("renderers", RENDERER_SETS, ids=lambda rs: "+".join(r.__name__ for r in rs))
@pytest.mark.parametrize("query", ["", "?format=json", "?format=api", "?x=1"])
@pytest.mark.parametrize("accept", ACCEPTS)
def test_the_same_renderer_and_media_type_as_drfs_negotiation(accept, query, renderers):
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    request = Request(APIRequestFactory().get(f"/dsh/v1/catalog{query}", **headers))
    assert _choice(ContentNegotiation(), request, renderers) == _choice(DefaultContentNegotiation(), request,
                                                                         renderers)


def test_the_api_uses_it(client):
    response = client.get("/dsh/v1/catalog", HTTP_ACCEPT="text/html")
    assert_error(response, 406, "not_acceptable")
