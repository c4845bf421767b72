"""JSON Schemas (draft 2020-12) of what tools return: the registry's own types, shared by the
tool modules, the OpenAPI schema and (as ``outputSchema``) the MCP surface.

Each schema is closed (``additionalProperties: false``), so a result that grows a field the
contract does not name fails the suite's check of every result the tests see.
"""
from __future__ import annotations

from typing import Any

Schema = dict[str, Any]


def closed(properties: dict[str, Schema], *, optional: tuple[str, ...] = ()) -> Schema:
    return {"type": "object", "properties": properties,
            "required": [name for name in properties if name not in optional], "additionalProperties": False}


STRING: Schema = {"type": "string"}
COUNT: Schema = {"type": "integer", "minimum": 0}

ACCOUNT: Schema = closed({"display_name": STRING, "arkme_id": STRING, "arkme_id_changeable": {"type": "boolean"}})

GALLERY_ITEM: Schema = closed({
    "item": STRING, "position": {"type": "integer", "minimum": 1},
    "width": COUNT, "height": COUNT, "format": {"enum": ["png", "jpeg", "webp", "gif"]}, "bytes": COUNT,
})

GALLERY: Schema = closed({
    "extension": STRING,
    "revision": COUNT,
    "capacity": COUNT,
    "items": {"type": "array", "items": GALLERY_ITEM},
})

GALLERY_RESULT: Schema = closed({"gallery": GALLERY})

GROUP: Schema = closed({"name": STRING, "join_policy": {"enum": ["open", "approval"]}, "member_count": COUNT})

# The OpenAPI schema names these once, as components, and refers to them wherever a result
# holds one; the MCP outputSchema keeps them inline (it must stand alone).
SHARED: dict[str, Schema] = {
    "GalleryItem": GALLERY_ITEM, "Gallery": GALLERY, "GalleryResult": GALLERY_RESULT, "Account": ACCOUNT,
    "GroupSummary": GROUP,
}
