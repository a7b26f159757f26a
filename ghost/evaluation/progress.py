"""Progress of long ``ghost-eval`` work on stderr: a tournament's pairs, a run's snapshots, an
exploiter's training steps.

On a terminal ``ProgressLine`` keeps one line up to date in place (``\\r``): done/total, percent,
rate and the time left. Anywhere else (a log file, CI, a test reading stderr) it writes a plain
line when another tenth of the work is done or ``interval_s`` seconds have passed, whichever comes
first, and always the last one, so a log stays short. ``quiet`` silences it.

``play_all`` plays calls on a ``GameRunner`` and reports each result as it comes in
(``as_they_finish``), so that a Ray cluster playing every game at once still shows progress.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TextIO

from ghost.play.game_runner import GameRunner

#: off a terminal, a line for every this much of the work at least
STEP_FRACTION = 0.1


class ProgressLine:
    """Reports ``done`` of ``total`` units of one task (see the module docstring).

    Use it as a context manager, or call ``close`` at the end: on a terminal an unfinished line
    (an interrupted task) still gets its newline.

    Args:
        label: what is being done; starts every line (``tournament``).
        unit: what is counted (``pairs``, ``steps``).
        stream: where the lines go (default: stderr).
        quiet: write nothing.
        interval_s: off a terminal, the longest time between two lines.
        quiet_for_s: nothing is written before this many seconds have passed, so work that
            turns out short (a quick match) leaves no lines; the final line comes only after
            one was written.
        clock: monotonic seconds (a test passes its own).
    """

    def __init__(
        self,
        label: str,
        *,
        unit: str,
        stream: TextIO | None = None,
        quiet: bool = False,
        interval_s: float = 10.0,
        quiet_for_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.interval_s = interval_s
        self.quiet_for_s = quiet_for_s
        self._clock = clock
        self._started = clock()
        self._tty = _is_terminal(self.stream)
        self._written_at = self._started
        self._written_fraction = 0.0
        self._line_open = False
        self._last = (-1, -1)
        self._anything_written = False

    def update(self, done: int, total: int, detail: str = "") -> None:
        """``done`` of ``total`` units are finished; ``detail`` names the last one, if wanted."""
        if self.quiet or total <= 0 or (done, total) == self._last:
            return
        self._last = (done, total)
        now = self._clock()
        if not self._anything_written and now - self._started < self.quiet_for_s:
            return
        self._anything_written = True
        line = self.format(done, total, now - self._started, detail)
        if self._tty:
            width = shutil.get_terminal_size().columns - 1
            self.stream.write("\r" + line[:width] + "\033[K")
            self._line_open = done < total
            if not self._line_open:
                self.stream.write("\n")
        elif self._due(done / total, now):
            self.stream.write(line + "\n")
            self._written_at, self._written_fraction = now, done / total
        self.stream.flush()

    def __call__(self, done: int, total: int) -> None:
        """``update`` without a detail: a ``progress=`` callback of the evaluation functions."""
        self.update(done, total)

    def format(self, done: int, total: int, elapsed_s: float, detail: str = "") -> str:
        """``label: done/total unit (pct%), rate unit/s, ETA t`` (``in t`` once finished)."""
        head = f"{self.label}: {done}/{total} {self.unit} ({100 * done / total:.0f}%)"
        rate = done / elapsed_s if elapsed_s > 0 else 0.0
        if done >= total:
            timing = f"in {format_duration(elapsed_s)}"
        elif rate > 0:
            timing = f"{_number(rate)} {self.unit}/s, ETA {format_duration((total - done) / rate)}"
        else:
            timing = "ETA -"
        return f"{head}, {timing}" + (f" ({detail})" if detail else "")

    def close(self) -> None:
        """End an unfinished terminal line."""
        if self._line_open:
            self.stream.write("\n")
            self.stream.flush()
            self._line_open = False

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _due(self, fraction: float, now: float) -> bool:
        return (
            fraction >= 1.0
            or fraction - self._written_fraction >= STEP_FRACTION - 1e-9
            or now - self._written_at >= self.interval_s
        )


def format_duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _number(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def as_they_finish(
    runner: GameRunner, count: int, *, poll_s: float = 0.2
) -> Iterator[tuple[Hashable, Any]]:
    """The next ``count`` results of ``runner``, each as soon as it is ready (a runner that
    plays calls elsewhere, ``RayGames``, is asked every ``poll_s`` seconds)."""
    while count > 0:
        ready = runner.finished(wait=False)
        if not ready:
            time.sleep(poll_s)
            continue
        count -= len(ready)
        yield from ready


def play_all(
    runner: GameRunner,
    function: Callable[..., Any],
    calls: Sequence[Mapping[str, Any]],
    *,
    progress: Callable[[int, int, Any], None] | None = None,
) -> list[Any]:
    """``function(**call)`` for every call, played on ``runner``; the results in call order.
    ``progress`` is told ``(calls done, calls in all, the result)`` as each one finishes."""
    results: dict[Hashable, Any] = {}

    def collect(finished: Iterable[tuple[Hashable, Any]]) -> None:
        for index, result in finished:
            results[index] = result
            if progress is not None:
                progress(len(results), len(calls), result)

    for index, call in enumerate(calls):
        runner.submit(index, function, **call)
        collect(runner.finished(wait=False))
    collect(as_they_finish(runner, len(calls) - len(results)))
    return [results[index] for index in range(len(calls))]
