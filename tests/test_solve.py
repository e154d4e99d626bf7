"""The solver contract: status vocabulary, statistics, trying solvers in order, progress."""

import json

import pytest

from projmech.solve import (
    Attempt,
    Outcome,
    ProgressBar,
    SolveError,
    SolveStats,
    Status,
    solve_in_order,
    status_from_cvxpy,
)


class _Error(SolveError):
    pass


def test_cvxpy_statuses_map_to_the_vocabulary():
    assert status_from_cvxpy("optimal") is Status.OPTIMAL
    assert status_from_cvxpy("optimal_inaccurate") is Status.OPTIMAL_INACCURATE
    assert status_from_cvxpy("infeasible_inaccurate") is Status.INFEASIBLE
    assert status_from_cvxpy("unbounded") is Status.UNBOUNDED
    assert status_from_cvxpy("user_limit") is Status.ITERATION_LIMIT
    assert status_from_cvxpy("something new") is Status.SOLVER_ERROR


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

    point, attempts, seconds = solve_in_order(
        [attempt("a", Status.ITERATION_LIMIT, "pa", 3.0), attempt("b", Status.OPTIMAL, "pb"),
         attempt("c", Status.OPTIMAL, "pc")], _Error, "failed")
    assert point == "pb"
    assert calls == ["a", "b"]
    assert [(a.solver, a.status) for a in attempts] == [("a", Status.ITERATION_LIMIT), ("b", Status.OPTIMAL)]
    assert seconds >= 0


def test_no_optimal_attempt_raises_with_the_best_point_and_every_attempt():
    def raising():
        raise _Error("inner", [Attempt("x", Status.SOLVER_ERROR, "boom")])

    plan = [("a", lambda: Outcome(Status.ITERATION_LIMIT, "worse", score=2.0)),
            ("x", raising),
            ("b", lambda: Outcome(Status.REJECTED, "better", score=1.0)),
            ("c", lambda: Outcome(Status.SOLVER_ERROR))]
    with pytest.raises(_Error, match="failed") as caught:
        solve_in_order(plan, _Error, "failed")
    assert caught.value.best == "better"
    assert [a.solver for a in caught.value.attempts] == ["a", "x", "b", "c"]
    assert "x: solver_error, boom" in str(caught.value)


def test_stats_summary_is_json_and_str_is_one_line():
    stats = SolveStats("fast", Status.OPTIMAL, 0.25, iterations=7, gap=1e-9, tolerance=1e-8, tolerance_met=True,
                       attempts=(Attempt("fast", Status.OPTIMAL, "", 0.25),))
    summary = json.loads(json.dumps(stats.summary()))
    assert summary["status"] == "optimal" and summary["attempts"] == ["fast: optimal"]
    text = str(stats)
    assert "\n" not in text and "gap 1.00e-09" in text and "7 iterations" in text


def test_progress_bar_must_be_opened_and_follows_iterations():
    bar = ProgressBar("test", total=10)
    with pytest.raises(RuntimeError, match="with block"):
        bar(1, 0.5)
    with bar as callback:
        callback(3, 0.5)
        callback(5, 0.1)
        assert callback._bar.n == 5
    assert bar._bar is None
