"""The DSH API's view base: DRF's ``APIView``, with each call's objects freed when it ends."""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.template.response import SimpleTemplateResponse
from rest_framework.request import Request
from rest_framework.views import APIView


class DshApiView(APIView):
    """DRF and Django tie a view to what it handles in reference cycles: the DRF request's
    parser context names the request itself and the view, the response's renderer context
    names the response itself and the view, the view names the request and the response,
    and a view that serves GET names itself through its ``head`` alias. So everything a call
    built (the DRF request, the session's model instances, the whole result) outlived the
    call until the cyclic garbage collector came for it, and it came every few calls: on
    ``arkme_context`` its collections cost about a sixteenth of the call's CPU
    (docs/PERFORMANCE.md).

    Once the response is rendered (here, where Django would render it next: no middleware
    of this project handles template responses) the view has done its work, so the two
    contexts and the view's attributes are dropped, every cycle with them, and reference
    counting frees the call's objects as soon as the response is sent.
    """

    def rendered(self, request: Request, body: Any, status: int = 200) -> HttpResponse:
        """``Response(body, status=status)`` rendered at once: the negotiated renderer (content
        negotiation ran in ``initial``) with the negotiated media type, so ``indent`` and the
        renderer's JSON rules hold, in a plain response. A ``Response`` is a template response
        whose rendering DRF arranges after the view returns; on a call whose body is its
        result that arrangement cost about 10 µs, more than rendering a small body."""
        renderer, media_type = request.accepted_renderer, request.accepted_media_type
        content = renderer.render(body, media_type, self.get_renderer_context())
        content_type = renderer.media_type
        if renderer.charset is not None:
            content_type = f"{content_type}; charset={renderer.charset}"
            if isinstance(content, str):
                content = content.encode(renderer.charset)
        return HttpResponse(content, status=status, content_type=content_type)

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response: HttpResponseBase = super().dispatch(request, *args, **kwargs)
        if isinstance(response, SimpleTemplateResponse):
            response.render()
            response.renderer_context = None  # type: ignore[attr-defined]
        drf_request = getattr(self, "request", None)
        if isinstance(drf_request, Request):
            drf_request.parser_context = {}  # it named the request itself, and the view
        vars(self).clear()
        return response
