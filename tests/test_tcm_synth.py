"""The synthetic TCM-SD fixture: official shape and split rule, labelled synthetic, seeded."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path

import pytest

from clineval.benchmarks.tcm_sd.dataset import find_split, read_records, read_vocab
from clineval.benchmarks.tcm_sd.norm import load_norm_table
from clineval.benchmarks.tcm_sd.synthetic import class_sizes, write_synthetic


def _vocab(data_root: Path) -> list[str]:
    path = data_root / "tcm-sd" / "zy-bert" / "syndrome_vocab.txt"
    if not path.is_file():
        pytest.skip("TCM-SD label files not available")
    return read_vocab(path)


def test_full_size_class_sizes_follow_the_official_split_rule(data_root: Path) -> None:
    vocab = _vocab(data_root)
    sizes = class_sizes(vocab, random.Random(0), scale=1.0)
    assert sorted(sizes.labels) == sorted(vocab)
    assert (sum(sizes.train), sum(sizes.dev), sum(sizes.n)) == (43_180, 5_486, 54_152)
    assert all(d == math.ceil(n / 10) for n, d in zip(sizes.n, sizes.dev, strict=True))
    assert min(sizes.n) == 11  # the release's smallest classes have 11 records
    assert max(sizes.n) > 100 * min(sizes.n)  # heavy-tailed
    assert sizes.labels[0] == "气虚血瘀证"  # the authors' most frequent syndrome leads


@pytest.fixture(scope="module")
def small(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    _vocab(data_root)
    out = tmp_path_factory.mktemp("synth")
    write_synthetic(out, seed=5, data_dir=data_root, scale=0.06)
    return out


def test_small_fixture_files_records_and_split(small: Path, data_root: Path) -> None:
    vocab = _vocab(data_root)
    folder = small / "tcm-sd"
    names = sorted(p.name for p in folder.iterdir())
    assert names == [
        "SYNTHETIC_README.md",
        "dev.synthetic.json",
        "syndrome_vocab.txt",
        "test.synthetic.json",
        "train.synthetic.json",
    ]
    assert read_vocab(folder / "syndrome_vocab.txt") == vocab
    assert "SYNTHETIC" in (folder / "SYNTHETIC_README.md").read_text()
    splits = {s: read_records(find_split(small, s)[0], vocab) for s in ("train", "dev", "test")}
    assert all(find_split(small, s)[1] for s in splits)  # found as synthetic
    per = {s: Counter(r.label for r in rs) for s, rs in splits.items()}
    total = per["train"] + per["dev"] + per["test"]
    assert set(total) == set(vocab)
    for label, n in total.items():
        assert n >= 11
        assert per["dev"][label] == per["test"][label] == math.ceil(n / 10)
    for records in splits.values():
        assert all(r.synthetic and r.user_id.startswith("synthetic-") for r in records)
    # raw syndromes vary through the normalization table, like the release, and every record's
    # label is the table applied to its raw syndrome and disease (SUB_MERGE included)
    table = load_norm_table(data_root / "tcm-sd" / "zy-bert" / "syndrome.utf8.csv")
    every = [r for records in splits.values() for r in records]
    assert all(table.normalize(r.syndrome, r.lcd_name) == r.label for r in every)
    assert sum(r.syndrome != r.label for r in every) > 50
    # a few dev rows are copies of train rows (the release has 19 shared user_ids)
    train_ids = {r.user_id for r in splits["train"]}
    assert 0 < sum(r.user_id in train_ids for r in splits["dev"]) <= 19


def test_same_seed_same_bytes_other_seed_other_data(
    small: Path, data_root: Path, tmp_path: Path
) -> None:
    write_synthetic(tmp_path / "again", seed=5, data_dir=data_root, scale=0.06)
    write_synthetic(tmp_path / "other", seed=6, data_dir=data_root, scale=0.06)
    for split in ("train", "dev", "test"):
        name = f"tcm-sd/{split}.synthetic.json"
        assert (small / name).read_bytes() == (tmp_path / "again" / name).read_bytes()
        assert (small / name).read_bytes() != (tmp_path / "other" / name).read_bytes()


def test_text_is_learnable_but_not_trivially_separable(small: Path, data_root: Path) -> None:
    """A trained classifier beats chance by far, yet is far from perfect."""
    from clineval.benchmarks.tcm_sd.baselines import TfidfBaseline, record_text

    vocab = _vocab(data_root)
    train = read_records(small / "tcm-sd" / "train.synthetic.json", vocab)
    test = read_records(small / "tcm-sd" / "test.synthetic.json", vocab)
    model = TfidfBaseline().fit([record_text(r) for r in train], [str(r.label) for r in train])
    pred = model.predict([record_text(r) for r in test])
    accuracy = sum(p == r.label for p, r in zip(pred, test, strict=True)) / len(test)
    assert 10 / len(vocab) < accuracy < 0.9
    row = json.loads((small / "tcm-sd" / "train.synthetic.json").read_text().splitlines()[0])
    assert row["synthetic"] is True and set(row) >= {"user_id", "norm_syndrome", "detection"}


@pytest.mark.slow
def test_cli_writes_the_full_size_fixture(data_root: Path, tmp_path: Path) -> None:
    from clineval.cli import main

    _vocab(data_root)
    out = tmp_path / "full"
    argv = ["data", "synth", "tcm-sd", "--out", str(out), "--data-dir", str(data_root)]
    assert main(argv) == 0
    counts = {
        split: len((out / "tcm-sd" / f"{split}.synthetic.json").read_text().splitlines())
        for split in ("train", "dev", "test")
    }
    assert counts == {"train": 43_180, "dev": 5_486, "test": 5_486}
    small = tmp_path / "small"
    assert main([*argv[:4], str(small), "--data-dir", str(data_root), "--scale", "0.06"]) == 0
    # at scale s the fixture's dev and test splits hold max(2 x 148, round(5,486 s)) records
    # (class_sizes): round(5,486 x 0.06) = 329
    assert len((small / "tcm-sd" / "test.synthetic.json").read_text().splitlines()) == 329
    assert main([*argv[:4], str(small), "--scale", "0"]) == 2
