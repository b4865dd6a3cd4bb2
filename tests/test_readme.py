"""The README's commands work as printed, in order, on a fresh copy.

Every ```sh block of README.md is run, in order, in one bash session in an
empty folder holding only ``configs/``, ``weights/`` (the shipped networks)
and ``.venv`` (as a fresh clone after ``make demo``'s set-up), with short forms: the same commands with tiny sizes
(``SHORT``), and the configs they name made tiny (``TINY_CONFIGS``), so the
whole README runs in about a minute. ``make demo`` runs the Makefile's demo
recipe; ``make test`` and its narrower forms (``make test-fast``) run this
suite and are left out. Blocks of ``$ command``
lines followed by their output (no language) are run and their output
compared. If the README drifts from the code (a renamed option, a folder
that the previous command no longer writes, a traceback), this fails.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # every command of the README, as subprocesses

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

# regex -> replacement, applied to every command line
SHORT = [
    (r"--steps \d+", "--steps 2"),
    (r"--games \d+", "--games 2"),
    (r"--num-games \d+", "--num-games 4"),
    (r"--playouts \d+", "--playouts 4"),
    (r"--concurrency \d+", "--concurrency 2"),
    (r"--generations \d+", "--generations 1"),
    (r"gen-000009", "gen-000001"),
    (r"--batch [\d,]+", "--batch 4"),
    (r"--warmup \d+", "--warmup 0.2"),
    (r"--window \d+", "--window 0.2"),
    (r"--max-windows \d+", "--max-windows 2"),
]
# config file -> {key: value}: every line ``key = ...`` gets the value
TINY_CONFIGS = {
    "selfplay-9x9.toml": {"num_games": "4", "parallel_games": "4", "batch_size": "4", "playouts": "8",
                          "reduce_playouts": "4", "chunk_games": "2"},
    "train-9x9.toml": {"blocks": "1", "channels": "8", "batch_size": "16", "policy_channels": "8",
                       "value_channels": "8", "value_hidden": "16", "warmup": "2", "log_every": "1",
                       "# workers": "0"},
    "loop-7x7.toml": {"games_per_generation": "2", "steps_per_generation": "2", "eval_games": "2",
                      "eval_playouts": "4", "parallel_games": "2", "batch_size": "4", "playouts": "8",
                      "reduce_playouts": "4", "blocks": "1", "channels": "8", "policy_channels": "8",
                      "value_channels": "8", "value_hidden": "16", "workers": "0"},
}


def blocks(text: str) -> list[tuple[str, list[str]]]:
    """(language, lines) of each fenced block, lines with ``\\`` continuations joined."""
    out = []
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", text, re.M | re.S):
        joined = body.replace("\\\n", " ")
        out.append((lang, [line for line in joined.splitlines() if line.strip()]))
    return out


def short_form(line: str) -> str:
    for pattern, repl in SHORT:
        line = re.sub(pattern, repl, line)
    if shutil.which("gnugo") is None and not Path("/usr/games/gnugo").exists():
        line = re.sub(r'"/usr/games/gnugo[^"]*"', '"sayuri-async gtp --playouts 4"', line)  # any GTP engine
    return line


def demo_recipe() -> str:
    make = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^demo:.*\n\t(.+)$", make, re.M).group(1)
    return recipe.replace("$(BIN)/", ".venv/bin/") + " --no-tui"


def test_make_demo_self_plays_the_shipped_network():
    from sayuri_async.net.shipped import SHIPPED

    weights = re.search(r"--weights (\S+)", demo_recipe()).group(1)
    assert ROOT / weights == SHIPPED[9]


def tiny_configs(dst: Path) -> None:
    shutil.copytree(ROOT / "configs", dst)
    for name, values in TINY_CONFIGS.items():
        p = dst / name
        text = p.read_text()
        for key, value in values.items():
            bare = key.lstrip("# ")
            text, n = re.subn(rf"^{re.escape(key)}\s*=.*$", f"{bare} = {value}", text, flags=re.M)
            assert n, f"{name} has no line '{key} = ...' any more: update TINY_CONFIGS"
        p.write_text(text)


def fresh_folder(tmp: Path) -> dict:
    """``tmp`` as a fresh clone after set-up: configs/ and .venv; the env of a new shell."""
    tiny_configs(tmp / "configs")
    (tmp / "weights").symlink_to(ROOT / "weights")  # a clone has the shipped networks
    venv = Path(sys.prefix)
    if (venv / "bin" / "activate").exists():
        (tmp / ".venv").symlink_to(venv)
    else:  # the suite runs outside a virtual environment: an activate that finds the same programs
        (tmp / ".venv" / "bin").mkdir(parents=True)
        (tmp / ".venv" / "bin" / "activate").write_text(f'export PATH="{Path(sys.executable).parent}:$PATH"\n')
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(venv)))
    env.pop("VIRTUAL_ENV", None)
    return env


def script_of(text: str) -> str:
    lines = ["set -eo pipefail"]
    for lang, body in blocks(text):
        if lang != "sh":
            continue
        for line in body:
            command = line.split("  #")[0].strip()
            if re.fullmatch(r"make test(-[\w-]+)?", command):
                continue
            if command == "make demo":
                command = demo_recipe()
            command = short_form(command)
            lines.append(f"echo '+++ {command.replace(chr(39), '')}'")
            lines.append(command)
    return "\n".join(lines) + "\n"


def test_every_sh_block_of_the_readme_runs_in_order(tmp_path):
    text = README.read_text()
    script = script_of(text)
    assert script.count("+++") >= 8, "the README lost its walkthrough"
    env = fresh_folder(tmp_path)
    r = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    last = [line for line in r.stdout.splitlines() if line.startswith("+++")][-1:]
    assert r.returncode == 0, f"README command failed: {last}\n{out[-4000:]}"
    assert "Traceback" not in out, out[-4000:]
    assert (tmp_path / "runs" / "train-9x9" / "weights" / "net-latest.safetensors").is_file()
    assert (tmp_path / "runs" / "train-9x9" / "losses.png").is_file()


def test_the_readmes_printed_sessions_print_what_they_show(tmp_path):
    """Blocks of ``$ command`` and its output: the command prints exactly that (stdout and stderr)."""
    env = fresh_folder(tmp_path)
    sessions = [body for lang, body in blocks(README.read_text()) if not lang and body and body[0].startswith("$ ")]
    assert sessions, "the README shows no error message any more"
    for body in sessions:
        command, shown = body[0][2:], "\n".join(body[1:])
        r = subprocess.run(["bash", "-c", f"source .venv/bin/activate && {command}"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
        assert (r.stdout + r.stderr).strip() == shown, f"{command}: {r.stdout + r.stderr}"
