"""The names of the workbook's visible sheets, in the order a reader meets them.

Each sheet is added only when the run has something for it (Changes with a baseline, Trend with a
history, Problems when there were any); the hidden machine-readable sheets are named in
`qareport.runs`, which reads them back.
"""

SUMMARY = "Summary"
OVERVIEW = "Overview"
DETAILS = "Details"
STATISTICS = "Statistics"
CHANGES = "Changes"
COMPARE = "Compare"  # with a baseline, when a case regressed or improved: both runs' outputs side by side
TREND = "Trend"
PROBLEMS = "Problems"
FULL_TEXTS = "Full texts"  # only when a text was too long for its cell
