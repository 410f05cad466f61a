"""Progress of the long commands (`alloc simulate`, `alloc whatif`), on stderr so that stdout
stays the command's output. With a terminal: a live display (rich), one bar per run. Without
one (CI, nohup, a log file): one line per running run every `interval_s` of wall time, e.g.

    progress greedy: 10 h 6 min of 1 d simulated (42%), 1,532 rounds (87 full rounds, 1,445
    event passes), 0.91 simulated h/s, 19.0 rounds/s, elapsed 0:28, ETA 0:45

(one line). Rates are taken over the last minute of wall time (a simulation's pace changes
as its cluster fills). The ETA follows the pace's trend too: a run slows as its queue fills
(a 7-day run said `elapsed 1:10, ETA 1:25` and took 3:37), so where the recent wall time
per simulated second (over the last half of the run, at most a minute) is above the
run's average, the cost is taken to keep growing as it grew (linearly in simulated time,
through the two averages) to the end. Rounds count both kinds, full rounds and event passes,
each named as metrics.json names it (`full_rounds`, `event_passes`). After a Ctrl-C the line
says the run is stopping instead of giving rates and an ETA. When a run's simulation is over
its lines stop, and one line says its files are being written:

    progress greedy: 1 d simulated, 2,236 rounds (288 full rounds, 1,948 event passes) in
    0:58; writing the report ...

(live: the run's bar says so). A run reports through the callables `ProgressDisplay.reporter`
and `ProgressDisplay.writer` give: the simulation calls the first after every instant of
simulated time (it costs a clock read unless a tenth of a second has passed), the run the
second once, when it starts writing its files."""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from alloc.printable import shown
from alloc.readable import counted
from alloc.report.fmt import duration

if TYPE_CHECKING:
    from alloc.sim.engine import OnProgress

RATE_WINDOW_S = 60.0  # rates and the ETA over this much recent wall time
SAMPLE_EVERY_S = 1.0  # a sample of (wall time, simulated time, rounds) at most this often
UPDATE_EVERY_S = 0.1  # a run's reports are taken at most this often


def clock(seconds: float) -> str:
    """Wall time as a clock: 0:45, 12:03, 1:02:03."""
    s = max(0, round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


@dataclass
class RunState:
    """What is known of one run: the simulated time reached, rounds, and recent samples."""

    label: str
    horizon_s: float
    t_s: float = 0.0
    rounds: int = 0  # full rounds
    passes: int = 0  # event passes
    began: float | None = None  # wall time (monotonic) the run started at
    state: str = "waiting"  # waiting | running | writing | done | partial | not run
    samples: deque[tuple[float, float, int]] = field(default_factory=deque)
    first: tuple[float, float] | None = None  # (wall, simulated) time of the first round

    @property
    def simulating(self) -> bool:
        """The simulation has begun: a round has run (before, its inputs are being read)."""
        return self.rounds + self.passes > 0

    def update(self, now: float, t_s: float, rounds: int, passes: int) -> None:
        if self.began is None:
            self.start(now)
        if not self.simulating:
            self.samples.clear()  # the rates count from the simulation's start, not the reading
        self.t_s, self.rounds, self.passes = t_s, rounds, passes
        if not self.samples or now - self.samples[-1][0] >= SAMPLE_EVERY_S:
            self.samples.append((now, t_s, rounds + passes))
        if self.first is None and self.simulating:
            self.first = self.samples[0][:2]
        while len(self.samples) > 2 and now - self.samples[1][0] >= RATE_WINDOW_S:
            self.samples.popleft()  # keep one sample at least a window old

    def start(self, now: float) -> None:
        self.began, self.state = now, "running"
        self.samples.append((now, 0.0, 0))

    def rates(self, now: float) -> tuple[float, float] | None:
        """(simulated seconds, rounds) per wall second over the recent window; None before
        a second of it has passed."""
        if not self.samples:
            return None
        wall, t_s, done = self.samples[0]
        if now - wall < 1.0:
            return None
        return (self.t_s - t_s) / (now - wall), (self.rounds + self.passes - done) / (now - wall)

    def eta(self, now: float) -> str:
        """The wall time to the end: the simulated time left at the recent wall time per
        simulated second, and, where the recent stretch (the last half of the run, at most
        the window) cost more per simulated second than the run's average (it slows as its
        queue fills), that cost growing on as it grew."""
        rates = self.rates(now)
        if rates is None or rates[0] <= 0:
            return "unknown"
        left = max(0.0, self.horizon_s - self.t_s)
        trend = self._growth(now)
        if trend is None:
            return clock(left / rates[0])
        cost, growth = trend
        return clock(cost * left + growth * left * left / 2)

    def _growth(self, now: float) -> tuple[float, float] | None:
        """(the wall time a simulated second costs now, how much more each next one costs),
        through the cost over the run and over its recent stretch, each the cost at the
        middle of its stretch of simulated time; None when it is not growing."""
        if self.first is None:
            return None
        since = max(self.samples[0][0], (self.first[0] + now) / 2)
        split = next((x for x in self.samples if x[0] >= since), None)
        if split is None or not self.first[1] < split[1] < self.t_s or now <= split[0]:
            return None
        recent = (now - split[0]) / (self.t_s - split[1])
        average = (now - self.first[0]) / (self.t_s - self.first[1])
        if recent <= average:
            return None
        growth = (recent - average) / ((split[1] - self.first[1]) / 2)
        return recent + growth * (self.t_s - split[1]) / 2, growth

    @property
    def rounds_text(self) -> str:
        """`1,532 rounds (87 full rounds, 1,445 event passes)`."""
        full = counted(self.rounds, "full round")
        passes = counted(self.passes, "event pass", "event passes")
        return f"{counted(self.rounds + self.passes, 'round')} ({full}, {passes})"

    def text(self, now: float, stopping: bool = False) -> str:
        """The run's progress without its label: reached / total, rounds, rates, times; once
        a stop is asked, no rates nor ETA (the run ends after its current round)."""
        share = self.t_s / self.horizon_s if self.horizon_s > 0 else 1.0
        elapsed = f"elapsed {clock(now - (self.began or now))}"
        if not self.simulating:
            return f"reading its inputs, {elapsed}"
        parts = [
            f"{duration(self.t_s)} of {duration(self.horizon_s)} simulated ({share:.0%})",
            self.rounds_text,
        ]
        rates = self.rates(now)
        if rates is not None and not stopping:
            sim_rate, round_rate = rates
            parts.append(f"{sim_rate / 3600:.2f} simulated h/s, {round_rate:.1f} rounds/s")
        parts.append(elapsed)
        if stopping:
            return ", ".join(parts) + "; stopping after the current round"
        return ", ".join([*parts, f"ETA {self.eta(now)}"])

    def written(self, now: float) -> str:
        """The line of a run whose simulation is over: what it simulated, in how long."""
        took = clock(now - (self.began or now))
        if self.t_s < self.horizon_s:
            share = self.t_s / self.horizon_s
            return (
                f"stopped after {duration(self.t_s)} of {duration(self.horizon_s)} simulated "
                f"({share:.0%}), {self.rounds_text} in {took}; writing the partial report ..."
            )
        return (
            f"{duration(self.horizon_s)} simulated, {self.rounds_text} in {took}; "
            "writing the report ..."
        )

    def short(self, now: float, stopping: bool = False) -> str:
        """The same for a live display's line: reached / total, rounds, rate, ETA."""
        if not self.simulating:
            return "reading its inputs"
        if self.state == "writing":
            return "writing the report ..."
        reached = (
            f"{duration(self.t_s)} of {duration(self.horizon_s)}, "
            f"{counted(self.rounds + self.passes, 'round')}"
        )
        if stopping:
            return f"{reached}, stopping after the current round"
        rates = self.rates(now)
        rate = f", {rates[0] / 3600:.2f} sim h/s" if rates is not None else ""
        return f"{reached}{rate}, ETA {self.eta(now)}"


class ProgressDisplay:
    """The progress of one or more runs (`runs`: label and simulated seconds each), live on a
    terminal, else a line per running run every `interval_s` (None or 0: no lines). Use as a
    context manager; runs report through `reporter(label)`, or `update` when their reports
    come from other processes."""

    def __init__(
        self,
        runs: list[tuple[str, float]],
        interval_s: float | None = 10.0,
        console: Console | None = None,
    ) -> None:
        self.runs = {label: RunState(label, horizon) for label, horizon in runs}
        self.order = [label for label, _ in runs]
        self.interval_s = interval_s or None
        self.console = console or Console(stderr=True)
        self.live = self.console.is_terminal and not self.console.is_dumb_terminal
        self.stopping = False
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._ticker: threading.Thread | None = None
        self._bar: Any = None  # rich.progress.Progress when live
        self._tasks: dict[str, Any] = {}

    # -- what runs report ---------------------------------------------------------------

    def reporter(self, label: str) -> OnProgress:
        """The simulation's progress callback for run `label`."""
        next_at = 0.0

        def report(t_s: float, rounds: int, passes: int) -> None:
            nonlocal next_at
            now = time.monotonic()
            if now >= next_at:
                next_at = now + UPDATE_EVERY_S
                self.update(label, t_s, rounds, passes, now)

        return report

    def writer(self, label: str) -> OnProgress:
        """The callback a run calls once its simulation is over (`alloc.sim.run.run`)."""

        def writing(t_s: float, rounds: int, passes: int) -> None:
            self.writing(label, t_s, rounds, passes)

        return writing

    def writing(self, label: str, t_s: float, rounds: int, passes: int) -> None:
        """Run `label` simulated up to `t_s` and now writes its files: its progress lines
        stop and one line says so (live: its bar)."""
        now = time.monotonic()
        with self._lock:
            run = self.runs[label]
            run.update(now, t_s, rounds, passes)
            run.state = "writing"
            line = f"progress {label}{self._which(label)}: {run.written(now)}"
        if self._bar is not None:
            self._refresh(label)
        elif self.interval_s is not None:
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def _which(self, label: str) -> str:
        n = len(self.order)
        return f" (run {self.order.index(label) + 1} of {n})" if n > 1 else ""

    def start(self, label: str) -> None:
        with self._lock:
            self.runs[label].start(time.monotonic())
        self._refresh(label)

    def update(
        self, label: str, t_s: float, rounds: int, passes: int, now: float | None = None
    ) -> None:
        with self._lock:
            self.runs[label].update(now or time.monotonic(), t_s, rounds, passes)
        self._refresh(label)

    def finish(self, label: str, state: str, metrics: dict[str, Any] | None = None) -> None:
        """Run `label` ended: done, partial or not run; a note says so."""
        run = self.runs[label]
        with self._lock:
            run.state = state
            if metrics is not None:
                run.t_s = float(metrics.get("simulated_days", 0.0)) * 86400.0
        if self._bar is not None and label in self._tasks:
            self._bar.update(self._tasks[label], completed=run.t_s, info=state)
        if len(self.order) == 1:
            return  # the command's own summary says it
        if state == "done":
            self.note(f"done: {label}")
        elif state == "partial":
            self.note(f"partial: {label}, stopped after {duration(run.t_s)} simulated")

    def stop_requested(self) -> None:
        """A stop was asked (Ctrl-C): the lines and the live display say so until the runs'
        simulations end. Called from a signal handler: it takes no lock (the code it
        interrupted may hold one) and leaves showing it to the next update."""
        self.stopping = True

    def note(self, text: str) -> None:
        """A line above the live display, or among the progress lines."""
        self.console.print(escape(shown(text)), highlight=False, soft_wrap=True)

    # -- showing it ---------------------------------------------------------------------

    def lines(self, now: float | None = None) -> list[str]:
        """One line per running run, as printed without a terminal."""
        now = now or time.monotonic()
        out = []
        with self._lock:
            for label in self.order:
                run = self.runs[label]
                if run.state != "running":
                    continue
                text = run.text(now, self.stopping)
                out.append(f"progress {label}{self._which(label)}: {text}")
        return out

    def _refresh(self, label: str) -> None:
        if self._bar is None:
            return
        run = self.runs[label]
        if label not in self._tasks:
            return
        with self._lock:
            busy = run.state in ("running", "writing")
            info = run.short(time.monotonic(), self.stopping) if busy else run.state
        self._bar.update(self._tasks[label], completed=run.t_s, info=info)

    def _tick(self) -> None:
        assert self.interval_s is not None
        while not self._done.wait(self.interval_s):
            for line in self.lines():
                self.console.print(shown(line), markup=False, highlight=False, soft_wrap=True)

    def __enter__(self) -> ProgressDisplay:
        if self.live:
            from rich.progress import BarColumn, Progress, TextColumn
            from rich.table import Column

            def cut(max_width: int | None = None) -> Column:
                return Column(no_wrap=True, overflow="ellipsis", max_width=max_width)

            self._bar = Progress(
                TextColumn("{task.description}", table_column=cut(24)),
                BarColumn(bar_width=12),
                TextColumn("{task.fields[info]}", table_column=cut()),
                console=self.console,
                transient=True,
            )
            for label in self.order:
                run = self.runs[label]
                self._tasks[label] = self._bar.add_task(
                    escape(label), total=run.horizon_s or 1.0, info=run.state
                )
            self._bar.start()
        elif self.interval_s is not None:
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._done.set()
        if self._ticker is not None:
            self._ticker.join()
        if self._bar is not None:
            self._bar.stop()
