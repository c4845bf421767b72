"""Restricted SVG: parse without DTDs or entities, keep an allow-list, re-serialise.

Only shapes, paths, groups, definitions, gradients, clip paths and title/desc pass, with
presentation attributes whose values match strict grammars. Scripts, event attributes,
styles, foreignObject, images, use, text, animation and every href are refused, and
``url(#id)`` may point only at an element defined earlier in the document.
"""
from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass

import defusedxml.ElementTree as DET
from defusedxml import DefusedXmlException

from arkme.kernel.errors import ErrorCode
from arkme.kernel.text import size_text

from .limits import check_sides
from .rejection import ImageRejected

SVG_NS = "http://www.w3.org/2000/svg"
MAX_SVG_BYTES = 1024 * 1024
MAX_ELEMENTS = 20000
MAX_DEPTH = 48
MAX_MAGNITUDE = 1e6

ELEMENTS = {
    "svg", "g", "defs", "path", "rect", "circle", "ellipse", "line", "polyline", "polygon",
    "linearGradient", "radialGradient", "stop", "clipPath", "title", "desc",
}
TEXT_ELEMENTS = {"title", "desc"}

_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
NUMBER_RE = re.compile(rf"^{_NUMBER}$")
LENGTH_RE = re.compile(rf"^({_NUMBER})(px|%)?$")
NUMBER_TOKEN_RE = re.compile(_NUMBER)
PATH_RE = re.compile(rf"^(?:[MmLlHhVvCcSsQqTtAaZz]|{_NUMBER}|[\s,])*$")
LIST_RE = re.compile(rf"^(?:{_NUMBER}|[\s,])*$")
TRANSFORM_RE = re.compile(
    rf"^(?:\s*(?:matrix|translate|scale|rotate|skewX|skewY)\s*\((?:{_NUMBER}|[\s,])*\)\s*,?)*\s*$"
)
ID_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
URL_RE = re.compile(r"^url\(\s*#([A-Za-z_][A-Za-z0-9_.-]{0,63})\s*\)$")
HEX_RE = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$")
RGB_RE = re.compile(rf"^rgba?\(\s*{_NUMBER}%?\s*,\s*{_NUMBER}%?\s*,\s*{_NUMBER}%?\s*(?:,\s*{_NUMBER}\s*)?\)$")
ASPECT_RE = re.compile(r"^(none|x(Min|Mid|Max)Y(Min|Mid|Max))(\s+(meet|slice))?$")
NAMED_COLOURS = {
    "none", "currentcolor", "transparent", "black", "white", "red", "green", "blue", "yellow",
    "orange", "purple", "gray", "grey", "silver", "maroon", "olive", "lime", "aqua", "teal",
    "navy", "fuchsia", "pink", "brown", "gold", "cyan", "magenta", "indigo", "violet",
}


class UnsafeSvg(ImageRejected):
    def __init__(self, why: str, field: str | None = None) -> None:
        super().__init__(ErrorCode.UNSAFE_SVG, f"The SVG is not accepted: {why}.", field)


def _finite(text: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    return math.isfinite(value) and abs(value) <= MAX_MAGNITUDE


def _numbers_ok(value: str) -> bool:
    return all(_finite(token) for token in NUMBER_TOKEN_RE.findall(value))


def _number(value: str) -> bool:
    return bool(NUMBER_RE.fullmatch(value.strip())) and _finite(value)


def _length(value: str) -> bool:
    match = LENGTH_RE.fullmatch(value.strip())
    return match is not None and _finite(match.group(1))


def _length_value(value: str) -> float | None:
    match = LENGTH_RE.fullmatch(value.strip())
    return float(match.group(1)) if match else None


def _nonneg_length(value: str) -> bool:
    return _length(value) and (_length_value(value) or 0.0) >= 0


def _unit(value: str) -> bool:
    return _number(value) and 0 <= float(value) <= 1


def _offset(value: str) -> bool:
    value = value.strip()
    if value.endswith("%"):
        return _number(value[:-1]) and 0 <= float(value[:-1]) <= 100
    return _unit(value)


def _list(value: str) -> bool:
    return bool(LIST_RE.fullmatch(value)) and _numbers_ok(value)


def _path(value: str) -> bool:
    return len(value) <= 200_000 and bool(PATH_RE.fullmatch(value)) and _numbers_ok(value)


def _transform(value: str) -> bool:
    return len(value) <= 1000 and bool(TRANSFORM_RE.fullmatch(value)) and _numbers_ok(value)


def _colour(value: str) -> bool:
    value = value.strip()
    if value.lower() in NAMED_COLOURS or HEX_RE.fullmatch(value):
        return True
    return bool(RGB_RE.fullmatch(value)) and _numbers_ok(value)


def _keywords(*words: str) -> Callable[[str], bool]:
    allowed = set(words)
    return lambda value: value.strip() in allowed


def _viewbox(value: str) -> bool:
    parts = [p for p in re.split(r"[\s,]+", value.strip()) if p]
    return len(parts) == 4 and all(_number(p) for p in parts) and float(parts[2]) > 0 and float(parts[3]) > 0


# attribute -> grammar. ``paint`` and ``ref`` values are checked for url(#id) separately.
GEOMETRY = {name: _length for name in ("x", "y", "cx", "cy", "x1", "y1", "x2", "y2", "fx", "fy")}
SIZES = {name: _nonneg_length for name in ("width", "height", "r", "rx", "ry")}
ATTRIBUTES = {
    **GEOMETRY, **SIZES,
    "id": lambda v: bool(ID_RE.fullmatch(v)),
    "d": _path,
    "points": _list,
    "viewBox": _viewbox,
    "preserveAspectRatio": lambda v: bool(ASPECT_RE.fullmatch(v.strip())),
    "version": lambda v: v.strip() in ("1.0", "1.1", "2.0"),
    "transform": _transform,
    "gradientTransform": _transform,
    "opacity": _unit, "fill-opacity": _unit, "stroke-opacity": _unit, "stop-opacity": _unit,
    "stroke-width": _nonneg_length, "stroke-miterlimit": _number, "stroke-dashoffset": _length,
    "stroke-dasharray": lambda v: v.strip() == "none" or _list(v),
    "stroke-linecap": _keywords("butt", "round", "square"),
    "stroke-linejoin": _keywords("miter", "round", "bevel"),
    "fill-rule": _keywords("nonzero", "evenodd"),
    "clip-rule": _keywords("nonzero", "evenodd"),
    "gradientUnits": _keywords("userSpaceOnUse", "objectBoundingBox"),
    "clipPathUnits": _keywords("userSpaceOnUse", "objectBoundingBox"),
    "spreadMethod": _keywords("pad", "reflect", "repeat"),
    "offset": _offset,
    "stop-color": _colour,
    "color": _colour,
    "visibility": _keywords("visible", "hidden"),
    "display": _keywords("inline", "none"),
}
PAINT = {"fill", "stroke"}
REFERENCE = {"clip-path"}


@dataclass(frozen=True)
class SafeSvg:
    data: bytes
    width: int
    height: int


def _output_size(root: ET.Element, field: str | None) -> tuple[int, int]:
    box = [float(p) for p in re.split(r"[\s,]+", (root.get("viewBox") or "").strip()) if p]
    width_attr, height_attr = root.get("width"), root.get("height")

    def absolute(value: str | None) -> float | None:
        if value is None or value.strip().endswith("%"):
            return None
        return _length_value(value)

    given_w, given_h = absolute(width_attr), absolute(height_attr)
    if given_w is None and given_h is None:
        width, height = box[2], box[3]
    elif given_w is None:
        assert given_h is not None  # noqa: S101 - the branch above took the case of neither
        width, height = given_h * box[2] / box[3], given_h
    elif given_h is None:
        width, height = given_w, given_w * box[3] / box[2]
    else:
        width, height = given_w, given_h
    out_w, out_h = round(width), round(height)
    check_sides(out_w, out_h, field)
    return out_w, out_h


def sanitise_svg(data: bytes, field: str | None = None) -> SafeSvg:
    """Check an SVG against the allow-list and return a clean re-serialisation to render."""
    if len(data) > MAX_SVG_BYTES:
        raise ImageRejected(ErrorCode.IMAGE_TOO_LARGE, f"An SVG may have at most {size_text(MAX_SVG_BYTES)}.", field)
    try:
        root = DET.fromstring(data, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise UnsafeSvg("DTDs, entities and external references are not allowed", field) from exc
    except (ET.ParseError, ValueError) as exc:
        raise ImageRejected(ErrorCode.INVALID_IMAGE, "The SVG could not be parsed.", field) from exc

    defined: set[str] = set()
    count = 0

    def visit(element: ET.Element, depth: int) -> None:
        nonlocal count
        count += 1
        if count > MAX_ELEMENTS or depth > MAX_DEPTH:
            raise UnsafeSvg("too many or too deeply nested elements", field)
        if not isinstance(element.tag, str) or not element.tag.startswith("{" + SVG_NS + "}"):
            raise UnsafeSvg("only SVG elements are allowed", field)
        name = element.tag[len(SVG_NS) + 2:]
        if name not in ELEMENTS:
            raise UnsafeSvg("an element is not on the allow-list", field)
        if name not in TEXT_ELEMENTS and (element.text or "").strip():
            raise UnsafeSvg("text content is not allowed", field)
        for attribute, value in element.attrib.items():
            if attribute.startswith("{"):
                raise UnsafeSvg("namespaced attributes (such as href) are not allowed", field)
            if attribute in PAINT or attribute in REFERENCE:
                match = URL_RE.fullmatch(value.strip())
                if match:
                    if match.group(1) not in defined:
                        raise UnsafeSvg("url(#id) must name an earlier definition", field)
                    continue
                if attribute in REFERENCE or not _colour(value):
                    raise UnsafeSvg("an attribute value is not allowed", field)
                continue
            grammar = ATTRIBUTES.get(attribute)
            if grammar is None:
                raise UnsafeSvg("an attribute is not on the allow-list", field)
            if not grammar(value):
                raise UnsafeSvg("an attribute value is not allowed", field)
        identifier = element.get("id")
        if identifier:
            defined.add(identifier)
        for child in element:
            if (child.tail or "").strip():
                raise UnsafeSvg("text content is not allowed", field)
            visit(child, depth + 1)

    visit(root, 0)
    if root.tag != f"{{{SVG_NS}}}svg":
        raise UnsafeSvg("the root element must be svg", field)
    if not root.get("viewBox"):
        raise UnsafeSvg("a viewBox is required", field)
    width, height = _output_size(root, field)
    ET.register_namespace("", SVG_NS)
    clean = ET.tostring(root, encoding="utf-8", xml_declaration=False)
    return SafeSvg(data=clean, width=width, height=height)
