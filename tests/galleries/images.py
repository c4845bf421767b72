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
