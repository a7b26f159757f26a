"""One docstring style in the project: Google (``Args:``, ``Returns:``, ``Raises:``, ``Yields:``).

Every docstring (module, class, function) of every ``.py`` under ``ROOTS`` is read; a reST field
(``:param x:``, ``:type x:``, ``:returns:``, ``:return:``, ``:rtype:``, ``:raises X:``...) at the
start of a line, or a numpy-style section (``Returns`` over a line of dashes), fails the test with
its ``path:line``. Only docstrings count: comments and other strings may quote the forms. The API
reference (``mkdocs.yml``) reads docstrings as Google style, so a field in another style shows up
there as plain text.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROOTS = ("ghost", "trainers", "envs", "scripts", "examples")

#: Sphinx's docfields, each at the start of a line: ``:param x:``, ``:raises ValueError:``, ``:returns:``
_REST_FIELD = re.compile(
    r"^\s*:(?:param|parameter|arg|argument|key|keyword|type|raises?|except|exception"
    r"|returns?|rtype|yields?|ytype)\b[^:\n]*:"
)
#: numpy's section headers; each counts only when a line of dashes follows it
_NUMPY_SECTIONS = frozenset(
    ("Parameters", "Other Parameters", "Returns", "Yields", "Receives", "Raises", "Warns")
)
_DASHES = re.compile(r"^\s*-{3,}\s*$")


def _docstrings(tree: ast.Module) -> list[ast.Constant]:
    """The docstring nodes of a module and of every class and function in it, in source order."""
    nodes: list[ast.Constant] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = node.body[0] if node.body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            nodes.append(first.value)
    return sorted(nodes, key=lambda n: n.lineno)


def docstring_problems(path: Path, root: Path = ROOT) -> list[str]:
    """``path:line: what`` for each reST field or numpy-style section in ``path``'s docstrings.

    Args:
        path: a Python source file.
        root: paths are named relative to it when ``path`` lies under it.

    Returns:
        One message per offending line, in source order (empty: Google style or no sections).
    """
    name = path.relative_to(root) if path.is_relative_to(root) else path
    problems = []
    for node in _docstrings(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        lines = node.value.splitlines()
        for i, (line, below) in enumerate(zip(lines, [*lines[1:], ""], strict=True)):
            # a docstring's lines map one to one onto the source's (no escaped newlines in them)
            where = f"{name}:{node.lineno + i}"
            if field := _REST_FIELD.match(line):
                problems.append(f"{where}: reST field {field.group().strip()!r}")
            elif line.strip() in _NUMPY_SECTIONS and _DASHES.match(below):
                problems.append(f"{where}: numpy-style section {line.strip()!r} over dashes")
    return problems


def test_every_docstring_is_google_style() -> None:
    files = sorted(p for r in ROOTS if (ROOT / r).is_dir() for p in (ROOT / r).rglob("*.py"))
    assert files, f"no Python files under {ROOTS} in {ROOT}"
    problems = [problem for path in files for problem in docstring_problems(path)]
    assert not problems, (
        f"{len(problems)} docstring lines not in Google style (Args:/Returns:/Raises:/Yields:, "
        "each entry 'name: text' indented under its header):\n" + "\n".join(problems)
    )


_FORMS = {
    "param": ":param x: the input.",
    "type": ":type x: int",
    "returns": ":returns: the output.",
    "return": ":return: the output.",
    "rtype": ":rtype: int",
    "raises": ":raises ValueError: when x is negative.",
    "numpy Parameters": "Parameters\n    ----------\n    x : int\n        the input.",
    "numpy Returns": "Returns\n    -------\n    int\n        the output.",
    "numpy Raises": "Raises\n    ------\n    ValueError\n        when x is negative.",
    "numpy Yields": "Yields\n    ------\n    int\n        the next value.",
}


@pytest.mark.parametrize("form", list(_FORMS))
@pytest.mark.parametrize("where", ["module", "class", "method", "function"])
def test_the_checker_catches(form: str, where: str, tmp_path: Path) -> None:
    body = f'"""Summary.\n\n    {_FORMS[form]}\n    """'
    source = {
        "module": f"{textwrap.dedent(body)}\n",
        "class": f"class C:\n    {body}\n",
        "method": f"class C:\n    def f(self, x):\n        {body.replace(chr(10), chr(10) + '    ')}\n",
        "function": f"def f(x):\n    {body}\n",
    }[where]
    path = tmp_path / "sample.py"
    path.write_text(source)
    problems = docstring_problems(path, root=tmp_path)
    header_line = 1 + source.splitlines().index(
        next(line for line in source.splitlines() if _FORMS[form].split("\n")[0] in line)
    )
    assert problems and problems[0].startswith(f"sample.py:{header_line}: "), (source, problems)
    assert len(problems) == 1, problems


def test_the_checker_passes_google_style_and_other_strings(tmp_path: Path) -> None:
    path = tmp_path / "fine.py"
    path.write_text(
        textwrap.dedent('''\
            """Module.

            Returns are written as a ``Returns:`` section, never ``:returns:``.
            """

            # :param x: in a comment is no docstring
            TEXT = """
            :param x: in a plain string is no docstring
            Returns
            -------
            """


            def f(x):
                """Summary.

                Args:
                    x: the input.

                Returns:
                    The output.

                Raises:
                    ValueError: when x is negative.

                Yields:
                    Nothing, really.
                """
                return x
            ''')
    )
    assert docstring_problems(path, root=tmp_path) == []
