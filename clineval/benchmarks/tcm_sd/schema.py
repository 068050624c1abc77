"""TCM-SD's metric schema (primary first), in a module of its own so that the scoring code
can name the primary metric in the results without importing the declaration."""

from __future__ import annotations

from clineval.metrics.schema import MetricSchema, MetricSpec

METRICS = MetricSchema(
    (
        MetricSpec(
            "macro_f1", "Macro-F1 over all 148 labels (sklearn labels=all, zero_division=0)"
        ),
        MetricSpec(
            "present_macro_f1",
            "Macro-F1 over the labels present in gold or predictions (n_labels_present): "
            "sklearn classification_report without labels=, the authors' run_tcm.py figure",
            headline=False,
        ),
        MetricSpec("accuracy", "share of records whose prediction is the gold syndrome"),
        MetricSpec("invalid_rate", "share of outputs that are not one of the labels", False),
        MetricSpec("n", "records scored", count=True),
        MetricSpec("n_invalid", "outputs that are not a label", False, False, True),
        MetricSpec("n_missing", "records without a prediction", False, False, True),
    ),
    tables=("per_class",),
)
