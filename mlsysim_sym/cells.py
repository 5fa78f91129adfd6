r"""Equations and numbers from the model as Markdown, for a Quarto or Jupyter cell with ``output: asis``.

A chapter computes its worked numbers in Python cells; with these functions it prints them, and its
equations, from the model instead of typing them::

    ```{python}
    #| output: asis
    from mlsysim_sym import cells
    print(cells.equation("T_dp", book=True))          # $$ ... $$ {#eq-t-dp}, cited as @eq-t-dp
    kw = dict(batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)
    print(f"The step takes {cells.number('step_time', 'Llama3_70B', 'Research_256', **kw)}.")
    ```

* :func:`equation`: a model quantity's or cost term's defining equation as a display equation with a
  Quarto cross-reference label, in plain LaTeX or with the book's macros (which the page then needs:
  ``docs/macros/``), printed by the functions the documents use (:mod:`mlsysim_sym.printing`); its math alone,
  :func:`equation_tex`; its label, :func:`default_label`;
* :func:`number`: one output of ``solve()`` at a configuration, formatted with its unit (an SI prefix
  chosen for it, or the unit asked for);
* :func:`inline`: a quantity's, parameter's or cost term's symbol (or any expression) as inline math;
* :func:`display`: any LaTeX as a labelled display equation.

Every function returns a ``str``; bad input raises ``ValueError`` naming the argument.
"""
from __future__ import annotations

import re
from decimal import Decimal
from difflib import SequenceMatcher
from typing import Optional, Union

import sympy as sp

from . import display as _display
from . import notation
from .inputs import as_fleet, as_workload
from .model import Variant, build_model
from .outputs import EXTENDED_OUTPUTS, field_named, output as _output, quantity_of
from .printing import (TERM_CLASSES, definition_latex, equation as _equation, equation_label, latex, md_math,
                       number as _number_latex, term_call, term_latex, value_latex)
from .solver import DistributedModel

#: The forms :func:`equation` prints: a quantity's definition in earlier quantities (``structured``), in
#: parameters with cost terms by name (``expanded``) or with the cost terms written out (``closed``); a cost
#: term's definition (``structured``: the call, its formula and shorter forms) or the call and formula alone.
FORMS = ("structured", "expanded", "closed")
_LABEL = re.compile(r"eq-[a-z0-9]+(?:[-_][a-z0-9]+)*")


def _choice(value, name: str, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(str, allowed))}, got {value!r}")


def _flag(value, name: str) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def _model(family: str, fidelity: str):
    _choice(family, "family", ("transformer", "generic"))
    _choice(fidelity, "fidelity", ("mlsysim", "extended"))
    return build_model(Variant(family=family, fidelity=fidelity))


def _plan():
    """A run's time and cost in the step's quantities (:data:`mlsysim_sym.run_costs.PLAN`), whatever the model."""
    from .run_costs import PLAN
    return PLAN


def _resolve(name: str, family: str, fidelity: str, extended_hint: str) -> str:
    """The quantity, cost term or plan quantity ``name`` names in the model: its own name; a result field or an
    alias (``step_time``); the symbol a table prints for a quantity (``M_total``) or for a cost term (``T_ring``),
    when no quantity of either fidelity has that name. Else a ``ValueError`` saying why, with the close names and,
    for the extended model's quantity, ``extended_hint`` (how the caller adds it)."""
    m = _model(family, fidelity)
    if name in m or name in TERM_CLASSES or name in _plan():
        return name
    # a result field, an alias or the symbol a table prints for a quantity names its quantity
    q = quantity_of(field_named(name))
    if q not in m and q not in _plan():
        every = build_model(Variant(family=family, fidelity="extended"))
        q = notation.printed_as(name, every) or notation.printed_as(name, _plan()) or q
    if q not in m and q not in _plan():
        # the book's macro (\\PipelineBubbleFraction, with or without its backslash) or a special case's glyph
        q = notation.named_by_macro(name, list(m) + list(TERM_CLASSES) + list(_plan())) or q
    if q not in m and q not in _plan():
        # a printed symbol with its Greek letters typed by name (alpha_TP: α_TP), of either fidelity
        every = build_model(Variant(family=family, fidelity="extended"))
        q = next((n for n in list(every) + list(_plan()) if _ascii(notation.plain(notation.entry(n).latex)) == name),
                 q)
    if q in m or q in _plan() or q in TERM_CLASSES:
        return q
    elsewhere = fidelity == "mlsysim" and q in build_model(Variant(family, fidelity="extended"))
    terms = [t.name for t in notation.TERMS if name in (notation.plain(t.latex), _ascii(notation.plain(t.latex)))]
    if len(terms) == 1 and not elsewhere:
        return terms[0]
    why = f"no quantity or cost term '{name}' in the {family} {fidelity} model"
    given = _parameter(name)
    if given is not None and not elsewhere:
        raise ValueError(f"{name} is a parameter (an input of the model), not a quantity: {given}; "
                         "docs/notation.md lists every symbol")
    if elsewhere:
        why += f"; it is one of the extended model's: {extended_hint}"
        if terms:
            why += f"; or the cost term {terms[0]}, printed {name}"
    elif len(terms) > 1:
        why += f"; the cost terms {', '.join(terms)} print as {name}: give one by name"
    elif family == "generic" and name in build_model(Variant(family="transformer", fidelity=fidelity)):
        why += "; it is one of the transformer family's (the default family)"
    else:
        from .catalog import close_names
        # (a one- or two-letter name, N or dp, is close only by its spelling: in 'nope' it is no hint)
        names = list(m) + list(TERM_CLASSES) + list(_plan())
        # the quantities whose meaning holds the words typed (ring -> RingAllReduce, bubble -> bubble_fraction), then
        # the names spelled alike
        spelled = [k for k in close_names(name, names) if len(k) >= min(3, len(name))]
        # a name spelled nearly so first (T_STEP, T_memor), then those whose meaning holds the words typed (ring),
        # then the rest spelled alike
        near = [k for k in spelled if SequenceMatcher(None, k.lower(), name.lower()).ratio() >= 0.7]
        said = [] if near else _by_words(name, names)
        close = near + said + [k for k in spelled if k not in near and k not in said]
        why += f"; close names: {', '.join(close[:5])}" if close else ""
    raise ValueError(why)


#: Words too common in the meanings to point at one (every time is "of one step").
_COMMON = ("time", "step", "with", "from", "that", "this", "each", "over", "into", "than")


def _by_words(typed: str, names) -> list:
    """The names whose meaning holds every word of ``typed`` (``pipeline_bubble``, ``model flops utilization``;
    words of three letters or more), at most five."""
    words = [w for w in re.split(r"[\s_\-]+", typed.lower()) if len(w) >= 4 and w.isalpha() and w not in _COMMON]
    if not words:
        return []
    terms = {t.name: t.meaning for t in notation.TERMS}
    meaning = lambda n: (terms[n] if n in terms else notation.entry(n).meaning).lower()  # noqa: E731
    return [n for n in names if all(re.search(rf"\b{w}", meaning(n)) for w in words)][:5]


def _ascii(text: str) -> str:
    """``η_hw`` -> ``eta_hw``: a printed symbol's Greek letters by their names, as a keyboard types them."""
    import unicodedata
    out = []
    for c in text:
        n = unicodedata.name(c, "")
        out.append(n.split()[-1].lower() if n.startswith("GREEK") else c)
    return "".join(out)


def _parameter(name: str) -> Optional[str]:
    """What a parameter is, where ``name`` names one (its name, its keyword, or its printed symbol, Greek letters
    typed or spelled: ``f_strag``, ``η_hw``, ``eta_hw``): its meaning, symbol, unit and where a user sets it."""
    from .symbols import PARAMS, keywords
    printed = {p: notation.plain(p.latex) for p in PARAMS.values()}
    # the printed symbol first (c is the CP degree as the tables print it, congestion's internal name)
    found = next((p for p, t in printed.items() if name in (t, _ascii(t))), None) or \
        next((p for p in PARAMS.values() if name in (p.name, p.argument)), None) or \
        PARAMS.get(notation.named_by_macro(name, PARAMS) or "")
    if found is None:
        return None
    p = found
    unit = "" if p.unit in ("1", "") else f", in {p.unit}"
    option = f", {p.option}" if p.option else ""
    if p.kind.name == "CONSTANT":
        where = "a constant"
    elif p.argument in keywords():
        where = f"solve()'s {p.argument}{option}"
    else:
        where = f"a record's field, sweep()'s {p.argument}{option}"
    return f"{printed[p]}, {p.meaning}{unit} ({where})"


def _one_form(name: str, form: str) -> None:
    """A run's quantity (:data:`mlsysim_sym.run_costs.PLAN`) is written in the step's quantities: it has one form."""
    if form != "structured":
        raise ValueError(f"form: {name} is a run's quantity, written in the step's quantities: it has only the "
                         f"structured form, got {form!r}")


def _named(name: str, family: str, fidelity: str) -> str:
    """:func:`_resolve` for this module's functions: a name they cannot read is a ``ValueError`` naming ``name``."""
    try:
        return _resolve(name, family, fidelity, "pass fidelity='extended'")
    except ValueError as e:
        raise ValueError(f"name: {e}") from None


#: Labels the documents gave an equation before the rule of :func:`default_label` named it otherwise, by
#: ``(name, form, fidelity, family)``: ``docs/quarto/memory.qmd``'s generic memory.
_DOCUMENTED = {("M_acc", "structured", "mlsysim", "generic"): "eq-memory-generic"}


def _right_side(m, name: str, form: str):
    return {"structured": m.definition, "expanded": m.__getitem__, "closed": m.closed_form}[form](name)


def default_label(name: str, form: str = "structured", fidelity: str = "mlsysim", family: str = "transformer") -> str:
    """The label ``docs/quarto/*.qmd`` and ``mlsysim-sym equations --quarto`` give the equation of ``name``, one
    label for each distinct equation: a quantity's from its name (``eq-t-dp``; ``eq-extended-t-dp`` in the
    extended model; ``-closed`` or ``-expanded`` for those forms; ``generic`` after ``eq-`` or ``extended`` where
    the generic family's equation is not the transformer's, ``eq-generic-o-model``, but ``eq-memory-generic`` for
    its memory, as ``docs/quarto/memory.qmd`` names it), a cost term's from its symbol (``eq-t-ring``; ``-term``
    where a quantity has that label, ``-expanded`` for its call and formula alone: ``form="expanded"`` or
    ``"closed"``), a run's (``mlsysim_sym.run_costs.PLAN``, only its one form) ``eq-plan-`` and its name. ``name``
    as :func:`equation` takes it."""
    m = _model(family, fidelity)
    _choice(form, "form", FORMS)
    if not isinstance(name, str):
        raise ValueError(f"name must be a quantity or cost term name, got {name!r}")
    name = _named(name, family, fidelity)
    if name in TERM_CLASSES:
        label = equation_label(notation.term(name).latex)
        label += "-term" if label in {equation_label(n) for n in m} else ""
        return label + ("-expanded" if form != "structured" else "")
    if name in _plan():
        _one_form(name, form)
        return equation_label("plan " + name)
    if (name, form, fidelity, family) in _DOCUMENTED:
        return _DOCUMENTED[name, form, fidelity, family]
    model = ("extended " if fidelity == "extended" else "")
    if family == "generic":
        t = _model("transformer", fidelity)
        if name not in t or _right_side(t, name, form) != _right_side(m, name, form):
            model += "generic "
    return equation_label(model + name, "" if form == "structured" else form)


def _math_problem(tex: str) -> Optional[str]:
    """What makes ``tex`` no single math expression: a dollar sign (math delimiters, which would end the display
    early; ``\\$`` is a dollar) or braces that do not pair (``\\{`` and ``\\}`` are printed braces)."""
    depth = 0
    for m in re.finditer(r"\\.|[${}]", tex, re.S):
        c = m.group(0)
        if c == "$":
            return "a dollar sign (math delimiters do not belong in the math; write \\$ for a dollar)"
        depth += {"{": 1, "}": -1}.get(c, 0)
        if depth < 0:
            return "a closing brace '}' with no opening one"
    return f"{depth} opening brace(s) '{{' not closed" if depth else None


def display(tex: str, label: Union[str, bool]) -> str:
    r"""``tex`` as a Markdown display equation, ``$$ ... $$ {#eq-label}`` (Quarto numbers it and ``@eq-label``
    cites it); ``label=False``: no label. The math is written so GitHub's Markdown keeps it too
    (:func:`mlsysim_sym.printing.md_math`)."""
    if not isinstance(tex, str) or not tex.strip():
        raise ValueError(f"tex must be a non-empty LaTeX string, got {tex!r}")
    problem = _math_problem(tex)
    if problem:
        raise ValueError(f"tex: {problem} (the math alone: display() writes the $$ around it), got {tex!r}")
    if label is not False and not (isinstance(label, str) and _LABEL.fullmatch(label)):
        raise ValueError(f"label must start with 'eq-' and hold lower-case letters, digits and dashes "
                         f"(Quarto's equation labels), got {label!r}")
    return f"$$\n{md_math(tex.strip())}\n$$" + (f" {{#{label}}}" if label else "")


def equation_tex(name: str, book: bool = False, form: str = "structured", fidelity: str = "mlsysim",
                 family: str = "transformer") -> str:
    r"""The LaTeX :func:`equation` displays (the math alone, no ``$$``, no label; the arguments as it takes them).
    A quantity's definition (:func:`mlsysim_sym.printing.definition_latex`: one that is a cost term goes on
    to its formula); a cost term's definition (structured: the call, its formula and shorter forms) or its call and
    formula alone (expanded or closed); a run's quantity in the step's quantities (structured only)."""
    _flag(book, "book")
    if not isinstance(name, str):
        raise ValueError(f"name must be a quantity or cost term name, got {name!r}")
    m = _model(family, fidelity)
    _choice(form, "form", FORMS)
    q = _named(name, family, fidelity)
    if q in TERM_CLASSES:
        if form == "structured":
            return term_latex(notation.term(q), book=book)
        call = term_call(notation.term(q))
        return _equation(call, call.doit(), book=book)
    if q in _plan():
        _one_form(q, form)
        return _equation(notation.symbol(q), _plan()[q], book=book)
    return definition_latex(m, q, form, book=book)


def equation(name: str, book: bool = False, label: Optional[Union[str, bool]] = None, form: str = "structured",
             fidelity: str = "mlsysim", family: str = "transformer") -> str:
    r"""The defining equation of a model quantity (``T_dp``, or a result field or alias: ``step_time``; or the
    symbol a table prints for it, ``M_total``), a cost term (``RingAllReduce``, or its symbol ``T_ring``) or a run's
    quantity (``T_train``) as a labelled Markdown display equation.

    ``book``: the book's macros (``\DataParallelDegree``) instead of their LaTeX; ``label``: Quarto's label
    (default :func:`default_label`, one for each distinct equation; ``False``: none); ``form``: one of
    :data:`FORMS` (a run's quantity has only ``"structured"``); ``fidelity``: ``"mlsysim"`` or ``"extended"`` (the
    extended model's quantities); ``family``: ``"transformer"`` or ``"generic"``. A quantity defined as one cost
    term goes on to the term's formula (``T_bubble = T_bubble(T_node, N_PP, V, m) = T_node (N_PP - 1) / (m V)``).
    """
    tex = equation_tex(name, book, form, fidelity, family)
    return display(tex, default_label(name, form, fidelity, family) if label is None else label)


def inline(what, book: bool = False) -> str:
    r"""Inline math (``$...$``) of a quantity's, parameter's or cost term's symbol by name (``"T_dp"``,
    ``"tp"``, ``"RingAllReduce"``, a result field or alias), or of a sympy expression; ``book``: its macro."""
    _flag(book, "book")
    if isinstance(what, str):
        q = quantity_of(what)
        if q not in TERM_CLASSES and q not in notation.table():
            try:        # the names equation() reads: a cost term's symbol (T_ring), the book's macro, ...
                q = _resolve(what, "transformer", "extended", "")
            except ValueError:
                pass
        if q in TERM_CLASSES:
            tex = notation.term(q).tex(book)
        elif q in notation.table():
            tex = notation.entry(q).tex(book)
        else:
            raise ValueError(f"what: no quantity, parameter or cost term {what!r} (see mlsysim_sym.notation.table())")
    elif isinstance(what, sp.Basic):
        tex = latex(what, book=book)
    else:
        raise ValueError(f"what must be a name or a sympy expression, got {what!r}")
    return "$" + md_math(tex) + "$"


def _scale(unit: str, si: str) -> float:
    """The factor from the SI unit ``si`` to ``unit`` as a reader writes it (``ms`` of ``s``: 1e-3)."""
    if si == "1":
        table = {"": 1.0, "%": 1e-2}
    elif si == "1/s":
        table = {"samples/s": 1.0, _display.written(si): 1.0}
    elif si in _display.PREFIXED:
        base = _display.PREFIXED[si]
        table = {p + base: s for p, s in _display.SCALES.items()}
        table.update({"µ" + base: 1e-6, "μ" + base: 1e-6})
    else:
        table = {si: 1.0}
    if unit not in table:
        raise ValueError(f"unit must be one of {', '.join(repr(u) for u in table)} for an output in {si!r}, "
                         f"got {unit!r}")
    return table[unit]


def number(output: str, model, fleet, unit: Optional[str] = None, digits: int = 4, math: bool = False,
           fidelity: str = "mlsysim", **solve_kwargs) -> str:
    r"""One output of ``DistributedModel(fidelity).solve(model, fleet, **solve_kwargs)`` with its unit, for the
    text of a chapter: ``"3.369 s"``, ``"59.41 GB"``, ``"38.67%"``.

    ``output``: a result field (``step_latency_total``, ``node_profile.memory_footprint``), an alias
    (``step_time``, ``mfu``, ``memory``), a model quantity that is one (``T_step``), a term of the step
    (``T_dp_exposed``) or of the memory (``M_weights``), or in the extended model one of its own outputs
    (``cp_communication_latency``). ``unit``: the unit to print in (``"ms"``, ``"GB"``, ``"TFLOP/s"``; ``"%"``
    for a fraction); by default the SI unit with the prefix that suits the value (as the package prints
    values). ``digits``: significant digits, the number written out (``3369000 us``, never ``3.369e+06``).
    ``math``: the number as inline math, the unit after it as text (``$3.369$ s``, ``$26.04$%``,
    ``$3.369 \times 10^{6}$ us``). ``model``, ``fleet``: a catalog name (``mlsysim-sym list``) or an object
    ``DistributedModel.solve`` takes; an unknown name is a ``ValueError`` naming the argument, with close names.
    """
    _flag(math, "math")
    if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= 17:
        raise ValueError(f"digits must be a whole number from 1 to 17, got {digits!r}")
    if not isinstance(output, str):
        raise ValueError(f"output must be an output's name, got {output!r}")
    _choice(fidelity, "fidelity", ("mlsysim", "extended"))
    o = _output(output)
    for arg, value, convert in (("model", model, as_workload), ("fleet", fleet, as_fleet)):
        try:
            convert(value)
        except KeyError as e:          # an unknown catalog name; the message lists the close names
            raise ValueError(f"{arg}: {e.args[0]}") from None
    r = DistributedModel(fidelity=fidelity).solve(model, fleet, **solve_kwargs)
    if o is not None and o.fidelity == "mlsysim":
        value, q = r.quantities[o.field], o.quantity
    elif o is not None and o.field in EXTENDED_OUTPUTS:
        if not r.extended or o.field not in r.extended:
            raise ValueError(f"output: {output!r} is an output of the extended model (fidelity='extended') that "
                             f"this configuration does not have")
        value, q = r.extended[o.field], o.quantity
    elif output in r.terms:
        value, q = r.terms[output], output
    elif output in r.memory:
        value, q = r.memory[output], output
    else:
        raise ValueError(f"output: no output {output!r} (a result field, an alias, a term of the step or of the "
                         f"memory; see mlsysim_sym.outputs.OUTPUT_TABLE)")
    if value is None:
        raise ValueError(f"output: {output!r} has no value at this configuration (mlsysim reports None)")
    si = notation.entry(q).unit
    if isinstance(value, bool):
        if unit is not None:
            raise ValueError(f"unit: {output!r} is a yes/no output, it takes no unit, got {unit!r}")
        return "$" + md_math(value_latex(value, si, digits)) + "$" if math else _display.quantity(value, si, digits)
    if unit is None:          # the SI unit with the prefix that suits the value, as display.quantity writes it
        scale, prefix = _display.si_prefix(value, si) if si in _display.PREFIXED else (1.0, "")
        tail = (" " + prefix + _display.PREFIXED[si]) if si in _display.PREFIXED else _display._PLAIN.get(si, " " + si)
    else:
        scale, tail = _scale(unit, si), ("" if unit in ("", "%") else " ") + unit
    # the unit after the number as text, also for math=True: a percent sign in the math would need \%, whose
    # backslash GitHub's Markdown eats (and % then starts a TeX comment)
    if math:
        return "$" + md_math(_number_latex(value / scale, digits)) + "$" + tail
    return _plain(value / scale, digits) + tail


def _plain(x: float, digits: int) -> str:
    """``x`` to ``digits`` significant digits written out (``3369000``, ``0.0001234``), never in Python's exponent
    notation (``3.369e+06``): text for a reader."""
    text = _display.number(x, digits)
    if "e" not in text:
        return text
    return format(Decimal(text), "f")
