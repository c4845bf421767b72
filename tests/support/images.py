"""Image bytes for tests, made on the fly."""
from __future__ import annotations

import io

from PIL import Image, ImageCms, PngImagePlugin


def png(size=(400, 400), colour=(200, 30, 30), **save) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "PNG", **save)
    return out.getvalue()


def image(fmt: str, size=(400, 400), colour=(30, 120, 200), **save) -> bytes:
    out = io.BytesIO()
    mode = "P" if fmt == "GIF" else "RGB"
    Image.new(mode if mode != "P" else "RGB", size, colour).convert(mode).save(out, fmt, **save)
    return out.getvalue()


def jpeg_with_gps_and_orientation(size=(600, 400), orientation=6) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation  # Orientation: rotate 90° clockwise to display
    exif[0x010F] = "SecretCam"  # Make
    gps = {1: "N", 2: (51.0, 30.0, 0.0), 3: "W", 4: (0.0, 7.0, 0.0)}
    exif[0x8825] = gps
    out = io.BytesIO()
    Image.new("RGB", size, (10, 200, 10)).save(out, "JPEG", exif=exif.tobytes())
    return out.getvalue()


def png_with_text_and_icc(size=(400, 400)) -> bytes:
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "secret location 51.5N")
    info.add_itxt("XML:com.adobe.xmp", "<x:xmpmeta>secret</x:xmpmeta>")
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    out = io.BytesIO()
    Image.new("RGB", size, (120, 10, 10)).save(out, "PNG", pnginfo=info, icc_profile=icc)
    return out.getvalue()


def animated_gif(size=(400, 400)) -> bytes:
    frames = [Image.new("RGB", size, colour) for colour in ((255, 0, 0), (0, 255, 0), (0, 0, 255))]
    out = io.BytesIO()
    frames[0].save(out, "GIF", save_all=True, append_images=frames[1:], loop=0)
    return out.getvalue()


def svg(body: str = '<circle cx="200" cy="200" r="100" fill="red"/>', attrs: str = 'viewBox="0 0 400 400"') -> bytes:
    return f'<svg xmlns="http://www.w3.org/2000/svg" {attrs}>{body}</svg>'.encode()


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """(type, payload) of every chunk of a PNG, in order."""
    chunks, position = [], 8
    while position < len(data):
        length = int.from_bytes(data[position:position + 4], "big")
        chunks.append((data[position + 4:position + 8], data[position + 8:position + 8 + length]))
        position += 12 + length
    return chunks


def png_chunk(kind: bytes, payload: bytes) -> bytes:
    import zlib

    return len(payload).to_bytes(4, "big") + kind + payload + zlib.crc32(kind + payload).to_bytes(4, "big")


def png_with_chunk(data: bytes, chunk: bytes) -> bytes:
    """The PNG with one more chunk placed right after its header."""
    header_end = 8 + 12 + 13
    return data[:header_end] + chunk + data[header_end:]


def png_with_metadata(size=(400, 400)) -> bytes:
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "secret location 51.5N")
    info.add_text("Software", "SecretCam", zip=True)
    out = io.BytesIO()
    Image.new("RGBA", size, (120, 10, 10, 200)).save(out, "PNG", pnginfo=info, dpi=(300, 300))
    return out.getvalue() + b"trailing secret after the end"


def png_with_exif_orientation(size=(600, 400), orientation=6) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    out = io.BytesIO()
    Image.new("RGB", size, (10, 200, 10)).save(out, "PNG", exif=exif.tobytes())
    return out.getvalue()


def png_with_xmp_orientation(size=(600, 400), orientation=6) -> bytes:
    info = PngImagePlugin.PngInfo()
    info.add_itxt("XML:com.adobe.xmp", f'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf='
                  f'"http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:tiff='
                  f'"http://ns.adobe.com/tiff/1.0/" tiff:Orientation="{orientation}"/></rdf:RDF></x:xmpmeta>')
    out = io.BytesIO()
    Image.new("RGB", size, (10, 200, 10)).save(out, "PNG", pnginfo=info)
    return out.getvalue()


# Restricted SVGs the sanitiser keeps, and hostile ones it refuses, by what each tries.
GOOD_SVG = [
    svg(),
    svg('<defs><linearGradient id="g"><stop offset="0" stop-color="#fff"/><stop offset="100%" stop-color="red"/>'
        '</linearGradient></defs><rect x="0" y="0" width="400" height="400" fill="url(#g)"/>'),
    svg('<defs><clipPath id="c"><circle cx="200" cy="200" r="150"/></clipPath></defs>'
        '<g clip-path="url(#c)" transform="translate(10,10) rotate(15)"><path d="M0 0 L400 400 Z" stroke="blue" '
        'stroke-width="4" fill="none"/></g>'),
    svg('<title>Logo</title><desc>a logo</desc><polygon points="0,0 400,0 200,400" fill="rgb(10, 20, 30)"/>'),
    svg('<rect width="10" height="10"/>', 'viewBox="0 0 40 40" width="800" height="800"'),
]

BAD_SVG = {
    "script": svg('<script>alert(1)</script>'),
    "onload": svg('', 'viewBox="0 0 400 400" onload="alert(1)"'),
    "style attribute": svg('<rect width="10" height="10" style="fill:red"/>'),
    "style element": svg('<style>rect{fill:red}</style>'),
    "foreignObject": svg('<foreignObject><div xmlns="http://www.w3.org/1999/xhtml">x</div></foreignObject>'),
    "image": svg('<image href="file:///etc/passwd" width="10" height="10"/>'),
    "xlink href": b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
                  b'viewBox="0 0 400 400"><linearGradient id="a"/><linearGradient id="b" xlink:href="#a"/></svg>',
    "use": svg('<defs><circle id="c" r="5"/></defs><use href="#c"/>'),
    "text": svg('<text x="10" y="10">hi</text>'),
    "animation": svg('<circle r="5"><animate attributeName="r" to="10"/></circle>'),
    "stray text": svg('hello'),
    "forward url": svg('<rect width="10" height="10" fill="url(#later)"/><linearGradient id="later"/>'),
    "external url": svg('<rect width="10" height="10" fill="url(http://evil/x)"/>'),
    "huge number": svg('<circle cx="200" cy="200" r="1e30" fill="red"/>'),
    "infinite": svg('<circle cx="200" cy="200" r="inf"/>'),
    "nan in path": svg('<path d="M 0 0 L NaN 5"/>'),
    "bad transform": svg('<g transform="expression(alert(1))"/>'),
    "bad colour": svg('<rect width="1" height="1" fill="javascript:alert(1)"/>'),
    "no viewBox": svg('', 'width="400" height="400"'),
    "not svg root": b'<html xmlns="http://www.w3.org/2000/svg"/>',
    "foreign namespace": b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 400 400">'
                         b'<x:a xmlns:x="http://example.com/x"/></svg>',
    "dtd": b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaa">]>'
           b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 400 400"><title>&a;</title></svg>',
    "external entity": b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                       b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 400 400"><title>&x;</title></svg>',
    "too small": svg('', 'viewBox="0 0 100 100"'),
    "too big": svg('', 'viewBox="0 0 5000 400"'),
    "deep nesting": svg("<g>" * 60 + "</g>" * 60),
}


def dashed_rings(count: int = 400) -> bytes:
    """Valid and small, but seconds of work for cairo."""
    return svg("".join(f'<circle cx="500" cy="500" r="{100 + i}" fill="none" stroke="red" stroke-width="1" '
                       f'stroke-dasharray="0.02 0.02"/>' for i in range(count)), 'viewBox="0 0 1000 1000"')


def p3_profile() -> bytes:
    """A Display P3 ICC profile (libvips' own): a profile whose transform to sRGB changes colours."""
    from galleries.ingest.vips import libvips

    image = libvips().Image.black(8, 8, bands=3).copy(interpretation="srgb").icc_transform("p3")
    return bytes(image.get("icc-profile-data"))
