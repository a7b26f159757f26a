"""Replays: one arena of a match between two players, drawn frame by frame into an animated GIF.

The players are given as to ``ghost.evaluation.evaluate`` (policy file, run folder, scripted
level, or object with ``act``). Frames are drawn from the game's ``render_arena`` dict:

- ``tennis``: side view of the court, the net, both players (standing bars up to their reach
  height) and the ball;
- ``soccer`` / ``strikers_vs_goalie``: top view of the field, goals, every player and the ball
  (a diving goalie shows its larger reach);
- matrix games (``rock_paper_scissors``, ``biased_rps``): one frame per round, both choices.

The evaluated policy is always blue, the opponent red. A field game's episode ends on a frame
that names the winner (the arena restarts inside the step, so its very last position is not
visible).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import torch
from PIL import Image, ImageDraw, ImageFont

from envs.matrix_games import MatrixGame
from ghost.play.matches import Match, MatchSetup, open_match

logger = logging.getLogger(__name__)

WIDTH, HEIGHT = 512, 288
HEADER = 40
#: every color a frame uses; frames are quantized to exactly these, so the GIF never flickers
COLORS = {
    "header": (24, 28, 36),
    "text": (235, 235, 235),
    "dim": (150, 155, 165),
    "sky": (200, 225, 245),
    "out": (150, 170, 130),
    "court": (70, 130, 180),
    "grass": (60, 140, 70),
    "line": (250, 250, 250),
    "net": (60, 60, 60),
    "goal": (210, 210, 210),
    "blue": (40, 90, 230),
    "red": (220, 50, 50),
    "ball": (250, 220, 40),
    "black": (15, 15, 15),
    "panel": (235, 238, 242),
}
_PALETTE = Image.new("P", (1, 1))
_PALETTE.putpalette([v for rgb in COLORS.values() for v in rgb] + [0, 0, 0] * (256 - len(COLORS)))
_NO_DITHER = getattr(Image, "Dither", Image).NONE  # Image.Dither exists from Pillow 9.1


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has one bitmap size only
        return ImageFont.load_default()


@attrs.frozen(kw_only=True)
class Replay:
    """What ``record_match`` wrote: the GIF, its frame count and each episode's result
    (+1 the policy won, 0 draw, -1 lost, ``None`` interrupted)."""

    path: Path
    frames: int
    results: tuple[int | None, ...]


# -- drawing -------------------------------------------------------------------------------------
@attrs.frozen(kw_only=True)
class Caption:
    """The header of a frame: who plays whom, and where the match stands."""

    blue: str
    red: str
    status: str
    banner: str | None = None


def _team_color(team: int, policy_team: int) -> tuple[int, int, int]:
    return COLORS["blue"] if team == policy_team else COLORS["red"]


def _header(draw: ImageDraw.ImageDraw, caption: Caption) -> None:
    draw.rectangle((0, 0, WIDTH, HEADER), fill=COLORS["header"])
    font = _font(13)
    draw.rectangle((8, 7, 18, 17), fill=COLORS["blue"])
    draw.text((24, 4), _short(caption.blue, 28), fill=COLORS["text"], font=font)
    draw.rectangle((WIDTH // 2 + 8, 7, WIDTH // 2 + 18, 17), fill=COLORS["red"])
    draw.text((WIDTH // 2 + 24, 4), _short(caption.red, 28), fill=COLORS["text"], font=font)
    draw.text((8, 22), caption.status, fill=COLORS["dim"], font=font)


def _banner(draw: ImageDraw.ImageDraw, text: str) -> None:
    font = _font(20)
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    x = (WIDTH - (right - left)) // 2
    y = HEADER + 12
    draw.rectangle(
        (x - 10, y - 6, x + right - left + 10, y + bottom - top + 10), fill=COLORS["header"]
    )
    draw.text((x - left, y - top), text, fill=COLORS["text"], font=font)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def _disc(draw: ImageDraw.ImageDraw, x: float, y: float, r: float, fill, outline=None) -> None:
    draw.ellipse((x - r, y - r, x + r, y + r), fill=fill, outline=outline, width=2)


def draw_tennis(draw: ImageDraw.ImageDraw, state: dict[str, Any], policy_team: int) -> None:
    """Side view: court along x, height up; players as bars up to their reach height."""
    half = state["half_court"]
    span = half + 2.0
    scale = WIDTH / (2 * span)
    ground = HEIGHT - 28

    def px(x: float, y: float = 0.0) -> tuple[float, float]:
        return (WIDTH / 2 + x * scale, ground - y * scale)

    draw.rectangle((0, HEADER, WIDTH, ground), fill=COLORS["sky"])
    draw.rectangle((0, ground, WIDTH, HEIGHT), fill=COLORS["out"])
    draw.rectangle((*px(-half), px(half)[0], ground + 10), fill=COLORS["court"])
    for x in (-half, 0.0, half):
        draw.line((*px(x), px(x)[0], ground + 10), fill=COLORS["line"], width=2)
    net_x, net_top = px(0.0, state["net_height"])
    draw.rectangle((net_x - 2, net_top, net_x + 2, ground), fill=COLORS["net"])
    for player in state["players"]:
        x, _ = px(player["x"])
        top = px(player["x"], player.get("reach_height", 1.8))[1]
        color = _team_color(player["team"], policy_team)
        draw.rectangle((x - 5, top, x + 5, ground), fill=color, outline=COLORS["black"])
        hitter = state.get("last_hitter") == player["team"]
        _disc(draw, x, top - 6, 5, COLORS["line"] if hitter else color, COLORS["black"])
    ball = state["ball"]
    bx, by = px(ball["x"], max(ball["y"], 0.0))
    draw.ellipse((bx - 5, ground - 2, bx + 5, ground + 2), fill=COLORS["net"])  # its shadow
    _disc(draw, bx, by, 5, COLORS["ball"], COLORS["black"])


def draw_field(draw: ImageDraw.ImageDraw, state: dict[str, Any], policy_team: int) -> None:
    """Top view of a soccer field: goals, players (team colors) and the ball."""
    field = state["field"]
    hx, hy, goal = field["half_x"], field["half_y"], field["goal_half_width"]
    depth = 0.6
    scale = min((WIDTH - 20) / (2 * (hx + depth)), (HEIGHT - HEADER - 16) / (2 * hy))
    cy = HEADER + (HEIGHT - HEADER) / 2

    def px(x: float, y: float) -> tuple[float, float]:
        return (WIDTH / 2 + x * scale, cy - y * scale)

    draw.rectangle((0, HEADER, WIDTH, HEIGHT), fill=COLORS["out"])
    draw.rectangle(
        (*px(-hx, hy), *px(hx, -hy)), fill=COLORS["grass"], outline=COLORS["line"], width=2
    )
    two_goals = state["game"] == "soccer"
    draw.line((*px(0, hy), *px(0, -hy)), fill=COLORS["line"], width=1)
    r = 1.0 * scale
    centre = px(0, 0)
    draw.ellipse(
        (centre[0] - r, centre[1] - r, centre[0] + r, centre[1] + r),
        outline=COLORS["line"],
        width=1,
    )
    for end in (1, -1) if two_goals else (1,):
        mouth = px(end * hx, goal), px(end * hx + end * depth, -goal)
        draw.rectangle(
            (
                min(mouth[0][0], mouth[1][0]),
                mouth[0][1],
                max(mouth[0][0], mouth[1][0]),
                mouth[1][1],
            ),
            fill=COLORS["goal"],
            outline=COLORS["line"],
        )
    if not two_goals:
        # the save line is a rule of the game, not part of its render dict
        from envs.strikers_vs_goalie import SAVE_LINE

        top, bottom = px(SAVE_LINE, hy), px(SAVE_LINE, -hy)
        for dash in range(int(top[1]), int(bottom[1]), 12):
            draw.line((top[0], dash, top[0], dash + 6), fill=COLORS["line"], width=1)
    for player in state["players"]:
        x, y = px(player["x"], player["y"])
        color = _team_color(player["team"], policy_team)
        if player.get("diving"):
            _disc(draw, x, y, 0.7 * scale, None, COLORS["ball"])
        size = 0.32 * scale * (1.25 if player.get("role") == "goalie" else 1.0)
        _disc(draw, x, y, size, color, COLORS["line"])
    ball = state["ball"]
    _disc(draw, *px(ball["x"], ball["y"]), 0.18 * scale + 1, COLORS["ball"], COLORS["black"])


def _hand(draw: ImageDraw.ImageDraw, choice: str | None, x: float, y: float, color) -> None:
    """A glyph per choice: rock a disc, paper a sheet, scissors two crossed blades."""
    if choice == "rock":
        _disc(draw, x, y, 34, color, COLORS["black"])
    elif choice == "paper":
        draw.rectangle(
            (x - 28, y - 38, x + 28, y + 38), fill=color, outline=COLORS["black"], width=2
        )
    elif choice == "scissors":
        draw.line((x - 30, y - 34, x + 30, y + 34), fill=color, width=9)
        draw.line((x - 30, y + 34, x + 30, y - 34), fill=color, width=9)
        _disc(draw, x, y, 7, COLORS["black"])


def draw_matrix(draw: ImageDraw.ImageDraw, state: dict[str, Any], policy_team: int) -> None:
    """Both players' last choices side by side (policy left, opponent right)."""
    draw.rectangle((0, HEADER, WIDTH, HEIGHT), fill=COLORS["panel"])
    actions = state.get("actions") or [None, None]
    mine, theirs = actions[policy_team], actions[1 - policy_team]
    font = _font(16)
    for x, choice, color in ((WIDTH * 0.28, mine, "blue"), (WIDTH * 0.72, theirs, "red")):
        _hand(draw, choice, x, HEADER + 95, COLORS[color])
        label = choice or "-"
        width = draw.textlength(label, font=font)
        draw.text((x - width / 2, HEADER + 150), label, fill=COLORS["black"], font=font)
    draw.text((WIDTH / 2 - 10, HEADER + 85), "vs", fill=COLORS["dim"], font=font)


def draw_unknown(draw: ImageDraw.ImageDraw, state: dict[str, Any], policy_team: int) -> None:
    """The render dict as text, for games without a drawing."""
    draw.rectangle((0, HEADER, WIDTH, HEIGHT), fill=COLORS["panel"])
    draw.multiline_text(
        (8, HEADER + 8), _short(repr(state), 600), fill=COLORS["black"], font=_font(11)
    )


DRAWERS: dict[str, Callable[[ImageDraw.ImageDraw, dict[str, Any], int], None]] = {
    "tennis": draw_tennis,
    "soccer": draw_field,
    "strikers_vs_goalie": draw_field,
}


def draw_frame(state: dict[str, Any], caption: Caption, *, policy_team: int = 0) -> Image.Image:
    """One frame (``WIDTH`` x ``HEIGHT``, RGB) of a ``render_arena`` dict under ``caption``."""
    image = Image.new("RGB", (WIDTH, HEIGHT), COLORS["panel"])
    draw = ImageDraw.Draw(image)
    default = draw_matrix if "actions" in state else draw_unknown
    drawer = DRAWERS.get(state.get("game", ""), default)
    drawer(draw, state, policy_team)
    _header(draw, caption)
    if caption.banner:
        _banner(draw, caption.banner)
    return image


# -- recording -----------------------------------------------------------------------------------
_OUTCOME = {1: "blue wins", 0: "draw", -1: "red wins", None: "interrupted"}


@attrs.define(kw_only=True)
class _Recording:
    """The frames of one match as it is recorded, each with its duration, and its results."""

    match: Match
    game: str
    wanted: int
    matrix: bool
    frames: list[Image.Image] = attrs.Factory(list)
    durations: list[int] = attrs.Factory(list)
    results: list[int | None] = attrs.Factory(list)

    def status(self, step: int, finished: bool) -> str:
        results = self.results
        tally = (
            sum(r == 1 for r in results),
            sum(r == 0 for r in results),
            sum(r == -1 for r in results),
        )
        unit = "round" if self.matrix else "episode"
        shown = len(results) if finished else len(results) + 1
        text = (
            f"{self.game}  {unit} {shown}/{self.wanted}  "
            f"blue W-D-L {tally[0]}-{tally[1]}-{tally[2]}"
        )
        return text if self.matrix else f"{text}  step {step}"

    def add(self, state: dict[str, Any], banner: str | None, duration: int) -> None:
        caption = Caption(
            blue=self.match.policy_label,
            red=self.match.opponent_label,
            status=self.status(int(state.get("step", 0)), finished=banner is not None),
            banner=banner,
        )
        self.frames.append(draw_frame(state, caption, policy_team=self.match.team))
        self.durations.append(duration)


def _play_recording(recording: _Recording, *, seed: int, max_frames: int, frame_ms: int) -> None:
    """Step the match until ``recording`` has its episodes or ``max_frames`` frames."""
    match, matrix, results = recording.match, recording.matrix, recording.results
    with torch.random.fork_rng(devices=[]):
        if seed >= 0:
            torch.manual_seed(seed)
        state = match.env.render_arena(0)
        if not matrix:
            recording.add(state, None, frame_ms)
        while len(results) < recording.wanted and len(recording.frames) < max_frames:
            match.step()
            _, outcome, cut = match.ended()
            if len(outcome):
                results.append(None if cut[0] else int(outcome[0]))
                banner = _OUTCOME[results[-1]]
                if matrix:
                    recording.add(match.env.render_arena(0), banner, max(frame_ms, 600))
                    continue
                recording.add(state, banner, max(frame_ms * 10, 1000))
            state = match.env.render_arena(0)
            if len(results) < recording.wanted and not matrix:
                recording.add(state, None, frame_ms)


def _write_gif(path: Path, frames: list[Image.Image], durations: list[int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    paletted = [f.quantize(palette=_PALETTE, dither=_NO_DITHER) for f in frames]
    paletted[0].save(
        path,
        format="GIF",
        save_all=True,
        append_images=paletted[1:],
        duration=durations,
        loop=0,
        disposal=1,
    )


def record_match(
    *,
    game: str,
    policy: Any,
    opponent: Any,
    path: str | Path,
    side: str | None = None,
    seed: int = 0,
    episodes: int | None = None,
    max_frames: int = 1500,
    fps: int = 10,
    deterministic: bool = False,
) -> Replay:
    """Play ``policy`` against ``opponent`` in one arena of ``game`` and write a GIF of it.

    Args:
        episodes: episodes (matrix games: rounds) to record; default 3 (20 rounds).
        max_frames: stop early after this many frames (a long rally).
        fps: frames per second; the games step 0.1 s, so 10 is real time.

    Returns:
        The ``Replay`` written to ``path``.
    """
    match = open_match(
        MatchSetup(
            game=game,
            policy=policy,
            opponent=opponent,
            side=side,
            seed=seed,
            deterministic=deterministic,
        )  # fmt: skip
    )
    matrix = isinstance(match.env, MatrixGame)
    wanted = episodes if episodes is not None else (20 if matrix else 3)
    recording = _Recording(match=match, game=game, wanted=wanted, matrix=matrix)
    try:
        _play_recording(
            recording, seed=seed, max_frames=max_frames, frame_ms=max(20, round(1000 / fps))
        )
    finally:
        match.close()
    path = Path(path)
    _write_gif(path, recording.frames, recording.durations)
    logger.info("recorded %d frames of %s to %s", len(recording.frames), game, path)
    return Replay(path=path, frames=len(recording.frames), results=tuple(recording.results))
