"""`ner.chunking=ncer`: the label prompts in the order NCER's extractor gives them, per hash seed.

NCER's rule, restated from its code (`models/gliner_extractor.py`): for every piece of text it
prompts `list(set(label_normalization_map.keys()))`, the map being its config's
`label_normalization_map[DATASET]` as `json.load` reads it (keys in the file's order). The set's
iteration order depends on the process's PYTHONHASHSEED and on the order the keys went in. The
oracle below runs exactly that in a fresh interpreter per seed; clineval's order comes from the
run's options (`ner.labels` in the config's order, `ner.hash_seed`), as a run builds it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clineval.benchmarks.base import RunContext
from clineval.benchmarks.ner.gliner_tagger import ncer_label_order
from clineval.benchmarks.ner.records import DATASET_TYPES
from clineval.benchmarks.ner.span_tagger import settings_record, tagger_settings
from clineval.config import RunConfig
from clineval.errors import InputError
from clineval.models.spec import ModelSpec
from clineval.store import RunStore

# The label maps of NCER's GLiNER configs (data/inputs/inference_configs/*/config.json, the same
# in every GLiNER row), as JSON text in the files' key order.
NCER_LABEL_MAPS = (
    '{"NCBI": {"disease": "condition", "medical condition": "condition"}, '
    '"CHIA": {"drug": "drug", "chemical": "drug", "medical condition": "condition", '
    '"disease": "condition", "procedure": "procedure", "measurement": "measurement"}, '
    '"BIORED": {"drug": "drug", "chemical": "drug", "medical condition": "condition", '
    '"disease": "condition", "gene": "gene", "gene variant": "gene variant"}, '
    '"BC5CDR": {"drug": "drug", "chemical": "drug", "medical condition": "condition", '
    '"disease": "condition"}}'
)
DATASETS = {"NCBI": "ncbi", "CHIA": "chia", "BIORED": "biored", "BC5CDR": "bc5cdr"}
# NCER's extractor, per dataset: list(set(label_normalization_map.keys())), in its own process
_NCER_SCRIPT = (
    "import json, sys\n"
    "maps = json.loads(sys.stdin.read())\n"
    "print(json.dumps({name: list(set(m.keys())) for name, m in maps.items()}))\n"
)


def _ncer_orders(seed: int) -> dict[str, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONHASHSEED"] = str(seed)
    done = subprocess.run(
        [sys.executable, "-S", "-c", _NCER_SCRIPT],  # -S: the standard library only
        input=NCER_LABEL_MAPS,
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    orders: dict[str, list[str]] = json.loads(done.stdout)
    return orders


def _labels_option(name: str) -> str:
    """`ner.labels` with the config's label texts in the config's order."""
    label_map = json.loads(NCER_LABEL_MAPS)[name]
    return ",".join(f"{t}:{text}" for text, t in label_map.items())


def _ctx(tmp_path: Path, options: dict[str, str]) -> RunContext:
    config = RunConfig(tasks=["ner:chia"], model="gliner:model", options=options)
    return RunContext(
        config=config,
        store=RunStore.in_dir(tmp_path),
        output_dir=tmp_path,
        data_root=None,
        model=ModelSpec.parse(config.model),
    )


# 100 seeds in all (a 200-seed sweep found no difference either); the first 25 in the quick
# suite. The old rule (texts grouped by type) gave another order than NCER's for about one seed
# in ten on CHIA and BioRED.
@pytest.mark.parametrize(
    "seeds",
    [
        pytest.param(range(25), id="seeds-0-24"),
        pytest.param(range(25, 100), id="seeds-25-99", marks=pytest.mark.slow),
    ],
)
def test_label_order_is_ncers_for_every_seed(tmp_path: Path, seeds: range) -> None:
    differences = []
    grouped_differs = 0
    for seed in seeds:
        expected = _ncer_orders(seed)
        for name in ("CHIA", "BIORED"):
            options = {
                "ner.chunking": "ncer",
                "ner.labels": _labels_option(name),
                "ner.hash_seed": str(seed),
            }
            settings = tagger_settings(_ctx(tmp_path, options), DATASET_TYPES[DATASETS[name]])
            if list(settings.label_order) != expected[name]:
                differences.append((seed, name, settings.label_order, expected[name]))
            assert settings_record(settings)["label_order"] == list(settings.label_order)
            # the same texts grouped by type (the old insertion history) order otherwise for
            # some seeds: the check above can fail
            grouped = [
                text
                for t in DATASET_TYPES[DATASETS[name]]
                for text, of in json.loads(NCER_LABEL_MAPS)[name].items()
                if of == t
            ]
            grouped_differs += ncer_label_order(grouped, seed) != expected[name]
    assert differences == []
    assert grouped_differs > 0


def test_one_option_for_several_datasets_keeps_each_datasets_history(tmp_path: Path) -> None:
    """A run of BC5CDR, BioRED and CHIA with one `ner.labels`: each dataset takes its own types'
    texts in the option's order, which is each config's order."""
    combined = (
        "drug:drug,drug:chemical,condition:medical condition,condition:disease,gene:gene,"
        "gene variant:gene variant,procedure:procedure,measurement:measurement"
    )
    for seed in range(10):
        expected = _ncer_orders(seed)
        for name in ("CHIA", "BIORED", "BC5CDR"):
            options = {"ner.chunking": "ncer", "ner.labels": combined, "ner.hash_seed": str(seed)}
            settings = tagger_settings(_ctx(tmp_path, options), DATASET_TYPES[DATASETS[name]])
            assert list(settings.label_order) == expected[name], (seed, name)


_IN_PROCESS = """
import json, sys
from pathlib import Path
from clineval.benchmarks.base import RunContext
from clineval.benchmarks.ner.records import DATASET_TYPES
from clineval.benchmarks.ner.span_tagger import tagger_settings
from clineval.config import RunConfig
from clineval.models.spec import ModelSpec
from clineval.store import RunStore

out = {}
for dataset, labels in json.loads(sys.argv[1]).items():
    config = RunConfig(tasks=["ner:" + dataset], model="gliner:m",
                       options={"ner.chunking": "ncer", "ner.labels": labels})
    where = Path(sys.argv[2])
    ctx = RunContext(config=config, store=RunStore.in_dir(where), output_dir=where,
                     data_root=None, model=ModelSpec.parse("gliner:m"))
    out[dataset] = list(tagger_settings(ctx, DATASET_TYPES[dataset]).label_order)
print(json.dumps(out))
"""


@pytest.mark.parametrize("seed", [4, 57, 1234567])
def test_without_a_seed_option_the_order_is_the_process_own(tmp_path: Path, seed: int) -> None:
    """No `ner.hash_seed`: the order of clineval's own process, i.e. NCER's under the
    PYTHONHASHSEED clineval was started with."""
    labels = {DATASETS[name]: _labels_option(name) for name in DATASETS}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    env["PYTHONHASHSEED"] = str(seed)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run(
        [sys.executable, "-c", _IN_PROCESS, json.dumps(labels), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    expected = _ncer_orders(seed)
    assert json.loads(done.stdout) == {DATASETS[name]: expected[name] for name in DATASETS}


def test_label_texts_of_any_kind_survive_the_other_process() -> None:
    texts = ["drug", "é\u0301", "\udcff", "a\nb", '"quoted"', "漢字", "", "drug"]
    for seed in (0, 1, 99):
        order = ncer_label_order(texts, seed)
        assert sorted(order) == sorted(set(texts))


def test_hash_seed_refused_without_ncer_chunking(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"ner\.hash_seed .* only with --option ner\.chunking"):
        tagger_settings(_ctx(tmp_path, {"ner.hash_seed": "3"}), DATASET_TYPES["chia"])


@pytest.mark.parametrize(
    ("value", "problem"),
    [("-1", "must be >= 0"), ("4294967296", "must be <= 4294967295"), ("x", "not an integer")],
)
def test_hash_seed_bounds_are_pythonhashseeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, problem: str
) -> None:
    from clineval.cli import main

    argv = ["run", "ner:chia", "--model", "gliner:model", "-o", str(tmp_path / "r")]
    assert main([*argv, "--option", "ner.chunking=ncer", "--option", f"ner.hash_seed={value}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: --option ner.hash_seed={value!r}: ")
    assert problem in err
    assert not (tmp_path / "r").exists()
