"""gliner:PATH on a tiny GLiNER built offline in the test (a random 1-layer BERT encoder and a
WordPiece tokenizer written here, nothing downloaded): offsets, windows, merge, batching,
resume, one-line errors, and scores equal to those of the same spans as a predictions file."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

gliner = pytest.importorskip("gliner")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from clineval.benchmarks.ner.bio import word_offsets  # noqa: E402
from clineval.benchmarks.ner.gliner_tagger import GlinerTagger, TaggerSettings  # noqa: E402
from clineval.benchmarks.ner.options import label_prompts, probability  # noqa: E402
from clineval.benchmarks.ner.records import Span  # noqa: E402
from clineval.benchmarks.ner.span_windows import TokenSpan, merge  # noqa: E402
from clineval.cli import main  # noqa: E402
from clineval.errors import InputError  # noqa: E402
from clineval.store import RunStore  # noqa: E402

_WORDS = ["the", "patient", "has", "breast", "cancer", "disease", "drug", "and", "of"]
_CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789.,;:()-/%'")
PROMPTS = {"condition": ("disease",), "drug": ("drug", "chemical")}
THRESHOLD = 0.6  # the tiny model's scores spread over 0.4..0.8: some spans pass, some do not


def build_gliner(path: Path, max_len: int = 20, max_positions: int = 512) -> Path:
    """A tiny random GLiNER checkpoint at path/gliner, loadable on its own (the encoder
    directory it was built from is deleted: its config is embedded in gliner_config.json)."""
    encoder = path / "encoder"
    encoder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *_WORDS, *_CHARS]
    vocab += ["##" + c for c in _CHARS]
    (encoder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    transformers.BertTokenizerFast(vocab_file=str(encoder / "vocab.txt")).save_pretrained(encoder)
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=max_positions,
    )
    transformers.BertModel(config).save_pretrained(encoder)
    settings = gliner.GLiNERConfig(
        model_name=str(encoder), hidden_size=16, max_width=4, max_len=max_len, dropout=0.0
    )
    model = gliner.GLiNER.from_config(settings)
    # Larger random weights than the initialiser's: span scores spread over (0, 1) instead of
    # all sitting at 0.49, so a threshold of 0.5 keeps some spans and drops others.
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0.0, 0.2)
    model.save_pretrained(path / "gliner")
    shutil.rmtree(encoder)
    return path / "gliner"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_gliner(tmp_path_factory.mktemp("tiny-gliner"))


@pytest.fixture(scope="module")
def tagger(checkpoint: Path) -> GlinerTagger:
    return GlinerTagger.load(checkpoint, TaggerSettings(PROMPTS, threshold=THRESHOLD))


def _by_type(entities: list[dict[str, Any]], start: int = 0) -> list[Span]:
    types = {p: t for t, prompts in PROMPTS.items() for p in prompts}
    spans = [Span(e["start"] + start, e["end"] + start, types[e["label"]]) for e in entities]
    return sorted(spans, key=lambda s: (s.start, s.end, s.type))


TEXTS = [
    "Naïve β-blocker\r\nuse; the patient has breast cancer (BRCA1-related), 12 % of cases.",
    "drug x-1 given , the disease  spread\tover 3,000 patients",
    "colon cancer seen",
]


def test_offsets_are_exactly_those_of_the_package_on_a_short_text(tagger: GlinerTagger) -> None:
    """One window: our spans (words handed over pre-split) equal the package's own
    `inference` on the raw text (its whitespace splitter is the benchmark regex), and every
    span starts and ends on a benchmark token boundary of the text as given."""
    ours = tagger.predict(TEXTS)
    labels = [p for prompts in PROMPTS.values() for p in prompts]
    theirs = tagger.model.inference(TEXTS, labels, threshold=THRESHOLD, flat_ner=True)
    assert ours == [_by_type(rows) for rows in theirs]
    assert sum(len(spans) for spans in ours) > 5  # the comparison is not between empty lists
    for text, spans in zip(TEXTS, ours, strict=True):
        starts = {a for a, _ in word_offsets(text)}
        ends = {b for _, b in word_offsets(text)}
        assert all(s.start in starts and s.end in ends for s in spans)
    # batching does not change a document's spans
    assert [tagger.predict([t])[0] for t in TEXTS] == ours


def test_a_long_document_is_the_merge_of_its_overlapping_windows(tagger: GlinerTagger) -> None:
    """A document of many windows: the result is what the package predicts on each window's
    text on its own, shifted to the document and merged, and the windows overlap."""
    text = " ".join(["the patient has breast cancer , drug x-1 given ;"] * 9) + "\nend."
    offsets = word_offsets(text)
    words = [text[a:b] for a, b in offsets]
    windows = tagger.windows(words)
    assert len(windows) >= 4
    assert all(b.start < a.end for a, b in itertools.pairwise(windows))
    labels = [p for prompts in PROMPTS.values() for p in prompts]
    token_at = {a: i for i, (a, _) in enumerate(offsets)}
    token_end = {b: i + 1 for i, (_, b) in enumerate(offsets)}
    views = []
    for window in windows:
        first = offsets[window.start][0]
        piece = text[first : offsets[window.end - 1][1]]
        rows = tagger.model.inference([piece], labels, threshold=THRESHOLD, flat_ner=True)[0]
        views.append(
            [
                TokenSpan(token_at[s.start], token_end[s.end], s.type, 0.0)
                for s in _by_type(rows, first)
            ]
        )
    # scores are not compared: take the model's own for the flat merge
    scored = tagger._forward([words[w.start : w.end] for w in windows])
    for view, own, window in zip(views, scored, windows, strict=True):
        shifted = {(s.start + window.start, s.end + window.start, s.type) for s in own}
        assert {(s.start, s.end, s.type) for s in view} == shifted
    merged = merge(
        windows,
        [[TokenSpan(s.start + w.start, s.end + w.start, s.type, s.score) for s in own]
         for own, w in zip(scored, windows, strict=True)],
        len(words),
        flat=True,
    )  # fmt: skip
    expected = [Span(offsets[s.start][0], offsets[s.end - 1][1], s.type) for s in merged]
    assert tagger.predict([text]) == [expected]
    assert len(expected) > len(windows)


def test_windows_fit_the_encoder_once_the_prompts_are_in(tmp_path: Path) -> None:
    """An encoder of 40 positions: windows are cut by subwords (not only by max_len words)
    and no window the model receives is truncated by its tokenizer."""
    path = build_gliner(tmp_path, max_len=30, max_positions=40)
    small = GlinerTagger.load(path, TaggerSettings(PROMPTS, threshold=THRESHOLD))
    assert small.subword_limit == 40
    text = "Xylophonic dysplasia, hyperkeratosis and 12 % naïve β-blockers. " * 6
    words = [text[a:b] for a, b in word_offsets(text)]
    windows = small.windows(words)
    assert max(w.end - w.start for w in windows) < 30  # the subword budget cut them
    labels = [p for prompts in PROMPTS.values() for p in prompts]
    processor = small.model.data_processor
    for window in windows:
        encoded = processor.tokenize_inputs([words[window.start : window.end]], labels)
        assert encoded["input_ids"].shape[1] <= 40
    assert len(small.predict([text])) == 1


def test_label_texts_that_name_two_types_are_refused(checkpoint: Path) -> None:
    with pytest.raises(InputError, match="given for both"):
        GlinerTagger.load(checkpoint, TaggerSettings({"drug": ("x",), "condition": ("x",)}))


def test_ner_label_and_threshold_options_parse_or_say_why() -> None:
    assert label_prompts("condition:disease, condition:medical condition,drug:chemical") == (
        ("condition", "disease"),
        ("condition", "medical condition"),
        ("drug", "chemical"),
    )
    assert label_prompts("gene variant:mutation") == (("gene variant", "mutation"),)
    for bad, reason in (
        ("disease", "type:label"),
        ("illness:x", "unknown type"),
        (",", "expected"),
    ):
        with pytest.raises(ValueError, match=reason):
            label_prompts(bad)
    assert probability("0.35") == 0.35
    for bad in ("1.5", "-0.1", "nan", "x"):
        with pytest.raises(ValueError):
            probability(bad)


# ---- the command line ------------------------------------------------------------------------


def _run(out: Path, checkpoint: Path, data_root: Path, *extra: str, limit: int = 10) -> int:
    argv = ["run", "ner:ncbi", "--model", f"gliner:{checkpoint}", "--output-dir", str(out)]
    argv += ["--data-dir", str(data_root), "--limit", str(limit)]
    # the test's threshold unless the caller gives one (an option key may be given once)
    if not any(str(e).startswith("ner.threshold=") for e in extra):
        argv += ["--option", f"ner.threshold={THRESHOLD}"]
    return main([*argv, *extra])


def _manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "manifest.json").read_text())["tasks"]["ner:ncbi"]


@pytest.mark.slow
def test_run_resume_and_scores_equal_to_a_predictions_file(
    tmp_path: Path, checkpoint: Path, data_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    # Interrupted after its first batch (Ctrl-C): that batch is in the store.
    real_predict = GlinerTagger.predict
    calls = {"n": 0}

    def interrupted(self: GlinerTagger, texts: list[str]) -> list[list[Span]]:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real_predict(self, texts)

    monkeypatch.setattr(GlinerTagger, "predict", interrupted)
    assert _run(out, checkpoint, data_root) != 0
    with RunStore.in_dir(out) as store:
        first = store.records("ner:ncbi", "prediction")
    assert len(first) == 8  # one batch of documents, committed before the interruption
    monkeypatch.setattr(GlinerTagger, "predict", real_predict)

    assert _run(out, checkpoint, data_root) == 0
    notes = _manifest(out)
    assert notes["predicted_now"] == 2  # only the documents the interruption left
    assert notes["gliner"]["threshold"] == THRESHOLD
    assert notes["gliner"]["labels"] == {"condition": "condition"}
    with RunStore.in_dir(out) as store:
        records = store.records("ner:ncbi", "prediction")
    assert {k: records[k] for k in first} == first  # kept, not predicted again
    results = json.loads((out / "results.json").read_text())["ner:ncbi"]
    assert results["n_documents"] == 10 and results["missing_predictions"] == 0
    assert results["n_pred_spans"] > 0

    # The same command again predicts nothing; another threshold predicts everything again.
    assert _run(out, checkpoint, data_root) == 0
    assert _manifest(out)["predicted_now"] == 0
    assert _run(out, checkpoint, data_root, "--option", "ner.threshold=0.65") == 0
    assert _manifest(out)["predicted_now"] == 10
    assert _run(out, checkpoint, data_root) == 0  # back: predicted again, not mixed
    assert _manifest(out)["predicted_now"] == 10

    # Every span on the benchmark's token boundaries of the document text.
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    for row in samples:
        starts = {a for a, _ in word_offsets(row["text"])}
        ends = {b for _, b in word_offsets(row["text"])}
        assert all(s in starts and e in ends for s, e, _ in row["pred"])

    # The stored spans as a predictions file score exactly the same.
    with RunStore.in_dir(out) as store:
        records = store.records("ner:ncbi", "prediction")
    predictions = tmp_path / "preds.jsonl"
    lines = [
        json.dumps({"id": doc, "entities": [dict(zip(("start", "end", "type"), e, strict=True))
                                            for e in rec["entities"]]})
        for doc, rec in records.items()
    ]  # fmt: skip
    predictions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    replay = tmp_path / "replay"
    argv = ["run", "ner:ncbi", "--model", f"predictions:{predictions}", "--output-dir", str(replay)]
    assert main([*argv, "--data-dir", str(data_root), "--limit", "10"]) == 0
    ours = json.loads((out / "results.json").read_text())["ner:ncbi"]
    theirs = json.loads((replay / "results.json").read_text())["ner:ncbi"]
    ours.pop("model"), theirs.pop("model")
    assert ours == theirs
    # and `clineval score` recomputes the same from the store
    assert main(["score", str(out)]) == 0
    rescored = json.loads((out / "results.json").read_text())["ner:ncbi"]
    rescored.pop("model")
    assert rescored == ours


@pytest.mark.slow
def test_several_label_texts_per_type(tmp_path: Path, checkpoint: Path, data_root: Path) -> None:
    out = tmp_path / "run"
    labels = "ner.labels=condition:disease,condition:medical condition,drug:chemical"
    assert _run(out, checkpoint, data_root, "--option", labels) == 0
    gliner_note = _manifest(out)["gliner"]
    # drug is no type of NCBI: left out; condition is prompted with both texts
    assert gliner_note["labels"] == {"disease": "condition", "medical condition": "condition"}
    with RunStore.in_dir(out) as store:
        records = store.records("ner:ncbi", "prediction")
    assert all(t == "condition" for r in records.values() for _, _, t in r["entities"])


def test_bad_model_directories_are_one_line_errors_before_anything_is_written(
    tmp_path: Path, checkpoint: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hf_dir = tmp_path / "hf"
    hf_dir.mkdir()
    (hf_dir / "config.json").write_text("{}")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "gliner_config.json").write_text('{"max_len": 20}')  # no weights, no tokenizer
    cases = [
        (tmp_path / "absent", "gliner model directory not found"),
        (hf_dir, "not a GLiNER checkpoint (no gliner_config.json"),
    ]
    for path, message in cases:
        out = tmp_path / f"run-{path.name}"
        capsys.readouterr()
        assert _run(out, path, data_root) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and message in err and len(err.splitlines()) == 1
        assert not out.exists()  # refused before the run directory was made
    garbage = tmp_path / "garbage"
    shutil.copytree(checkpoint, garbage)
    (garbage / "pytorch_model.bin").write_bytes(bytes(range(256)) * 4)  # not a torch file
    for path, reason in (
        (broken, "embeds no encoder config"),
        (garbage, "Weights only load failed"),
    ):
        out = tmp_path / f"run-{path.name}"
        capsys.readouterr()
        assert _run(out, path, data_root) == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress bar
        assert err.startswith(f"error: {path}: cannot load the GLiNER checkpoint: "), err
        assert reason in err


def test_one_label_text_for_two_types_is_refused_naming_the_option(
    tmp_path: Path, checkpoint: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """BC5CDR has drug and condition; prompting drug with "condition" clashes with the
    condition type's default label text."""
    out = tmp_path / "run"
    argv = ["run", "ner:bc5cdr", "--model", f"gliner:{checkpoint}", "--output-dir", str(out)]
    argv += ["--data-dir", str(data_root), "--option", "ner.labels=drug:condition"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (
        "error: --option ner.labels: label text 'condition' is given for both 'drug' and "
        "'condition': the model's answer could not be mapped back"
    )
    assert not (out / "manifest.json").exists()


def test_a_span_tagger_is_refused_for_other_tasks(
    tmp_path: Path, checkpoint: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    argv = ["run", "tcm-sd", "--model", f"gliner:{checkpoint}", "--output-dir", str(out)]
    assert main([*argv, "--option", "tcm.data=synthetic"]) == 2
    err = capsys.readouterr().err
    assert "is a span_tagger model, which tcm-sd cannot use" in err
    assert not out.exists()


def test_a_missing_gliner_package_is_named_with_its_extra(tmp_path: Path, checkpoint: Path) -> None:
    """A Python where `import gliner` finds nothing (the installed package hidden through
    sys.modules): one line naming the extra to install, exit 2, no run directory."""
    out = tmp_path / "run"
    hide = (
        "import sys\n"
        "sys.modules['gliner'] = None  # what Python does for a package it must not import\n"
        "from clineval.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    argv = ["run", "ner:ncbi", "--model", f"gliner:{checkpoint}", "--output-dir", str(out)]
    done = subprocess.run(
        [sys.executable, "-c", hide, *argv], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    err = done.stderr.strip()
    assert err == "error: gliner:PATH needs the gliner package (pip install 'clineval[gliner]')"
    assert not out.exists()


def test_store_records_say_how_they_were_made(
    tmp_path: Path, checkpoint: Path, data_root: Path
) -> None:
    out = tmp_path / "run"
    assert _run(out, checkpoint, data_root, "--option", "ner.flat=false", limit=2) == 0
    with sqlite3.connect(out / "store.sqlite") as conn:
        kinds = {row[0] for row in conn.execute("SELECT DISTINCT kind FROM records")}
    assert kinds == {"prediction"}
    with RunStore.in_dir(out) as store:
        records = store.records("ner:ncbi", "prediction")
    assert len(records) == 2
    for record in records.values():
        assert record["settings"] == {
            "labels": {"condition": ["condition"]},
            "threshold": THRESHOLD,
            "flat": False,
        }


# ---- ner.chunking=ncer: NCER's extractor, restated from its rules ----------------------------


def _ncer_split(text: str, parts: int) -> list[str]:
    """NCER's split_text_into_parts, restated: stretches of ceil(len / parts) characters, each
    cut after its last newline, else its last period, else its last space, else at its end."""
    width = -(len(text) // -parts)
    out: list[str] = []
    remaining = text
    while len(remaining) > width:
        stretch = remaining[:width]
        at = stretch.rfind("\n")
        if at == -1:
            at = stretch.rfind(".")
            if at == -1:
                at = stretch.rfind(" ")
                if at == -1:
                    at = width - 1
        out.append(remaining[: at + 1])
        remaining = remaining[at + 1 :]
    out.append(remaining)
    return out


def _ncer_extract(model: Any, text: str, label_map: dict[str, str], threshold: float) -> list:
    """NCER's GLiNEREncoderSpanExtractor called on a document (SpanExtractor.__call__),
    restated: words from the model's splitter + 2 per normalized type against config.max_len;
    over it, ceil(expected / max_len) parts; per piece predict_entities with the labels in
    list(set(...)) order; spans shifted by the length of the pieces before; no merging."""
    words = list(model.data_processor.words_splitter(text))
    expected = len(words) + 2 * len(set(label_map.values()))
    max_len = model.config.max_len
    pieces = [text] if expected <= max_len else _ncer_split(text, -(expected // -max_len))
    labels = list(set(label_map.keys()))
    spans = []
    before = 0
    for piece in pieces:
        for entity in model.predict_entities(piece, labels, threshold=threshold):
            if entity["label"] in label_map:
                spans.append(
                    Span(
                        entity["start"] + before, entity["end"] + before, label_map[entity["label"]]
                    )
                )
        before += len(piece)
    return spans


def test_ncer_pieces_hand_cases() -> None:
    from clineval.benchmarks.ner.gliner_tagger import ncer_pieces

    text = "ab cd.\nef gh. ij kl mn op"
    assert len(text) == 25
    # 10 words + 2 x 1 type = 12 > 5 -> ceil(12 / 5) = 3 parts of ceil(25 / 3) = 9 characters:
    # "ab cd.\nef" is cut after its newline; "ef gh. ij" after its period; " ij kl mn" after
    # its last space; "mn op" (5 <= 9) is what is left: 4 pieces for 3 parts
    assert ncer_pieces(text, 10, 1, 5) == ["ab cd.\n", "ef gh.", " ij kl ", "mn op"]
    assert "".join(ncer_pieces(text, 10, 1, 5)) == text
    assert ncer_pieces(text, 3, 1, 5) == [text]  # 3 + 2 = 5: not over the limit, one piece
    # no delimiter at all: cut at the stretch's end
    assert ncer_pieces("abcdefgh", 12, 0, 6) == ["abcd", "efgh"]
    assert ncer_pieces("", 0, 9, 1) == [""]
    for parts_text in (text, "x" * 7 + ". " + "y" * 30 + "\n" + "z z z"):
        for words in (6, 11, 40):
            expected = -((words + 2) // -5)
            assert ncer_pieces(parts_text, words, 1, 5) == (
                _ncer_split(parts_text, expected) if words + 2 > 5 else [parts_text]
            )


def test_ncer_chunking_reproduces_ncers_extractor(checkpoint: Path) -> None:
    settings = TaggerSettings(PROMPTS, threshold=THRESHOLD, chunking="ncer")
    tagger = GlinerTagger.load(checkpoint, settings)
    label_map = {p: t for t, prompts in PROMPTS.items() for p in prompts}
    long_text = (
        " ".join(["the patient has breast cancer , drug x-1 given ;"] * 6)
        + ".\nof the disease and drug.\n"
        + " ".join(["colon cancer and chemical of the drug"] * 5)
    )
    texts = [*TEXTS, long_text]
    ours = tagger.predict(texts)
    for text, spans in zip(texts, ours, strict=True):
        assert spans == _ncer_extract(tagger.model, text, label_map, THRESHOLD)
    # the long text is cut into several pieces, and spans come from more than one of them
    from clineval.benchmarks.ner.gliner_tagger import ncer_pieces

    pieces = ncer_pieces(long_text, tagger.ncer_words(long_text), 2, tagger.max_words)
    assert len(pieces) >= 4
    first_end = len(pieces[0])
    assert any(s.start < first_end for s in ours[-1]) and any(
        s.start >= first_end for s in ours[-1]
    )
    assert tagger.describe()["label_order"] == list(set(label_map))
    assert tagger.describe()["chunking"] == "ncer"


# NCER cuts by characters, so a piece can hold more words than the model takes; GLiNER then
# truncates it with this warning, exactly as in NCER's own runs (what the option reproduces).
@pytest.mark.filterwarnings("ignore:Sentence of length .* has been truncated:UserWarning")
def _ncer_order_in_a_process(texts: list[str], seed: int) -> list[str]:
    """NCER's `list(set(label_map.keys()))` in a fresh interpreter under PYTHONHASHSEED=seed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONHASHSEED"] = str(seed)
    script = "import json, sys; print(json.dumps(list(set(dict.fromkeys(json.load(sys.stdin))))))"
    done = subprocess.run(
        [sys.executable, "-S", "-c", script],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    order: list[str] = json.loads(done.stdout)
    return order


@pytest.mark.filterwarnings("ignore:Sentence of length .* has been truncated:UserWarning")
def test_ncer_hash_seed_orders_the_prompts_and_decides_resume(
    tmp_path: Path, checkpoint: Path, data_root: Path
) -> None:
    """`ner.hash_seed`: the prompts in NCER's order under that seed (NCBI's config texts, in its
    order), recorded; a resume under a seed with another order predicts again, one with the
    same order does not."""
    texts = ["disease", "medical condition"]  # NCBI's label_normalization_map keys, in order
    labels = "ner.labels=condition:disease,condition:medical condition"
    orders = {seed: _ncer_order_in_a_process(texts, seed) for seed in (0, 2, 16)}
    assert orders[16] == orders[0] != orders[2]  # seeds 16 and 0 agree, 2 differs
    # seed 16 puts the texts in a colliding slot: added the other way round, the order differs
    assert _ncer_order_in_a_process(texts[::-1], 16) != orders[16]
    out = tmp_path / "run"
    ncer = ["--option", "ner.chunking=ncer", "--option", labels]
    assert _run(out, checkpoint, data_root, *ncer, "--option", "ner.hash_seed=16", limit=2) == 0
    notes = _manifest(out)
    assert notes["gliner"]["label_order"] == orders[16]
    assert notes["gliner"]["label_order_seed"] == "ner.hash_seed=16"
    assert _run(out, checkpoint, data_root, *ncer, "--option", "ner.hash_seed=0", limit=2) == 0
    assert _manifest(out)["predicted_now"] == 0  # the same order: the stored spans stand
    assert _run(out, checkpoint, data_root, *ncer, "--option", "ner.hash_seed=2", limit=2) == 0
    assert _manifest(out)["predicted_now"] == 2
    assert _manifest(out)["gliner"]["label_order"] == orders[2]


def test_ncer_chunking_option_end_to_end(
    tmp_path: Path, checkpoint: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clineval.benchmarks.ner.corpora import load_ner_split

    out = tmp_path / "ncer"
    assert _run(out, checkpoint, data_root, "--option", "ner.chunking=ncer", limit=2) == 0
    notes = _manifest(out)
    assert notes["gliner"]["chunking"] == "ncer" and notes["gliner"]["max_len"] == 20
    tagger = GlinerTagger.load(checkpoint, TaggerSettings({"condition": ("condition",)}))
    docs = load_ner_split("ncbi", "test", data_root).documents[:2]
    with RunStore.in_dir(out) as store:
        records = store.records("ner:ncbi", "prediction")
    for doc in docs:
        expected = _ncer_extract(tagger.model, doc.text, {"condition": "condition"}, THRESHOLD)
        assert [Span(*e) for e in records[doc.id]["entities"]] == expected
        assert records[doc.id]["settings"]["chunking"] == "ncer"
    assert sum(len(records[doc.id]["entities"]) for doc in docs) > 0  # not empty == empty
    # the default (windows) predicts again on resume rather than mixing the two
    assert _run(out, checkpoint, data_root, limit=2) == 0
    assert _manifest(out)["predicted_now"] == 2
    capsys.readouterr()
    assert _run(tmp_path / "bad", checkpoint, data_root, "--option", "ner.chunking=ncer2") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "ner.chunking" in err, err
