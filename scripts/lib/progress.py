"""Progress of a script's long steps on stderr, in the format of iclab's own (framework/core/progress.hpp, docs/cli.md
"Progress"; issue 44: every step longer than ~10 s says so): "WHO: WHAT (at 12 s)" when a stage starts, and, inside a
loop, "WHO: 3 of 6 pairs (0.4 per s, about 8 s left)" at most every `interval` seconds and at the last item. stderr only:
stdout stays the script's output (a table other scripts parse). quiet=True prints nothing."""
import sys
import time


class Progress:
    def __init__(self, who, quiet=False, interval=5.0, stream=None):
        self.who, self.quiet, self.interval = who, quiet, interval
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.monotonic()
        self.loop_start = self.last = self.start

    def elapsed(self):
        return time.monotonic() - self.start

    def say(self, text):
        if not self.quiet:
            print(f"{self.who}: {text}", file=self.stream, flush=True)

    def stage(self, what):
        """A stage starts: said at once, with the time since the script started."""
        self.loop_start = self.last = time.monotonic()
        self.say(f"{what} (at {self.elapsed():.0f} s)")

    def tick(self, done, total, unit):
        """`done` of `total` items of the current stage are finished: said every `interval` seconds and at the end."""
        now = time.monotonic()
        if done < total and now - self.last < self.interval:
            return
        self.last = now
        spent = now - self.loop_start
        rate = done / spent if spent > 0 else float("inf")
        left = (total - done) / rate if done and rate > 0 else float("nan")
        tail = f"{rate:.2g} per s, about {left:.0f} s left" if done < total and left == left else f"{spent:.0f} s"
        self.say(f"{done} of {total} {unit} ({tail})")
