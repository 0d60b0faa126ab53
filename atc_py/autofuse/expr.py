"""Symbolic size expressions of an AscGraph: integers, size variables (s0, z0t_size, ...), +, *, Ceiling(a/b).

Small on purpose: an AscGraph needs sizes that are products of size variables (repeats, strides), the split
sizes Ceiling(outer / inner) and their evaluation for concrete shapes; sympy would do that too, but this is
all we need, costs no dependency and parses hostile text with hard limits (length, depth).

Expressions are immutable and canonical (sums and products flattened, constants folded, terms sorted), so two
spellings of the same product compare equal; str() is the form the .om stores and parse() reads back.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable, Mapping

MAX_TEXT = 512          # characters of one serialized expression
MAX_DEPTH = 16          # nesting of parentheses / Ceiling
MAX_VALUE = 1 << 62     # evaluated sizes stay far inside int64
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


class ExprError(ValueError):
    """A malformed expression, an unknown symbol, or a value out of range."""


class Expr:
    __slots__ = ("_key",)

    # -- construction ---------------------------------------------------------------------------------------
    def __add__(self, other) -> "Expr":
        return add(self, as_expr(other))

    __radd__ = __add__

    def __mul__(self, other) -> "Expr":
        return mul(self, as_expr(other))

    __rmul__ = __mul__

    # -- queries ----------------------------------------------------------------------------------------------
    def symbols(self) -> set[str]:
        raise NotImplementedError

    def eval(self, env: Mapping[str, int]) -> int:
        raise NotImplementedError

    @property
    def const(self) -> int | None:
        """The value when the expression has no symbols."""
        return None

    def __eq__(self, other) -> bool:
        if isinstance(other, int) and not isinstance(other, bool):
            return self.const == other
        return isinstance(other, Expr) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"Expr({self})"


class Num(Expr):
    __slots__ = ("v",)

    def __init__(self, v: int):
        self.v = int(v)
        self._key = ("n", self.v)

    def symbols(self) -> set[str]:
        return set()

    def eval(self, env) -> int:
        return self.v

    @property
    def const(self) -> int:
        return self.v

    def __str__(self) -> str:
        return str(self.v)


class Sym(Expr):
    __slots__ = ("name",)

    def __init__(self, name: str):
        if not NAME.fullmatch(name):
            raise ExprError(f"{name!r} is not a size variable name")
        self.name = name
        self._key = ("s", name)

    def symbols(self) -> set[str]:
        return {self.name}

    def eval(self, env) -> int:
        try:
            v = env[self.name]
        except KeyError:
            raise ExprError(f"size variable {self.name} has no value") from None
        return int(v)

    def __str__(self) -> str:
        return self.name


class _Nary(Expr):
    __slots__ = ("args",)
    tag = ""

    def __init__(self, args: tuple[Expr, ...]):
        self.args = args
        self._key = (self.tag,) + tuple(a._key for a in args)

    def symbols(self) -> set[str]:
        out: set[str] = set()
        for a in self.args:
            out |= a.symbols()
        return out


class Add(_Nary):
    __slots__ = ()
    tag = "+"

    def eval(self, env) -> int:
        return _checked(sum(a.eval(env) for a in self.args))

    def __str__(self) -> str:
        return " + ".join(str(a) for a in self.args)


class Mul(_Nary):
    __slots__ = ()
    tag = "*"

    def eval(self, env) -> int:
        v = 1
        for a in self.args:
            v = _checked(v * a.eval(env))
        return v

    def __str__(self) -> str:
        return "*".join(f"({a})" if isinstance(a, Add) else str(a) for a in self.args)


class Ceil(Expr):
    """Ceiling(num / den): the outer size of a split."""
    __slots__ = ("num", "den")

    def __init__(self, num: Expr, den: Expr):
        self.num, self.den = num, den
        self._key = ("c", num._key, den._key)

    def symbols(self) -> set[str]:
        return self.num.symbols() | self.den.symbols()

    def eval(self, env) -> int:
        d = self.den.eval(env)
        if d <= 0:
            raise ExprError(f"Ceiling({self.num}/{self.den}) divides by {d}")
        return -(-self.num.eval(env) // d)

    def __str__(self) -> str:
        def part(e):
            return f"({e})" if isinstance(e, (Add, Mul)) else str(e)
        return f"Ceiling({part(self.num)}/{part(self.den)})"


def _checked(v: int) -> int:
    if not -MAX_VALUE <= v <= MAX_VALUE:
        raise ExprError(f"value {v} is out of range")
    return v


def as_expr(x) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, int) and not isinstance(x, bool):
        return Num(x)
    if isinstance(x, str):
        return parse(x)
    raise ExprError(f"{x!r} is not a size expression")


def _order(e: Expr):
    return (0 if isinstance(e, Num) else 1, e._key)


def add(*terms: Expr) -> Expr:
    flat: list[Expr] = []
    const = 0
    for t in terms:
        for a in (t.args if isinstance(t, Add) else (t,)):
            if isinstance(a, Num):
                const += a.v
            else:
                flat.append(a)
    if const:
        flat.append(Num(const))
    if not flat:
        return Num(0)
    if len(flat) == 1:
        return flat[0]
    return Add(tuple(sorted(flat, key=_order)))


def mul(*factors: Expr) -> Expr:
    flat: list[Expr] = []
    const = 1
    for f in factors:
        for a in (f.args if isinstance(f, Mul) else (f,)):
            if isinstance(a, Num):
                const *= a.v
            else:
                flat.append(a)
    if const == 0:
        return Num(0)
    if const != 1:
        flat.append(Num(const))
    if not flat:
        return Num(1)
    if len(flat) == 1:
        return flat[0]
    return Mul(tuple(sorted(flat, key=_order)))


def ceil_div(num, den) -> Expr:
    num, den = as_expr(num), as_expr(den)
    if den == 1:
        return num
    if num.const is not None and den.const is not None and den.const > 0:
        return Num(-(-num.const // den.const))
    return Ceil(num, den)


def product(xs: Iterable) -> Expr:
    return mul(*(as_expr(x) for x in xs))


ONE, ZERO = Num(1), Num(0)

# -- parsing --------------------------------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(\d{1,19})|([A-Za-z_][A-Za-z0-9_]*)|(.))")


def parse(text: str) -> Expr:
    """The inverse of str(); anything else (or beyond the limits) is an ExprError. Graphs repeat the same few
    expressions many times: parsed once each (expressions are immutable)."""
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise ExprError(f"expression of {len(text) if isinstance(text, str) else '?'} characters (limit {MAX_TEXT})")
    return _parse(text)


@lru_cache(maxsize=8192)
def _parse(text: str) -> Expr:
    toks: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(text):
        num, name, ch = m.groups()
        if num is not None:
            toks.append(("num", num))
        elif name is not None:
            toks.append(("name", name))
        elif ch is not None and ch.strip():
            if ch not in "+*/()":
                raise ExprError(f"unexpected character {ch!r} in {text!r}")
            toks.append((ch, ch))
    p = _Parser(toks, text)
    e = p.expr(0)
    if p.k != len(toks):
        raise ExprError(f"unexpected {toks[p.k][1]!r} in {text!r}")
    return e


class _Parser:
    def __init__(self, toks, text):
        self.toks, self.k, self.text = toks, 0, text

    def peek(self) -> str | None:
        return self.toks[self.k][0] if self.k < len(self.toks) else None

    def take(self, kind: str) -> str:
        if self.peek() != kind:
            raise ExprError(f"expected {kind!r} in {self.text!r}")
        self.k += 1
        return self.toks[self.k - 1][1]

    def expr(self, depth: int) -> Expr:
        if depth > MAX_DEPTH:
            raise ExprError(f"expression nests deeper than {MAX_DEPTH}")
        terms = [self.term(depth)]
        while self.peek() == "+":
            self.k += 1
            terms.append(self.term(depth))
        return add(*terms)

    def term(self, depth: int) -> Expr:
        factors = [self.factor(depth)]
        while self.peek() == "*":
            self.k += 1
            factors.append(self.factor(depth))
        return mul(*factors)

    def factor(self, depth: int) -> Expr:
        kind = self.peek()
        if kind == "num":
            return Num(_checked(int(self.take("num"))))
        if kind == "name":
            name = self.take("name")
            if name == "Ceiling" and self.peek() == "(":
                self.take("(")
                num = self.expr(depth + 1)
                self.take("/")
                den = self.expr(depth + 1)
                self.take(")")
                return ceil_div(num, den)
            return Sym(name)
        if kind == "(":
            self.take("(")
            e = self.expr(depth + 1)
            self.take(")")
            return e
        raise ExprError(f"unexpected end or token in {self.text!r}")
