"""The one point where the MCP surface reaches inside django-mcpz (``SessionServer._result``,
see its docstring). These fail loudly when an upgrade of the library moves that point, before
a client sees a tool error without its envelope or a list cached for too long."""
from __future__ import annotations

import inspect

from django_mcpz.server import MCPServer

from toolregistry.mcp.server import SessionServer


def test_results_still_leave_through_result_with_its_signature():
    parameters = list(inspect.signature(MCPServer._result).parameters.values())
    assert [p.name for p in parameters] == ["self", "request", "request_id", "result", "result_type"]
    assert parameters[-1].kind is inspect.Parameter.KEYWORD_ONLY and parameters[-1].default == "complete"


def test_every_answer_the_server_overrides_still_goes_through_result():
    """Tool errors (the envelope is added there), tool results and lists (``ttlMs``)."""
    for method in (MCPServer._tool_error, MCPServer._run_tool, MCPServer._tools_list, MCPServer._discover):
        assert "self._result(" in inspect.getsource(method), method.__qualname__


def test_a_question_still_leaves_through_result_as_one_form_request_under_its_key():
    """The override turns the approval page's question into URL mode by the key of
    ``inputRequests`` and the ``message`` of its ``params``, for ``result_type="input_required"``."""
    source = inspect.getsource(MCPServer._input_required)
    assert "self._result(" in source and 'result_type="input_required"' in source
    for part in ('"inputRequests"', "required.key", '"params"', '"mode": "form"', '"message"', '"requestState"'):
        assert part in source, part


def test_the_library_still_reports_a_tool_error_as_text_only():
    """The override adds ``structuredContent`` only where the library left it out."""
    source = inspect.getsource(MCPServer._tool_error)
    assert '"isError": True' in source and "structuredContent" not in source


def test_only_result_is_overridden():
    private = {name for name in vars(SessionServer) if name.startswith("_") and not name.startswith("__")}
    assert private == {"_result"}
