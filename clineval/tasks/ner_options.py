"""The `--option ner.*` keys of the Clinical NER tasks (declared once; see clineval.options)."""

from __future__ import annotations

from clineval.options import Option, OptionGroup, choice, integer, text

TOKENIZER_OPTION = "ner.tokenizer"
CRF_WORKERS_OPTION = "ner.crf_workers"
FORMAT_OPTION = "ner.response_format"
# ner.label_map is read by models/ner_hf.py (LABEL_MAP_OPTION, the same name): the model layer
# knows no tasks, so it keeps its own constant.

NER_OPTIONS = OptionGroup(
    namespace="ner",
    applies_to="the ner:* tasks",
    options=(
        Option(
            "tokenizer",
            choice("regex", "model"),
            "token boundaries of the token metric: the benchmark's regex, or the checkpoint's "
            "own tokenizer (hf backend only)",
            "regex",
        ),
        Option(
            "crf_workers",
            integer(minimum=1),
            "processes that train the CRF baseline's models at once",
            None,
        ),
        Option(
            "label_map",
            text(),
            "hf checkpoint labels to OMOP types: LABEL:type,LABEL:type,...",
            None,
        ),
        Option(
            "response_format",
            choice("json_schema", "json_object", "none"),
            "how a chat model is asked for its spans",
            "json_schema",
        ),
    ),
)
