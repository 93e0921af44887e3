"""One word per concept in the documentation: the retired words the glossary lists
(docs/concepts.md, "Retired words") appear nowhere else in the README and docs/, and the
glossary's terms define the words the README leans on."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONCEPTS = REPO / "docs" / "concepts.md"


def glossary_table(heading: str) -> list[tuple[str, str]]:
    """The two first cells of each row of the table under ``### heading`` in concepts.md."""
    text = CONCEPTS.read_text(encoding="utf-8")
    section = text.split(f"### {heading}\n", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]  # the header
    return [tuple(cell.strip() for cell in row.strip("|").split("|")[:2]) for row in rows]


def pages() -> list[Path]:
    """The README, CHANGELOG and every page under docs/ (runbooks too)."""
    docs = sorted((REPO / "docs").rglob("*.md"))
    return [REPO / "README.md", REPO / "CHANGELOG.md", *docs]


def test_the_glossary_lists_retired_words_each_with_its_term():
    retired = glossary_table("Retired words")
    terms = {term for term, _ in glossary_table("Terms")}
    assert len(retired) >= 6
    for word, say in retired:
        assert any(say == t or say in t.split(", ") for t in terms), (word, say)


def test_no_page_uses_a_retired_word():
    retired = [word for word, _ in glossary_table("Retired words")]
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, retired)) + r")s?\b", re.IGNORECASE)
    found = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        if page == CONCEPTS:  # the glossary names them once, to retire them
            text = text.split("### Retired words", 1)[0] + text.split("### Names in the code", 1)[1]
        for number, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                found.append(f"{page.relative_to(REPO)}:{number}: {line.strip()[:80]}")
    assert not found, "retired words (docs/concepts.md says what to write):\n" + "\n".join(found)


def test_the_readme_words_are_glossary_terms():
    """The terms the README's first screen leans on are defined in the glossary."""
    terms = {t for term, _ in glossary_table("Terms") for t in term.split(", ")}
    for word in (
        "stream",
        "key group",
        "worker",
        "routing table",
        "version",
        "LATEST",
        "hot key",
        "landing files",
        "imbalance",
        "policy",
        "strategy",
    ):
        assert word in terms, word
