"""The calculator page, ``docs/calculator/index.html``, in a real browser: Playwright drives the system's
headless Chromium on the page from ``file://`` (no server; every request that is not ``file://`` or ``data:``
fails the test), and what it shows is checked against the Python package."""
import re
import warnings
from pathlib import Path

import pytest

from browser_check import chromium
from mlsysim_sym import DistributedModel, sensitivities

PAGE = Path(__file__).resolve().parents[1] / "docs" / "calculator" / "index.html"
playwright = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install '.[test]')")
pytestmark = pytest.mark.skipif(chromium() is None, reason="needs chromium (.ci/run installs it)")


@pytest.fixture(scope="module")
def page():
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
        pg = browser.new_page(viewport={"width": 1200, "height": 1400})
        pg.outside = []
        pg.on("request", lambda r: pg.outside.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        pg.errors = []
        pg.on("pageerror", lambda e: pg.errors.append(str(e)))
        pg.goto(PAGE.as_uri())
        pg.wait_for_function("window.calculatorReady === true")
        yield pg
        browser.close()


def _python(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DistributedModel().solve(kw.pop("model"), kw.pop("fleet"), **kw)


FIRST = dict(model="Llama3_70B", fleet="Research_256", batch_size=256, tp_size=8, pp_size=4, microbatch_count=8)


def words(keyword: str) -> str:
    """A field as the page names it in an error: its words and symbol (the parameter table's), else its name."""
    from derivations.web import PARAMS_BY_ARGUMENT
    p = PARAMS_BY_ARGUMENT.get(keyword)
    return f"{p.words} {p.text}" if p else keyword


def shown(problem: str) -> str:
    """``keyword: what`` as the page shows it: the keyword in the page's words."""
    keyword, _, rest = problem.partition(": ")
    return f"{words(keyword)}: {rest}"


def test_the_page_opens_from_file_with_no_network_and_shows_pythons_numbers(page, tmp_path):
    r = _python(**FIRST)
    assert page.inner_text("#out-mfu") == f"{r.mfu:.4f}"
    assert page.inner_text("#out-step") == f"{r.step_latency_total:.4g} s"
    assert page.errors == [] and page.outside == []
    # every equation rendered by KaTeX, none failed, and the KaTeX fonts loaded from the page itself
    assert page.locator("#equations .katex").count() >= 10
    assert page.locator(".katex-error").count() == 0
    assert page.evaluate("[...document.fonts].some(f => f.family === 'KaTeX_Main' && f.status === 'loaded')")
    shot = tmp_path / "calculator.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 50_000
    # keep one for a person to look at (pytest's tmp_path survives the run)
    print(f"screenshot: {shot}")


def test_moving_a_control_updates_the_numbers_and_the_url(page):
    page.fill("#in-tp_size", "4")
    page.dispatch_event("#in-tp_size", "input")
    r = _python(**{**FIRST, "tp_size": 4})
    assert page.inner_text("#out-mfu") == f"{r.mfu:.4f}"
    assert "tp_size=4" in page.evaluate("location.hash")
    terms = page.inner_text("#term-T_bubble")
    assert terms.endswith("s") and float(re.split(r"\s", terms)[0]) > 0
    # the sensitivities are Python's elasticities in the same regime
    rows = page.locator("#sensitivities tr").all_inner_texts()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = sensitivities("Llama3_70B", "Research_256", batch_size=256, tp_size=4, pp_size=4, microbatch_count=8)
    eff = next(x for x in table.rows if x.parameter == "efficiency")
    shown = next(t for t in rows if t.startswith("achieved efficiency"))
    assert float(shown.split()[-1]) == pytest.approx(eff.elasticity, abs=5e-4)
    page.fill("#in-tp_size", "8")
    page.dispatch_event("#in-tp_size", "input")


def test_an_invalid_split_shows_solves_message(page):
    page.fill("#in-tp_size", "3")
    page.dispatch_event("#in-tp_size", "input")
    with pytest.raises(ValueError) as e:
        _python(**{**FIRST, "tp_size": 3})
    # the message names the fields it is about in the page's words, and marks them
    assert page.inner_text("#error") == f"ValueError: {' / '.join(map(words, ('tp_size', 'pp_size', 'ep_size')))}: " \
        f"{e.value}"
    assert page.evaluate("[...document.querySelectorAll('#controls .bad')].map((e) => e.name)") == \
        ["tp_size", "pp_size", "ep_size"]
    assert page.is_hidden("#result")
    page.fill("#in-tp_size", "8")
    page.dispatch_event("#in-tp_size", "input")
    assert page.is_visible("#result")


def test_a_link_to_values_at_solves_defaults_restores_them(page):
    # pp 1 and microbatches 1 are solve()'s defaults, not the page's first configuration (pp 4, m 8)
    page.goto(PAGE.as_uri())
    page.wait_for_function("window.calculatorReady === true")
    for name, value in (("pp_size", "1"), ("microbatch_count", "1")):
        page.fill(f"#in-{name}", value)
        page.dispatch_event(f"#in-{name}", "input")
    link = page.evaluate("location.href")
    page.goto("about:blank")
    page.goto(link)
    page.wait_for_function("window.calculatorReady === true")
    assert page.input_value("#in-pp_size") == "1" and page.input_value("#in-microbatch_count") == "1"
    r = _python(**{**FIRST, "pp_size": 1, "microbatch_count": 1})
    assert page.inner_text("#out-mfu") == f"{r.mfu:.4f}"


def test_a_shared_url_restores_the_configuration(page):
    page.goto(PAGE.as_uri() + "#model=GPT3&fleet=Mega_100K&batch_size=4096&tp_size=8&pp_size=10&microbatch_count=40"
              "&precision=bf16")
    page.wait_for_function("window.calculatorReady === true")
    r = _python(model="GPT3", fleet="Mega_100K", batch_size=4096, tp_size=8, pp_size=10, microbatch_count=40,
                precision="bf16")
    assert page.input_value("#in-model") == "GPT3" and page.input_value("#in-precision") == "bf16"
    assert page.inner_text("#out-mfu") == f"{r.mfu:.4f}"


def test_the_page_computes_pythons_numbers_on_random_configurations(page):
    # the module as the page loads it, in the browser's JavaScript engine: the same random configurations
    # as tests/test_calculator.py, errors and messages included
    import json
    import random

    import test_calculator as T
    rng = random.Random(20261201)
    configs = [T._random_configuration(rng) for _ in range(T.RANDOM_CONFIGURATIONS)]
    got = page.evaluate("""(configs) => configs.map(([m, f, kw]) => {
        try { return { result: window.mlsysim.solve(m, f, kw) }; }
        catch (e) { return { type: e.type || e.name, error: e.message }; } })""", json.loads(json.dumps(configs)))
    assert T.compare_all(configs, got) >= 500


def test_the_page_fits_a_phone_and_shows_each_named_terms_formula(page):
    page.set_viewport_size({"width": 420, "height": 800})
    page.goto(PAGE.as_uri())
    page.wait_for_function("window.calculatorReady === true")
    assert page.evaluate("document.documentElement.scrollWidth") <= 420
    # T_bubble is a named cost term: its equation goes on to its formula, T_node (N_PP - 1) / (m V)
    bubble = page.evaluate("[...document.querySelectorAll('#equations annotation')].map(a => a.textContent)"
                           ".find(t => t.startsWith('T_{\\\\text{bubble}}'))")
    assert bubble is not None and bubble.count("=") == 2 and "N_{\\text{PP}} - 1" in bubble
    page.set_viewport_size({"width": 1200, "height": 1400})


def test_the_extended_model_is_a_choice_on_the_page(page):
    page.goto(PAGE.as_uri())
    page.wait_for_function("window.calculatorReady === true")
    assert page.is_disabled("#in-cp_size")
    page.select_option("#in-fidelity", "extended")
    page.fill("#in-cp_size", "2")
    page.dispatch_event("#in-cp_size", "input")
    page.check("#in-sequence_parallel")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = DistributedModel(fidelity="extended").solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8,
                                                        pp_size=4, microbatch_count=8, cp_size=2,
                                                        sequence_parallel=True)
    assert page.inner_text("#out-mfu") == f"{r.mfu:.4f}"
    # the extended terms are rows of the breakdown, in seconds
    cp = page.inner_text("#term-T_cp")          # 4 significant digits, as the page prints times
    assert cp.endswith(" ms") and float(cp.split()[0]) == pytest.approx(r.extended["cp_communication_latency"] * 1e3,
                                                                         rel=1e-3)
    assert "fidelity=extended" in page.evaluate("location.hash")
    page.select_option("#in-fidelity", "mlsysim")
    assert page.inner_text("#out-mfu") == f"{_python(**FIRST).mfu:.4f}" and page.is_disabled("#in-cp_size")


def _readme_solves():
    """Every ``DistributedModel(...).solve(...)`` call in the README's Python blocks, with its literal
    arguments (``**kw`` read from the block's ``kw = dict(...)``): (fidelity, model, fleet, keywords)."""
    import ast
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    calls = []
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        tree, names = ast.parse(block), {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                    and getattr(node.value.func, "id", "") == "dict":
                names[node.targets[0].id] = {k.arg: ast.literal_eval(k.value) for k in node.value.keywords}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "solve" \
                    and isinstance(node.func.value, ast.Call) and getattr(node.func.value.func, "id", "") == \
                    "DistributedModel":
                fidelity = {k.arg: ast.literal_eval(k.value) for k in node.func.value.keywords}.get("fidelity",
                                                                                                    "mlsysim")
                # a call on an architecture card object (docs/architecture.md) is not one of its links; the
                # catalogs' names are
                if not all(isinstance(a, ast.Constant) for a in node.args):
                    continue
                kw = {}
                for k in node.keywords:
                    kw.update(names[k.value.id] if k.arg is None else {k.arg: ast.literal_eval(k.value)})
                calls.append((fidelity, *(ast.literal_eval(a) for a in node.args), kw))
    return calls


def test_the_readmes_examples_as_links_price_what_solve_prices(page):
    # a link holds the values that differ from solve()'s defaults; a key it lacks is solve()'s default, not
    # the page's example (the Mixtral example as a link priced pp 4, m 8: MFU 0.113 against solve()'s 0.039)
    calls = _readme_solves()
    assert {c[1] for c in calls} >= {"Llama3_70B", "Mixtral_8x7B"} and {c[0] for c in calls} == {"mlsysim",
                                                                                                  "extended"}
    for fidelity, model, fleet, kw in calls:
        link = "&".join([f"model={model}", f"fleet={fleet}"] + (["fidelity=extended"] if fidelity == "extended"
                                                                 else []) +
                        [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in kw.items()])
        page.goto("about:blank")
        page.goto(PAGE.as_uri() + "#" + link)
        page.wait_for_function("window.calculatorReady === true")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = DistributedModel(fidelity=fidelity).solve(model, fleet, **kw)
        assert page.inner_text("#out-mfu") == f"{r.mfu:.4f}", (link, r.mfu)
        assert page.inner_text("#out-step") == f"{r.step_latency_total:.4g} s", link
        # the page writes the same link back (the values that differ from solve()'s defaults)
        back = dict(x.split("=") for x in page.evaluate("location.hash")[1:].split("&"))
        assert back["model"] == model and back.get("fidelity", "mlsysim") == fidelity
        assert page.errors == [] and page.outside == []


def test_text_the_browser_cannot_read_as_a_number_is_refused_not_priced_as_the_default(page):
    # a number field holding "1e400" or "1e" has an empty value: the page priced tp 1 and said nothing
    page.goto(PAGE.as_uri())
    page.wait_for_function("window.calculatorReady === true")
    for text in ("1e400", "1e"):
        page.fill("#in-tp_size", "")
        page.type("#in-tp_size", text)
        assert page.inner_text("#error") == ("ValueError: " + shown("tp_size: not a finite number; empty the field for "
                                                                   "solve()'s default")), text
        assert page.is_hidden("#result")
    page.fill("#in-tp_size", "8")
    page.dispatch_event("#in-tp_size", "input")
    assert page.is_visible("#result") and page.inner_text("#out-mfu") == f"{_python(**FIRST).mfu:.4f}"


@pytest.mark.parametrize("given,problem", [
    ("tp_size=abc", "tp_size: 'abc' is not a finite number"),
    ("efficiency=Infinity", "efficiency: 'Infinity' is not a finite number"),
    ("zero_stage=5", "zero_stage: '5' is not one of 0, 1, 2, 3; the page shows 0"),
    ("fidelity=bogus", "fidelity: 'bogus' is not one of mlsysim, extended; the page shows mlsysim"),
    ("precision=fp6", "precision: 'fp6' is not one of fp32, tf32, bf16, fp16, fp8, int8, int4; the page shows fp16"),
    ("overlap_comm=yes", "overlap_comm: 'yes' is not true or false"),
    ("model=Nope", "model: unknown workload 'Nope'; in the modern catalog: modern/DeepSeek-V3, modern/Mistral-NeMo-12B, "
                   "modern/Qwen3-30B-A3B, modern/GPT-3-175B; the page shows Llama3_70B"),
    # the module's own words: close names of both catalogs; a modern name is the Python package's
    ("model=Llama3_405b", "model: unknown workload 'Llama3_405b'; close names: Llama3_405B, Llama3_70B, Llama3_8B, "
                          "Llama2_70B, Llama2_7B; in the modern catalog: modern/Llama-3.1-405B, modern/Llama-3.1-70B, "
                          "modern/Llama-3.1-8B, modern/GPT-3-175B; the page shows Llama3_70B"),
    # the modern catalog's own message for a name it lacks (mlsysim_sym.modern)
    ("fleet=modern/B300-1024", "fleet: unknown modern fleet 'modern/B300-1024'; close names: modern/B200-1024, "
                               "modern/H200-1024, modern/H100-SXM-1024, modern/GB200-NVL72-1152; the page shows "
                               "Research_256"),
    ("tp=8", "tp: not a setting of this page (tp=8)"),
    # a repeated key: the last value held, unsaid (a link edited by hand that kept the old value)
    ("batch_size=256&batch_size=512", "batch_size: given 2 times (256, 512); the last holds"),
    # the last of a repeated model is unknown: the page shows its example's, said once
    ("model=GPT2&model=Foo", "model: given 2 times (GPT2, Foo); the last holds; model: unknown workload 'Foo'; "
                             "in the modern catalog: modern/GPT-3-175B, modern/DeepSeek-V3; the page shows Llama3_70B"),
    ("tp=8&tp=4", "tp: not a setting of this page (tp=8, tp=4)"),
])
def test_a_link_holding_a_value_the_page_cannot_show_says_so(page, given, problem):
    # each was replaced silently (a default, the first choice, the first model): a colleague saw other numbers
    keys = {part.split("=")[0] for part in given.split("&")}
    link = PAGE.as_uri() + "#" + "".join(f"{k}={v}&" for k, v in (("model", "Llama3_70B"), ("fleet", "Research_256"),
                                                                  ("batch_size", "256")) if k not in keys) + given
    page.goto("about:blank")
    page.goto(link)
    page.wait_for_function("window.calculatorReady === true")
    assert page.inner_text("#error") == "ValueError: " + shown(problem)
    assert page.is_hidden("#result") and page.evaluate("location.href") == link     # the link stays as it was
    # editing the form prices what it shows: every choice list holds a listed value (a blank one priced ZeRO 0 or
    # mlsysim's model unsaid and wrote "precision=" into the link)
    page.fill("#in-batch_size", "512")
    page.dispatch_event("#in-batch_size", "input")
    assert page.is_visible("#result") and page.errors == []
    assert page.evaluate("[...document.querySelectorAll('select')].every((s) => s.selectedIndex >= 0)")
    assert "precision=&" not in page.evaluate("location.hash")


def _open(page, hash_=""):
    page.goto("about:blank")
    page.goto(PAGE.as_uri() + hash_)
    page.wait_for_function("window.calculatorReady === true")


def _set(page, name, value):
    page.fill(f"#in-{name}", value)
    page.dispatch_event(f"#in-{name}", "input")


def test_what_a_trial_found_the_page_leaving_unsaid_it_says(page):
    # the memory against the accelerator's HBM, as the command line prints it (80 GiB = 85.9 GB; 59.41 GB fits)
    _open(page)
    r = _python(**FIRST)
    assert page.inner_text("#headline").count("of 80 GiB = 85.9 GB HBM: fits") == 1
    assert r.node_profile.feasible and r.memory_capacity == 80 * 2 ** 30
    # a batch of 10 over 8 replicas: mlsysim prices 8 samples a step (throughput 8 / step time), and says so
    _set(page, "batch_size", "10")
    assert "8 a step, not the batch 10" in page.inner_text("#headline")
    # a count is a whole number, as the command line reads it (solve() prices 2.5 as mlsysim does)
    _set(page, "batch_size", "2.5")
    assert page.inner_text("#error") == f"ValueError: {words('batch_size')}: expected a whole number, got 2.5"
    assert page.evaluate("[...document.querySelectorAll('#controls .bad')].map((e) => e.name)") == ["batch_size"]
    # mlsysim's message names n_microbatches: the page names its field
    _set(page, "batch_size", "256")
    _set(page, "microbatch_count", "0")
    assert page.inner_text("#error") == f"ValueError: {words('microbatch_count')}: n_microbatches must be >= 1, got 0"
    # a step beyond a billion seconds in seconds with an exponent (it printed 2.619 Ps): congestion 1e12 stretches
    # the DP all-reduce (1.5 s at congestion 1) a trillion-fold
    _set(page, "microbatch_count", "8")
    _set(page, "congestion_factor", "1e12")
    assert page.inner_text("#out-step") == f"{_python(**FIRST, congestion_factor=1e12).step_latency_total:.4g} s"
    assert "e+" in page.inner_text("#out-step")
    # a link that names no model or fleet takes the page's example's (it said "unknown workload 'undefined'")
    _open(page, "#tp_size=8&pp_size=4&microbatch_count=8&batch_size=256")
    assert page.is_visible("#result") and page.inner_text("#out-mfu") == f"{r.mfu:.4f}"
    # a keyword only the extended model reads, in a link of mlsysim's model, is named (it was dropped unsaid)
    _open(page, "#model=Llama3_70B&fleet=Research_256&batch_size=256&cp_size=2")
    with pytest.raises(ValueError) as e:
        _python(**FIRST, cp_size=2)
    assert str(e.value) == ("cp_size=2 is an argument of the extended model (mlsysim 0.3.0 has no context-parallel "
                            "degree); pass fidelity='extended'")
    assert page.inner_text("#error") == (f"ValueError: {words('cp_size')}: cp_size=2 is an argument of the extended "
                                         "model (mlsysim 0.3.0 has no context-parallel degree); add fidelity=extended "
                                         "to the link")
    _open(page, "#model=Llama3_70B&fleet=Research_256&batch_size=256&cp_size=1.0&sequence_parallel=0")
    assert page.is_visible("#result")           # at the defaults: nothing the extended model would change
    # the extended model's equations define every term of its breakdown (T_CP, T_P2P, T_update, the exposed ones)
    _open(page, "#model=Llama3_70B&fleet=Research_256&batch_size=256&tp_size=8&pp_size=4&microbatch_count=8"
                "&cp_size=2&fidelity=extended")
    shown_terms = page.evaluate("[...document.querySelectorAll('#breakdown td[id^=term-]')].map((e) => e.id.slice(5))")
    defined = page.evaluate("window.mlsysim.equations('Llama3_70B', 'Research_256', {fidelity: 'extended'})"
                            ".map(([n]) => n)")
    assert {"T_cp", "T_p2p", "T_opt", "T_tp_exposed", "T_ep_exposed"} <= set(shown_terms) <= set(defined)
    # an extended switch that moves no number is said in the configuration line, as the command line says it
    # (EP overlap without experts); CP overlap with cp 2 moves the CP exchange, so it is not
    _open(page, "#model=Llama3_70B&fleet=Research_256&batch_size=256&tp_size=8&pp_size=4&microbatch_count=8"
                "&cp_size=2&fidelity=extended&ep_overlap=true")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        line = DistributedModel(fidelity="extended").solve("Llama3_70B", "Research_256", batch_size=256, tp_size=8,
                                                           pp_size=4, microbatch_count=8, cp_size=2,
                                                           ep_overlap=True).configuration
    assert "no effect here: EP overlap" in line
    assert page.inner_text("#config").endswith(f"(no effect here: {words('ep_overlap')})")
    assert page.errors == [] and page.outside == []


def test_a_value_mlsysim_would_price_but_means_nothing_is_refused_as_the_command_line_refuses_it(page):
    # a congestion factor of -1: mlsysim's model prices it (MFU 0.5998, a step shorter than with none); the page
    # priced it too, where the command line refuses it; the extended model's solve() refuses it in its own words
    _open(page, "#model=Llama3_70B&fleet=Research_256&batch_size=256&tp_size=8&pp_size=4&microbatch_count=8")
    _set(page, "congestion_factor", "-1")
    assert page.inner_text("#error") == "ValueError: " + shown(
        "congestion_factor: congestion_factor must be >= 0, got -1 (mlsysim prices it; the page, the command line "
        "and the extended model refuse it)")
    assert page.is_hidden("#result")
    _set(page, "congestion_factor", "1")
    assert page.is_visible("#result") and page.inner_text("#out-mfu") == f"{_python(**FIRST).mfu:.4f}"


def test_the_page_prints_quantities_as_the_command_line_prints_them(page):
    # mlsysim_sym.display.quantity is what the command line prints (3.369 s, 2.41 ms, 59.41 GB, 76 samples/s); the
    # page printed 2.410 ms and 298.0 µsamples/s. The page writes micro as µ where a terminal gets u.
    from mlsysim_sym.display import quantity
    _open(page)
    values = [0.0, 3.3686, 0.00241, 0.0055318, 2.5e-7, 4.2e-10, 999.4, 999.6, 12345.6, 1.62e308, 76.0, 0.000298,
              12345678.0, 59.41e9, 85899345920.0, 0.5, 1.5e18, 7e-3, -0.25]
    for unit, shown_unit in (("s", "s"), ("B", "B"), ("1/s", "samples/s")):
        got = page.evaluate("([xs, u]) => xs.map((x) => window.mlsysim.quantity(x, u))", [values, shown_unit])
        assert [g.replace("µ", "u") for g in got] == [quantity(x, unit) for x in values]
    # worked by hand: the breakdown's overhead, as the command line prints it
    assert page.evaluate("window.mlsysim.quantity(0.00241, 's')") == "2.41 ms"
    assert page.evaluate("window.mlsysim.quantity(0.000298, 'samples/s')") == "0.000298 samples/s"


def test_a_result_that_is_not_finite_is_refused_as_the_command_line_refuses_it(page):
    # a congestion factor of 1.7e308 with a straggler factor of 2: the step overflows to infinity (mlsysim's
    # solve() returns it, with a warning); the command line answers "--congestion/--straggler: the result holds a
    # number that is not finite (NaN or infinity)" and exit status 2, and the page refused nothing (it showed ∞ s)
    import subprocess
    import sys
    cli = subprocess.run([sys.executable, "-m", "mlsysim_sym", "solve", "--congestion", "1.7e308", "--straggler", "2"],
                         capture_output=True, text=True)
    assert cli.returncode == 2
    assert cli.stderr.strip().endswith("--congestion/--straggler: the result holds a number that is not finite "
                                       "(NaN or infinity)")
    _open(page)
    _set(page, "congestion_factor", "1.7e308")
    assert page.is_visible("#result")                      # 1.62e308 s: finite, shown as the command line shows it
    assert page.inner_text("#out-step") == "1.62e+308 s"
    _set(page, "straggler_factor", "2")
    assert page.is_hidden("#result")
    assert page.inner_text("#error") == (f"ValueError: {words('congestion_factor')} / {words('straggler_factor')}: "
                                         "the result holds a number that is not finite (NaN or infinity)")
    assert page.evaluate("[...document.querySelectorAll('#controls .bad')].map((e) => e.name)") == \
        ["congestion_factor", "straggler_factor"]
    _set(page, "straggler_factor", "1")
    _set(page, "congestion_factor", "1")
    assert page.is_visible("#result") and page.inner_text("#out-mfu") == f"{_python(**FIRST).mfu:.4f}"


def test_the_extended_model_at_the_default_efficiency_says_where_the_fitted_ones_are(page):
    # as the command line says it below such a result (it is the answer's largest input, and 0.5 is mlsysim's
    # default, no measured value)
    from mlsysim_sym.cli.options import DEFAULT_EFFICIENCY_NOTE
    _open(page, "#model=Llama3_70B&fleet=Research_256&batch_size=256&tp_size=8&pp_size=4&microbatch_count=8"
                "&fidelity=extended")
    assert page.inner_text("#notes") == DEFAULT_EFFICIENCY_NOTE.format(setter="the efficiency field")
    assert "docs/modern_runs.md (the efficiency field sets it)" in page.inner_text("#notes")
    _set(page, "efficiency", "0.7")
    assert page.inner_text("#notes") == ""
    _set(page, "efficiency", "")                           # emptied: solve()'s default, and the note again
    assert page.inner_text("#notes").startswith("note: the efficiency is solve()'s default")
    _open(page)                                            # mlsysim's model: no note, as the command line
    assert page.inner_text("#notes") == ""


def test_the_notes_below_a_result_are_the_command_lines(page):
    # mlsysim_sym.model_notes: what the numbers do not say, by the same conditions (translated) and sentences as the
    # command line's; the page showed none (FP8 priced at its peak for all compute in mlsysim's model, unsaid)
    cases = [
        ("#model=Llama3_70B&fleet=Research_256&batch_size=256&tp_size=8&pp_size=4&microbatch_count=8&precision=fp8",
         dict(precision="fp8"), "note: mlsysim's model prices all of the step's compute at the fp8 peak"),
        ("#model=Llama3_70B&fleet=Research_256&batch_size=256&tp_size=8&pp_size=4&microbatch_count=8&ep_size=2",
         dict(ep_size=2), "note: ep_size 2: Llama-3.1-70B is dense (no routed experts)"),
        ("#model=Llama3_70B&fleet=Research_256&batch_size=256&tp_size=8&pp_size=4&microbatch_count=8&cp_size=2"
         "&zero_stage=3&fidelity=extended&efficiency=0.7",
         dict(cp_size=2, zero_stage=3, fidelity="extended", efficiency=0.7),
         "note: ZeRO-3 under a pipeline: a stage keeps its weights gathered"),
    ]
    for link, kw, start in cases:
        _open(page, link)
        fidelity = kw.pop("fidelity", "mlsysim")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = DistributedModel(fidelity=fidelity).solve(**{**FIRST, **kw})
        expected = ["note: " + n for n in r._model_notes()]
        assert page.evaluate("[...document.querySelectorAll('#notes p')].map((p) => p.textContent)") == expected
        assert expected[0].startswith(start)
    # the last: ZeRO-3 under a pipeline of 8 microbatches holds ZeRO-1's memory; the record's 8 of 64 key/value
    # heads set the CP exchange's width (no note about it: one note)
    assert page.evaluate("document.querySelectorAll('#notes p').length") == 1
    _open(page)
    assert page.inner_text("#notes") == ""
    assert page.errors == []


def test_todays_models_and_machines_are_choices_and_price_as_solve_prices(page):
    # the modern catalog on the page: DeepSeek-V3 on GB200 NVL72 racks in FP8 with EP 8 and CP 2; its key/value
    # width is the card's own where the field is left empty (solve()'s kv_fraction=None), not 1
    kw = dict(batch_size=1024, tp_size=2, pp_size=8, ep_size=8, microbatch_count=16, zero_stage=1, precision="fp8",
              seq_len=4096, cp_size=2, efficiency=0.6, overlap_comm=True, ep_overlap=True)
    link = "#" + "&".join(["model=modern/DeepSeek-V3", "fleet=modern/GB200-NVL72-1152", "fidelity=extended"]
                          + [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in kw.items()])
    _open(page, link)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = DistributedModel(fidelity="extended").solve("modern/DeepSeek-V3", "modern/GB200-NVL72-1152", **kw)
        whole = DistributedModel(fidelity="extended").solve("modern/DeepSeek-V3", "modern/GB200-NVL72-1152",
                                                            kv_fraction=1.0, **kw)
    assert page.inner_text("#out-mfu") == f"{r.mfu:.4f}" and r.mfu != whole.mfu
    assert page.input_value("#in-kv_fraction") == "" and page.get_attribute("#in-kv_fraction", "placeholder")
    # an emptied field is solve()'s default, and says so: the batch's is 1 (the command line's 256 is not)
    assert page.get_attribute("#in-batch_size", "placeholder") == "default 1"
    assert page.get_attribute("#in-efficiency", "placeholder") == "default 0.5"
    # the choice lists group the two catalogs
    groups = page.evaluate("[...document.querySelectorAll('#in-model optgroup')].map((g) => [g.label, "
                           "g.children.length])")
    assert [g for g, _ in groups] == ["mlsysim 0.3.0's registry", "the modern catalog (mlsysim-sym list)"]
    assert groups[1][1] == 11 and page.evaluate("document.querySelector('#in-fleet').value") == \
        "modern/GB200-NVL72-1152"
    assert page.errors == [] and page.outside == []


def test_what_a_second_trial_found_the_page_says(page):
    # elasticities at an MFU too small for double precision's derivatives (a congestion factor of 1e300) showed
    # a table of +0.000 and, at 1e200, wrong rows (sequence length +1.000); now the table says why it is absent
    _open(page)
    _set(page, "congestion_factor", "1e300")
    assert page.inner_text("#sensitivities-refused").startswith(
        "the elasticities are not computed at an MFU below 1e-100 (here ")
    _set(page, "congestion_factor", "1.3")
    assert page.locator("#sensitivities-refused").count() == 0 and page.locator("#sensitivities tr").count() == 8
    # a context-parallel degree that does not divide the sequence marks both fields, the one just changed too
    _open(page, "#model=Llama3_70B&fleet=Research_256&batch_size=256&tp_size=8&pp_size=4&microbatch_count=8"
                "&fidelity=extended")
    _set(page, "cp_size", "3")
    assert page.evaluate("[...document.querySelectorAll('.bad')].map((e) => e.name).sort()") == ["cp_size", "seq_len"]
    # 2^53 is the largest whole number the command line takes (options.MAX_WHOLE), and the page; 2^53 + 1, which a
    # float rounds to 2^53, is refused
    _open(page)
    _set(page, "gradient_accumulation_steps", str(2 ** 53))
    assert "expected a whole number" not in page.inner_text("body")
    _set(page, "gradient_accumulation_steps", str(2 ** 53 + 1))
    assert page.inner_text("#error") == "ValueError: " + shown(
        f"gradient_accumulation_steps: expected a whole number of at most 2^53, got {2 ** 53 + 1}")
    assert page.errors == []
