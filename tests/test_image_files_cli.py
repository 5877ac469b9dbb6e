"""``--dataset mnist | fashion-mnist | cifar10 --data-dir DIR`` of ``dyntools sweep adamw-grid`` and
``dyntools simulate deep-nets``: runs on small files in the published formats; a missing or damaged file is
one line on stderr naming it, exit 2, nothing written."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dyntools import cli, store
from simulations import deep_nets as dn
from tests.test_image_files import write_cifar, write_idx_set

GRID = ["--lr-grid", "1e-3:1e-2:2", "--wd-grid", "1e-4:1e-2:2", "--n", "40", "--n-val", "20", "--epochs", "2",
        "--hidden", "8,8", "--batch-size", "16", "--workers", "1"]
DEEP = ["--n-train", "40", "--n-test", "20", "--width", "8", "--depth", "2", "--steps", "20", "--batch", "8",
        "--seeds", "1", "--records", "2", "--sparsity-examples", "20", "--decay-at", "0.5"]


def test_the_heatmap_sweep_trains_on_a_seeded_subset_of_mnist_files(tmp_path, capsys):
    write_idx_set(tmp_path / "mnist", n_train=60, n_test=30, gz=True)
    out = tmp_path / "grid"
    args = ["sweep", "adamw-grid", "--dataset", "mnist", "--data-dir", str(tmp_path / "mnist"), *GRID,
            "--seed", "1", "--out", str(out), "--json"]
    assert cli.main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["computed"] == 8 and set(summary["optimizers"]) == {"adam", "adamw"}
    res = store.load(out)
    assert res.config["dataset"] == "mnist" and res.config["classes"] == 10 and res.config["n"] == 40
    assert np.all((0 <= res["val_acc"]) & (res["val_acc"] <= 1))
    assert cli.main(args) == 0 and json.loads(capsys.readouterr().out)["reused"] == 8


def test_deep_nets_train_the_mlp_on_cifar_batches_with_shifted_colour_images(tmp_path, capsys):
    write_cifar(tmp_path / "c", per_batch=10, n_test=25)
    out = tmp_path / "deep"
    assert cli.main(["simulate", "deep-nets", "--dataset", "cifar10", "--data-dir", str(tmp_path / "c"), *DEEP,
                     "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "completed" and len(summary["table"]) == 4
    res = store.load(out)
    assert res.config["dataset"] == "cifar10" and res.config["widths"] == [3072, 8, 8, 10]
    assert res.config["n_train"] == 40 and res.config["n_test"] == 20


def test_shifts_move_every_colour_channel_alike():
    rng = np.random.default_rng(0)
    X = rng.random((4, 3 * 32 * 32))
    out = dn.shift_images(X, 1, -2, side=32, channels=3).reshape(4, 3, 32, 32)
    img = X.reshape(4, 3, 32, 32)
    np.testing.assert_array_equal(out[:, :, :30, 1:], img[:, :, 2:, :31])
    assert not out[:, :, 30:, :].any() and not out[:, :, :, 0].any()


@pytest.mark.parametrize("command", [["sweep", "adamw-grid", *GRID], ["simulate", "deep-nets", *DEEP]])
@pytest.mark.parametrize("dataset, setup, needle", [
    ("mnist", None, "Invalid data_dir: None"),
    ("mnist", "missing", "t10k-images-idx3-ubyte (or t10k-images-idx3-ubyte.gz) missing"),
    ("fashion-mnist", "magic", "train-labels-idx1-ubyte: magic number 0x00000803, expected 0x00000801"),
    ("cifar10", "truncated", "test_batch: not a readable batch"),
])
def test_a_missing_or_damaged_file_is_one_line_exit_2_nothing_written(tmp_path, capsys, command, dataset, setup,
                                                                         needle):
    d = tmp_path / "files"
    d.mkdir()
    if dataset == "cifar10":
        write_cifar(d)
        (d / "test_batch").write_bytes((d / "test_batch").read_bytes()[:100])
    else:
        write_idx_set(d)
        if setup == "missing":
            (d / "t10k-images-idx3-ubyte").unlink()
        elif setup == "magic":
            (d / "train-labels-idx1-ubyte").write_bytes((d / "train-images-idx3-ubyte").read_bytes())
    out = tmp_path / "out"
    where = [] if setup is None else ["--data-dir", str(d)]
    assert cli.main([*command, "--dataset", dataset, *where, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_data_dir_without_an_image_set_and_the_resnet_on_images_are_refused(tmp_path, capsys):
    write_idx_set(tmp_path)
    assert cli.main(["simulate", "deep-nets", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "Invalid data_dir" in capsys.readouterr().err
    assert cli.main(["simulate", "deep-nets", "--arch", "resnet", "--dataset", "mnist", "--data-dir", str(tmp_path),
                     "--out", str(tmp_path / "o")]) == 2
    assert "Invalid arch: resnet reads the 8x8 digits only" in capsys.readouterr().err
    assert cli.main(["sweep", "adamw-grid", *GRID, "--data-dir", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "Invalid data_dir" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_the_bench_row_is_the_heatmap_mlp_on_an_mnist_sized_epoch():
    from dyntools.bench import benchmarks, image_epoch
    from simulations.adamw_heatmaps import AdamWGridParams

    assert benchmarks()["image-epoch"] is image_epoch.BENCHMARK
    p = AdamWGridParams()
    assert image_epoch.HIDDEN == p.hidden and image_epoch.BATCH == p.batch_size
    model, X, y, theta0, batches = image_epoch.workload(640)
    assert model.widths == (784, *p.hidden, 10) and X.shape == (640, 784) and batches.shape == (10, 64)
    assert set(np.unique(batches)) == set(range(640))                 # one epoch: every image once
    report = image_epoch.run(quick=True)
    m = report.measurements
    assert m["images"] == 6000 and m["steps (batch 64)"] == 93 and m["dyntools seconds per epoch"] > 0
    try:
        import torch  # noqa: F401
    except ImportError:
        assert not report.targets and any("torch not installed" in n for n in report.notes)
    else:
        assert report.targets[0].name.startswith("image-epoch: PyTorch CPU seconds")


def test_a_gzip_bomb_is_one_line_naming_the_file_and_the_limit_exit_2_nothing_written(tmp_path, capsys):
    import gzip
    import struct

    d = tmp_path / "files"
    write_idx_set(d, gz=True)
    head = bytes([0, 0, 8, 3]) + struct.pack(">3I", 2**32 - 1, 28, 28)      # declares 3.4 TB, holds 784 bytes
    (d / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(head + bytes(784)))
    out = tmp_path / "out"
    assert cli.main(["sweep", "adamw-grid", *GRID, "--dataset", "mnist", "--data-dir", str(d), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "train-images-idx3-ubyte.gz: its header declares" in err and "of memory available (the limit)" in err
    assert not out.exists()
