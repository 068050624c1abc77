"""The public authoring surface of clineval: every name a benchmark package needs, whether
built in (clineval/benchmarks/<family>/) or installed separately and registered through the
entry-point group `clineval.benchmarks` (examples/plugin-benchmark/).

This package root and `clineval` are clineval's public modules (docs/architecture.md, "Public
API"). A benchmark package imports from here only: every other module, the submodules of this
package included, is internal and may change between releases. The names load on first use,
so that importing a benchmark's declaration does not import the model stack.

Long module: one table of names and, for type checkers, one import per name (the form that
keeps each re-export explicit); it holds no code of its own.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# {public name: the internal module that defines it}
_HOME = {
    # what a benchmark declares
    "Benchmark": "clineval.benchmarks.declaration",
    "DataSource": "clineval.benchmarks.declaration",
    "MetricSchema": "clineval.metrics.schema",
    "MetricSpec": "clineval.metrics.schema",
    "Exporter": "clineval.benchmarks.declaration",
    "ReportSection": "clineval.benchmarks.declaration",
    "SampleStatistics": "clineval.benchmarks.declaration",
    "Synthesizer": "clineval.benchmarks.declaration",
    "LongRows": "clineval.benchmarks.declaration",
    # the files `data fetch` downloads; files without a published hash (pinned by their
    # first fetch) and files fetched at use time at a pinned hash; where a data file is
    "Source": "clineval.data.fetch",
    "RetryPolicy": "clineval.retry",
    "fetch_pinned": "clineval.data.recorded",
    "fetch_recorded": "clineval.data.recorded",
    "require_file": "clineval.datapaths",
    # the typed view of a benchmark's metrics in the Python API (RunResult.metrics_as)
    "MetricsView": "clineval.benchmarks.results_view",
    "attribute_key": "clineval.benchmarks.results_view",
    "exploding": "clineval.benchmarks.results_view",
    # the task protocol
    "DataFileStatus": "clineval.benchmarks.base",
    "RunContext": "clineval.benchmarks.base",
    "Task": "clineval.benchmarks.base",
    "TaskResult": "clineval.benchmarks.base",
    # the kit: samples, predictions files, one chat call per sample, letters, accuracy
    "PREDICTION": "clineval.benchmarks.kit",
    "accuracy_with_interval": "clineval.benchmarks.kit",
    "parse_choice": "clineval.benchmarks.kit",
    "pending": "clineval.benchmarks.kit",
    "plan_by_chat": "clineval.benchmarks.kit",
    "predict_by_chat": "clineval.benchmarks.kit",
    "predictions_path": "clineval.benchmarks.kit",
    "read_predictions": "clineval.benchmarks.kit",
    "select_samples": "clineval.benchmarks.kit",
    "unstored": "clineval.benchmarks.kit",
    # bad input: one line naming the file and line
    "InputError": "clineval.errors",
    # JSON Lines input with file:line errors
    "iter_json_objects": "clineval.jsonl",
    # CSV output (an exporter's): no cell a spreadsheet would run as a formula
    "csv_text": "clineval.csv_text",
    # chat models: requests, replies, errors, opening the run's model
    "ChatError": "clineval.models.llm_base",
    "ChatModel": "clineval.models.llm_base",
    "ChatRequest": "clineval.models.llm_base",
    "ChatResponse": "clineval.models.llm_base",
    "open_chat_model": "clineval.models.llm",
    # what kind of model the run has (ctx.backend.kind)
    "ModelKind": "clineval.models.backends",
    # the --dry-run plan
    "UNBOUNDED_REPLY_TOKENS": "clineval.plan",
    "CallPlan": "clineval.plan",
    # --option KEY=VALUE: groups and value parsers
    "Flag": "clineval.options",
    "Option": "clineval.options",
    "OptionGroup": "clineval.options",
    "RunFacts": "clineval.options",
    "boolean": "clineval.options",
    "choice": "clineval.options",
    "integer": "clineval.options",
    "integer_list": "clineval.options",
    "number": "clineval.options",
    "text": "clineval.options",
    # per-sample statistics (compare's paired test, report intervals)
    "Reducer": "clineval.reportkit.statistics",
    "SampleStatistic": "clineval.reportkit.statistics",
    "bootstrap_interval": "clineval.reportkit.statistics",
    "counts_statistic": "clineval.reportkit.statistics",
    "macro_f1_statistic": "clineval.reportkit.statistics",
    "micro_f1_statistic": "clineval.reportkit.statistics",
    "mean_statistic": "clineval.reportkit.statistics",
    "ratio_statistic": "clineval.reportkit.statistics",
    # bootstrap resampling
    "DEFAULT_RESAMPLES": "clineval.metrics.bootstrap",
    "bootstrap_indices": "clineval.metrics.bootstrap",
    "percentile_interval": "clineval.metrics.bootstrap",
    "stratified_bootstrap_indices": "clineval.metrics.bootstrap",
    # agreement of a judge with human labels, pairwise results (docs/metrics.md)
    "pooled_balanced_f1": "clineval.metrics.agreement",
    "item_scores": "clineval.metrics.pairwise",
    "position_consistency": "clineval.metrics.pairwise",
    "tie_rate": "clineval.metrics.pairwise",
    "win_rate": "clineval.metrics.pairwise",
    "win_rate_interval": "clineval.metrics.pairwise",
    "PairwiseGames": "clineval.metrics.pairwise",
    "NoEstimate": "clineval.metrics.pairwise",
    "bradley_terry_intervals": "clineval.metrics.pairwise",
    # report sections: the run's data and the blocks a section is built of
    "RunData": "clineval.reportkit.rundata",
    "finite_number": "clineval.reportkit.rundata",
    "interval_of": "clineval.reportkit.rundata",
    "SampleTable": "clineval.reportkit.sections_common",
    "base_section": "clineval.reportkit.sections_common",
    "filter_values": "clineval.reportkit.sections_common",
    "flatten": "clineval.reportkit.sections_common",
    "format_value": "clineval.reportkit.sections_common",
    "yes_no": "clineval.reportkit.sections_common",
    "download_block": "clineval.reportkit.sections_common",
    "examples_block": "clineval.reportkit.sections_common",
    "fields_part": "clineval.reportkit.sections_common",
    "heading_part": "clineval.reportkit.sections_common",
    "rows_part": "clineval.reportkit.sections_common",
    "short_model_label": "clineval.reportkit.sections_common",
    "spans_part": "clineval.reportkit.sections_common",
    "table_block": "clineval.reportkit.sections_common",
    "text_part": "clineval.reportkit.sections_common",
    # charts a section draws (inline SVG, every text escaped)
    "grouped_bars": "clineval.reportkit.plots",
    "heatmap": "clineval.reportkit.plots",
    "horizontal_bars": "clineval.reportkit.plots",
    "interval_dots": "clineval.reportkit.plots",
    "scatter": "clineval.reportkit.plots",
    # the judging kit (judged benchmarks: docs/architecture.md, "Where to add things")
    "Criterion": "clineval.benchmarks.judged",
    "JudgedItem": "clineval.benchmarks.judged",
    "JudgePanel": "clineval.benchmarks.judged",
    "Judging": "clineval.benchmarks.judged",
    "ReplyBounds": "clineval.benchmarks.judged",
    "answer_text": "clineval.benchmarks.judged",
    "error_rate_failures": "clineval.benchmarks.judged",
    "judge_options": "clineval.benchmarks.judged",
    "JUDGED_SCORING_SETTINGS": "clineval.benchmarks.judged",
    "JUDGED_RUN_SETTINGS": "clineval.benchmarks.judged",
    "stored_answers": "clineval.benchmarks.judged",
    "stored_verdicts": "clineval.benchmarks.judged",
    "verdict_matrix": "clineval.benchmarks.judged",
    "plan_judged": "clineval.benchmarks.judged_flow",
    "predict_judged": "clineval.benchmarks.judged_flow",
    "JudgedData": "clineval.benchmarks.judged_task",
    "JudgedTask": "clineval.benchmarks.judged_task",
    "GRADED_SCORING_SETTINGS": "clineval.benchmarks.judged_task",
    "judged_metrics": "clineval.benchmarks.judged_task",
    "score_statistics": "clineval.benchmarks.judged_task",
    "JudgePrompt": "clineval.judge.prompt",
    "load_judge_prompt": "clineval.judge.prompt",
    # verdict kinds and pairwise judging (docs/judging.md)
    "Binary": "clineval.judge.kinds",
    "Categorical": "clineval.judge.kinds",
    "Graded": "clineval.judge.kinds",
    "PairwiseScale": "clineval.judge.pairwise",
    "MT_BENCH": "clineval.judge.pairwise",
    "ARENA_HARD": "clineval.judge.pairwise",
    "PAIRWISE_SCORING_SETTINGS": "clineval.benchmarks.judged_pairwise",
    "PairwiseTask": "clineval.benchmarks.judged_pairwise",
    "pairwise_item": "clineval.benchmarks.judged_pairwise",
    "pairwise_metrics": "clineval.benchmarks.judged_pairwise",
    "pairwise_options": "clineval.benchmarks.judged_pairwise",
    "pairwise_statistics": "clineval.benchmarks.judged_pairwise",
    "VerdictRecord": "clineval.judge.verdict",
    "verdict_key": "clineval.judge.verdict",
}
__all__ = sorted(_HOME)

if TYPE_CHECKING:  # what type checkers and editors see of the lazy names below
    from clineval.benchmarks.base import (
        DataFileStatus as DataFileStatus,
    )
    from clineval.benchmarks.base import (
        RunContext as RunContext,
    )
    from clineval.benchmarks.base import (
        Task as Task,
    )
    from clineval.benchmarks.base import (
        TaskResult as TaskResult,
    )
    from clineval.benchmarks.declaration import (
        Benchmark as Benchmark,
    )
    from clineval.benchmarks.declaration import (
        DataSource as DataSource,
    )
    from clineval.benchmarks.declaration import (
        Exporter as Exporter,
    )
    from clineval.benchmarks.declaration import (
        LongRows as LongRows,
    )
    from clineval.benchmarks.declaration import (
        ReportSection as ReportSection,
    )
    from clineval.benchmarks.declaration import (
        SampleStatistics as SampleStatistics,
    )
    from clineval.benchmarks.declaration import (
        Synthesizer as Synthesizer,
    )
    from clineval.benchmarks.judged import (
        JUDGED_RUN_SETTINGS as JUDGED_RUN_SETTINGS,
    )
    from clineval.benchmarks.judged import (
        JUDGED_SCORING_SETTINGS as JUDGED_SCORING_SETTINGS,
    )
    from clineval.benchmarks.judged import (
        Criterion as Criterion,
    )
    from clineval.benchmarks.judged import (
        JudgedItem as JudgedItem,
    )
    from clineval.benchmarks.judged import (
        JudgePanel as JudgePanel,
    )
    from clineval.benchmarks.judged import (
        Judging as Judging,
    )
    from clineval.benchmarks.judged import (
        ReplyBounds as ReplyBounds,
    )
    from clineval.benchmarks.judged import (
        answer_text as answer_text,
    )
    from clineval.benchmarks.judged import (
        error_rate_failures as error_rate_failures,
    )
    from clineval.benchmarks.judged import (
        judge_options as judge_options,
    )
    from clineval.benchmarks.judged import (
        stored_answers as stored_answers,
    )
    from clineval.benchmarks.judged import (
        stored_verdicts as stored_verdicts,
    )
    from clineval.benchmarks.judged import (
        verdict_matrix as verdict_matrix,
    )
    from clineval.benchmarks.judged_flow import (
        plan_judged as plan_judged,
    )
    from clineval.benchmarks.judged_flow import (
        predict_judged as predict_judged,
    )
    from clineval.benchmarks.judged_pairwise import (
        PAIRWISE_SCORING_SETTINGS as PAIRWISE_SCORING_SETTINGS,
    )
    from clineval.benchmarks.judged_pairwise import (
        PairwiseTask as PairwiseTask,
    )
    from clineval.benchmarks.judged_pairwise import (
        pairwise_item as pairwise_item,
    )
    from clineval.benchmarks.judged_pairwise import (
        pairwise_metrics as pairwise_metrics,
    )
    from clineval.benchmarks.judged_pairwise import (
        pairwise_options as pairwise_options,
    )
    from clineval.benchmarks.judged_pairwise import (
        pairwise_statistics as pairwise_statistics,
    )
    from clineval.benchmarks.judged_task import (
        GRADED_SCORING_SETTINGS as GRADED_SCORING_SETTINGS,
    )
    from clineval.benchmarks.judged_task import (
        JudgedData as JudgedData,
    )
    from clineval.benchmarks.judged_task import (
        JudgedTask as JudgedTask,
    )
    from clineval.benchmarks.judged_task import (
        judged_metrics as judged_metrics,
    )
    from clineval.benchmarks.judged_task import (
        score_statistics as score_statistics,
    )
    from clineval.benchmarks.kit import (
        PREDICTION as PREDICTION,
    )
    from clineval.benchmarks.kit import (
        accuracy_with_interval as accuracy_with_interval,
    )
    from clineval.benchmarks.kit import (
        parse_choice as parse_choice,
    )
    from clineval.benchmarks.kit import (
        pending as pending,
    )
    from clineval.benchmarks.kit import (
        plan_by_chat as plan_by_chat,
    )
    from clineval.benchmarks.kit import (
        predict_by_chat as predict_by_chat,
    )
    from clineval.benchmarks.kit import (
        predictions_path as predictions_path,
    )
    from clineval.benchmarks.kit import (
        read_predictions as read_predictions,
    )
    from clineval.benchmarks.kit import (
        select_samples as select_samples,
    )
    from clineval.benchmarks.kit import (
        unstored as unstored,
    )
    from clineval.benchmarks.results_view import (
        MetricsView as MetricsView,
    )
    from clineval.benchmarks.results_view import (
        attribute_key as attribute_key,
    )
    from clineval.benchmarks.results_view import (
        exploding as exploding,
    )
    from clineval.csv_text import (
        csv_text as csv_text,
    )
    from clineval.data.fetch import (
        Source as Source,
    )
    from clineval.data.recorded import (
        fetch_pinned as fetch_pinned,
    )
    from clineval.data.recorded import (
        fetch_recorded as fetch_recorded,
    )
    from clineval.datapaths import (
        require_file as require_file,
    )
    from clineval.errors import (
        InputError as InputError,
    )
    from clineval.jsonl import (
        iter_json_objects as iter_json_objects,
    )
    from clineval.judge.kinds import (
        Binary as Binary,
    )
    from clineval.judge.kinds import (
        Categorical as Categorical,
    )
    from clineval.judge.kinds import (
        Graded as Graded,
    )
    from clineval.judge.pairwise import (
        ARENA_HARD as ARENA_HARD,
    )
    from clineval.judge.pairwise import (
        MT_BENCH as MT_BENCH,
    )
    from clineval.judge.pairwise import (
        PairwiseScale as PairwiseScale,
    )
    from clineval.judge.prompt import (
        JudgePrompt as JudgePrompt,
    )
    from clineval.judge.prompt import (
        load_judge_prompt as load_judge_prompt,
    )
    from clineval.judge.verdict import (
        VerdictRecord as VerdictRecord,
    )
    from clineval.judge.verdict import (
        verdict_key as verdict_key,
    )
    from clineval.metrics.agreement import (
        pooled_balanced_f1 as pooled_balanced_f1,
    )
    from clineval.metrics.bootstrap import (
        DEFAULT_RESAMPLES as DEFAULT_RESAMPLES,
    )
    from clineval.metrics.bootstrap import (
        bootstrap_indices as bootstrap_indices,
    )
    from clineval.metrics.bootstrap import (
        percentile_interval as percentile_interval,
    )
    from clineval.metrics.bootstrap import (
        stratified_bootstrap_indices as stratified_bootstrap_indices,
    )
    from clineval.metrics.pairwise import (
        NoEstimate as NoEstimate,
    )
    from clineval.metrics.pairwise import (
        PairwiseGames as PairwiseGames,
    )
    from clineval.metrics.pairwise import (
        bradley_terry_intervals as bradley_terry_intervals,
    )
    from clineval.metrics.pairwise import (
        item_scores as item_scores,
    )
    from clineval.metrics.pairwise import (
        position_consistency as position_consistency,
    )
    from clineval.metrics.pairwise import (
        tie_rate as tie_rate,
    )
    from clineval.metrics.pairwise import (
        win_rate as win_rate,
    )
    from clineval.metrics.pairwise import (
        win_rate_interval as win_rate_interval,
    )
    from clineval.metrics.schema import (
        MetricSchema as MetricSchema,
    )
    from clineval.metrics.schema import (
        MetricSpec as MetricSpec,
    )
    from clineval.models.backends import (
        ModelKind as ModelKind,
    )
    from clineval.models.llm import (
        open_chat_model as open_chat_model,
    )
    from clineval.models.llm_base import (
        ChatError as ChatError,
    )
    from clineval.models.llm_base import (
        ChatModel as ChatModel,
    )
    from clineval.models.llm_base import (
        ChatRequest as ChatRequest,
    )
    from clineval.models.llm_base import (
        ChatResponse as ChatResponse,
    )
    from clineval.options import (
        Flag as Flag,
    )
    from clineval.options import (
        Option as Option,
    )
    from clineval.options import (
        OptionGroup as OptionGroup,
    )
    from clineval.options import (
        RunFacts as RunFacts,
    )
    from clineval.options import (
        boolean as boolean,
    )
    from clineval.options import (
        choice as choice,
    )
    from clineval.options import (
        integer as integer,
    )
    from clineval.options import (
        integer_list as integer_list,
    )
    from clineval.options import (
        number as number,
    )
    from clineval.options import (
        text as text,
    )
    from clineval.plan import (
        UNBOUNDED_REPLY_TOKENS as UNBOUNDED_REPLY_TOKENS,
    )
    from clineval.plan import (
        CallPlan as CallPlan,
    )
    from clineval.reportkit.plots import (
        grouped_bars as grouped_bars,
    )
    from clineval.reportkit.plots import (
        heatmap as heatmap,
    )
    from clineval.reportkit.plots import (
        horizontal_bars as horizontal_bars,
    )
    from clineval.reportkit.plots import (
        interval_dots as interval_dots,
    )
    from clineval.reportkit.plots import (
        scatter as scatter,
    )
    from clineval.reportkit.rundata import (
        RunData as RunData,
    )
    from clineval.reportkit.rundata import (
        finite_number as finite_number,
    )
    from clineval.reportkit.rundata import (
        interval_of as interval_of,
    )
    from clineval.reportkit.sections_common import (
        SampleTable as SampleTable,
    )
    from clineval.reportkit.sections_common import (
        base_section as base_section,
    )
    from clineval.reportkit.sections_common import (
        download_block as download_block,
    )
    from clineval.reportkit.sections_common import (
        examples_block as examples_block,
    )
    from clineval.reportkit.sections_common import (
        fields_part as fields_part,
    )
    from clineval.reportkit.sections_common import (
        filter_values as filter_values,
    )
    from clineval.reportkit.sections_common import (
        flatten as flatten,
    )
    from clineval.reportkit.sections_common import (
        format_value as format_value,
    )
    from clineval.reportkit.sections_common import (
        heading_part as heading_part,
    )
    from clineval.reportkit.sections_common import (
        rows_part as rows_part,
    )
    from clineval.reportkit.sections_common import (
        short_model_label as short_model_label,
    )
    from clineval.reportkit.sections_common import (
        spans_part as spans_part,
    )
    from clineval.reportkit.sections_common import (
        table_block as table_block,
    )
    from clineval.reportkit.sections_common import (
        text_part as text_part,
    )
    from clineval.reportkit.sections_common import (
        yes_no as yes_no,
    )
    from clineval.reportkit.statistics import (
        Reducer as Reducer,
    )
    from clineval.reportkit.statistics import (
        SampleStatistic as SampleStatistic,
    )
    from clineval.reportkit.statistics import (
        bootstrap_interval as bootstrap_interval,
    )
    from clineval.reportkit.statistics import (
        counts_statistic as counts_statistic,
    )
    from clineval.reportkit.statistics import (
        macro_f1_statistic as macro_f1_statistic,
    )
    from clineval.reportkit.statistics import (
        mean_statistic as mean_statistic,
    )
    from clineval.reportkit.statistics import (
        micro_f1_statistic as micro_f1_statistic,
    )
    from clineval.reportkit.statistics import (
        ratio_statistic as ratio_statistic,
    )
    from clineval.retry import (
        RetryPolicy as RetryPolicy,
    )


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'clineval.benchmarks' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)


def __dir__() -> list[str]:
    return __all__
