"""--shard I/N partitions and `clineval merge`: store merge, refusals, and a sharded ClinConsensus
run (fixture cases, stub LLM server) whose merge equals the unsharded run."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_stub_server import StubServer

from clineval.cli import main as cli_main
from clineval.errors import InputError
from clineval.merge import _check_same_run, copy_store_rows, merge_runs
from clineval.rundir import MANIFEST, RESULTS, SAMPLES, read_json, read_jsonl, write_json
from clineval.shard import parse_shard, select_shard, shard_of
from clineval.store import STORE_FILENAME, RunStore

IDS = [f"case-{i:04d}" for i in range(1000)]


# ---- shard selection --------------------------------------------------------------------------
def test_shards_partition_the_ids() -> None:
    parts = [select_shard(IDS, f"{i}/4") for i in range(1, 5)]
    assert sorted(x for part in parts for x in part) == sorted(IDS)  # cover, and ...
    assert sum(len(p) for p in parts) == len(IDS)  # ... disjoint
    assert all(200 <= len(p) <= 300 for p in parts)  # roughly balanced (sha256 is uniform)
    for part in parts:  # the given order is kept
        assert part == sorted(part, key=IDS.index)


def test_membership_ignores_order_and_limit() -> None:
    shuffled = IDS[:]
    random.Random(3).shuffle(shuffled)
    assert set(select_shard(shuffled, "2/3")) == set(select_shard(IDS, "2/3"))
    # Shard of the first 100 = the first 100's members of the full shard.
    full = set(select_shard(IDS, "2/3"))
    assert set(select_shard(IDS[:100], "2/3")) == full & set(IDS[:100])


def test_shard_of_is_a_stable_hash() -> None:
    # Fixed values: a change of the hash would silently reshuffle users' shard runs.
    import hashlib

    for sample_id in ("case-0000", "病例-1", ""):
        digest = hashlib.sha256(sample_id.encode()).digest()
        assert shard_of(sample_id, 7) == int.from_bytes(digest[:8], "big") % 7 + 1
    assert select_shard(IDS, "1/1") == IDS
    assert select_shard(IDS, None) == IDS


def test_select_shard_with_key() -> None:
    rows = [{"id": i} for i in IDS[:50]]
    picked = select_shard(rows, "1/2", key=lambda r: r["id"])
    assert [r["id"] for r in picked] == select_shard(IDS[:50], "1/2")


@pytest.mark.parametrize(
    "spec", ["0/4", "5/4", "1/0", "a/b", "1", "", "1/2/3", "-1/4", "1_0/20", "\u0661/4", "+1/4"]
)
def test_bad_shard_specs(spec: str) -> None:
    with pytest.raises(InputError, match="--shard"):
        parse_shard(spec)


# ---- store merge ------------------------------------------------------------------------------
def _fill(store: RunStore, tag: str, shared_value: str) -> None:
    store.put_call(f"call-{tag}", "openai:m", {"q": tag}, {"text": tag}, {"prompt_tokens": 1})
    store.put_call("call-shared", "openai:m", {"q": "s"}, {"text": "same"}, None)
    store.put_record("t", "output", f"s-{tag}", {"v": tag})
    store.put_record("t", "output", "s-shared", {"v": shared_value})
    store.put_artifact(f"blob-{tag}", tag.encode())


def test_copy_store_rows(tmp_path: Path) -> None:
    a, b, out = tmp_path / "a.sqlite", tmp_path / "b.sqlite", tmp_path / "out.sqlite"
    with RunStore(a) as sa, RunStore(b) as sb:
        _fill(sa, "a", "same")
        _fill(sb, "b", "DIFFERENT")
    counts = copy_store_rows([a, b], out)
    assert counts == {"calls": 3, "records": 3, "artifacts": 2, "record_conflicts": 1}
    with RunStore(out) as merged:
        assert {c["key"] for c in merged.iter_calls()} == {"call-a", "call-b", "call-shared"}
        records = merged.records("t", "output")
        assert list(records) == ["s-a", "s-shared", "s-b"]  # shard order, insertion order
        assert records["s-shared"] == {"v": "same"}  # first shard wins on a conflict
        assert merged.get_artifact("blob-b") == b"b"
        assert merged.get_call("call-a") == {
            "response": {"text": "a"},
            "usage": {"prompt_tokens": 1},
        }
    # Merging again adds nothing (idempotent).
    assert copy_store_rows([a, b], out) == {
        "calls": 0,
        "records": 0,
        "artifacts": 0,
        "record_conflicts": 1,
    }


def _fake_shard(path: Path, shard: str | None, status: str = "finished", **config: Any) -> Path:
    RunStore.in_dir(path).close()
    cfg = {"tasks": ["clinconsensus"], "model": "openai:m", "seed": 0, "shard": shard, **config}
    write_json(path / MANIFEST, {"config": cfg, "status": status})
    return path


def test_a_merge_stopped_while_copying_can_be_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during the copy (injected) leaves a store beside a manifest that says it is a
    merge of this run: the output check lets the same merge in again."""
    import clineval.merge as merge_module

    shards = [_fake_shard(tmp_path / "s1", "1/2"), _fake_shard(tmp_path / "s2", "2/2")]
    copy = merge_module.copy_store_rows

    def stopped(sources: list[Path], target: Path) -> dict[str, int]:
        copy(sources[:1], target)
        raise KeyboardInterrupt

    monkeypatch.setattr(merge_module, "copy_store_rows", stopped)
    with pytest.raises(KeyboardInterrupt):
        merge_runs(shards, tmp_path / "out")
    assert (tmp_path / "out" / STORE_FILENAME).is_file()
    monkeypatch.undo()
    # The second attempt gets past the output check and copies; its re-score of the empty
    # fake stores is what refuses (nothing to score), not the output directory.
    with pytest.raises(InputError, match="nothing to score"):
        merge_runs(shards, tmp_path / "out")
    assert read_json(tmp_path / "out" / MANIFEST)["merge_rows_copied"]["calls"] == 0


@pytest.mark.parametrize("status", ["running", "stopped: KeyboardInterrupt: "])
def test_merge_refuses_a_shard_that_did_not_finish(tmp_path: Path, status: str) -> None:
    one = _fake_shard(tmp_path / "s1", "1/2")
    killed = _fake_shard(tmp_path / "s2", "2/2", status=status)
    with pytest.raises(InputError, match="did not finish") as caught:
        merge_runs([one, killed], tmp_path / "out")
    assert caught.value.path == str(killed / MANIFEST)
    assert not (tmp_path / "out").exists()  # refused before anything is written


def test_merge_refuses_an_output_holding_a_run(tmp_path: Path, capsys: Any) -> None:
    one = _fake_shard(tmp_path / "s1", "1/2")
    two = _fake_shard(tmp_path / "s2", "2/2")
    run = tmp_path / "run"
    with RunStore.in_dir(run) as store:
        store.put_record("clinconsensus", "answer", "case-1", {"text": "kept"})
    write_json(run / MANIFEST, {"config": {"model": "openai:other"}, "status": "finished"})
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    argv = ["--quiet", "merge", str(one), str(two), "-o", str(run)]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "holds a run" in err[0]
    after = {p.name: p.read_bytes() for p in run.iterdir() if p.name != ".lock"}
    assert after == before  # nothing replaced
    # A store without a manifest (a run stopped before its manifest, or copied by hand) too.
    (run / MANIFEST).unlink()
    with pytest.raises(InputError, match="no run manifest"):
        merge_runs([one, two], run)
    # The merge of another run (another seed) is not merged into either.
    other = _fake_shard(tmp_path / "m", None, seed=7)
    merged_from = [{"run_dir": "o1", "shard": "1/1", "status": "finished"}]
    write_json(other / MANIFEST, {**read_json(other / MANIFEST), "merged_from": merged_from})
    with pytest.raises(InputError, match="another run"):
        merge_runs([one, two], other)


def test_merge_refuses_mismatched_shards(tmp_path: Path) -> None:
    one = _fake_shard(tmp_path / "s1", "1/2")
    with pytest.raises(InputError, match="seed"):
        merge_runs([one, _fake_shard(tmp_path / "s2", "2/2", seed=1)], tmp_path / "out")
    with pytest.raises(InputError, match="given twice"):
        merge_runs([one, _fake_shard(tmp_path / "s3", "1/2")], tmp_path / "out")
    with pytest.raises(InputError, match="different splits"):
        merge_runs([one, _fake_shard(tmp_path / "s4", "2/3")], tmp_path / "out")
    with pytest.raises(InputError, match="not a --shard run"):
        merge_runs([one, _fake_shard(tmp_path / "s5", None)], tmp_path / "out")
    with pytest.raises(InputError, match="new directory"):
        merge_runs([one], one)
    with pytest.raises(InputError, match="no run store"):
        merge_runs([tmp_path / "nowhere"], tmp_path / "out")
    with pytest.raises(InputError, match="judges"):
        _check_same_run(
            [{"judges": ["openai:j1@http://a/v1"]}, {"judges": ["openai:j2@http://a/v1"]}],
            [one, one],
        )
    # The same model and judge reached at other addresses: parts of one run.
    _check_same_run(
        [
            {"model": "openai:m@http://a:1/v1", "judges": ["openai:j@http://a:1/v1"]},
            {"model": "openai:m@http://b:2/v1", "judges": ["openai:j@http://b:2/v1"]},
        ],
        [one, one],
    )
    assert not (tmp_path / "out" / STORE_FILENAME).exists()  # nothing half-merged


# ---- sharded ClinConsensus run == unsharded run -----------------------------------------------
@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


def _run(stub: StubServer, out: Path, *extra: str) -> int:
    return cli_main(
        [
            "--quiet",
            "run",
            "clinconsensus",
            "--model",
            f"openai:cand@{stub.base_url}",
            "--judge",
            f"openai:judge@{stub.base_url}",
            "--option",
            "clinconsensus.cases=fixture",
            "--option",
            "clinconsensus.max_criteria=10",
            "--concurrency",
            "16",
            "--output-dir",
            str(out),
            *extra,
        ]
    )


def _samples_by_case(run_dir: Path) -> list[dict[str, Any]]:
    return sorted(read_jsonl(run_dir / SAMPLES), key=lambda r: json.dumps(r, sort_keys=True))


@pytest.mark.slow
def test_sharded_run_merges_to_the_unsharded_result(tmp_path: Path, stub: StubServer) -> None:
    assert _run(stub, tmp_path / "full") == 0
    full_requests = stub.stats()["requests"]
    shard_dirs = [tmp_path / f"shard{i}" for i in (1, 2, 3)]
    for i, d in enumerate(shard_dirs, start=1):
        assert _run(stub, d, "--shard", f"{i}/3") == 0
    n_cases = [read_json(d / RESULTS)["clinconsensus"]["n_cases"] for d in shard_dirs]
    assert sum(n_cases) == read_json(tmp_path / "full" / RESULTS)["clinconsensus"]["n_cases"]
    assert all(n > 0 for n in n_cases)

    before_merge = stub.stats()["requests"]
    assert before_merge == 2 * full_requests  # the shards asked exactly what the full run asked
    merged = merge_runs(list(reversed(shard_dirs)), tmp_path / "merged")
    assert stub.stats()["requests"] == before_merge  # merging calls no model

    full = read_json(tmp_path / "full" / RESULTS)
    assert merged == full
    assert read_json(tmp_path / "merged" / RESULTS) == full
    assert _samples_by_case(tmp_path / "merged") == _samples_by_case(tmp_path / "full")
    manifest = read_json(tmp_path / "merged" / MANIFEST)
    assert manifest["config"]["shard"] is None
    assert sorted(m["shard"] for m in manifest["merged_from"]) == ["1/3", "2/3", "3/3"]
    assert manifest["missing_shards"] == []
    assert manifest["merge_rows_copied"]["record_conflicts"] == 0  # disjoint shards
    # The command line does the same.
    cli_args = ["--quiet", "merge", *map(str, shard_dirs), "-o", str(tmp_path / "merged-cli")]
    assert cli_main(cli_args) == 0
    assert read_json(tmp_path / "merged-cli" / RESULTS) == full
    # Merging again into the earlier merge of the same run (a shard added later) is allowed.
    assert merge_runs(shard_dirs, tmp_path / "merged") == full
    # `clineval score` on the merged directory gives the same again.
    assert cli_main(["--quiet", "score", str(tmp_path / "merged")]) == 0
    assert read_json(tmp_path / "merged" / RESULTS) == full
