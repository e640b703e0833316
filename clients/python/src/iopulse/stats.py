"""Welch's t-test without the analysis stack: Student's t distribution through the
regularized incomplete beta function (continued fraction, modified Lentz)."""
from __future__ import annotations

import math
from typing import Optional, Sequence


def _betacf(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def var(xs: Sequence[float]) -> float:
    m = mean(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def welch(a: Sequence[float], b: Sequence[float]) -> Optional[tuple[float, float, float]]:
    """(t, degrees of freedom, two-sided p) of Welch's t-test, or None with fewer than two
    samples on a side. Equal means with no spread: p 1; different means with none: p 0."""
    if len(a) < 2 or len(b) < 2:
        return None
    ma, mb = mean(a), mean(b)
    va, vb = var(a) / len(a), var(b) / len(b)
    se2 = va + vb
    if se2 == 0:
        return (0.0, float("inf"), 1.0) if ma == mb else (math.inf, float("inf"), 0.0)
    t = (mb - ma) / math.sqrt(se2)
    df = se2 ** 2 / ((va ** 2 / (len(a) - 1) if va else 0.0) +
                     (vb ** 2 / (len(b) - 1) if vb else 0.0))
    return t, df, t_two_sided_p(t, df)
