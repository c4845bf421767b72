"""What a user would pick instead of the product's image pipeline: a bare libvips pipeline
(``pyvips`` with the ``pyvips-binary`` wheel) on the same image mix.

Per raster kind, one prepare's worth of image work on one image: the product's
``process_image`` (sniff, bounds, decode, the stream check or turn, colour-convert and
encode, sha256) against libvips doing what the product must do for the kind: decode,
autorotate, convert to sRGB (a CMYK image from its profile, or libvips' own CMYK profile
without one), a metadata-free encode in the same format (a GIF as a GIF) and a sha256,
streaming (``access="sequential"``) wherever the image needs no turn. The kinds include those
Pillow decoded (palettes, 16-bit colour, CMYK) and decodes (GIF). libvips is set as Pillow is,
so that sizes compare: PNG at zlib level 6 with adaptive filters, JPEG at quality 90 with
4:2:0 chroma, WebP at 90. The figure is the worst kind's ratio (the product's time over
libvips'); each kind shows both sizes.
"""
from __future__ import annotations

import hashlib

from .common import Result, paired_medians
from .images import KINDS, PILLOW_PATH_KINDS

GOAL = 1.1


def vips_pipeline(data: bytes) -> bytes:
    import pyvips

    # Streaming, as libvips' users run it, wherever the input allows: an upright image (and a
    # GIF, which has no orientation) goes from decoder to encoder a strip at a time, never
    # whole in memory. Only a turn reads out of order, which a sequential load refuses; that
    # image is loaded again for random access (the header read costs microseconds).
    image = pyvips.Image.new_from_buffer(data, "", access="sequential")
    if image.get_typeof("orientation") and image.get("orientation") not in (0, 1):
        image = pyvips.Image.new_from_buffer(data, "")
    loader = image.get("vips-loader")
    if image.format == "ushort":  # the product stores 8 bits a sample: 16-bit colour to 8 as it decodes
        image = image.colourspace("srgb")
    image = image.autorot()
    if image.get_typeof("icc-profile-data") or image.interpretation == "cmyk":
        # As Pillow's default intent; CMYK without a profile from libvips' own CMYK profile.
        image = image.icc_transform("srgb", embedded=True, intent="perceptual")
    if loader.startswith("jpeg"):
        out = image.jpegsave_buffer(Q=90, subsample_mode="on", keep="none")  # 4:2:0, as Pillow
    elif loader.startswith("webp"):
        out = image.webpsave_buffer(Q=90, keep="none")
    elif loader.startswith("gif"):
        out = image.gifsave_buffer(keep="none")
    else:
        out = image.pngsave_buffer(compression=6, filter="all", keep="none")  # adaptive filters, as Pillow
    hashlib.sha256(out).hexdigest()
    return out


def run(*, rounds: int = 9) -> Result:
    try:
        import pyvips  # noqa: F401
    except ImportError:
        return Result("libvips_peer", None, "", "a bare libvips pipeline", f"≤ {GOAL}×",
                      skipped="needs pyvips and pyvips-binary (requirements-bench.txt)")
    from galleries.ingest.process_image import process_image

    detail: dict[str, str] = {}
    worst = 0.0
    for kind in [*KINDS, *PILLOW_PATH_KINDS]:
        if kind.path == "svg":
            continue
        data = kind.make(0)
        ours_out = process_image(data).data
        peer_out = vips_pipeline(data)
        ours, peer = paired_medians(lambda d=data: process_image(d), lambda d=data: vips_pipeline(d),
                                    rounds=rounds, warmup=1)
        ratio = ours / peer
        worst = max(worst, ratio)
        detail[kind.name] = (f"{ratio:.2f}× ({ours * 1000:.0f} against {peer * 1000:.0f} ms; "
                             f"{len(ours_out) / 2 ** 20:.2f} against {len(peer_out) / 2 ** 20:.2f} MiB)")
    return Result("libvips_peer", round(worst, 3), "× bare libvips, worst kind",
                  "pyvips: decode, autorotate, sRGB, metadata-free encode, sha256", f"≤ {GOAL}×",
                  worst <= GOAL, detail)
