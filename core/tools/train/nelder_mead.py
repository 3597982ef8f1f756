"""Nelder-Mead simplex minimisation, with the dimension-adapted coefficients of Gao and Han (2012).

A derivative-free search for a handful of constants whose objective is a whole pipeline (clamps,
max(0, .) terms) and so has no useful gradient. The simplex starts at x0 and x0 + step_i e_i; each
iteration reflects the worst vertex through the centroid of the others and expands, contracts or
shrinks. Coefficients for n dimensions: reflection 1, expansion 1 + 2/n, contraction 0.75 - 1/(2n),
shrink 1 - 1/n, which keep the simplex from collapsing in 10-20 dimensions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class Minimum:
    """Best point found, its value, how many evaluations it took, and the best value after each iteration."""

    x: np.ndarray
    value: float
    evaluations: int
    history: list[float]


def minimize(f: Callable[[np.ndarray], float], x0, steps, max_evaluations: int = 1000,
             tolerance: float = 1e-6, progress: Callable[[int, float], None] | None = None) -> Minimum:
    """Minimise f from x0 with an initial simplex of `steps` (one per coordinate); stop after
    `max_evaluations` or when the simplex's values differ by less than `tolerance`."""
    x0 = np.asarray(x0, dtype=float)
    n = x0.size
    reflect, expand, contract, shrink = 1.0, 1.0 + 2.0 / n, 0.75 - 0.5 / n, 1.0 - 1.0 / n
    simplex = np.vstack([x0, x0 + np.diag(np.broadcast_to(np.asarray(steps, dtype=float), (n,)))])
    values = np.array([f(x) for x in simplex])
    evaluations, history = n + 1, []
    while evaluations < max_evaluations and values.max() - values.min() > tolerance:
        order = np.argsort(values)
        simplex, values = simplex[order], values[order]
        centroid = simplex[:-1].mean(axis=0)
        reflected = centroid + reflect * (centroid - simplex[-1])
        f_reflected = f(reflected)
        evaluations += 1
        if f_reflected < values[0]:
            expanded = centroid + expand * (reflected - centroid)
            f_expanded = f(expanded)
            evaluations += 1
            simplex[-1], values[-1] = (expanded, f_expanded) if f_expanded < f_reflected else (reflected, f_reflected)
        elif f_reflected < values[-2]:
            simplex[-1], values[-1] = reflected, f_reflected
        else:
            outside = f_reflected < values[-1]
            contracted = centroid + contract * ((reflected if outside else simplex[-1]) - centroid)
            f_contracted = f(contracted)
            evaluations += 1
            if f_contracted < min(f_reflected, values[-1]):
                simplex[-1], values[-1] = contracted, f_contracted
            else:
                simplex[1:] = simplex[0] + shrink * (simplex[1:] - simplex[0])
                values[1:] = [f(x) for x in simplex[1:]]
                evaluations += n
        history.append(float(values.min()))
        if progress:
            progress(evaluations, history[-1])
    best = int(np.argmin(values))
    return Minimum(simplex[best].copy(), float(values[best]), evaluations, history)
