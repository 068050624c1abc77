"""Python results a researcher can read and a type checker can check: each benchmark's metrics
view follows its declared schema, `dir()` offers the metric names, a `RunResult` shows its
headline numbers printed and in a notebook, long-form frames have one row per span / per
case x criterion / per sample, and a development install is seen by mypy."""

from __future__ import annotations

import importlib
import inspect
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import clineval
from clineval.benchmarks.clinconsensus import ClinConsensusMetricsView
from clineval.benchmarks.clinconsensus.cases import fixture_path
from clineval.benchmarks.declaration import Benchmark
from clineval.benchmarks.head_to_head import HeadToHeadMetricsView
from clineval.benchmarks.healthbench import HealthBenchMetaEvalMetricsView, HealthBenchMetricsView
from clineval.benchmarks.ner import NerMetricsView
from clineval.benchmarks.registry import benchmark_of
from clineval.benchmarks.results_view import MetricsView, attribute_key, view_attributes
from clineval.benchmarks.tcm_sd import TcmSdMetricsView
from clineval.errors import InputError
from clineval.metrics.schema import MetricSchema

REPO = Path(__file__).resolve().parents[1]
VIEWS = {  # each family's view, by the family's first task
    "ner:ncbi": NerMetricsView,
    "tcm-sd": TcmSdMetricsView,
    "clinconsensus": ClinConsensusMetricsView,
    "healthbench": HealthBenchMetricsView,
    "healthbench:meta-eval": HealthBenchMetaEvalMetricsView,
    "head-to-head": HeadToHeadMetricsView,
}


def _by_the_rule(schema: MetricSchema) -> dict[str, str]:
    """The annotations clineval.benchmarks.results_view's rule gives a view of `schema`."""
    expected: dict[str, str] = {}
    for spec in schema.metrics:
        expected[attribute_key(spec.key)] = "int | None" if spec.count else "float | None"
    for spec in schema.metrics:
        if not spec.count:
            expected[attribute_key(spec.key) + "_ci"] = "tuple[float, float] | None"
    for table in schema.tables:
        expected[table] = "dict[str, Any]"
    return expected


def _views_by_family(package: ModuleType, families: list[Benchmark]) -> dict[str, type]:
    """The views `package` exports, one per family it declares, each matched to its family by
    the rule (keyed by the family's first task); a view missing, one too many or one that
    fits no family's schema is an AssertionError."""
    views = [
        value
        for value in vars(package).values()
        if inspect.isclass(value) and issubclass(value, MetricsView) and value is not MetricsView
    ]
    assert len(views) == len(families), (package.__name__, views)
    found = {}
    for bench in families:
        fits = [view for view in views if view_attributes(view) == _by_the_rule(bench.metrics)]
        assert len(fits) == 1, (bench.family, fits)
        found[bench.tasks[0]] = fits[0]
    return found


def test_every_built_in_benchmark_exports_one_view_per_family() -> None:
    """A built-in package exports one view per family it declares (HealthBench's package
    declares two)."""
    from clineval.benchmarks.registry import benchmarks

    packages: dict[str, list[Benchmark]] = {}
    for bench in benchmarks():
        module = type(bench.task(bench.tasks[0])).__module__
        if module.startswith("clineval.benchmarks."):  # a plugin may offer none
            packages.setdefault(module.rsplit(".", 1)[0], []).append(bench)
    found = {}
    for name, families in packages.items():
        found.update(_views_by_family(importlib.import_module(name), families))
    assert found == VIEWS


def test_a_package_with_a_view_missing_or_extra_fails() -> None:
    """The check above can fail: HealthBench's package with one of its two views, or with a
    third, is refused; with its two, each is matched to its own family."""
    families = [b for b in map(benchmark_of, ("healthbench", "healthbench:meta-eval")) if b]
    assert len(families) == 2
    both = {"A": HealthBenchMetricsView, "B": HealthBenchMetaEvalMetricsView}

    def package(**views: type) -> ModuleType:
        module = ModuleType("fake_healthbench")
        vars(module).update(views, MetricsView=MetricsView)  # the base is no view
        return module

    assert _views_by_family(package(**both), families) == {
        "healthbench": HealthBenchMetricsView,
        "healthbench:meta-eval": HealthBenchMetaEvalMetricsView,
    }
    for views in ({"A": HealthBenchMetricsView}, {**both, "C": TcmSdMetricsView}):
        with pytest.raises(AssertionError):
            _views_by_family(package(**views), families)
    # two views, but one fits neither family
    with pytest.raises(AssertionError):
        _views_by_family(package(A=HealthBenchMetricsView, C=TcmSdMetricsView), families)


@pytest.mark.parametrize("task", sorted(VIEWS))
def test_each_view_is_its_benchmarks_schema_by_the_rule(task: str) -> None:
    bench = benchmark_of(task)
    assert bench is not None
    assert view_attributes(VIEWS[task]) == _by_the_rule(bench.metrics)


def test_the_plugin_template_view_follows_its_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin template's view, by the same rule (imported from its folder)."""
    monkeypatch.syspath_prepend(str(REPO / "examples" / "plugin-benchmark"))
    import clineval_example_mcq as mcq

    assert view_attributes(mcq.McqMetricsView) == _by_the_rule(mcq.METRICS)


def _verdicts(path: Path) -> tuple[Path, dict[tuple[str, str], bool | None]]:
    """Verdicts for every criterion of every SYNTHETIC fixture case (some met, some not, one
    null), and the same as {(case, criterion): met}: the oracle of the long rows."""
    truth: dict[tuple[str, str], bool | None] = {}
    with path.open("w", encoding="utf-8") as out:
        for i, line in enumerate(fixture_path().read_text(encoding="utf-8").splitlines()):
            case = json.loads(line)
            for j, rubric in enumerate(case["rubrics"]):
                met = None if (i, j) == (0, 0) else (i + j) % 3 != 0
                truth[case["case_id"], rubric["criterion_id"]] = met
                row = {"case_id": case["case_id"], "criterion_id": rubric["criterion_id"]}
                out.write(json.dumps({**row, "criteria_met": met}) + "\n")
    return path, truth


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> tuple[clineval.RunResult, Any]:
    base = tmp_path_factory.mktemp("judged")
    verdicts, truth = _verdicts(base / "verdicts.jsonl")
    out = base / "a<b>&c"  # a path the HTML must escape
    try:
        result = clineval.run(
            "clinconsensus", cases=fixture_path(), verdicts=verdicts, output_dir=out
        )
    except clineval.RunFailed as failed:  # the null verdict counts as a judge error
        result = failed.result
    return result, truth


def test_dir_offers_the_declared_metric_names(judged: tuple[clineval.RunResult, Any]) -> None:
    metrics = judged[0]["clinconsensus"]
    names = dir(metrics)
    for attribute in ("cacs_at_7", "cacs_at_7_ci", "rubric_accuracy", "n_cases", "primary"):
        assert attribute in names
    assert "n_cases_ci" not in names  # a count has no interval
    assert all(hasattr(metrics, name) for name in metrics.metric_attributes())
    # a misspelt metric is answered with the declared name meant
    with pytest.raises(AttributeError, match=r"no 'cacs_at7' \(did you mean 'cacs_at_7'\?\)"):
        _ = metrics.cacs_at7
    with pytest.raises(InputError, match=r"no task 'clinconsensu' in this run \(did you mean"):
        judged[0].metrics_as("clinconsensu", ClinConsensusMetricsView)


def test_a_view_types_the_metrics_and_a_wrong_view_is_refused(
    judged: tuple[clineval.RunResult, Any],
) -> None:
    result = judged[0]
    raw = result.results["clinconsensus"]
    typed = result.metrics_as("clinconsensus", ClinConsensusMetricsView)
    assert typed is result["clinconsensus"]  # the one runtime object, typed
    assert typed.cacs_at_7 == raw["cacs@7"] and typed.n_cases == raw["n_cases"] == 12
    # the interval the results keep as "cacs@7_ci95"
    assert typed.cacs_at_7_ci == tuple(raw["cacs@7_ci95"])
    with pytest.raises(InputError, match="does not fit the metrics of 'clinconsensus'"):
        result.metrics_as("clinconsensus", NerMetricsView)
    with pytest.raises(InputError, match="no task 'ner:ncbi'"):
        result.metrics_as("ner:ncbi", NerMetricsView)
    with pytest.raises(InputError, match="not a metrics view"):
        result.metrics_as("clinconsensus", dict)  # type: ignore[type-var]
    with pytest.raises(TypeError):
        MetricsView()


def _shown(value: float | int, digits: int = 4) -> str:
    return f"{value:.{digits}f}" if isinstance(value, float) else f"{value:,}"


def test_printing_a_result_shows_its_headline_numbers(
    judged: tuple[clineval.RunResult, Any],
) -> None:
    result = judged[0]
    raw = result.results["clinconsensus"]
    headline = [k for k in ("cacs@7", "cacs@10", "rubric_accuracy", "pass@7") if k in raw]
    digits = {k: spec.digits for k in headline if (spec := result["clinconsensus"].spec(k))}
    assert digits["cacs@7"] == 2  # a percentage, as the benchmark declares it

    def shown(key: str, value: float) -> str:
        return _shown(value, digits[key])

    assert f"cacs@7={shown('cacs@7', raw['cacs@7'])}" in repr(result)
    assert "(fixture)" in repr(result)
    text = str(result)
    assert "FIXTURE DATA" in text
    for key in headline:
        assert shown(key, raw[key]) in text and key in text
    low, high = raw["cacs@7_ci95"]
    assert f"[{shown('cacs@7', low)}, {shown('cacs@7', high)}]  <- primary" in text
    assert f"cacs_at_7={shown('cacs@7', raw['cacs@7'])}" in repr(result["clinconsensus"])
    page = result._repr_html_()
    assert "a&lt;b&gt;&amp;c" in page and "a<b>" not in page
    assert f"<b>cacs@7</b></td><td>{shown('cacs@7', raw['cacs@7'])}</td>" in page
    assert f"{shown('cacs@7', low)} – {shown('cacs@7', high)}" in page


def test_the_long_form_of_a_judged_task_is_one_row_per_case_and_criterion(
    judged: tuple[clineval.RunResult, Any],
) -> None:
    result, truth = judged
    n_criteria = result.manifest["config"]["options"].get("clinconsensus.max_criteria")
    rows = result.long_rows("clinconsensus")
    limit = int(n_criteria) if n_criteria else 30
    by_case: dict[str, int] = {}
    for case, _ in truth:
        by_case[case] = by_case.get(case, 0) + 1
    assert len(rows) == sum(min(n, limit) for n in by_case.values())
    assert {(r["id"], r["criterion_id"]): r["met"] for r in rows} == {
        key: met
        for key, met in truth.items()
        if key in {(r["id"], r["criterion_id"]) for r in rows}
    }
    assert all(r["task"] == "clinconsensus" and r["difficulty"] for r in rows)
    pytest.importorskip("pandas")  # clineval does not install it
    frame = result.long_frame()
    assert len(frame) == len(rows) and {"criterion_id", "met", "judge"} <= set(frame.columns)


@pytest.fixture(scope="module")
def ner_result(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """A predictions-file run on NCBI test: the gold spans of every second document, minus
    each such document's last span, plus one made-up span."""
    from clineval.benchmarks.ner.corpora import load_ner_split

    try:
        documents = load_ner_split("ncbi", "test", data_root).documents
    except InputError:
        pytest.skip("the NCBI Disease corpus is not available")
    base = tmp_path_factory.mktemp("ner")
    predictions = base / "predictions.jsonl"
    with predictions.open("w", encoding="utf-8") as out:
        for i, doc in enumerate(documents):
            spans = [{"start": s.start, "end": s.end, "type": s.type} for s in doc.entities]
            spans = spans[:-1] if i % 2 == 0 else []
            if i == 1:
                spans.append({"start": 0, "end": 3, "type": "Condition"})
            out.write(json.dumps({"id": doc.id, "entities": spans}) + "\n")
    result = clineval.run(
        "ner:ncbi",
        model=f"predictions:{predictions}",
        data_dir=data_root,
        output_dir=base / "run",
    )
    return result, documents


def test_the_long_form_of_ner_is_one_row_per_span(ner_result: tuple[Any, Any]) -> None:
    result, documents = ner_result
    rows = result.long_rows("ner:ncbi")
    gold = [r for r in rows if r["source"] == "gold"]
    pred = [r for r in rows if r["source"] == "pred"]
    assert len(gold) == sum(len(d.entities) for d in documents)
    expected_pred = sum(max(len(d.entities) - 1, 0) for d in documents[::2]) + 1
    assert len(pred) == expected_pred == result["ner:ncbi"].n_pred_spans
    text = {d.id: d.text for d in documents}
    assert all(r["mention"] == text[r["id"]][r["start"] : r["end"]] for r in rows)
    # every predicted span but the made-up one is a gold span; gold spans left out are not
    assert sum(not r["exact_match"] for r in pred) == 1
    assert sum(r["exact_match"] for r in gold) == expected_pred - 1
    typed = result.metrics_as("ner:ncbi", NerMetricsView)
    assert typed.n_gold_spans == len(gold) and typed.token_macro_f1 == result.metrics[
        "ner:ncbi"
    ].get("token_macro_f1")


def test_a_task_without_long_rows_is_one_row_per_sample(tmp_path: Path) -> None:
    """TCM-SD declares no explosion: its long form is its samples."""
    from clineval.benchmarks.tcm_sd.synthetic import write_synthetic

    data = tmp_path / "data"
    try:
        write_synthetic(data, seed=0, data_dir=None, scale=0.02)
    except InputError:
        pytest.skip("TCM-SD label files not available")
    result = clineval.run(
        "tcm-sd", model="baseline:tfidf", data_dir=data, output_dir=tmp_path / "run"
    )
    rows = result.long_rows()
    samples = result.samples()
    assert rows == [{"task": s.pop("task"), **s} for s in samples]
    assert len(rows) == result.metrics_as("tcm-sd", TcmSdMetricsView).n


TYPED_SCRIPT = """
import clineval
from clineval.benchmarks.clinconsensus import ClinConsensusMetricsView

result = clineval.RunResult.load("runs/x")
metrics = result.metrics_as("clinconsensus", ClinConsensusMetricsView)
score: float | None = metrics.cacs_at_7
print(score, metrics.cacs_at_7_ci, metrics.primary, metrics.n_cases)
"""


def _makefile_editable_settings() -> dict[str, str]:
    """The --config-settings of `make setup`'s editable install, as the Makefile writes them."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    (line,) = [x for x in makefile.splitlines() if "pip install" in x and " -e " in x]
    found = re.findall(r"--config-settings[ =](\S+)", line)
    return dict(item.split("=", 1) for item in found)


@pytest.mark.slow
def test_a_development_install_is_seen_by_mypy(tmp_path: Path) -> None:
    """`make setup`'s editable install (its --config-settings) in a fresh venv: mypy, run on
    a script outside the repository, finds clineval and its typed views and flags a
    misspelt metric. setuptools' default editable install is an import hook that mypy cannot
    follow: the same script then cannot find clineval at all."""
    settings = _makefile_editable_settings()
    assert settings == {"editable_mode": "compat"}
    # setuptools builds in the checkout (build/, *.egg-info): what was not there is removed
    leftovers = [p for p in (REPO / "build", REPO / "clineval.egg-info") if not p.exists()]
    try:
        _check_mypy_sees_the_install(tmp_path, settings)
    finally:
        for path in leftovers:
            shutil.rmtree(path, ignore_errors=True)


def _check_mypy_sees_the_install(tmp_path: Path, settings: dict[str, str]) -> None:
    script = tmp_path / "elsewhere" / "typed.py"
    script.parent.mkdir()

    def venv_with(config: dict[str, str], name: str) -> Path:
        """A fresh venv with clineval installed editable with `config`: its python."""
        venv = tmp_path / name
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        python = venv / "bin" / "python"
        site = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        wheels = tmp_path / f"{name}-wheel"
        build = (
            f"from setuptools import build_meta as b; b.build_editable({str(wheels)!r}, {config!r})"
        )
        wheels.mkdir()
        subprocess.run([sys.executable, "-c", build], cwd=REPO, check=True, capture_output=True)
        (wheel,) = wheels.glob("*.whl")
        install = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", site]
        subprocess.run([*install, str(wheel)], check=True, capture_output=True)
        return python

    def mypy(python: Path) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental"]
        command += ["--python-executable", str(python), str(script)]
        return subprocess.run(command, capture_output=True, text=True, cwd=script.parent)

    compat = venv_with(settings, "compat")
    script.write_text(TYPED_SCRIPT, encoding="utf-8")
    good = mypy(compat)
    assert good.returncode == 0, good.stdout
    script.write_text(TYPED_SCRIPT.replace("metrics.cacs_at_7_ci", "metrics.cacs_at_8"))
    typo = mypy(compat)
    assert typo.returncode == 1 and 'no attribute "cacs_at_8"' in typo.stdout, typo.stdout
    hidden = mypy(venv_with({}, "default"))
    assert hidden.returncode == 1 and 'module named "clineval"' in hidden.stdout, hidden.stdout


def _hand_run(out: Path, rows: list[dict[str, Any]], metrics: dict[str, Any], seed: int) -> Path:
    """A run directory of the fixture/synthetic task `synthetic-coding`, written by hand, its
    run record naming its metrics as a run of an installed benchmark does."""
    from clineval.benchmarks import MetricSchema, MetricSpec
    from clineval.benchmarks.declaration import Benchmark
    from clineval.rundir import MANIFEST, RESULTS, SAMPLES, write_json, write_jsonl

    bench = Benchmark(
        family="synthetic-coding",
        title="synthetic coding",
        tasks=("synthetic-coding",),
        make_task=lambda name: None,  # type: ignore[arg-type,return-value]
        metrics=MetricSchema(
            (
                MetricSpec("hamming_loss", higher_is_better=False, per_sample="hamming"),
                MetricSpec("exact_match", per_sample="exact"),
                MetricSpec("n", count=True, per_sample="one"),
            )
        ),
    )
    out.mkdir(parents=True)
    record = {"synthetic": True, **bench.record()}
    write_json(
        out / MANIFEST,
        {"config": {"tasks": ["synthetic-coding"], "seed": seed}, "seed": seed,
         "status": "finished", "tasks": {"synthetic-coding": record}},
    )  # fmt: skip
    write_json(out / RESULTS, {"synthetic-coding": metrics})
    write_jsonl(out / SAMPLES, ({"task": "synthetic-coding", **r} for r in rows))
    return out


def test_an_interval_the_run_did_not_store_is_the_one_the_cli_shows(tmp_path: Path) -> None:
    """`m.KEY_ci` for a metric stored without an interval: the seeded bootstrap over the
    samples that `clineval run` prints and the report shows (a run record is enough)."""
    import numpy as np

    from clineval.benchmarks import bootstrap_indices
    from clineval.run_summary import summarize

    hamming = [0.0, 1 / 6, 1 / 3, 0.0, 1 / 6, 0.5, 0.0, 1 / 6]
    rows = [
        {"id": f"fixture-{i}", "hamming": h, "exact": h == 0, "one": 1}
        for i, h in enumerate(hamming)
    ]
    metrics = {"hamming_loss": float(np.mean(hamming)), "exact_match": 3 / 8,
               "exact_match_ci": [0.1, 0.9], "n": 8}  # fmt: skip
    run = _hand_run(tmp_path / "run", rows, metrics, seed=11)
    m = clineval.RunResult.load(run)["synthetic-coding"]
    # the oracle: the 2.5th and 97.5th percentiles of 1,000 resampled means on the seed
    draws = np.asarray(hamming)[bootstrap_indices(len(hamming), 1000, 11)].mean(axis=1)
    assert m.interval("hamming_loss") == pytest.approx(tuple(np.percentile(draws, [2.5, 97.5])))
    assert m.hamming_loss_ci == m.interval("hamming_loss")  # type: ignore[attr-defined]
    assert m.interval("exact_match") == (0.1, 0.9)  # a stored interval is the run's own
    assert m.interval("n") is None  # a count has none
    printed = summarize({"synthetic-coding": metrics}, run).tables[0].rows[0].cells
    low, high = m.interval("hamming_loss") or (0.0, 0.0)
    assert printed["hamming_loss"].interval == f"[{low:.4f}, {high:.4f}]"
    assert f"[{low:.4f}, {high:.4f}]" in str(clineval.RunResult.load(run))
