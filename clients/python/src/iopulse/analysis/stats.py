"""Two-sample t-tests without the analysis stack (Student's with a pooled variance, and
Welch's), the t distribution through the regularized incomplete beta function (continued
fraction, modified Lentz), and its quantiles for the smallest change a test can detect."""
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


def t_quantile(p: float, df: float) -> float:
    """The t at which P(|T| >= t) = p for Student's t with df degrees of freedom (the
    two-sided critical value: 4.303 for p 0.05 at 2 df, 1.960 at many)."""
    if not 0.0 < p < 1.0 or not df > 0:
        raise ValueError(f"t_quantile: p {p} must lie in (0, 1) and df {df} above 0")
    lo, hi = 0.0, 1.0
    while t_two_sided_p(hi, df) > p:
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_two_sided_p(mid, df) > p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return (lo + hi) / 2.0


def mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def var(xs: Sequence[float]) -> float:
    m = mean(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def sd(xs: Sequence[float]) -> float:
    """The sample standard deviation (n - 1); 0 for a single value."""
    return math.sqrt(var(xs)) if len(xs) > 1 else 0.0


def student(a: Sequence[float], b: Sequence[float], min_var: float = 0.0
            ) -> Optional[tuple[float, float, float, float]]:
    """(t, degrees of freedom, two-sided p, standard error of the difference of the means) of
    Student's two-sample t-test with the variances pooled, or None with fewer than two samples
    on a side. t is positive when b's mean is the larger. min_var is a floor for the pooled
    variance (what the values' resolution alone makes). No spread at all: p 1 for equal
    means, 0 for different ones (the standard error is then 0)."""
    if len(a) < 2 or len(b) < 2:
        return None
    ma, mb = mean(a), mean(b)
    df = len(a) + len(b) - 2
    pooled = max(min_var, ((len(a) - 1) * var(a) + (len(b) - 1) * var(b)) / df)
    se = math.sqrt(pooled * (1.0 / len(a) + 1.0 / len(b)))
    if se == 0:
        return (0.0, df, 1.0, 0.0) if ma == mb else (math.copysign(math.inf, mb - ma), df,
                                                     0.0, 0.0)
    t = (mb - ma) / se
    return t, df, t_two_sided_p(t, df), se


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
