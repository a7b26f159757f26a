"""``ghost-eval``'s commands: their parsers and help, and how the old flag form maps onto them.

Nothing here plays a game; the commands' results are tested in test_evaluation, test_league,
test_replay, test_exploiter_builtin, test_seated_eval and test_openspiel.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ghost.evaluation import cli, cli_commands, cli_legacy, cli_robustness

COMMANDS = ("match", "snapshots", "tournament", "exploitability", "exploit", "report")
HANDLERS = {
    "match": cli_commands.match,
    "snapshots": cli_commands.snapshots,
    "tournament": cli_commands.tournament,
    "report": cli_commands.report,
    "exploitability": cli_robustness.exploitability,
    "exploit": cli_robustness.exploit,
}


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main(["--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    for command in COMMANDS:
        assert f"\n    {command}" in out and f"ghost-eval {command} " in out


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_explains_itself(command, capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main([command, "--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: ghost-eval {command} ")
    assert "examples:" in out and f"  ghost-eval {command} results/" in out
    assert "--json" in out and "--debug" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["tournament", "results/x", "--against", "strong"], "unrecognized argument --against"),
        (["report", "results/x", "x.png", "--episodes", "4"], "unrecognized argument --episodes"),
        (["exploit", "results/x"], "required: --steps"),
        (["match", "results/x"], "required: --against"),
        (["snapshots", "results/x", "--against", "weak", "--each-snapshot"], "unrecognized"),
    ],
)
def test_a_command_takes_only_its_own_options(argv, message, capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert f"ghost-eval {argv[0]}: error: " in err and message in err


def parsed(capsys, *argv):
    """The commands the flag form ``argv`` runs, by name, and the note it prints."""
    steps = cli_legacy.route(cli_legacy.build_parser().parse_args(list(argv)))
    names = {handler: name for name, handler in HANDLERS.items()}
    return [names[step.handler] for step in steps], steps, capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, commands, form",
    [
        (["r", "--against", "strong"], ["match"], "match r --against strong ..."),
        (["r", "--against", "snapshots"], ["match"], "match r --against snapshots ..."),
        (["r", "--against", "weak", "--each-snapshot"], ["snapshots"], "snapshots r --against"),
        (["r", "--league"], ["tournament"], "tournament r ..."),
        (["r", "--report", "o.png"], ["report"], "report r o.png'"),
        (["r", "--exploitability"], ["exploitability"], "exploitability r'"),
        (["r", "--exploiter", "500"], ["exploit"], "exploit r --steps 500 ..."),
        (["r", "--exploitability", "--exploiter", "5"], ["exploitability", "exploit"], "' and '"),
        (
            ["r", "--report", "o.png", "--league"],
            ["report", "tournament"],
            "' and 'ghost-eval tournament",
        ),
    ],
)
def test_the_flag_form_runs_the_commands_and_names_them(argv, commands, form, capsys):
    names, steps, err = parsed(capsys, *argv)
    assert names == commands
    assert err.startswith("ghost-eval: note: the flag form is deprecated; use 'ghost-eval ")
    assert form in err and err.count("\n") == 1
    assert all(step.json is False and step.policy == "r" for step in steps)


def test_the_flag_form_hands_its_values_to_the_commands(capsys):
    _, [report, exploit], _ = parsed(capsys, "r", "--report", "o.png", "--exploiter", "7")
    assert report.image == "o.png" and report.label == "--report"
    assert exploit.steps == 7 and exploit.label == "--exploiter"  # errors name the old flag


@pytest.mark.parametrize(
    "argv, message",
    [
        (["r", "--league", "--side", "Goalie"], "leave out --against, --each-snapshot"),
        (["r", "--against", "weak", "--ray-address", "auto"], "plays many evaluations at once"),
        (["r", "--against", "weak", "--games-per-pair", "5"], "need --league"),
        (["r", "--record", "x.gif"], "need --against OPPONENT"),
        (["r"], "nothing to do"),
    ],
)
def test_the_flag_form_keeps_its_combination_errors(argv, message, capsys):
    with pytest.raises(Exception, match=message):
        parsed(capsys, *argv)
    assert capsys.readouterr().err == ""  # no note before an error


def test_a_first_word_that_is_no_command_is_the_flag_form():
    assert cli.is_flag_form(["results/tennis", "--league"])
    assert cli.is_flag_form(["--game", "tennis", "strong", "--against", "weak"])
    assert not cli.is_flag_form(["league", "results/tennis"])
    assert not cli.is_flag_form(["tournament", "results/tennis"])


def test_league_is_the_tournament_under_its_former_name():
    former, now = cli._parse(["league", "results/x"]), cli._parse(["tournament", "results/x"])
    assert former.handler is now.handler is cli_commands.tournament
    assert cli_commands._json_word(former) == "league"  # scripts read --json under this key
    assert cli_commands._json_word(now) == "tournament"
    assert not cli.is_flag_form(["--help"]) and not cli.is_flag_form([])


def test_no_function_of_the_command_line_is_long():
    folder = Path(cli.__file__).parent
    for path in sorted(folder.glob("cli*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                length = node.end_lineno - node.lineno + 1
                assert length <= 60, f"{path.name}: {node.name} has {length} lines"
