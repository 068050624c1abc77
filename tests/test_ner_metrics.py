"""NER metrics: hand-computed cases and randomized agreement with independent oracles.

Oracles: Python's `re` for the tokenizer, a deliberately naive per-character reference written
here from the definition for the token labels, sklearn's classification_report for the token F1,
and nervaluate 0.1.8 itself for the span metrics.
"""

from __future__ import annotations

import random
import re
import sys
from collections import Counter
from itertools import pairwise

import numpy as np
import pytest
from nervaluate import Evaluator
from sklearn.metrics import classification_report

from clineval.benchmarks.ner.records import Span
from clineval.benchmarks.ner.span_f1 import COUNT_FIELDS, span_f1
from clineval.benchmarks.ner.token_f1 import token_macro_f1
from clineval.benchmarks.ner.tokens import (
    TOKEN_PATTERN,
    CorpusText,
    DocSpans,
    LabelSpace,
    _classify,
    document_token_labels,
    flatten_spans,
    paint_char_labels,
    regex_token_offsets,
    span_boundaries,
    token_majority_labels,
)

TOL = 1e-9
DRUG, COND = "drug", "condition"
TYPES = (DRUG, COND)


def S(start: int, end: int, type_: str) -> Span:
    return Span(start, end, type_)


# ----------------------------------------------------------------------------- oracles
def naive_token_labels(
    text: str, spans: list[Span], tokens: list[tuple[int, int]] | None = None
) -> list[str]:
    """The definition, literally: paint characters in list order, then vote per token."""
    chars = ["O"] * len(text)
    for span in spans:
        for i in range(span.start, span.end):
            chars[i] = span.type
    if tokens is None:
        tokens = [m.span() for m in re.finditer(TOKEN_PATTERN, text)]
    labels = []
    for start, end in tokens:
        token_chars = chars[start:end]
        counts = Counter(token_chars)
        best = max(counts.values(), default=0)
        labels.append(next((c for c in token_chars if counts[c] == best), "O"))
    return labels


def sklearn_macro(texts, gold, pred, types):
    y_true = [lab for t, g in zip(texts, gold, strict=True) for lab in naive_token_labels(t, g)]
    y_pred = [lab for t, p in zip(texts, pred, strict=True) for lab in naive_token_labels(t, p)]
    return classification_report(
        y_true, y_pred, labels=list(types), zero_division=0, output_dict=True
    )


def nerv(gold, pred, types):
    def dicts(docs):
        return [[{"label": s.type, "start": s.start, "end": s.end} for s in d] for d in docs]

    return Evaluator(dicts(gold), dicts(pred), tags=list(types)).evaluate()


def assert_span_matches_nervaluate(gold, pred, types) -> None:
    ours = span_f1(gold, pred, types)
    results, per_tag = nerv(gold, pred, types)
    for scheme, mine in (("ent_type", ours.partial), ("strict", ours.exact)):
        theirs = results[scheme]
        got = mine.total.as_dict()
        for key in (*COUNT_FIELDS, "precision", "recall", "f1"):
            assert got[key] == pytest.approx(theirs[key], abs=TOL), (scheme, key)
        for t in types:
            got_t = mine.per_type[t].as_dict()
            for key in (*COUNT_FIELDS, "precision", "recall", "f1"):
                assert got_t[key] == pytest.approx(per_tag[t][scheme][key], abs=TOL), (t, key)


# ----------------------------------------------------------------------------- tokenizer
def test_word_and_space_classes_match_re_on_every_code_point() -> None:
    codes = np.arange(sys.maxunicode + 1, dtype=np.uint32)
    word, space = _classify(codes)
    word_re, space_re = re.compile(r"\w"), re.compile(r"\s")
    expected_word = np.array([word_re.match(chr(i)) is not None for i in range(codes.size)])
    expected_space = np.array([space_re.match(chr(i)) is not None for i in range(codes.size)])
    assert np.array_equal(word, expected_word)
    assert np.array_equal(space, expected_space)


def test_tokenizer_hand_cases() -> None:
    def toks(text: str) -> list[str]:
        s, e = regex_token_offsets(text)
        return [text[a:b] for a, b in zip(s.tolist(), e.tolist(), strict=True)]

    assert toks("IL-2 receptor-alpha_chain (x).") == [
        "IL-2",
        "receptor-alpha_chain",
        "(",
        "x",
        ")",
        ".",
    ]
    assert toks("a--b -c d- _e") == ["a", "-", "-", "b", "-", "c", "d", "-", "_e"]
    assert toks("") == []
    assert toks("  \r\n ") == []
    assert toks("β-阻滞剂 10mg/d") == ["β-阻滞剂", "10mg", "/", "d"]


@pytest.mark.parametrize(
    "alphabet",
    [
        "ab_-- \t\r\n.,é1²\u00a0\u2028\U0001d518\U0001d7d8\u3000中()",  # UTF-32 path
        "".join(map(chr, range(128))) + "aaa---   ",  # ASCII path, every ASCII character
    ],
    ids=["utf32", "ascii"],
)
def test_tokenizer_agrees_with_re_on_random_text(alphabet: str) -> None:
    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        s, e = regex_token_offsets(text)
        expected = [m.span() for m in re.finditer(TOKEN_PATTERN, text)]
        assert list(zip(s.tolist(), e.tolist(), strict=True)) == expected, repr(text)


# ----------------------------------------------------------------------------- token labels
def test_last_span_wins_and_ties_go_leftmost() -> None:
    text = "abcd abcde xyz"
    # "abcd": drug on ab, condition on cd -> 2 vs 2, tie -> drug (first char), list order aside
    # "abcde": drug on ab (2), condition on cde (3) -> condition
    # "xyz": drug then condition over all of it -> the last span (condition) wins
    spans = [S(2, 4, COND), S(0, 2, DRUG), S(5, 7, DRUG), S(7, 10, COND)]
    spans += [S(11, 14, DRUG), S(11, 14, COND)]
    _, labels = document_token_labels(text, spans, TYPES)
    assert labels == [DRUG, COND, COND]
    # "abcd" with drug on cd only: O 2 vs drug 2, tie -> O (occurs first)
    assert document_token_labels("abcd", [S(2, 4, DRUG)], TYPES)[1] == ["O"]
    assert document_token_labels("abcd", [S(0, 2, DRUG)], TYPES)[1] == [DRUG]
    # "IL-2": gene on "IL" = 2 of 4 characters, tie with O -> gene (leftmost)
    assert document_token_labels("IL-2 receptor", [S(0, 2, "gene")], ("gene",))[1] == [
        "gene",
        "O",
    ]


def test_token_f1_hand_computed() -> None:
    text = "aspirin treats headache ."
    gold = [[S(0, 7, DRUG), S(15, 23, COND)]]
    pred = [[S(0, 7, DRUG), S(15, 23, DRUG)]]
    res = token_macro_f1([text], gold, pred, TYPES)
    # tokens: aspirin treats headache . ; gold D O C O ; pred D O D O
    # drug: TP 1 FP 1 FN 0 -> P 1/2, R 1, F1 2*1/(2+1) = 2/3 ; condition: TP 0 FN 1 -> F1 0
    assert res.per_type[DRUG].f1 == pytest.approx(2 / 3, abs=TOL)
    assert res.per_type[DRUG].precision == pytest.approx(0.5, abs=TOL)
    assert res.per_type[COND].f1 == 0.0
    assert res.per_type[COND].support == 1
    assert res.macro_f1 == pytest.approx((2 / 3 + 0) / 2, abs=TOL)
    assert res.doc_counts(0) == {
        DRUG: {"tp": 1, "fp": 1, "fn": 0},
        COND: {"tp": 0, "fp": 0, "fn": 1},
    }


def test_token_f1_nested_prediction() -> None:
    text = "left lung cancer"
    gold = [[S(0, 16, COND)]]
    pred = [[S(0, 16, COND), S(5, 9, DRUG)]]  # the later, nested drug span wins on "lung"
    res = token_macro_f1([text], gold, pred, TYPES)
    # gold C C C ; pred C D C -> condition TP 2 FN 1 -> F1 4/5 ; drug FP 1 -> F1 0
    assert res.per_type[COND].f1 == pytest.approx(0.8, abs=TOL)
    assert res.per_type[DRUG].f1 == 0.0
    assert res.macro_f1 == pytest.approx(0.4, abs=TOL)


def test_token_f1_empty_docs_and_no_predictions_give_zero_not_nan() -> None:
    res = token_macro_f1(["", "fever and cough"], [[], [S(0, 5, COND)]], [[], []], TYPES)
    # condition: TP 0 FN 1 -> 0 ; drug: nothing at all -> 0 (zero_division=0)
    assert res.macro_f1 == 0.0 and res.per_type[DRUG].f1 == 0.0
    assert res.doc_fn.tolist() == [[0, 0], [0, 1]]
    empty = token_macro_f1([], [], [], TYPES)
    assert empty.macro_f1 == 0.0 and empty.n_tokens == 0


def test_token_f1_unknown_predicted_type_counts_as_not_the_type() -> None:
    # "x" gold drug, pred "foo" (outside the types): drug FN 1 ; the foo span also overrides
    # the earlier drug prediction on "y": y gold drug, pred foo -> another FN.
    res = token_macro_f1(["x y"], [[S(0, 3, DRUG)]], [[S(0, 1, "foo"), S(2, 3, DRUG)]], TYPES)
    # drug: x FN, y TP -> TP 1 FN 1 -> F1 2/3
    assert res.per_type[DRUG].f1 == pytest.approx(2 / 3, abs=TOL)
    res2 = token_macro_f1(["x y"], [[S(0, 3, DRUG)]], [[S(2, 3, DRUG), S(2, 3, "foo")]], TYPES)
    # both tokens FN for drug -> 0
    assert res2.per_type[DRUG].f1 == 0.0 and res2.per_type[DRUG].fn == 2


def test_token_f1_caller_tokens() -> None:
    # one word, split by a model tokenizer into "asp" + "irin"
    res = token_macro_f1(
        ["aspirin"], [[S(0, 7, DRUG)]], [[S(0, 3, DRUG)]], TYPES, token_offsets=[([0, 3], [3, 7])]
    )
    # gold D D ; pred D O -> drug TP 1 FN 1 -> F1 2/3 ; condition 0
    assert res.per_type[DRUG].f1 == pytest.approx(2 / 3, abs=TOL)
    assert res.n_tokens == 2
    with pytest.raises(ValueError):
        token_macro_f1(["ab"], [[]], [[]], TYPES, token_offsets=[([0], [5])])


def test_span_outside_document_is_rejected() -> None:
    with pytest.raises(ValueError, match="outside"):
        token_macro_f1(["abc", "de"], [[], []], [[], [S(1, 3, DRUG)]], TYPES)


# ----------------------------------------------------------------------------- span metrics
def test_span_touching_overlaps() -> None:
    res = span_f1([[S(0, 5, COND)]], [[S(5, 9, COND)]], TYPES)
    # ends are read as inclusive: [0,5] and [5,9] share 5 -> ent_type correct, strict incorrect
    assert (res.partial.total.correct, res.partial.total.f1) == (1, 1.0)
    assert (res.exact.total.incorrect, res.exact.total.f1) == (1, 0.0)
    assert_span_matches_nervaluate([[S(0, 5, COND)]], [[S(5, 9, COND)]], TYPES)


def test_span_duplicates_and_order() -> None:
    # identical duplicate predictions are both correct: correct 2, actual 2, possible 2 -> 1.0
    res = span_f1([[S(0, 5, DRUG)]], [[S(0, 5, DRUG), S(0, 5, DRUG)]], TYPES)
    assert res.partial.total.correct == 2 and res.partial.total.possible == 2
    assert res.exact.f1 == 1.0
    # overlapping duplicates: the second finds its gold matched -> spurious
    # ent_type: correct 1 spurious 1 -> P 1/2, R 1/1 -> F1 2*(1/2)/(3/2) = 2/3 ; strict 0
    gold, pred = [[S(0, 5, DRUG)]], [[S(0, 3, DRUG), S(1, 4, DRUG)]]
    res = span_f1(gold, pred, TYPES)
    assert res.partial.f1 == pytest.approx(2 / 3, abs=TOL)
    assert (res.exact.total.incorrect, res.exact.total.spurious, res.exact.f1) == (1, 1, 0.0)
    # the first not-yet-matched overlapping gold in LIST order: [10,20) before [0,15)
    # correct 1 missed 1 -> P 1, R 1/2 -> F1 2/3
    gold = [[S(10, 20, COND), S(0, 15, COND)]]
    res = span_f1(gold, [[S(5, 12, COND)]], TYPES)
    assert res.partial.total.as_dict()["missed"] == 1
    assert res.partial.f1 == pytest.approx(2 / 3, abs=TOL)
    # identical gold duplicates are matched together (by value): correct 1, missed 0 -> 1.0
    res = span_f1([[S(0, 5, DRUG), S(0, 5, DRUG)]], [[S(0, 5, DRUG)]], TYPES)
    assert (res.partial.total.missed, res.partial.f1) == (0, 1.0)
    for g, p in [
        ([[S(0, 5, DRUG)]], [[S(0, 3, DRUG), S(1, 4, DRUG)]]),
        ([[S(10, 20, COND), S(0, 15, COND)]], [[S(5, 12, COND)]]),
        ([[S(0, 5, DRUG), S(0, 5, DRUG)]], [[S(0, 5, DRUG)]]),
    ]:
        assert_span_matches_nervaluate(g, p, TYPES)


def test_span_wrong_type_and_types_outside_tags() -> None:
    # same offsets, other type: incorrect in both schemes, booked under the GOLD type
    res = span_f1([[S(0, 5, DRUG)]], [[S(0, 5, COND)]], TYPES)
    assert res.partial.total.incorrect == 1 and res.partial.f1 == 0.0
    assert res.partial.per_type[DRUG].actual == 1 and res.partial.per_type[COND].actual == 0
    # same offsets after that gold was matched: still incorrect (nervaluate checks it first)
    # ent_type: correct 1 + incorrect 1 -> actual 2, possible 2 -> P = R = F1 = 1/2
    res = span_f1([[S(0, 5, DRUG)]], [[S(0, 3, DRUG), S(0, 5, COND)]], TYPES)
    assert res.partial.f1 == pytest.approx(0.5, abs=TOL)
    # a type outside the tags is ignored: missed 1, actual 0 -> 0 (not NaN)
    res = span_f1([[S(0, 5, DRUG)]], [[S(0, 5, "foo")]], TYPES)
    assert res.partial.total.missed == 1 and res.partial.total.actual == 0
    assert res.partial.f1 == 0.0
    for g, p in [
        ([[S(0, 5, DRUG)]], [[S(0, 5, COND)]]),
        ([[S(0, 5, DRUG)]], [[S(0, 3, DRUG), S(0, 5, COND)]]),
        ([[S(0, 5, DRUG), S(3, 4, "foo")]], [[S(0, 5, "foo"), S(9, 12, "foo")]]),
    ]:
        assert_span_matches_nervaluate(g, p, TYPES)


def test_span_empty_and_no_predictions() -> None:
    res = span_f1([[], []], [[], []], TYPES)
    assert res.partial.f1 == 0.0 and res.exact.f1 == 0.0
    # no predictions: missed 2 -> recall 0, precision 0 (actual 0), F1 0
    res = span_f1([[S(0, 2, DRUG), S(4, 6, COND)]], [[]], TYPES)
    assert res.partial.total.missed == 2 and res.partial.f1 == 0.0
    assert res.partial.doc(0).missed == 2
    assert span_f1([], [], TYPES).partial.f1 == 0.0
    assert_span_matches_nervaluate([[S(0, 2, DRUG), S(4, 6, COND)]], [[]], TYPES)


# ----------------------------------------------------------------------------- randomized
RANDOM_WORDS = ["fever", "IL-2", "b", "of", "x_y", "(", ")", ",", "β-blocker", "10mg", "-", "é"]


def random_doc(rng: random.Random) -> str:
    words = [rng.choice(RANDOM_WORDS) for _ in range(rng.randint(0, 12))]
    return "".join(w + rng.choice([" ", " ", "", "\n", "  "]) for w in words)


def random_spans(rng: random.Random, n_chars: int, types: tuple[str, ...]) -> list[Span]:
    spans = []
    for _ in range(rng.randint(0, 6)):
        if n_chars == 0:
            break
        start = rng.randint(0, n_chars - 1)
        end = min(n_chars, start + rng.randint(0, 10))
        kind = rng.choice([*types, "other"]) if rng.random() < 0.2 else rng.choice(types)
        if rng.random() < 0.04:
            start, end = end, start  # inverted: covers no character, overlaps nothing
        spans.append(S(start, end, kind))
        if rng.random() < 0.15:
            spans.append(spans[rng.randrange(len(spans))])  # duplicates
    return spans


@pytest.mark.parametrize("seed", range(40))
def test_random_agreement_with_oracles(seed: int) -> None:
    rng = random.Random(seed)
    types = ("condition", "drug", "gene")[: rng.randint(1, 3)]
    texts = [random_doc(rng) for _ in range(rng.randint(1, 25))]
    gold = [random_spans(rng, len(t), types) for t in texts]
    pred = [random_spans(rng, len(t), types) for t in texts]
    if rng.random() < 0.3:  # predictions that start from the gold, then get perturbed
        pred = [g + p[:1] for g, p in zip(gold, pred, strict=True)]
    ours = token_macro_f1(texts, gold, pred, types)
    report = sklearn_macro(texts, gold, pred, types)
    assert ours.macro_f1 == pytest.approx(report["macro avg"]["f1-score"], abs=TOL)
    for t in types:
        for key, ref in (("precision", "precision"), ("recall", "recall"), ("f1", "f1-score")):
            assert getattr(ours.per_type[t], key) == pytest.approx(report[t][ref], abs=TOL)
        assert ours.per_type[t].support == report[t]["support"]
    # per-document counts: each document's, counted from the naive labels, and the same as
    # scoring that document alone
    for d in range(len(texts)):
        g_labels = naive_token_labels(texts[d], gold[d])
        p_labels = naive_token_labels(texts[d], pred[d])
        expected = {
            t: {
                "tp": sum(g == t and p == t for g, p in zip(g_labels, p_labels, strict=True)),
                "fp": sum(g != t and p == t for g, p in zip(g_labels, p_labels, strict=True)),
                "fn": sum(g == t and p != t for g, p in zip(g_labels, p_labels, strict=True)),
            }
            for t in types
        }
        assert ours.doc_counts(d) == expected
        single = token_macro_f1([texts[d]], [gold[d]], [pred[d]], types)
        assert single.doc_counts(0) == ours.doc_counts(d)
    # the labels themselves, against the naive reference
    for text, spans in zip(texts, pred, strict=True):
        assert document_token_labels(text, spans, types)[1] == naive_token_labels(text, spans)
    assert_span_matches_nervaluate(gold, pred, types)
    # per-document span counts: nervaluate on that document alone
    span_scores = span_f1(gold, pred, types)
    for d in range(len(texts)):
        results, _ = nerv([gold[d]], [pred[d]], types)
        for scheme, mine in (("ent_type", span_scores.partial), ("strict", span_scores.exact)):
            got = mine.doc(d).as_dict()
            assert {k: got[k] for k in COUNT_FIELDS} == {
                k: results[scheme][k] for k in COUNT_FIELDS
            }, (d, scheme)


def random_tokens(rng: random.Random, n_chars: int, disjoint: bool) -> list[tuple[int, int]]:
    """A subword-like segmentation (disjoint, sorted, may skip characters) or arbitrary ranges."""
    if disjoint:
        cuts = sorted({0, n_chars, *(rng.randint(0, n_chars) for _ in range(n_chars // 2))})
        return [(a, b) for a, b in pairwise(cuts) if rng.random() < 0.9]
    out = []
    for _ in range(rng.randint(0, 12)):
        a = rng.randint(0, n_chars)
        out.append((a, min(n_chars, a + rng.randint(0, 6))))
    return out


@pytest.mark.parametrize("seed", range(20))
def test_random_caller_tokens_agree_with_oracles(seed: int) -> None:
    rng = random.Random(1000 + seed)
    types = ("condition", "drug")
    texts = [random_doc(rng) for _ in range(rng.randint(1, 15))]
    tokens = [random_tokens(rng, len(t), disjoint=seed % 2 == 0) for t in texts]
    gold = [random_spans(rng, len(t), types) for t in texts]
    pred = [random_spans(rng, len(t), types) for t in texts]
    offsets = [([a for a, _ in doc], [b for _, b in doc]) for doc in tokens]
    ours = token_macro_f1(texts, gold, pred, types, token_offsets=offsets)
    y_true = [
        x for t, g, k in zip(texts, gold, tokens, strict=True) for x in naive_token_labels(t, g, k)
    ]
    y_pred = [
        x for t, p, k in zip(texts, pred, tokens, strict=True) for x in naive_token_labels(t, p, k)
    ]
    report = classification_report(
        y_true, y_pred, labels=list(types), zero_division=0, output_dict=True
    )
    assert ours.macro_f1 == pytest.approx(report["macro avg"]["f1-score"], abs=TOL)
    for t in types:
        assert ours.per_type[t].f1 == pytest.approx(report[t]["f1-score"], abs=TOL)
    for text, spans, doc_tokens, doc_offsets in zip(texts, pred, tokens, offsets, strict=True):
        got = document_token_labels(text, spans, types, token_offsets=doc_offsets)
        assert got == (doc_tokens, naive_token_labels(text, spans, doc_tokens))


def test_exact_change_points_path_matches_span_boundaries() -> None:
    rng = random.Random(5)
    for _ in range(200):
        text = random_doc(rng)
        spans = random_spans(rng, len(text), TYPES)
        space = LabelSpace.build(TYPES, [s.type for s in spans])
        corpus = CorpusText.of([text])
        flat = flatten_spans(DocSpans.of([spans]), corpus, space.ids())
        chars = paint_char_labels(corpus.n_chars, flat, len(space.names))
        starts, ends = regex_token_offsets(text)
        n = len(space.names)
        by_chars = token_majority_labels(chars, starts, ends, n)
        by_spans = token_majority_labels(chars, starts, ends, n, span_boundaries(flat))
        assert by_chars.tolist() == by_spans.tolist()
        assert [space.names[i] for i in by_chars] == naive_token_labels(text, spans)
