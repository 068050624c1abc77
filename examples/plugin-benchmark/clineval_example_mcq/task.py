"""The example-mcq task: load, predict (a predictions file or a chat model), evaluate, on
clineval's benchmark kit; its own are the data format, the prompt and what counts as right."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clineval.benchmarks import (
    PREDICTION,
    CallPlan,
    ChatRequest,
    DataFileStatus,
    InputError,
    ModelKind,
    RunContext,
    Task,
    TaskResult,
    accuracy_with_interval,
    iter_json_objects,
    parse_choice,
    pending,
    plan_by_chat,
    predict_by_chat,
    predictions_path,
    read_predictions,
    select_samples,
)
from clineval_example_mcq import TASK

QUESTIONS = Path(__file__).parent / "fixture_questions.jsonl"
LETTERS = "ABCD"
PROMPT_VERSION = "example-mcq-v1"  # in the cache key: a changed prompt is a new request


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    options: dict[str, str]
    answer: str


@dataclass
class McqData:
    questions: list[Question]
    predictions: dict[str, Any] | None  # from predictions:FILE, read (and checked) at load


def read_questions(path: Path) -> list[Question]:
    out = []
    for lineno, row in iter_json_objects(path, what="questions file"):
        if not isinstance(row.get("id"), str) or not isinstance(row.get("question"), str):
            raise InputError('expected string "id" and "question"', path=path, line=lineno)
        options = row.get("options")
        if not isinstance(options, dict) or sorted(options) != list(LETTERS):
            raise InputError(f"expected options {', '.join(LETTERS)}", path=path, line=lineno)
        if row.get("answer") not in options:
            raise InputError("the answer is not one of the options", path=path, line=lineno)
        out.append(Question(str(row["id"]), str(row["question"]), options, row["answer"]))
    return out


def request_for(ctx: RunContext, q: Question) -> ChatRequest:
    lines = [q.question, *(f"{k}. {v}" for k, v in q.options.items()), "只回答一个选项字母。"]
    return ChatRequest(
        messages=(("user", "\n".join(lines)),),
        temperature=ctx.config.temperature,
        max_tokens=ctx.config.max_tokens or 16,
        seed=ctx.config.seed,
        template_version=PROMPT_VERSION,
    )


def _record(question_id: str, text: str) -> dict[str, Any]:
    # The id finds what a parser needs of the sample; a letter needs nothing.
    return {"pred": parse_choice(text, LETTERS), "raw_output": text}


def _unreadable(record: dict[str, Any]) -> bool:  # counted live as "invalid"
    return record["pred"] is None


class McqTask(Task[McqData]):
    name = TASK
    family = TASK
    description = "Example: Chinese medical multiple choice (FIXTURE, 12 questions)"

    def data_status(self, data_root: Path | None) -> list[DataFileStatus]:
        return [DataFileStatus(QUESTIONS.name, "ok" if QUESTIONS.is_file() else "missing")]

    def load(self, ctx: RunContext) -> McqData:
        every = read_questions(QUESTIONS)
        questions = select_samples(ctx, every, lambda q: q.id)  # --limit, then --shard
        predictions = None
        if ctx.backend.kind is ModelKind.PREDICTIONS:  # read now: a bad file writes nothing
            # a file for every question serves any --limit / --shard part of them
            predictions = read_predictions(
                predictions_path(ctx, TASK),
                known_ids={q.id for q in every},
                field="answer",
                selected={q.id for q in questions},
            )
        ctx.note(TASK, "fixture", True)
        ctx.note(TASK, "n_questions", len(questions))
        return McqData(questions, predictions)

    def predict(self, ctx: RunContext, data: McqData) -> None:
        todo = set(pending(ctx, TASK, [q.id for q in data.questions]))
        if data.predictions is not None:
            items = [
                (i, {"pred": parse_choice(str(v), LETTERS), "raw_output": v})
                for i, v in data.predictions.items()
                if i in todo
            ]
            ctx.store.put_records(TASK, PREDICTION, items)
            return
        requests = [(q.id, request_for(ctx, q)) for q in data.questions if q.id in todo]
        counters = predict_by_chat(ctx, TASK, requests, _record, invalid=_unreadable)
        ctx.note(TASK, "llm", counters)

    def plan(self, ctx: RunContext, data: McqData, calls: CallPlan) -> None:
        if data.predictions is not None:
            return
        todo = set(pending(ctx, TASK, [q.id for q in data.questions]))
        requests = [(q.id, request_for(ctx, q)) for q in data.questions if q.id in todo]
        plan_by_chat(ctx, TASK, calls, requests, len(data.questions) - len(requests))

    def evaluate(self, ctx: RunContext, data: McqData) -> TaskResult:
        # A question without a stored prediction scores as unanswered here; the kit counts
        # it (`missing_predictions`), warns with its id and makes the run exit 1.
        stored = ctx.store.records(TASK, PREDICTION)
        rows, correct = [], []
        for q in data.questions:
            pred = stored.get(q.id, {}).get("pred")
            correct.append(pred == q.answer)
            rows.append({"id": q.id, "gold": q.answer, "pred": pred, "correct": pred == q.answer})
        accuracy, interval = accuracy_with_interval(correct, seed=ctx.config.seed)
        metrics: dict[str, Any] = {
            "accuracy": accuracy,
            "accuracy_ci": list(interval) if interval else None,
            "invalid_rate": sum(r["pred"] is None for r in rows) / max(len(rows), 1),
            "n": len(rows),
            "fixture": True,
            "data_note": "FIXTURE questions written for the example: not a benchmark result",
        }
        return TaskResult(metrics, rows)
