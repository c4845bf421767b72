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
