"""Each file kind a knowledge base reads, and how its text is cut into passages (engine.tools.knowledge)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from engine.tools.knowledge.chunks import chunk_sections, split_text
from engine.tools.knowledge.documents import DocumentError, Section, read_document


def tiny_pdf(pages: list[str]) -> bytes:
    """A valid PDF with one line of Helvetica text per page, its cross-reference table computed."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", ""]
    kids = []
    for number, text in enumerate(pages):
        page, content = 4 + 2 * number, 5 + 2 * number
        kids.append(f"{page} 0 R")
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET"
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content} 0 R "
                       "/Resources << /Font << /F1 3 0 R >> >> >>")
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(pages)} >>"
    objects.insert(2, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def test_markdown_front_matter_is_metadata_and_headings_start_sections(tmp_path: Path) -> None:
    path = tmp_path / "refunds.md"
    path.write_text("---\ntitle: Refunds\ntags: [money, returns]\n---\n# Refunds\n\n## Time limit\n\n30 days.\n\n"
                    "```\n# not a heading\n```\n\n## Damage\n\nSend a photo.\n", encoding="utf-8")
    sections = read_document(path)
    assert [s.line for s in sections] == [7, 15]
    assert sections[0].text.startswith("## Time limit") and "# not a heading" in sections[0].text
    assert sections[0].metadata == {"title": "Refunds", "tags": ["money", "returns"], "headings": "Refunds > Time limit"}
    assert sections[1].metadata["headings"] == "Refunds > Damage"


def test_html_keeps_visible_text_only(tmp_path: Path) -> None:
    path = tmp_path / "about.html"
    path.write_text("<html><head><title>About</title><style>p {color: red}</style></head>\n<body>\n"
                    "<script>var secret = 1;</script>\n<h1>About us</h1>\n<p>A small &amp; friendly shop.</p>\n"
                    "<h2>Hours</h2><p>9 to 5.</p></body></html>", encoding="utf-8")
    sections = read_document(path)
    assert [s.text for s in sections] == ["About us\n\nA small & friendly shop.", "Hours\n\n9 to 5."]
    assert sections[1].metadata == {"title": "About", "headings": "About us > Hours"}
    assert sections[0].line == 4
    assert all("secret" not in s.text and "color" not in s.text for s in sections)


def test_pdf_text_is_read_page_by_page(tmp_path: Path) -> None:
    path = tmp_path / "terms.pdf"
    path.write_bytes(tiny_pdf(["Returns within thirty days.", "Warranty of two years."]))
    sections = read_document(path)
    assert [(s.page, s.text) for s in sections] == [(1, "Returns within thirty days."), (2, "Warranty of two years.")]
    chunks = chunk_sections(sections, "terms.pdf", 800, 120)
    assert [(c.page, c.line) for c in chunks] == [(1, None), (2, None)]


def test_a_broken_pdf_is_a_document_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.4\nnot really")
    with pytest.raises(DocumentError):
        read_document(path)


def test_csv_and_jsonl_rows_are_passages_with_their_columns_as_metadata(tmp_path: Path) -> None:
    (tmp_path / "products.csv").write_text("sku,name,price\nA1,Blue mug,12.50\nB2,Teapot,30\n", encoding="utf-8")
    rows = read_document(tmp_path / "products.csv")
    assert [(s.line, s.text, s.whole) for s in rows] == [(2, "sku: A1\nname: Blue mug\nprice: 12.50", True),
                                                          (3, "sku: B2\nname: Teapot\nprice: 30", True)]
    assert rows[0].metadata == {"sku": "A1", "name": "Blue mug", "price": "12.50"}
    (tmp_path / "faq.jsonl").write_text('{"text": "We ship to the EU.", "lang": "en"}\n\n{"q": "PO boxes?"}\n',
                                        encoding="utf-8")
    faq = read_document(tmp_path / "faq.jsonl")
    assert [(s.line, s.text, s.metadata) for s in faq] == [(1, "We ship to the EU.", {"lang": "en"}),
                                                           (3, "q: PO boxes?", {"q": "PO boxes?"})]
    (tmp_path / "bad.jsonl").write_text('{"text": 1}\nnot json\n', encoding="utf-8")
    with pytest.raises(DocumentError, match="line 2"):
        read_document(tmp_path / "bad.jsonl")


def test_plain_text_keeps_its_lines(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("First paragraph.\n\nSecond paragraph, on line three.\n", encoding="utf-8")
    assert read_document(path) == [Section("First paragraph.\n\nSecond paragraph, on line three.\n", line=1)]


def test_windows_break_at_paragraphs_then_sentences_and_overlap() -> None:
    paragraph = "word " * 30  # 150 characters
    text = f"{paragraph.strip()}.\n\n{paragraph.strip()}.\n\n{paragraph.strip()}."
    windows = split_text(text, 200, 40)
    assert all(len(piece) <= 200 for _, piece in windows)
    assert windows[0][1] == f"{paragraph.strip()}."  # cut at the paragraph break, not mid-word
    assert windows[1][0] < len(paragraph) + 2  # the next window starts inside the first: the overlap
    assert text[windows[1][0] - 1] in " \n"  # ... at the start of a word

    sentences = "This is one sentence. " * 20
    for offset, piece in split_text(sentences, 100, 20):
        assert piece.endswith(".") or offset + len(piece) >= len(sentences.strip())
        assert len(piece) <= 100


def test_overlap_repeats_the_end_of_a_window_at_the_start_of_the_next() -> None:
    text = " ".join(f"w{n:03d}" for n in range(200))
    windows = split_text(text, 100, 30)
    for (_, first), (_, second) in itertools.pairwise(windows):
        assert second.split()[0] in first.split()  # the next window begins with words the last one ended with
    joined = {word for _, piece in windows for word in piece.split()}
    assert joined == set(text.split())  # nothing lost


def test_chunks_keep_source_line_and_metadata() -> None:
    text = "\n".join(f"Line {n} says something about returns." for n in range(1, 41))
    chunks = chunk_sections([Section(text, line=10, metadata={"lang": "en"})], "a.txt", 300, 50)
    assert len(chunks) > 3
    assert chunks[0].line == 10
    for chunk in chunks:
        number = int(chunk.text.split()[1])
        assert chunk.line == 9 + number and chunk.source == "a.txt" and chunk.metadata == {"lang": "en"}
    row = chunk_sections([Section("x" * 900, line=2, whole=True)], "rows.csv", 300, 50)
    assert len(row) == 1  # a row is never cut
