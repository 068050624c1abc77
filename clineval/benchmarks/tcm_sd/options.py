"""The `--option tcm.*` keys of the TCM-SD task (declared once; see clineval.options)."""

from __future__ import annotations

from clineval.options import (
    MAX_TOKENS,
    Flag,
    Option,
    OptionGroup,
    boolean,
    choice,
    integer,
    number,
    text,
)

TCM_OPTIONS = OptionGroup(
    namespace="tcm",
    applies_to="the tcm-sd task",
    options=(
        Option("data", choice("official", "synthetic"), "which records to evaluate", "official"),
        Option("split", choice("test", "dev"), "the split that is scored", "test"),
        Option(
            "dedupe",
            boolean,
            "drop evaluated records that also occur in the train split",
            "false",
            flag=Flag("--dedupe", value="true"),
        ),
        Option(
            "synth_scale",
            number(0.0, maximum=1.0, above_minimum=True),
            "size of the synthetic fixture relative to the official splits, (0, 1]",
            "1",
        ),
        Option(
            "fields",
            text(),
            "record fields a model reads, comma-separated, in order",
            None,
        ),
        Option(
            "embed",
            text(),
            "embedding model of baseline:knowledge",
            None,
            models=("baseline:knowledge",),
        ),
        Option(
            "knowledge",
            text(),
            "path of the syndrome knowledge corpus",
            None,
            models=("baseline:knowledge",),
        ),
        Option(
            "max_length",
            # capped by the checkpoint's position window when it is loaded
            integer(minimum=1, maximum=MAX_TOKENS),
            "tokens an hf classifier reads (the authors' run_tcm.py: 128)",
            "512",
            models=("checkpoint",),
        ),
        Option(
            "answer_mapping",
            choice("invalid", "mrc"),
            "an answer that is not one of the labels: invalid (counted), or mrc, the authors' "
            "run_tcm_mrc.py rule (the first label, in vocabulary order, contained in the "
            "answer, else the first label: an empty answer, an MRC model's no-answer, too)",
            "invalid",
            models=("chat", "predictions"),  # the only models whose answers can be no label
        ),
        Option(
            "batch",
            integer(minimum=1, maximum=65_536),
            "records per hf classifier batch",
            "32",
            models=("checkpoint",),
        ),
    ),
)
