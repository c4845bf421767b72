"""The DSH API's view base: DRF's ``APIView``, with each call's objects freed when it ends, and
its server span when traces are recorded."""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.template.response import SimpleTemplateResponse
from opentelemetry.trace import SpanKind, StatusCode
from rest_framework.request import Request
from rest_framework.views import APIView

from arkme.kernel.tracing import caller_context, tracing_on
from arkme.kernel.tracing import span as traced_span


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
        response: HttpResponseBase
        if tracing_on():
            response = self._traced_dispatch(request, *args, **kwargs)
        else:
            response = super().dispatch(request, *args, **kwargs)
        if isinstance(response, SimpleTemplateResponse):
            response.render()
            response.renderer_context = None  # type: ignore[attr-defined]
        drf_request = getattr(self, "request", None)
        if isinstance(drf_request, Request):
            drf_request.parser_context = {}  # it named the request itself, and the view
        vars(self).clear()
        return response

    def _traced_dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        """The call as HTTP's server span, ``{method} {route}``, continuing the caller's trace
        when the request carries a W3C ``traceparent``."""
        match = request.resolver_match
        route = f"/{match.route}" if match is not None and match.route else ""
        method = str(request.method)
        attributes = {"http.request.method": method, "http.route": route, "url.scheme": request.scheme or "http"}
        parent = caller_context(request.headers.get("traceparent"), request.headers.get("tracestate"))
        with traced_span(f"{method} {route}".strip(), attributes, SpanKind.SERVER, parent) as span:
            response: HttpResponseBase = super().dispatch(request, *args, **kwargs)
            span.set_attribute("http.response.status_code", response.status_code)
            if response.status_code >= 500:
                span.set_status(StatusCode.ERROR, str(response.status_code))
            return response
