"""The layers stay layers: ``envs`` ← ``trainers`` ← ``ghost``, and no import cycles anywhere.

Inside ``ghost`` the subpackages are ordered too (``GHOST_ORDER``, bottom first): ``core`` <
``config`` < ``play`` < ``running`` < ``evaluation``, with ``mlagents_plugin`` apart (on ``core``
and ``config`` only), ``integrations`` apart (on any of the ordered ones), and the modules
``ghost.exceptions`` and ``ghost.command_line`` beneath them all. A module imports its own subpackage and those below it, never one above.

Every import statement of every project module counts, top-level or inside a function.

Imports into ``trainers`` and ``envs`` are fenced too (``LOWER_ALLOWED``): the self-play core and
the ``mlagents-learn`` plugin reach only the modules named there, and the run files
(``trainers.run_files``, below every host) stand on nothing but exceptions and data types.

``scripts/`` never imports ``tests/``: what the two share lives in ``scripts/`` (the tests import it
from there) or in the package.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("envs", "trainers", "ghost")

#: the subpackages of ``ghost``, bottom first: each may import those before it, none after it
GHOST_ORDER = (
    "ghost.core",
    "ghost.config",
    "ghost.play",
    "ghost.running",
    "ghost.evaluation",
    "ghost.tuning",
)
#: beside the order: what each may import; nothing else in ``ghost`` imports it
GHOST_APART = {
    "ghost.mlagents_plugin": ("ghost.core", "ghost.config"),
    # other frameworks' hosts of the cycle: on top of everything ordered, beside the plugin
    "ghost.integrations": GHOST_ORDER,
}
#: what a unit may import from ``trainers`` and ``envs`` (module names or package prefixes); a unit
#: not listed may import any of them
LOWER_ALLOWED = {
    # the cycle is host-neutral: validators and the arena key's stride, nothing that trains
    "ghost.core": ("envs.validators", "envs.stepping"),
    # beside ML-Agents' own trainers the plugin needs only the run files and the arena key
    "ghost.mlagents_plugin": ("trainers.run_files", "envs.stepping"),
    # below every host: exceptions, the statistics' names and the data types a checkpoint holds
    "trainers.run_files": (
        "trainers.run_files", "trainers.exceptions", "trainers.stats", "trainers.settings",
        "trainers.rollout", "trainers.group_rollout", "envs.exceptions", "envs.temporary_files",
    ),
}  # fmt: skip
#: modules of ``ghost`` itself, beneath every subpackage (they import none)
GHOST_BASE = ("ghost", "ghost.exceptions", "ghost.command_line")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    """Every module of the three packages, by dotted name."""
    return {
        _module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def imported_modules(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``path`` imports anywhere in its body (functions included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from pkg import sub`` imports the submodule ``pkg.sub`` when there is one
            names = [
                f"{node.module}.{alias.name}"
                if f"{node.module}.{alias.name}" in modules
                else node.module
                for alias in node.names
            ]
        else:
            continue
        found.update(name for name in names if name in modules)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imported_modules(path, modules) - {name} for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


#: a line importing the test suite: an import statement, also one in code a script runs in a fresh
#: process (``scripts/cost_curve.py`` keeps its benchmark point in a string)
TESTS_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+tests(?:\.\w+)*[ \t]+import\b|import[ \t]+tests\b).*", re.M
)


def scripts_importing_tests(root: Path = ROOT) -> dict[str, list[str]]:
    """Each file of ``root/scripts`` that imports ``tests``, with its import lines."""
    found = {}
    for path in sorted((root / "scripts").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = [match.group(0).strip() for match in TESTS_IMPORT.finditer(text)]
        if lines:
            found[path.relative_to(root).as_posix()] = lines
    return found


def test_scripts_never_import_the_tests():
    assert scripts_importing_tests() == {}


def test_the_scripts_checker_sees_imports_in_code_and_in_strings(tmp_path):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "a.py").write_text("import os\nfrom tests.team_envs import X\n")
    (scripts / "b.py").write_text('POINT = """\ndef f():\n    import tests.fake_envs\n"""\n')
    (scripts / "c.py").write_text(
        '"""Runs the env tests.contract_envs:healthy;\nfrom tests we learn."""\n'
        'ENV = "tests.contract_envs:healthy"\nimport tests_of_mine\n'
    )
    assert scripts_importing_tests(tmp_path) == {
        "scripts/a.py": ["from tests.team_envs import X"],
        "scripts/b.py": ["import tests.fake_envs"],
    }


def test_lower_layers_never_import_ghost():
    graph = import_graph()
    upward = {
        module: sorted(target for target in targets if target.split(".")[0] == "ghost")
        for module, targets in graph.items()
        if module.split(".")[0] in ("envs", "trainers")
    }
    assert {m: t for m, t in upward.items() if t} == {}
    envs_on_trainers = {
        module: sorted(t for t in targets if t.split(".")[0] == "trainers")
        for module, targets in graph.items()
        if module.split(".")[0] == "envs"
    }
    assert {m: t for m, t in envs_on_trainers.items() if t} == {}


def ghost_unit(module: str) -> str:
    """The subpackage (``ghost.running``) or base module (``ghost.exceptions``) of ``module``."""
    return module if module in GHOST_BASE else ".".join(module.split(".")[:2])


def may_import(unit: str, target: str) -> bool:
    """Whether a module of ``unit`` may import one of ``target`` (both ``ghost_unit`` values)."""
    if unit == target or target in GHOST_BASE:
        return True
    if unit in GHOST_BASE:
        return False
    if unit in GHOST_APART:
        return target in GHOST_APART[unit]
    if target in GHOST_APART or target not in GHOST_ORDER:
        return False
    return GHOST_ORDER.index(target) < GHOST_ORDER.index(unit)


def order_violations(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Module → the ``ghost`` modules it imports against ``GHOST_ORDER`` (empty when none)."""
    found = {}
    for module, targets in graph.items():
        if module.split(".")[0] != "ghost":
            continue
        wrong = sorted(
            t
            for t in targets
            if t.split(".")[0] == "ghost" and not may_import(ghost_unit(module), ghost_unit(t))
        )
        if wrong:
            found[module] = wrong
    return found


def lower_unit(module: str) -> str | None:
    """The ``LOWER_ALLOWED`` key ``module`` belongs to, or None."""
    for unit in LOWER_ALLOWED:
        if module == unit or module.startswith(unit + "."):
            return unit
    return None


def fence_violations(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Module → the ``trainers``/``envs`` modules it imports outside its ``LOWER_ALLOWED``."""
    found = {}
    for module, targets in graph.items():
        unit = lower_unit(module)
        if unit is None:
            continue
        allowed = LOWER_ALLOWED[unit]
        wrong = sorted(
            t
            for t in targets
            if t.split(".")[0] in ("trainers", "envs")
            and not any(t == a or t.startswith(a + ".") for a in allowed)
        )
        if wrong:
            found[module] = wrong
    return found


def test_imports_into_trainers_and_envs_stay_inside_their_fences():
    assert fence_violations(import_graph()) == {}


def test_the_fence_checker_sees_a_plugin_reaching_into_a_trainer():
    graph = {
        "ghost.mlagents_plugin.runs": {"trainers.run_files.lock", "trainers.ppo"},
        "trainers.run_files.logs": {"trainers.base", "trainers.stats"},
        "ghost.running.session": {"trainers.ppo"},
    }
    assert fence_violations(graph) == {
        "ghost.mlagents_plugin.runs": ["trainers.ppo"],
        "trainers.run_files.logs": ["trainers.base"],
    }


def test_every_ghost_subpackage_has_a_place_in_the_order():
    placed = set(GHOST_ORDER) | set(GHOST_APART) | set(GHOST_BASE)
    units = {ghost_unit(m) for m in project_modules() if m.split(".")[0] == "ghost"}
    assert sorted(units - placed) == []
    assert sorted((set(GHOST_ORDER) | set(GHOST_APART)) - units) == []


def test_ghost_subpackages_import_downward_only():
    assert order_violations(import_graph()) == {}


def test_the_order_checker_sees_upward_and_sideways_imports():
    graph = {
        "ghost.running.session": {"ghost.evaluation.report", "ghost.play.matches"},
        "ghost.evaluation.exploiter": {"ghost.running.api", "ghost.exceptions"},
        "ghost.core.controller": {"ghost.mlagents_plugin.runs"},
        "ghost.mlagents_plugin.runs": {"ghost.core.controller", "ghost.play.matches"},
        "ghost.exceptions": {"ghost.core.settings"},
    }
    assert order_violations(graph) == {
        "ghost.running.session": ["ghost.evaluation.report"],
        "ghost.core.controller": ["ghost.mlagents_plugin.runs"],
        "ghost.mlagents_plugin.runs": ["ghost.play.matches"],
        "ghost.exceptions": ["ghost.core.settings"],
    }


def test_training_imports_with_evaluation_unimportable():
    """``ghost.running`` (sessions, the API) never needs ``ghost.evaluation``."""
    code = (
        "import sys; sys.modules['ghost.evaluation'] = None; "
        "import ghost.running.api, ghost.running.session, ghost.running.scheduled_evaluation"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]


def test_no_import_cycles_among_project_modules():
    assert cycles(import_graph()) == []


def test_the_checker_sees_function_local_imports_and_cycles(tmp_path):
    source = tmp_path / "a.py"
    source.write_text("def f():\n    from ghost.core import controller\n", encoding="utf-8")
    modules = {"ghost.core.controller": source, "ghost.core": source}
    assert imported_modules(source, modules) == {"ghost.core.controller"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_self_play_core_needs_no_trainer_and_no_torch():
    graph = import_graph()
    core = [m for m in graph if m.startswith("ghost.core.")]
    reached = set()
    todo = list(core)
    while todo:
        module = todo.pop()
        for target in graph[module]:
            if target not in reached:
                reached.add(target)
                todo.append(target)
    assert sorted(m for m in reached if m.startswith(("trainers", "ghost.running"))) == [
        "trainers.exceptions"  # the error classes only, through ghost.exceptions
    ]
    code = "import sys; import ghost.core.controller, ghost.core.self_play; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr


def test_trainers_train_ppo_with_ghost_unimportable(tmp_path):
    """The trainer stack on its own: PPO on a toy BaseEnv with ``ghost`` blocked."""
    script = textwrap.dedent(
        """
        import sys
        sys.modules["ghost"] = None  # any import of ghost now fails
        import torch
        from envs.stepping import InProcessStepper
        from tests.toy_envs import TargetEnv
        from trainers.hyperparameters import PPOSettings
        from trainers.run_files.layout import RunLayout
        from trainers.settings import NetworkSettings, TrainerSettings
        from trainers.training_loop import TrainingLoop

        torch.set_num_threads(1)
        settings = TrainerSettings(
            hyperparameters=PPOSettings(batch_size=128, buffer_size=512, learning_rate=3e-3),
            network_settings=NetworkSettings(hidden_units=32), max_steps=4000, summary_freq=1000,
        )
        loop = TrainingLoop(behaviors={"Target": settings}, stepper=InProcessStepper(TargetEnv(seed=0)),
                            layout=RunLayout(sys.argv[1]))
        loop.run()
        assert not any(name == "ghost" or name.startswith("ghost.") for name in sys.modules
                       if sys.modules[name] is not None)
        print(loop.trainers["Target"].step, loop.trainers["Target"].stats.latest["Environment/Cumulative Reward"])
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    step, reward = result.stdout.split()
    assert int(step) >= 4000
    assert float(reward) > 3.0  # random play earns about 2.5 of 5
    assert (tmp_path / "Target.pt").is_file() and (tmp_path / "checkpoint.json").is_file()
