"""The README and docs/ say what the code does: the README's size, links that lead
somewhere, examples that are the code they quote, and command tables with every verb.

The configuration reference has its own test (``tests/ops/test_config_reference.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli import commands, main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCED = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
QUOTED = re.compile(r"# from (\S+)\n")


def prose(text: str) -> str:
    """The text outside code blocks and code spans: where headings and links are."""
    return CODE_SPAN.sub("", FENCED.sub("", text))


def slug(heading: str) -> str:
    """A heading's anchor, as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for line in FENCED.sub("", page.read_text()).splitlines():
        if line.startswith("#"):
            base = slug(line.lstrip("#").replace("`", ""))
            found.add(next(f"{base}-{n}" if n else base for n in range(100)
                           if (f"{base}-{n}" if n else base) not in found))
    return found


def code_blocks(text: str, language: str) -> list[str]:
    parts = text.split("```")
    return [part.removeprefix(language).lstrip("\n") for part in parts[1::2]
            if part.startswith(language + "\n")]


def examples() -> list[tuple[str, str]]:
    return [(page.name, block) for page in PAGES
            for block in code_blocks(page.read_text(), "python")]


def test_the_readme_fits_in_12_kb() -> None:
    size = len(README.encode())
    assert size <= 12 * 1024, f"README.md is {size} bytes (at most 12 KB): move detail to docs/"


def test_the_two_commands_come_first() -> None:
    first_block = README.split("```")[1]
    assert "./control.sh demo" in first_block and "./control.sh test" in first_block


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_its_heading(page: Path) -> None:
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target} leads to no file"
        if anchor:
            assert anchor in anchors(linked), f"{page.name}: {target}: no such heading"


def test_a_broken_anchor_would_be_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Deploying\n\n## 1. The settings file\n\n```\n# not a heading\n```\n"
                    "## Deploying\n")
    assert anchors(page) == {"deploying", "1-the-settings-file", "deploying-1"}


def test_every_quoted_example_is_the_code_it_quotes() -> None:
    quoted = [(name, block) for name, block in examples() if QUOTED.match(block)]
    assert len(quoted) >= 3, "the step, item and recrawl examples lost their '# from' line"
    for name, block in quoted:
        found = QUOTED.match(block)
        assert found is not None
        source = (ROOT / found[1]).read_text()
        assert block[found.end():].rstrip("\n") in source, f"{name}: not in {found[1]}"


def test_every_example_of_a_step_an_item_or_a_chain_says_where_it_is_from() -> None:
    for name, block in examples():
        if any(mark in block for mark in ("@step(", "(Item, collection=", ".recrawling(")):
            assert QUOTED.match(block), f"{name}: an example without '# from PATH':\n{block}"


def test_the_status_table_is_the_one_the_code_renders() -> None:
    from external_interface.statuses import status_table

    assert status_table() in (ROOT / "docs" / "fetching.md").read_text()


def test_every_crawlchain_command_is_in_the_command_table() -> None:
    for name in commands():
        assert f"| `crawlchain {name}" in README or f"/ `crawlchain {name}" in README, name


def control_sh_verbs() -> dict[str, str]:
    """control.sh's verbs (from its main's ``case``), each with what it runs."""
    script = (ROOT / "control.sh").read_text()
    body = script[script.index("\nmain() {"):]
    block = re.search(r'\n  case "\$verb" in\n(.*?)\n  esac', body, re.S)
    assert block is not None, "control.sh: main's case over the verbs moved"
    verbs = {verb: action for patterns, action in
             re.findall(r"^    ([\w|-]+)\)(.*?);;", block[1], re.M | re.S)
             for verb in patterns.split("|")}
    if '"--hosts"' in body:
        verbs["--hosts"] = "cmd_hosts"
    return verbs


def test_every_control_sh_verb_is_in_the_command_table() -> None:
    rows = [line.split(" | ")[0] for line in README.splitlines()
            if line.startswith("| `./control.sh")]
    named = {word for row in rows for word in re.findall(r"(?<![\w-])[\w-]+", row)}
    verbs = control_sh_verbs()
    assert {"setup", "demo", "test", "stop", "docs", "--hosts"} <= set(verbs)
    for verb, action in verbs.items():
        if "-m cli" not in action:
            assert verb in named, f"./control.sh {verb} is not in the table"


def test_control_sh_runs_every_crawlchain_command() -> None:
    passed = {verb for verb, action in control_sh_verbs().items() if "-m cli" in action}
    assert passed == set(commands()), "the README says ./control.sh VERB runs each of them"


def test_the_first_sites_steps_and_items_are_the_scaffolds(tmp_path: Path) -> None:
    assert main(["new-site", "shop", "--root", str(tmp_path)]) == 0
    site = (tmp_path / "sites" / "shop" / "__init__.py").read_text()
    tried = re.findall(r"crawlchain try ([a-z_]+\.[a-z_]+\.[a-z_]+)", README)
    assert len(tried) >= 2
    for name in tried:  # a step's name: its site, platform web, its function
        site_name, platform, function = name.split(".")
        assert (site_name, platform) == ("shop", "web") and f"def {function}(" in site, \
            f"README tries {name}, which new-site does not write"
    for collection in re.findall(r"crawlchain export ([a-z_]+)", README):
        assert f'collection="{collection}"' in site, f"README exports {collection}"
