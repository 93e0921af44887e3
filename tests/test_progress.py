"""``routeplan.cli.progress``: progress reports (the library's on_step callbacks; the CLI's bar)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from datetime import date

import numpy as np

from routeplan.cli.main import main
from routeplan.planning.registry import get_strategy

# ---- progress: the library's callbacks, the CLI's bar


def test_simulate_and_compare_report_each_slot():
    from routeplan.simulation.events import zipf_stream
    from routeplan.simulation.replay import compare, simulate

    stream = zipf_stream(1_000, 50, 1.0)
    steps: list[int] = []
    simulate(stream, "kg", np.ones(3), report_every=100, on_step=steps.append)
    assert steps == [100] * 10
    steps.clear()
    compare(stream, ["kg", "pkg"], np.ones(3), report_every=300, on_step=steps.append)
    assert steps == [300, 300, 300, 100] * 2


def test_generate_reports_each_file(tmp_path):
    from routeplan.simulation.generate import GeneratorConfig, generate

    config = GeneratorConfig(
        landing=tmp_path / "landing",
        workers_out=tmp_path / "w.json",
        day=date(2026, 11, 20),
        streams=("a", "b"),
        events=1_000,
        keys=50,
        files_per_stream=4,
    )
    steps: list[int] = []
    generate(config, on_step=steps.append)
    assert steps == [250] * 8


def test_binpack_replay_reports_each_iteration():
    from routeplan.planning.partitions.consumers import ConsumerNames
    from routeplan.planning.partitions.replay import replay_strategy

    steps: list[int] = []
    rates = np.ones((5, 4))
    strategy = get_strategy("ffd", consumer_capacity=10.0)
    replay_strategy(strategy, rates, ConsumerNames([]), on_step=steps.append)
    assert steps == [1] * 5


def test_no_progress_output_when_stderr_is_not_a_terminal(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ROUTEPLAN_HOME", str(tmp_path))
    sim = ["simulate", "--events", "zipf:messages=5000,keys=100", "--workers", "3"]
    assert main([*sim, "--strategy", "kg"]) == 0
    gen = ["generate", "--events", "500", "--keys", "20", "--streams", "a"]
    assert main(gen) == 0
    assert capsys.readouterr().err == ""


def run_on_a_terminal(argv: list[str]) -> str:
    """``routeplan argv`` with stderr on a pseudo-terminal; what it wrote there."""
    leader, follower = pty.openpty()
    script = "import sys; from routeplan.cli.main import main; sys.exit(main())"
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm"}
    done = subprocess.run(
        [sys.executable, "-c", script, *argv],
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env=env,
        timeout=120,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal has no writer left
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert done.returncode == 0
    return b"".join(chunks).decode(errors="replace")


def test_a_bar_on_a_terminal_unless_no_progress_or_json():
    argv = ["simulate", "--events", "zipf:messages=300000,keys=1000", "--workers", "4"]
    argv += ["--strategy", "pkg"]
    assert "simulate pkg" in run_on_a_terminal(argv)
    assert run_on_a_terminal([*argv, "--no-progress"]) == ""
    assert run_on_a_terminal([*argv, "--json"]) == ""
