"""Watching one run of `keras-transformer train`: its phase, and a kill.

`Attempt` starts the command and reads the phase it is in off the lines it
printed, the files of its run folder (partial files, TensorFlow's temporary
checkpoint files) and the corpus file it holds open (/proc, Linux), every
few milliseconds; it kills the process with SIGKILL when its target comes.
Used by `crash_test.py`.
"""

import glob
import os
import re
import subprocess
import threading
import time

PHASES = (
    "start-up",
    "corpus scan",
    "vocabulary",
    "pass count",
    "fit",
    "checkpoint save",
    "best weights",
    "averaging",
    "test scoring",
    "export",
    "results",
)
# Phases of a single short write: a kill aimed at one comes the moment its
# temporary file is seen.
WRITES = ("checkpoint save", "best weights")
# The crash test's quick chain's targets, in the order a run reaches them:
# the three phases that leave a file the next run reads (the vocabulary, a
# checkpoint, the export); the full test aims at every phase.
QUICK_TARGETS = (
    "vocabulary",
    "checkpoint save",
    "export",
)
POLL_S = 0.002
ATTEMPT_TIMEOUT_S = 600


class Attempt:
    """One run of the command, watched, and killed when its target comes.

    `targets` is the chain's list of phases still to hit (consumed here) or
    of moments ("random", seconds); a phase the run got past without
    hitting it is dropped as missed.
    """

    def __init__(self, command, folder, corpus, durations, rng):
        self.folder, self.corpus = folder, os.path.abspath(corpus)
        self.durations, self.rng = durations, rng
        self.lines, self.corpus_opened = [], False
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line)

    def elapsed(self):
        return time.monotonic() - self.started

    def run(self, targets, first_seen=None):
        """Runs until the end or a kill; returns what happened, as a dict."""
        kill_at, missed = None, []
        while self.process.poll() is None:
            phase = self.phase()
            if first_seen is not None:
                first_seen.setdefault(phase, self.elapsed())
            while kill_at is None and targets and _passed(targets[0], phase):
                missed.append(targets.pop(0))
            target = targets[0] if targets else None
            if kill_at is None and target == phase:
                kill_at = time.monotonic() + self._delay(phase)
            if isinstance(target, tuple):  # ("random", moment)
                due = self.elapsed() >= target[1]
            else:  # once aimed, the drawn delay holds even if the phase ends
                due = kill_at is not None and time.monotonic() >= kill_at
            if due:
                self.process.kill()
                self.process.wait()
                targets.pop(0)
                return self._record(target, phase, missed)
            if self.elapsed() > ATTEMPT_TIMEOUT_S:
                self.process.kill()
                raise RuntimeError("a run took longer than ATTEMPT_TIMEOUT_S")
            time.sleep(POLL_S)
        self.process.wait()
        return self._record(None, None, missed)

    def _delay(self, phase):
        if phase in WRITES:
            return 0.0
        return self.rng.uniform(0, self.durations.get(phase, 1.0))

    def _record(self, target, phase, missed):
        time.sleep(0.1)  # the reader thread's last lines
        output = "".join(self.lines)
        resumed = re.search(r"resuming at step (\d+)", output)
        return {
            "target": list(target) if isinstance(target, tuple) else target,
            "phase": phase,
            "seconds": round(self.elapsed(), 2),
            "returncode": self.process.returncode,
            "resumed_at": int(resumed.group(1)) if resumed else 0,
            "planned": "Data:" in output,  # the plan's lines, with its resume step
            "newest_checkpoint": newest_checkpoint(self.folder),
            "missed": [t if isinstance(t, str) else "random" for t in missed],
            "output_tail": output[-2000:] if self.process.returncode else "",
        }

    def phase(self):
        """The phase the run is in now, read off its output and files."""
        output = "".join(self.lines)
        run = os.path.join(self.folder, "run")
        if "Exported the translator" in output:
            return "results"
        if "Test BLEU" in output:
            return "export"
        if "Averaged the last" in output or "are the run's model" in output:
            return "test scoring"
        if "Data:" in output:
            epochs = re.findall(r"Epoch (\d+)/(\d+)\n(.*val_loss)?", output)
            if epochs and epochs[-1][0] == epochs[-1][1] and epochs[-1][2]:
                return "averaging"
            checkpoints = os.path.join(run, "checkpoints")
            names = os.listdir(checkpoints) if os.path.isdir(checkpoints) else []
            if any("_temp" in name or ".tmp" in name for name in names):
                return "checkpoint save"
            if glob.glob(os.path.join(run, ".best.partial-*")):
                return "best weights"
            return "fit"
        if "Held out" in output:
            tokenizer = os.path.join(run, "tokenizer.model")
            return "pass count" if os.path.exists(tokenizer) else "vocabulary"
        self.corpus_opened = self.corpus_opened or self._reading_corpus()
        return "corpus scan" if self.corpus_opened else "start-up"

    def _reading_corpus(self):
        fds = f"/proc/{self.process.pid}/fd"
        try:
            return any(
                os.readlink(os.path.join(fds, fd)) == self.corpus
                for fd in os.listdir(fds)
            )
        except OSError:  # the process ended, or a descriptor closed meanwhile
            return False


def _passed(target, phase):
    """Whether a run now in `phase` is past the phase `target`."""
    if isinstance(target, tuple):
        return False
    return PHASES.index(phase) > PHASES.index(target)


def newest_checkpoint(folder):
    """The step of the newest complete checkpoint (its state file), or 0."""
    state = os.path.join(folder, "run", "checkpoints", "checkpoint")
    if not os.path.exists(state):
        return 0
    with open(state, encoding="utf-8") as file:
        found = re.search(r'^model_checkpoint_path: ".*-(\d+)"', file.read(), re.M)
    return int(found.group(1)) if found else 0
