"""The public authoring surface of clineval: every name a benchmark package needs, whether
built in (clineval/benchmarks/<family>/) or installed separately and registered through the
entry-point group `clineval.benchmarks` (examples/plugin-benchmark/).

This package root and `clineval` are clineval's public modules (docs/architecture.md, "Public
API"). A benchmark package imports from here only: every other module, the submodules of this
package included, is internal and may change between releases. The names load on first use,
so that importing a benchmark's declaration does not import the model stack.

Long module: one table of names and, for type checkers, one import per name (the form that
keeps each re-export explicit, `Name as Name`); it holds no code of its own.
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
    # windows over a long input (a model with a bounded input)
    "Window": "clineval.benchmarks.windows",
    "plan_windows": "clineval.benchmarks.windows",
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
    "percentile_among": "clineval.metrics.agreement",
    "pooled_balanced_f1": "clineval.metrics.agreement",
    "weighted_mean": "clineval.metrics.agreement",
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
        RunContext as RunContext,
        Task as Task,
        TaskResult as TaskResult,
    )
    from clineval.benchmarks.declaration import (
        Benchmark as Benchmark,
        DataSource as DataSource,
        Exporter as Exporter,
        LongRows as LongRows,
        ReportSection as ReportSection,
        SampleStatistics as SampleStatistics,
        Synthesizer as Synthesizer,
    )
    from clineval.benchmarks.judged import (
        JUDGED_RUN_SETTINGS as JUDGED_RUN_SETTINGS,
        JUDGED_SCORING_SETTINGS as JUDGED_SCORING_SETTINGS,
        Criterion as Criterion,
        JudgedItem as JudgedItem,
        JudgePanel as JudgePanel,
        Judging as Judging,
        ReplyBounds as ReplyBounds,
        answer_text as answer_text,
        error_rate_failures as error_rate_failures,
        judge_options as judge_options,
        stored_answers as stored_answers,
        stored_verdicts as stored_verdicts,
        verdict_matrix as verdict_matrix,
    )
    from clineval.benchmarks.judged_flow import (
        plan_judged as plan_judged,
        predict_judged as predict_judged,
    )
    from clineval.benchmarks.judged_pairwise import (
        PAIRWISE_SCORING_SETTINGS as PAIRWISE_SCORING_SETTINGS,
        PairwiseTask as PairwiseTask,
        pairwise_item as pairwise_item,
        pairwise_metrics as pairwise_metrics,
        pairwise_options as pairwise_options,
        pairwise_statistics as pairwise_statistics,
    )
    from clineval.benchmarks.judged_task import (
        GRADED_SCORING_SETTINGS as GRADED_SCORING_SETTINGS,
        JudgedData as JudgedData,
        JudgedTask as JudgedTask,
        judged_metrics as judged_metrics,
        score_statistics as score_statistics,
    )
    from clineval.benchmarks.kit import (
        PREDICTION as PREDICTION,
        accuracy_with_interval as accuracy_with_interval,
        parse_choice as parse_choice,
        pending as pending,
        plan_by_chat as plan_by_chat,
        predict_by_chat as predict_by_chat,
        predictions_path as predictions_path,
        read_predictions as read_predictions,
        select_samples as select_samples,
    )
    from clineval.benchmarks.results_view import (
        MetricsView as MetricsView,
        attribute_key as attribute_key,
        exploding as exploding,
    )
    from clineval.benchmarks.windows import (
        Window as Window,
        plan_windows as plan_windows,
    )
    from clineval.csv_text import (
        csv_text as csv_text,
    )
    from clineval.data.fetch import (
        Source as Source,
    )
    from clineval.data.recorded import (
        fetch_pinned as fetch_pinned,
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
        Categorical as Categorical,
        Graded as Graded,
    )
    from clineval.judge.pairwise import (
        ARENA_HARD as ARENA_HARD,
        MT_BENCH as MT_BENCH,
        PairwiseScale as PairwiseScale,
    )
    from clineval.judge.prompt import (
        JudgePrompt as JudgePrompt,
        load_judge_prompt as load_judge_prompt,
    )
    from clineval.judge.verdict import (
        VerdictRecord as VerdictRecord,
        verdict_key as verdict_key,
    )
    from clineval.metrics.agreement import (
        percentile_among as percentile_among,
        pooled_balanced_f1 as pooled_balanced_f1,
        weighted_mean as weighted_mean,
    )
    from clineval.metrics.bootstrap import (
        DEFAULT_RESAMPLES as DEFAULT_RESAMPLES,
        bootstrap_indices as bootstrap_indices,
        percentile_interval as percentile_interval,
        stratified_bootstrap_indices as stratified_bootstrap_indices,
    )
    from clineval.metrics.pairwise import (
        NoEstimate as NoEstimate,
        PairwiseGames as PairwiseGames,
        bradley_terry_intervals as bradley_terry_intervals,
        item_scores as item_scores,
        position_consistency as position_consistency,
        tie_rate as tie_rate,
        win_rate as win_rate,
        win_rate_interval as win_rate_interval,
    )
    from clineval.metrics.schema import (
        MetricSchema as MetricSchema,
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
        ChatModel as ChatModel,
        ChatRequest as ChatRequest,
        ChatResponse as ChatResponse,
    )
    from clineval.options import (
        Flag as Flag,
        Option as Option,
        OptionGroup as OptionGroup,
        RunFacts as RunFacts,
        boolean as boolean,
        choice as choice,
        integer as integer,
        integer_list as integer_list,
        number as number,
        text as text,
    )
    from clineval.plan import (
        UNBOUNDED_REPLY_TOKENS as UNBOUNDED_REPLY_TOKENS,
        CallPlan as CallPlan,
    )
    from clineval.reportkit.plots import (
        grouped_bars as grouped_bars,
        heatmap as heatmap,
        horizontal_bars as horizontal_bars,
        interval_dots as interval_dots,
        scatter as scatter,
    )
    from clineval.reportkit.rundata import (
        RunData as RunData,
        finite_number as finite_number,
        interval_of as interval_of,
    )
    from clineval.reportkit.sections_common import (
        SampleTable as SampleTable,
        base_section as base_section,
        download_block as download_block,
        examples_block as examples_block,
        fields_part as fields_part,
        filter_values as filter_values,
        flatten as flatten,
        format_value as format_value,
        heading_part as heading_part,
        rows_part as rows_part,
        short_model_label as short_model_label,
        spans_part as spans_part,
        table_block as table_block,
        text_part as text_part,
        yes_no as yes_no,
    )
    from clineval.reportkit.statistics import (
        Reducer as Reducer,
        SampleStatistic as SampleStatistic,
        bootstrap_interval as bootstrap_interval,
        counts_statistic as counts_statistic,
        macro_f1_statistic as macro_f1_statistic,
        mean_statistic as mean_statistic,
        micro_f1_statistic as micro_f1_statistic,
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
