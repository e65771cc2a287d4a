"""``resize_image``: scale an uploaded PGM/PPM image to a width (nearest neighbour).

Uploads live in ``<data_dir>/uploads/<image_id>``; results go to
``<data_dir>/resized/<width>/<image_id>``. A file that is not a binary
PGM (P5) or PPM (P6) raises :class:`BadImage`, which the sheet lists as fatal.
"""

from __future__ import annotations

from jobdef.examples import data_dir
from jobdef.examples.errors import BadImage
from jobdef.runtime.context import Context


def parse_netpbm(data: bytes) -> tuple[bytes, int, int, int, bytes]:
    """(magic, width, height, channels, pixels) of a binary PGM/PPM with maxval 255."""
    fields: list[bytes] = []
    pos = 0
    while len(fields) < 4:
        while pos < len(data) and data[pos : pos + 1].isspace():
            pos += 1
        if data[pos : pos + 1] == b"#":
            pos = data.find(b"\n", pos) + 1 or len(data)
            continue
        end = pos
        while end < len(data) and not data[end : end + 1].isspace():
            end += 1
        if end == pos:
            raise BadImage("the file ends inside its header")
        fields.append(data[pos:end])
        pos = end
    magic = fields[0]
    if magic not in (b"P5", b"P6"):
        raise BadImage(f"not a binary PGM/PPM image (starts with {data[:8]!r})")
    try:
        width, height, maxval = (int(f) for f in fields[1:])
    except ValueError:
        raise BadImage("the image header has a size that is not a number") from None
    if maxval != 255 or width < 1 or height < 1:
        raise BadImage(f"unsupported image: {width}x{height}, maxval {maxval}")
    channels = 1 if magic == b"P5" else 3
    pixels = data[pos + 1 :]
    if len(pixels) < width * height * channels:
        raise BadImage("the image data is truncated")
    return magic, width, height, channels, pixels


def resize_image(ctx: Context, image_id: str, width: int) -> None:
    source = data_dir() / "uploads" / image_id
    if not source.is_file():
        raise BadImage(f"no upload named {image_id!r}")
    magic, w, h, channels, pixels = parse_netpbm(source.read_bytes())
    height = max(1, round(h * width / w))
    out = bytearray()
    for y in range(height):
        row = (y * h // height) * w
        for x in range(width):
            start = (row + x * w // width) * channels
            out += pixels[start : start + channels]
    target = data_dir() / "resized" / str(width)
    target.mkdir(parents=True, exist_ok=True)
    (target / image_id).write_bytes(b"%s\n%d %d\n255\n" % (magic, width, height) + bytes(out))
