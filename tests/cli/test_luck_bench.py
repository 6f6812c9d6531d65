"""``kozel bench luck`` and its statistics (kozel.tools.luck_stats): the multiplier is the
variance ratio it claims on data of a known ratio, a mean luck of zero is seen as such, and the
command plays seeded matches and prints every figure, refusing bad arguments in one line."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from kozel.analysis.luck import match_luck
from kozel.engine.cards import CODES
from kozel.tools.bench_luck import Pair, parse_pairs, sprt_runs
from kozel.tools.elo import Sprt
from kozel.tools.luck_stats import clustered, duplicate, duplicate_deals, sprt_lengths, sprt_run
from kozel.tools.replay_luck import replay_records, side_luck
from tests.analysis.replays import small_replay

ROOT = Path(__file__).resolve().parents[2]


def _groups(n: int, size: int, seed: int) -> list[list[tuple[float, float]]]:
    """Units whose luck (sd 3) is independent of their skill part (sd 1): plain variance
    10, corrected 1; each group shares a seed effect of sd 2 in its luck, opposite in its
    two seatings (as duplicate dealing gives)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        shared = rng.gauss(0, 2)
        group = []
        for k in range(size):
            skill = 0.5 + rng.gauss(0, 1)
            luck = (shared if k % 2 == 0 else -shared) + rng.gauss(0, 5**0.5)
            group.append((skill + luck, skill))
        out.append(group)
    return out


def test_the_multiplier_is_the_variance_ratio_and_the_luck_mean_zero() -> None:
    got = clustered(_groups(1500, 2, 1), seed=1, boot=100)
    m = got["multiplier"]
    assert isinstance(m, dict) and m["low"] < 10.0 < m["high"] and 8.5 < m["value"] < 11.5
    luck = got["luck"]
    assert isinstance(luck, dict) and luck["low"] < 0 < luck["high"]
    corrected = got["corrected"]
    assert isinstance(corrected, dict) and corrected["low"] < 0.5 < corrected["high"]
    assert got["units"] == 3000 and got["groups"] == 1500


def test_too_few_units_give_none_not_nan() -> None:
    cases: list[list[list[tuple[float, float]]]] = [
        [],
        [[]],
        [[(1.0, 1.0)]],
        [[(0.5, 0.5)], [(0.7, 0.5)]],
    ]
    for groups in cases:
        got = clustered(groups, seed=0, boot=20)
        json.dumps(got, allow_nan=False)  # strict JSON
        assert got["multiplier"] == {"value": None, "low": None, "high": None}
    # No plain spread: the correction only adds variance.
    flat = clustered([[(0.5, 0.4)], [(0.5, 0.6)]], seed=0)["multiplier"]
    assert flat == {"value": 0.0, "low": 0.0, "high": 0.0}


def test_duplicate_cancels_the_shared_luck_of_a_group() -> None:
    # A group's mean loses the shared part: its variance is (1 + 5) / 2 = 3 plain, against 10/2.
    got = duplicate(_groups(1500, 2, 2), seed=2, boot=100)
    d, dc = got["duplicate"], got["duplicate_corrected"]
    assert isinstance(d, dict) and isinstance(dc, dict)
    assert d["low"] < 5 / 3 < d["high"]
    assert dc["low"] < 10.0 < dc["high"]


def test_duplicate_deals_pair_deal_k_of_each_rotation_while_both_last() -> None:
    # Deal k gives luck L (sd 3) to one seating and -L to the other; skill has sd 1: a
    # deal's plain variance is 10, a pair's mean 1/2, so duplicate deals are worth 10 each.
    rng = random.Random(5)
    seeds = []
    for _ in range(600):
        depth = rng.randrange(1, 8)
        lucks = [rng.gauss(0, 3) for _ in range(depth + 2)]
        rotations = [
            [(rng.gauss(0, 1) + sign * luck, 0.0) for luck in lucks[: depth + extra]]
            for sign, extra in ((1, 0), (-1, 2))  # the second match lasts two deals more
        ]
        seeds.append(rotations)
    got = duplicate_deals(seeds, seed=5, boot=100)
    d = got["duplicate"]
    assert isinstance(d, dict) and d["low"] < 10.0 < d["high"]
    assert got["groups"] == sum(len(r[0]) for r in seeds)  # the unpaired deals are left out
    assert duplicate_deals([[[(1.0, 1.0)] * 5]], seed=0) == {"groups": 0}  # one rotation only


def test_an_sprt_on_less_noisy_pairs_decides_sooner() -> None:
    rng = random.Random(3)
    # Each match a win with chance 0.6 (plain), of which the luck took all but a little.
    pairs = [[(float(rng.random() < 0.6), 0.6 + rng.gauss(0, 0.1)) for _ in range(2)]
             for _ in range(300)]  # fmt: skip
    got = sprt_lengths(pairs, Sprt(0, 50), seed=3, runs=50)
    plain, corrected = got["results"], got["corrected"]
    assert isinstance(plain, dict) and isinstance(corrected, dict)
    assert corrected["median_matches"] < plain["median_matches"] / 3
    assert corrected["h1_share"] >= 0.9 and plain["h1_share"] >= 0.8
    assert sprt_lengths(pairs[:3], Sprt(0, 70), seed=3) == {"pairs": 3}


def test_an_sprt_run_reads_pairs_in_order_until_both_tests_decided() -> None:
    # Wins all along: the plain test decides first; the corrected one waits for its minimum.
    wins = iter([[(1.0, 1.0), (1.0, 0.9)], [(1.0, 0.8), (1.0, 1.0)]] * 100)
    plain, corrected = sprt_run(wins, Sprt(0, 50), cap=500)
    assert plain[1] == corrected[1] == "H1"
    assert plain[0] < corrected[0] and corrected[0] % 2 == 0
    assert next(wins) is not None  # the run stopped reading once both had decided
    # A coin flip never decides within a cap of 4 pairs: both report the cap.
    flips = iter([[(1.0, 0.5), (0.0, 0.5)]] * 10)
    assert sprt_run(flips, Sprt(0, 50), cap=4) == ((8, "none"), (8, "none"))


def test_played_sprt_runs_play_fresh_seeds_until_both_decide() -> None:
    got = sprt_runs(Pair("greedy", "random"), "classic", runs=2, seed=4, jobs=1, sprt=Sprt(0, 50))
    assert got["runs"] == 2 and len(got["each"]) == 2
    for plain_n, plain_v, corrected_n, corrected_v in got["each"]:
        assert plain_v == corrected_v == "H1"  # random never beats greedy
        assert plain_n % 2 == corrected_n % 2 == 0 and plain_n >= 2
    assert got["corrected_shorter"] + got["corrected_longer"] <= 2
    means = (got["results"]["mean_matches"], got["corrected"]["mean_matches"])
    assert means == tuple(sum(e[k] for e in got["each"]) / 2 for k in (0, 2))


def test_a_searching_bot_takes_a_think_budget_in_a_pair() -> None:
    known = ["random", "greedy", "ismcts", "ismcts-fast"]
    assert parse_pairs("ismcts:ismcts@50:10", known) == [Pair("ismcts", "ismcts@50", 10)]
    for bad in ("greedy@50:random", "ismcts@0:greedy", "ismcts@x:greedy", "ismcts@:greedy"):
        with pytest.raises(ValueError, match="@MS sets a think budget"):
            parse_pairs(bad, known)


def test_the_luck_bench_prints_every_figure_from_a_seed() -> None:
    cmd = [sys.executable, "-m", "kozel.cli.main", "bench", "luck", "--json"]
    pairs = "random:greedy,greedy:random:6,greedy:greedy:4"
    args = ["--pairs", pairs, "--matches", "8", "--boot", "50"]
    res = subprocess.run(cmd + args, capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout)
    assert out["luck_version"] >= 1
    first, second = out["random-vs-greedy-2p"], out["greedy-vs-random-2p"]
    assert first["matches"] == 8 and second["matches"] == 6
    for what in ("deal_points", "deal_penalties", "match_score"):
        f = first[what]
        assert f["plain"]["low"] <= f["plain"]["value"] <= f["plain"]["high"]
        assert set(f) >= {"plain", "corrected", "luck", "multiplier", "units", "groups"}
    assert first["deal_points"]["plain"]["value"] < 0 < second["deal_points"]["plain"]["value"]
    assert first["match_score"]["groups"] == 4  # pairs of matches with the seats swapped
    assert first["deal_points"]["duplicate_deals"]["groups"] >= 4  # deal k of each seating
    assert first["sprt"] == {"pairs": 4}  # too few pairs to draw SPRT runs from
    self_play = out["greedy-vs-greedy-2p"]["match_score"]  # one match per seed: seat 0's
    assert self_play["groups"] == self_play["units"] == 4
    again = subprocess.run(cmd + args, capture_output=True, text=True, timeout=180, cwd=ROOT)
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in (first, second)]
    redo = json.loads(again.stdout)
    assert strip == [
        {k: v for k, v in redo[key].items() if k != "seconds"}
        for key in ("random-vs-greedy-2p", "greedy-vs-random-2p")
    ]
    bad = subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "bench", "luck", "--pairs", "random:nobody"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert bad.returncode == 2 and "is not BOT:VS[:MATCHES]" in bad.stderr


def test_a_replay_replays_into_the_deals_it_recorded() -> None:
    replay = small_replay("classic", 3, seed=5, deals=3)
    rules, players, records = replay_records(replay)
    assert players == 3 and len(records) == 3
    assert [[CODES[c] for c in r.deck] for r in records] == [list(d.deck) for d in replay.deals]
    lucks = match_luck(rules, players, records)
    side = side_luck(rules, players, records, 1)
    assert [u[0] - u[1] for u in side.points] == pytest.approx([dl.luck[1] for dl in lucks])
    broken = small_replay("classic", 2, seed=5, deals=1)
    broken.deals[0].steps[0].seat = 1 - broken.deals[0].steps[0].seat
    with pytest.raises(ValueError, match="does not re-play"):
        replay_records(broken)
