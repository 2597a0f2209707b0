"""Small real PDFs for the tests, written byte by byte (one Helvetica text block per page)."""

from __future__ import annotations

from pathlib import Path


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(path: Path, pages: list[list[str]]) -> Path:
    """A PDF whose page i holds the lines `pages[i]` (an empty list: a page with no text)."""
    streams = []
    for lines in pages:
        ops = ["BT /F1 11 Tf 14 TL 72 740 Td"] + [f"({_escape(line)}) Tj T*" for line in lines] + ["ET"]
        streams.append(("\n".join(ops).encode("latin-1") if lines else b"", b""))
    return pdf_of_streams(path, streams)


def pdf_of_streams(path: Path, contents: list[tuple[bytes, bytes]]) -> Path:
    """A PDF whose page i has the content stream `contents[i]` = (stream bytes, extra keys of
    the stream's dictionary, e.g. `/Filter /FlateDecode `)."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]  # 2: pages, below
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")  # 3
    kids = []
    for data, keys in contents:
        objects.append(b"<< /Length %d %s>>\nstream\n" % (len(data), keys) + data + b"\nendstream")
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R"
                       b" /Resources << /Font << /F1 3 0 R >> >> >>" % len(objects))
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def encrypt_pdf(source: Path, target: Path, password: str = "s3cret") -> Path:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(str(source)))
    writer.encrypt(password)
    with target.open("wb") as f:
        writer.write(f)
    return target
