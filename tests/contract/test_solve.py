"""The solver contract: status vocabulary, statistics, trying solvers in order, progress."""

import json
import time

import pytest

from projmech import solve
from projmech.solve import Outcome, SolveStats, Status


class _Error(solve.SolveError):
    pass


def test_cvxpy_statuses_map_to_the_vocabulary():
    assert solve.status_from_cvxpy("optimal") is Status.OPTIMAL
    assert solve.status_from_cvxpy("optimal_inaccurate") is Status.OPTIMAL_INACCURATE
    assert solve.status_from_cvxpy("infeasible_inaccurate") is Status.INFEASIBLE
    assert solve.status_from_cvxpy("unbounded") is Status.UNBOUNDED
    assert solve.status_from_cvxpy("user_limit") is Status.ITERATION_LIMIT
    assert solve.status_from_cvxpy("something new") is Status.SOLVER_ERROR


def test_status_is_its_string():
    assert Status.OPTIMAL == "optimal"
    assert str(Status.ITERATION_LIMIT) == "iteration_limit"


def test_first_optimal_attempt_is_returned_with_every_attempt_before_it():
    calls = []

    def attempt(name, status, point=None, score=float("inf")):
        def run():
            calls.append(name)
            return Outcome(status, point, f"{name} detail", score)
        return name, run

    point, attempts, seconds = solve.solve_in_order(
        [attempt("a", Status.ITERATION_LIMIT, "pa", 3.0), attempt("b", Status.OPTIMAL, "pb"),
         attempt("c", Status.OPTIMAL, "pc")], _Error, "failed")
    assert point == "pb"
    assert calls == ["a", "b"]
    assert [(a.solver, a.status) for a in attempts] == [("a", Status.ITERATION_LIMIT), ("b", Status.OPTIMAL)]
    assert seconds >= 0


def test_no_optimal_attempt_raises_with_the_best_point_and_every_attempt():
    def raising():
        raise _Error("inner", [solve.Attempt("x", Status.SOLVER_ERROR, "boom")])

    plan = [("a", lambda: Outcome(Status.ITERATION_LIMIT, "worse", score=2.0)),
            ("x", raising),
            ("b", lambda: Outcome(Status.REJECTED, "better", score=1.0)),
            ("c", lambda: Outcome(Status.SOLVER_ERROR))]
    with pytest.raises(_Error, match="failed") as caught:
        solve.solve_in_order(plan, _Error, "failed")
    assert caught.value.best == "better"
    assert [a.solver for a in caught.value.attempts] == ["a", "x", "b", "c"]
    assert "x: solver_error, boom" in str(caught.value)


def test_stats_summary_is_json_and_str_is_one_line():
    stats = SolveStats("fast", Status.OPTIMAL, 0.25, iterations=7, gap=1e-9, tolerance=1e-8, tolerance_met=True,
                       attempts=(solve.Attempt("fast", Status.OPTIMAL, "", 0.25),))
    summary = json.loads(json.dumps(stats.summary()))
    assert summary["status"] == "optimal" and summary["attempts"] == ["fast: optimal"]
    text = str(stats)
    assert "\n" not in text and "gap 1.00e-09" in text and "7 iterations" in text


def test_progress_bar_must_be_opened_and_follows_iterations():
    bar = solve.ProgressBar("test", total=10)
    with pytest.raises(RuntimeError, match="with block"):
        bar(1, 0.5)
    with bar as callback:
        callback(3, 0.5)
        callback(5, 0.1)
        assert callback._bar.n == 5
    assert bar._bar is None


def test_finish_builds_the_returned_point_and_the_errors_best_once():
    """``finish(point, its attempt, every attempt)`` makes the accepted point and the best
    rejected one into the caller's result; the attempts it sees are all of them, in order."""
    built = []

    def finish(point, attempt, attempts):
        built.append(point)
        return {"point": point, "own": attempt.solver, "status": attempt.status,
                "attempts": [a.solver for a in attempts]}

    result, attempts, seconds = solve.solve_in_order(
        [("a", lambda: Outcome(Status.ITERATION_LIMIT, "pa", score=1.0)), ("b", lambda: Outcome(Status.OPTIMAL, "pb"))],
        _Error, "failed", finish)
    assert result == {"point": "pb", "own": "b", "status": Status.OPTIMAL, "attempts": ["a", "b"]}
    assert seconds == attempts[-1].seconds and built == ["pb"]

    built.clear()
    with pytest.raises(_Error) as caught:
        solve.solve_in_order([("a", lambda: Outcome(Status.ITERATION_LIMIT, "pa", score=2.0)),
                              ("b", lambda: Outcome(Status.REJECTED, "pb", score=1.0)),
                              ("c", lambda: Outcome(Status.SOLVER_ERROR))], _Error, "failed", finish)
    assert caught.value.best == {"point": "pb", "own": "b", "status": Status.REJECTED, "attempts": ["a", "b", "c"]}
    assert built == ["pb"]  # only the best is built


def test_stats_from_an_attempt_meet_the_tolerance_only_when_accepted():
    attempts = (solve.Attempt("x", Status.ITERATION_LIMIT, "", 0.5), solve.Attempt("y", Status.OPTIMAL, "", 0.25))
    stats = SolveStats.from_attempt(attempts[-1], attempts, iterations=3, gap=1e-9, relative_gap=True, tolerance=1e-8)
    assert (stats.solver, stats.status, stats.solve_time, stats.iterations) == ("y", Status.OPTIMAL, 0.25, 3)
    assert stats.tolerance_met and stats.relative_gap and stats.attempts == attempts
    assert not SolveStats.from_attempt(attempts[-1], attempts, gap=1e-7, tolerance=1e-8).tolerance_met
    assert not SolveStats.from_attempt(attempts[0], attempts, gap=1e-9, tolerance=1e-8).tolerance_met
    assert not SolveStats.from_attempt(attempts[-1], attempts).tolerance_met  # no certificate
    assert str(SolveStats("given", Status.GIVEN, 0.0)) == "given: no solve"


def test_callback_must_be_callable():
    assert solve.check_callback(None) is None
    assert solve.check_callback(print) is print
    with pytest.raises(TypeError, match="callback"):
        solve.check_callback(True)


class _Result(solve.SolveResult):
    def __init__(self, seconds):
        self.stats = SolveStats("fast", Status.OPTIMAL, seconds)

    def _description(self):
        return "test"


def test_total_time_covers_the_whole_call_and_the_errors_best():
    """``record_total_time`` times everything the optimizer does, not only its accepted attempt,
    and gives the same time to the best point of the error it raises."""

    @solve.record_total_time
    def optimizer(fail=False):
        time.sleep(0.05)  # preparation outside any attempt
        result = _Result(0.0)
        if fail:
            raise _Error("failed", [], result)
        return result

    start = time.perf_counter()
    result = optimizer()
    wall = time.perf_counter() - start
    assert 0.05 <= result.stats.total_time <= wall and result.stats.solve_time == 0.0
    assert "s in the accepted attempt" in str(result.stats)
    assert json.loads(json.dumps(result.stats.summary()))["total_time_s"] == result.stats.total_time
    with pytest.raises(_Error) as caught:
        optimizer(fail=True)
    assert caught.value.best.stats.total_time >= 0.05
    assert optimizer.__name__ == "optimizer"  # the wrapper keeps the optimizer's name and docstring


def test_stats_without_a_total_time_show_the_solve_time():
    stats = SolveStats("fast", Status.OPTIMAL, 0.25)
    assert stats.total_time is None and stats.summary()["total_time_s"] is None
    assert str(stats).endswith("no certificate, 0.25 s")


@pytest.mark.solver
@pytest.mark.parametrize("body, solver", [("hull", "fast"), ("hull", "CLARABEL"), ("relaxation", "auto")])
def test_projections_report_the_whole_call(body, solver):
    """The projections' ``total_time`` covers the call (model building, checks), not only the attempt."""
    import numpy as np

    import projmech as pm

    workload = pm.marginals(pm.Domain([f"x{i}" for i in range(6)], [2] * 6), way=2)
    noisy = workload.answer(np.full(64, 1 / 64)) + np.random.default_rng(0).normal(0, 0.05, workload.num_queries)
    start = time.perf_counter()
    if body == "hull":
        stats = pm.project_to_hull(workload, noisy, solver=solver).stats
    else:
        stats = pm.project_to_relaxation(workload.domain, noisy, solver=solver).stats
    wall = time.perf_counter() - start
    assert stats.solve_time <= stats.total_time <= wall
    assert sum(attempt.seconds for attempt in stats.attempts) <= stats.total_time
    assert stats.summary()["total_time_s"] == stats.total_time
