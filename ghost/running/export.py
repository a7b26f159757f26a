"""``ghost-export``: write policy files as ``.onnx`` brains for Unity's ML-Agents package.

A run writes ``<Behavior>.onnx`` beside each final policy by itself (with the onnx extra); this
command converts any other policy file on demand: a checkpoint, a snapshot, or every policy of a
run folder.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from ghost.command_line import VersionAction, output_file, run_command, setup_logging
from ghost.exceptions import RunDirectoryError
from trainers.run_files.layout import RunLayout

PROG = "ghost-export"

_EPILOG = """\
examples:
  ghost-export results/tennis                      results/tennis/Tennis.onnx from Tennis.pt
  ghost-export results/tennis --all                also every checkpoint and snapshot
  ghost-export results/tennis/Tennis/checkpoints/Tennis-100000.pt -o Tennis-100k.onnx
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Write policy files (final, checkpoint or snapshot) as .onnx brains that "
        "Unity's ML-Agents package runs; the .onnx goes beside each .pt unless -o is given.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("policies", nargs="+", metavar="POLICY",
                        help="policy file (.pt) or run folder")  # fmt: skip
    parser.add_argument("-o", "--output", metavar="OUTPUT",
                        help="the .onnx file to write, or a folder to write it into "
                        "(one POLICY file only)")  # fmt: skip
    parser.add_argument("--all", action="store_true",
                        help="for a run folder: also its checkpoints and snapshots")  # fmt: skip
    parser.add_argument("--debug", action="store_true", help="tracebacks for errors")
    parser.add_argument("--version", action=VersionAction)
    return parser


def policy_files(path: Path, *, every: bool) -> list[Path]:
    """The policy files ``path`` names: itself, or the final policies of a run folder (with
    ``every``: its checkpoints and snapshots too)."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise RunDirectoryError(f"{path}: no such policy file or run folder")
    finals = sorted(path.glob("*.pt"))
    if not finals:
        raise RunDirectoryError(f"{path} holds no <Behavior>.pt policy; is it a run folder?")
    if not every:
        return finals
    layout = RunLayout(path)
    history = []
    for final in finals:
        history += layout.checkpoint_files(final.stem)
        history += sorted(layout.snapshot_files(final.stem).values())
    return finals + history


def run(args: argparse.Namespace) -> int:
    from trainers.onnx_export import export_onnx  # torch loads here, not for --help
    from trainers.policy import load_policy

    files = [f for p in args.policies for f in policy_files(Path(p), every=args.all)]
    if args.output is not None and len(files) != 1:
        raise RunDirectoryError(f"-o names one file, but {len(files)} policies were given")
    for file in files:
        target = file.with_suffix(".onnx")
        if args.output is not None:
            target = output_file(args.output, target.name)
        export_onnx(load_policy(file), target)
        print(f"{file} -> {target}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ghost-export``; returns the process exit code."""
    args = build_parser().parse_args(argv)
    setup_logging(args.debug, level=logging.WARNING)
    return run_command(PROG, lambda: run(args), debug=lambda: args.debug)


if __name__ == "__main__":
    sys.exit(main())
