"""Training config files: the shipped ones load; unknown keys and bad values are
refused with the file and the key named."""
from __future__ import annotations

from pathlib import Path

import pytest

from sayuri_async.train.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["train-9x9.toml", "train-19x19.toml"])
def test_shipped_configs_load(name):
    cfg = load_config(ROOT / "configs" / name)
    assert cfg.model["input_planes"] == 25  # simple-v1
    assert cfg.optim.batch_size % 8 == 0  # splits over 1, 2, 4 or 8 GPUs


def test_shipped_sayuri_config_describes_a_sayuri_network_and_the_go_schedule():
    cfg = load_config(ROOT / "configs" / "sayuri-train-19x19.toml")
    assert (cfg.model["architecture"], cfg.model["encoder"], cfg.model["input_planes"]) == ("sayuri", "sayuri-v3", 43)
    assert len(cfg.model["blocks"]) == 10 and cfg.model["channels"] == 128
    sc = cfg.schedule
    assert (sc.reference_batch, sc.boundaries, sc.rates, sc.total, sc.lr_scaling) == (
        128, [512_000, 1_024_000, 1_536_000, 2_048_000], [0.005, 0.0025, 0.001, 0.0005, 0.0003], 2_560_000,
        "inverse-keep-steps")


def test_defaults_equal_the_documented_9x9_file():
    """Every key in configs/train-9x9.toml states its default: the file must equal an empty config."""
    from sayuri_async.net.model import NetConfig
    from sayuri_async.train.config import from_dict

    shipped = load_config(ROOT / "configs" / "train-9x9.toml").to_dict()
    defaults = from_dict({}).to_dict()
    assert NetConfig.from_dict(shipped.pop("model")) == NetConfig.from_dict(defaults.pop("model"))
    assert shipped == defaults


def _write(tmp_path, text: str) -> Path:
    p = tmp_path / "t.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("text, pattern", [
    ("[optim]\nbatchsize = 128\n", r"t\.toml: \[optim\] batchsize: unknown key"),
    ("[optim]\nbatch_size = '128'\n", r"\[optim\] batch_size: must be a whole number"),
    ("[optim]\nbatch_size = 0\n", r"\[optim\] batch_size: must be at least 1"),
    ("[optim]\noptimizer = 'adam'\n", r"\[optim\] optimizer: must be one of 'sgd', 'adamw'"),
    ("[data]\nsymmetries = 1\n", r"\[data\] symmetries: must be true or false"),
    ("[schedule]\nrates = [0.1]\n", r"\[schedule\] rates: needs exactly one more entry"),
    ("[schedule]\nboundaries = [3, 2, 5, 9]\n", r"\[schedule\] boundaries: must be strictly increasing"),
    ("[loss]\nscore = -1\n", r"\[loss\] score: must be a finite weight"),
    ("[model]\nblockz = 4\n", r"\[model\] blockz: unknown key"),
    ("[model]\nblocks = 'six'\n", r"\[model\] blocks: must be a whole number"),
    ("[model]\ninput_planes = 18\n", r"\[model\] input_planes: is 18 but encoder 'simple-v1' makes 25"),
    ("[model]\nencoder = 'nope'\n", r"\[model\] encoder: unknown encoder"),
    ("[trainer]\nx = 1\n", r"t\.toml: unknown section \[trainer\]"),
    ("[data]\nboard_size = 21\n", r"\[data\] board_size: 21 is outside"),
    ("[optim\n", r"t\.toml: not valid TOML"),
    ("[model]\narchitecture = 'sayuri'\nblocks = 0\n", r"\[model\] blocks: must be between 1 and 64"),
    ("[model]\narchitecture = 'sayuri'\nversion = 2\n", r"\[model\] version: must be 3, 4 or 5"),
    ("[model]\narchitecture = 'sayuri'\nencoder = 'simple-v1'\n", r"\[model\] encoder: unknown key"),
    ("[model]\narchitecture = 'sayuri'\nactivation = 'tanh'\n", r"\[model\] activation: must be one of"),
    ("[model]\narchitecture = 'sayuri'\ninner = 8\n", r"\[model\] inner: applies to bottleneck blocks only"),
    ("[model]\narchitecture = 'sayuri'\nse = -1\n", r"\[model\] se: must be 0"),
    ("[schedule]\nlr_scaling = 'double'\n", r"\[schedule\] lr_scaling: must be one of 'linear', 'sqrt', 'inverse'"),
])
def test_bad_files_name_the_file_and_key(tmp_path, text, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_config(_write(tmp_path, text))


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "absent.toml")


def test_command_line_overrides_are_range_checked(capsys):
    """``override`` (the trainer's --workers, --device ...) runs the section's range checks."""
    from sayuri_async.train.cli import main
    from sayuri_async.train.config import override

    path = ROOT / "configs" / "train-9x9.toml"
    cfg = load_config(path)
    workers = cfg.data.workers
    with pytest.raises(ConfigError, match=r"^--workers: must be 0 \(read in the training"):
        override(cfg, "data", "workers", -1)
    assert cfg.data.workers == workers  # a refused value leaves the config as it was
    override(cfg, "data", "workers", 0)
    assert cfg.data.workers == 0
    assert main(["--config", str(path), "--device", "tpu"]) == 2
    assert "sayuri-async train: --device: must be auto, cpu, cuda or cuda:N" in capsys.readouterr().err
