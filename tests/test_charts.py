"""Native Excel charts in Statistics, drawn from values written in the sheet (no images, no
formulas): macro precision and recall per tag, steps score per template, a histogram of case
scores from binned counts."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest
from openpyxl import load_workbook
from openpyxl.utils import range_boundaries

from qareport.cli import main

ROOT = Path(__file__).resolve().parents[1]
TESTCASES, RESPONSES = ROOT / "testcases", ROOT / "testcases" / "responses"
NS = {"c": "http://schemas.openxmlformats.org/drawingml/2006/chart",
      "a": "http://schemas.openxmlformats.org/drawingml/2006/main"}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("charts") / "report.xlsx"
    assert main(["run", str(TESTCASES), "--responses", str(RESPONSES), "--output", str(path), "--no-llm", "-q"]) == 0
    return path


@pytest.fixture(scope="module")
def charts(report):
    """Title -> chart XML, for every chart in the workbook."""
    with zipfile.ZipFile(report) as package:
        names = [n for n in package.namelist() if re.fullmatch(r"xl/charts/chart\d+\.xml", n)]
        trees = [ElementTree.fromstring(package.read(n)) for n in names]
        assert not [n for n in package.namelist() if n.startswith("xl/media/")]  # no pictures of charts
    return {"".join(t.text for t in tree.find("c:chart/c:title", NS).iter(f"{{{NS['a']}}}t")): tree for tree in trees}


@pytest.fixture(scope="module")
def statistics(report):
    return load_workbook(report)["Statistics"]


def series(chart):
    """(title reference, category reference, value reference) of each series."""
    return [(s.find("c:tx//c:f", NS).text, s.find("c:cat//c:f", NS).text, s.find("c:val//c:f", NS).text)
            for s in chart.iter(f"{{{NS['c']}}}ser")]


def cells(ws, reference):
    sheet, _, area = reference.partition("!")
    assert sheet.strip("'") == ws.title
    min_col, min_row, max_col, max_row = range_boundaries(area.replace("$", ""))
    return [ws.cell(row=r, column=c).value for r in range(min_row, max_row + 1) for c in range(min_col, max_col + 1)]


def test_statistics_has_the_three_charts(charts):
    assert set(charts) == {"Macro precision and recall per tag", "Mean steps score per template", "Distribution of scores"}


def test_macro_precision_and_recall_per_tag_are_bars_of_the_per_tag_table(charts, statistics):
    chart = charts["Macro precision and recall per tag"]
    assert chart.find(".//c:barChart/c:barDir", NS).get("val") == "bar"
    (precision, recall) = series(chart)
    assert cells(statistics, precision[0]) == ["macro precision"] and cells(statistics, recall[0]) == ["macro recall"]
    tags = cells(statistics, precision[1])
    assert tags == ["external", "fiscal", "gdp", "ifs", "imf", "labour", "monetary", "prices", "weo"]
    values = cells(statistics, precision[2])
    assert all(isinstance(v, (int, float)) and 0 <= v <= 1 for v in values)
    imf_row = next(c.row for c in statistics["A"] if c.value == "imf")
    assert values[tags.index("imf")] == statistics.cell(row=imf_row, column=7).value


def test_the_steps_score_chart_has_one_bar_per_template_and_no_micro_or_macro_row(charts, statistics):
    ((title, categories, values),) = series(charts["Mean steps score per template"])
    assert cells(statistics, title) == ["steps score"]
    templates = cells(statistics, categories)
    assert len(templates) == 4 and all(t.startswith("list_all_") for t in templates)
    assert all(0 <= v <= 1 for v in cells(statistics, values))


def test_the_histogram_counts_each_metric_apart_every_evaluated_case_with_it_once(charts, statistics):
    chart = charts["Distribution of scores"]
    assert chart.find(".//c:barChart/c:barDir", NS).get("val") == "col"
    got = {cells(statistics, title)[0]: (categories, values) for title, categories, values in series(chart)}
    assert list(got) == ["macro precision", "macro recall", "steps score"]  # never averaged into one score
    for categories, _ in got.values():
        assert cells(statistics, categories) == [f"{i / 10:.1f}–{(i + 1) / 10:.1f}" for i in range(10)]
    counts = {metric: cells(statistics, values) for metric, (_, values) in got.items()}
    assert all(isinstance(c, int) for column in counts.values() for c in column)
    assert sum(counts["macro recall"]) == 15 and sum(counts["steps score"]) == 11  # the cases that have each


def test_chart_axes_are_shown_and_scores_run_from_0_to_1(charts):
    for title in ("Macro precision and recall per tag", "Mean steps score per template"):
        chart = charts[title]
        # both axes are there and none is deleted (an absent <c:delete> means shown; openpyxl wrote "0")
        assert chart.find(".//c:catAx", NS) is not None and chart.find(".//c:valAx", NS) is not None
        assert {d.get("val") for d in chart.iter(f"{{{NS['c']}}}delete")} <= {"0"}
        value_axis = chart.find(".//c:valAx/c:scaling", NS)
        assert value_axis.find("c:min", NS).get("val") == "0" and value_axis.find("c:max", NS).get("val") == "1"


def test_a_link_at_the_top_of_statistics_leads_to_the_charts(statistics):
    link = statistics["A2"]
    assert link.value.startswith("Charts")
    target = int(link.hyperlink.location.split("!A")[1])
    assert statistics.cell(row=target, column=1).value == "Charts"
